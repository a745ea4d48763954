//! The probe: what an enabled event runs. It enters an RCU read section,
//! loads the event's published probe list, and for each (channel, id) whose
//! session is active and whose filter (if any) accepts the record,
//! reserves, serializes and commits (a filter the call site's screen
//! already tested, `crate::screen`, is not tested again). No lock, no
//! read-modify-write on control data, no fence (`rcu/`), no allocation,
//! no system call: safe in a signal handler.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::any_channel::{is_active, AnyChannel};
use crate::client::Payload;
use crate::field::Val;
use crate::filter::{Filter, Quick};
use crate::rcu;
use crate::screen::UNSCREENED;
use crate::tally::Tally;

/// One place an event records into.
#[derive(Debug)]
pub struct Probe {
    /// The session's running flag: starting or stopping a session is one
    /// store to it.
    pub active: Arc<AtomicBool>,
    /// The channel.
    pub channel: Arc<AnyChannel>,
    /// The event's id in that channel's stream class.
    pub id: u32,
    /// Per-CPU channels: where the writing thread counts the record.
    pub tally: Option<Arc<Tally>>,
    /// The enable rules' filters, compiled for this event: a record none
    /// accepts is not reserved (`None`: every record is).
    pub filter: Option<Box<Filter>>,
}

/// The immutable list an event's descriptor publishes. Replaced, never
/// modified, while published. The first probe is inline: an event recorded
/// by one channel costs no second pointer chase.
#[derive(Debug)]
pub struct ProbeList {
    pub first: Probe,
    pub rest: Box<[Probe]>,
    /// One probe whose filter is one comparison of a payload field with
    /// an integer: that comparison, tested inline in 64 bits where the
    /// value allows (the filter's whole cost on an accepted or rejected
    /// record is then the field, a mask and a compare).
    pub quick: Option<Quick>,
    /// What a record must come with to be recorded in `first` with no
    /// other test (the common case's path, one compare; the session's
    /// state is in the channel's route, `AnyChannel::set_recording`), its
    /// clock read with `rdtsc`: [`UNSCREENED`] for one probe without a
    /// filter (every record, and every record comes with it unless a
    /// screen tested it); the number of the event's screen that holds
    /// `quick` ([`crate::screen`]: a record that screen accepted); 0,
    /// which no record comes with, otherwise, and whenever the process's
    /// clock is not the TSC (so that this path tests no clock's kind).
    pub screened: u64,
}

impl ProbeList {
    /// A list of at least one probe; `None` for none.
    pub fn new(mut probes: Vec<Probe>) -> Option<ProbeList> {
        if probes.is_empty() {
            return None;
        }
        let first = probes.remove(0);
        let quick = match first.filter.as_deref().map(|f| &f.any[..]) {
            Some([one]) if probes.is_empty() => one.quick(),
            _ => None,
        };
        let plain = probes.is_empty() && first.filter.is_none();
        Some(ProbeList {
            quick,
            screened: if plain && common_clock() {
                UNSCREENED
            } else {
                0
            },
            first,
            rest: probes.into_boxed_slice(),
        })
    }

    /// Lets the records the event's screen number `number` accepted take
    /// the common path ([`ProbeList::screened`]), when the clock allows.
    pub fn screen_with(&mut self, number: u64) {
        if common_clock() {
            self.screened = number;
        }
    }

    /// Every probe, in order.
    pub fn iter(&self) -> impl Iterator<Item = &Probe> {
        std::iter::once(&self.first).chain(self.rest.iter())
    }
}

/// Whether the common path can read the clock with `rdtsc` alone: the
/// process's clock is the TSC. A list exists only with its channels,
/// which exist only with the clock (`AnyChannel::now`), which never
/// changes once chosen.
fn common_clock() -> bool {
    crate::clock::is_tsc()
}

impl Probe {
    #[inline(always)]
    fn fire<P: Payload>(&self, k: usize, now: u64, len: usize, write: &P, g: &rcu::Guard) {
        if is_active(&self.active) && self.passes(write, k) {
            self.record(now, len, write, g);
        }
    }

    /// Whether the record passes the filters of this probe, the `k`th of
    /// its list (before it is reserved: a rejected record costs no buffer
    /// space).
    #[inline(always)]
    pub fn passes<P: Payload>(&self, write: &P, k: usize) -> bool {
        match &self.filter {
            None => true,
            Some(f) => write.verdict(k).unwrap_or_else(|| f.accepts(write)),
        }
    }

    /// [`Probe::record`] with the channel's clock read first.
    #[inline(never)]
    fn record_now<P: Payload>(&self, len: usize, write: &P, g: &rcu::Guard) {
        self.record(self.channel.now(), len, write, g)
    }

    /// [`Probe::fire`] for a probe whose session was seen active.
    #[inline(always)]
    pub(crate) fn record<P: Payload>(&self, now: u64, len: usize, write: &P, g: &rcu::Guard) {
        if self.channel.record_to_tally(now, self.id, len, write) {
            if let Some(t) = &self.tally {
                t.add(g);
            }
        }
    }
}

/// Whether the record passes the only probe `p`'s filter, the one
/// comparison `q`: in 64 bits on a field value from 0 to 2^64 - 1 (for an
/// unsigned field, the only case the compiler keeps), by the filter
/// itself on any other.
#[inline(always)]
fn quick_passes<P: Payload>(q: &Quick, write: &P, p: &Probe) -> bool {
    if let Some(v) = write.verdict(0) {
        return v;
    }
    match write.field(q.field) {
        Val::Int(x) if x >> 64 == 0 => q.word.test(x as u64),
        _ => p.passes(write, 0),
    }
}

/// Records one event in every channel of `probes` whose session is
/// active: `len` bytes of payload that `write` fills. What the front ends
/// other than `event!` run after their dormant check (`EventDesc::emit`,
/// `emit_with`).
#[inline(always)]
pub fn run<P: Payload>(probes: &rcu::Published<ProbeList>, len: usize, write: &P) {
    run_screened(probes, len, crate::client::Ref(write), UNSCREENED)
}

/// [`run`] for a record the event's screen numbered `screened` accepted
/// ([`UNSCREENED`]: none tested it), its payload by value. What `event!`
/// runs after the dormant check and the screen
/// (`EventDesc::emit_screened`).
///
/// The common case (one probe, no filter left to test, the thread's
/// buffer found at once, a compact header) inline with no call but its
/// last, so that it keeps nothing live across a call (no stack frame, no
/// spill for a call's sake). Any other case goes out of line, untouched,
/// as the last act: a tail call that takes the payload by value, to
/// [`run_slow`] (every case from the start) before the read section is
/// entered or when the list is not the common one, to [`run_slow_in`]
/// (the same in the section already entered) when the common path
/// declines the record (BENCHMARKS.md, "The frame-free event").
#[inline(always)]
pub fn run_screened<P: Payload>(
    probes: &rcu::Published<ProbeList>,
    len: usize,
    write: P,
    screened: u64,
) {
    let Some(guard) = rcu::read_lock_fast() else {
        return run_slow(probes, len, write, screened);
    };
    // The list lives as long as this read section (see `rcu::Published`).
    let Some(list) = probes.load(&guard) else {
        return;
    };
    // One probe without a filter, or one whose comparison the call site's
    // screen passed, with the clock the TSC (`ProbeList::screened`). No
    // session flag is tested: a stopped session's channel has the route
    // that records nothing (`AnyChannel::set_recording`).
    if screened != list.screened {
        drop(guard);
        return run_slow(probes, len, write, screened);
    }
    // The list lives as long as the read section, which `guard` holds
    // until it is dropped: it moves into `record_fast`, which drops it
    // after the record's commit, the last use of the list, its probe and
    // its channel (`client::record_layout_fast`), or hands it back unused.
    let first: *const Probe = &list.first;
    // SAFETY: (see above) a pointer into the list, which outlives the
    // borrow of `guard` that `load` ties it to.
    let p: &Probe = unsafe { &*first };
    if let Err(guard) = p.channel.record_fast(&p.id, len, &write, &p.tally, guard) {
        // The whole path loads the list again (perhaps a newer one) and is
        // told that no screen tested the record: it tests the list's
        // filter, if it has one. The list and the screen's answer are not
        // kept for it: two registers fewer while the record is reserved.
        run_slow_in(probes, len, write, guard)
    }
}

/// [`run_screened`] before its read section, or with a list not the
/// common one: every case, from the start.
#[cold]
#[inline(never)]
fn run_slow<P: Payload>(probes: &rcu::Published<ProbeList>, len: usize, write: P, screened: u64) {
    if let Some(guard) = rcu::read_lock() {
        run_all(probes, len, &write, screened, &guard);
    }
}

/// [`run_screened`] for a record its common path declined (a thread's
/// first record in the channel, a new sub-buffer, a long gap, contexts
/// not yet read, a per-CPU buffer whose CPU takes a call to find): every
/// case, in the read section `guard`, ended last.
#[cold]
#[inline(never)]
fn run_slow_in<P: Payload>(
    probes: &rcu::Published<ProbeList>,
    len: usize,
    write: P,
    guard: rcu::Guard,
) {
    run_all(probes, len, &write, UNSCREENED, &guard);
}

/// Every case of [`run_screened`], in the read section `guard`.
#[inline(always)]
fn run_all<P: Payload>(
    probes: &rcu::Published<ProbeList>,
    len: usize,
    write: &P,
    screened: u64,
    guard: &rcu::Guard,
) {
    // The list lives as long as this read section (see `rcu::Published`).
    let Some(list) = probes.load(guard) else {
        return;
    };
    // A record its filter rejects reads no clock and reserves nothing. The
    // common case (one probe without a filter, or one whose comparison
    // the call site's screen passed) tests no session flag: a stopped
    // session's channel has the route that records nothing
    // (`AnyChannel::set_recording`), taken after the clock's reading.
    let p = &list.first;
    let common = screened == list.screened;
    if !common {
        if let Some(q) = &list.quick {
            if !(is_active(&p.active) && quick_passes(q, write, p)) {
                return;
            }
        } else if list.rest.is_empty() {
            if !(is_active(&p.active) && p.passes(write, 0)) {
                return;
            }
        } else {
            several(list, len, write, guard);
            return;
        }
    }
    // The common path's list says the clock is the TSC
    // (`ProbeList::screened`): read once the record's buffer is found
    // (`client::TSC_LATER`), after the loads that find it. Any other list
    // reads its channel's clock first, out of line: were both inlined
    // into one call, every record would test which kind of timestamp it
    // carries.
    if common {
        p.record(crate::client::TSC_LATER, len, write, guard);
    } else {
        p.record_now(len, write, guard);
    }
}

/// [`run`] for a list of several probes: one clock reading for every
/// session the event goes to. Out of line: the one-probe path stays the
/// code it was.
#[inline(never)]
fn several<P: Payload>(list: &ProbeList, len: usize, write: &P, guard: &rcu::Guard) {
    let now = list.first.channel.now();
    list.first.fire(0, now, len, write, guard);
    for (k, p) in list.rest.iter().enumerate() {
        p.fire(k + 1, now, len, write, guard);
    }
}

/// Events another tracer's probe offered that could not be put together
/// for recording (`ringtrace-lttng-ust`: nested deeper than its levels, or
/// recorded by several sessions, so staged, and larger than its per-thread
/// staging area), every session.
static UNSTAGED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Counts one event a foreign probe could not stage (one relaxed add:
/// safe in a signal handler).
pub fn count_unstaged() {
    UNSTAGED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// Events counted by [`count_unstaged`] so far.
pub fn unstaged() -> u64 {
    UNSTAGED.load(std::sync::atomic::Ordering::Relaxed)
}

ringbuf::ie_words! {
    /// How deep the calling thread is in the tracer's own work (always 1
    /// or more in the tracer's threads): one initial-exec word, read by
    /// every event a foreign probe offers (`ringtrace-lttng-ust`), where a
    /// `thread_local!` would cost a shared library a call to
    /// `__tls_get_addr`.
    mod tracer_work = ("__ringtrace_tracer_work", 1);
}

/// Runs `f` as the tracer's own work: a foreign probe that fires in this
/// thread meanwhile records nothing (LTTng-UST's libc wrapper would see
/// the tracer's allocations as the program's).
pub fn as_tracer<R>(f: impl FnOnce() -> R) -> R {
    struct Depth;
    impl Drop for Depth {
        fn drop(&mut self) {
            tracer_work::set(0, tracer_work::get(0) - 1);
        }
    }
    tracer_work::set(0, tracer_work::get(0) + 1);
    let _depth = Depth;
    f()
}

/// Marks the calling thread as one of the tracer's (consumer, standby,
/// control socket) for the rest of its life: see [`as_tracer`].
pub fn mark_tracer_thread() {
    tracer_work::set(0, tracer_work::get(0) + 1);
}

/// Whether the calling thread is doing the tracer's own work (one
/// thread-local load: safe in a signal handler).
#[inline]
pub fn in_tracer() -> bool {
    tracer_work::get_at::<0>() > 0
}
