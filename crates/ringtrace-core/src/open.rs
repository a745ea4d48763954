//! A record kept open across a foreign probe's calls: reserved when the
//! probe says how long its payload is, its fields written by later calls
//! straight into the ring buffer, finished and committed by a last call.
//!
//! LTTng-UST's probe ABI (`ringtrace-lttng-ust`) has that shape:
//! `event_reserve` with the payload's size, one `event_write` per field,
//! `event_commit`. A native event's record is written in one call
//! ([`crate::probe::run`]); this one is the same record, the same route,
//! reservation, mark, contexts and header (`client/mod.rs`'s `fill`, through a
//! [`Payload`] whose bytes are [`DEFERRED`](Payload::DEFERRED)), split in
//! two at the payload:
//!
//! 1. [`open`]: the read section, the event's probe list, the clock, the
//!    reservation, the mark and the contexts; the reserved slot is kept in
//!    the caller's [`OpenRecord`], with the read section, and the payload's
//!    bytes are handed out ([`OpenRecord::payload`]);
//! 2. the caller writes the payload;
//! 3. [`OpenRecord::commit`]: the header's first word last (`unfinished`),
//!    the commit, the read section's end.
//!
//! The read section held from 1 to 3 keeps the channel (and so the slot's
//! buffer) alive: a session's channels are freed only after a grace
//! period. An event that more than one session records is not opened
//! ([`Opened::Several`]): the caller puts its payload together elsewhere
//! and records it through [`crate::EventDesc::emit_at`].
//!
//! Nothing here allocates, locks or calls the kernel: the path is the
//! native record's, and is as safe in a signal handler (a handler's event
//! nested inside an open record opens another, in its caller's next
//! [`OpenRecord`], and commits it first: the ring buffer takes commits in
//! any order).
//!
//! Checked by: this module's unit tests, also under Miri (a kept slot
//! finished and committed once, read back by the buffer's reader; a
//! record dropped open is committed, an abandoned one is not), and
//! `ringtrace-lttng-ust`'s `tests/operations.rs` on real sessions (nested
//! records, one from a real signal handler, a payload larger than the
//! staging area, two sessions) and its tests against LTTng-UST's own
//! traces of the same programs.

use std::cell::{Cell, UnsafeCell};
use std::mem::MaybeUninit;

use ringbuf::{Config, Slot};

use crate::any_channel::is_active;
use crate::client::Payload;
use crate::probe::ProbeList;
use crate::rcu::{self, Published};
use crate::unfinished;

/// Words of storage for a reserved slot of any buffer kind.
const SLOT_WORDS: usize = 6;

/// A record between [`open`] and [`OpenRecord::commit`], or none. Owned by
/// one thread (`!Send`, `!Sync`: it holds the thread's read section), kept
/// where the thread's later calls find it.
pub struct OpenRecord {
    /// The reserved [`Slot`] of whichever buffer kind, its lifetime
    /// erased (the read section in `guard` is what keeps it valid).
    slot: UnsafeCell<MaybeUninit<[u64; SLOT_WORDS]>>,
    /// Finishes and commits `slot`, for its buffer kind; `None` when no
    /// record is open.
    close: Cell<Option<unsafe fn(&OpenRecord)>>,
    /// The event header's length and the event's id, for the close.
    h: Cell<u32>,
    id: Cell<u32>,
    /// The payload's bytes in the slot: first byte and length.
    payload: Cell<(*mut u8, usize)>,
    /// The read section, from the reservation to the commit.
    guard: UnsafeCell<Option<rcu::Guard>>,
}

impl std::fmt::Debug for OpenRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenRecord")
            .field("open", &self.is_open())
            .finish_non_exhaustive()
    }
}

impl Default for OpenRecord {
    fn default() -> Self {
        OpenRecord::new()
    }
}

impl Drop for OpenRecord {
    /// A record still open is committed as it is (its payload, or what of
    /// it was written): never left reserved with its read section ended.
    fn drop(&mut self) {
        self.commit();
    }
}

/// What [`open`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opened {
    /// A record is open: write its payload, then commit it.
    Open,
    /// Nothing to write: the event's session is stopped, the event is no
    /// longer enabled, or the record was refused (full buffer, no reader
    /// slot: counted lost where native events' are).
    Off,
    /// More than one session records the event: not opened.
    Several,
}

impl OpenRecord {
    /// No record open.
    pub const fn new() -> OpenRecord {
        OpenRecord {
            slot: UnsafeCell::new(MaybeUninit::uninit()),
            close: Cell::new(None),
            h: Cell::new(0),
            id: Cell::new(0),
            payload: Cell::new((std::ptr::null_mut(), 0)),
            guard: UnsafeCell::new(None),
        }
    }

    /// Whether a record is open.
    pub fn is_open(&self) -> bool {
        self.close.get().is_some()
    }

    /// The open record's payload: its first byte and its length, the
    /// length [`open`] was given. Valid until [`OpenRecord::commit`].
    #[inline(always)]
    pub fn payload(&self) -> (*mut u8, usize) {
        self.payload.get()
    }

    /// Forgets an open record without committing it or ending its read
    /// section: what a thread that died while it was open left (the record
    /// stays reserved and uncommitted, as a killed writer's; the read
    /// section ended with the thread, whose reader slot the caller now
    /// holds). Does nothing if none is open.
    pub fn abandon(&self) {
        if self.close.take().is_some() {
            // SAFETY: this thread's record (`!Sync`); the guard is
            // forgotten, not dropped: its slot's nesting count is no
            // longer the dead thread's to decrement.
            let _forgotten = std::mem::ManuallyDrop::new(unsafe { (*self.guard.get()).take() });
        }
    }

    /// Finishes the open record (its header's first word last) and commits
    /// it, then ends the read section. Does nothing if none is open. The
    /// payload must be written by then: what the caller left out is
    /// whatever the buffer held.
    #[inline(always)]
    pub fn commit(&self) {
        if let Some(close) = self.close.take() {
            // SAFETY: `close` was stored by `Deferred::keep` with the slot
            // it reads, for that slot's buffer kind; taken, so it runs
            // once per slot.
            unsafe { close(self) };
            // SAFETY: the record's read section, stored by `open`; the
            // slot that needed it is committed. Only this thread reaches
            // it (`!Sync`), and no reference into it is alive. It ends
            // here, where `_section` goes out of scope.
            let _section = unsafe { (*self.guard.get()).take() };
        }
    }
}

/// Opens a record of `len` payload bytes for event `probes` (an
/// [`crate::EventDesc`]'s), called from the code at `ip`, in `rec`, which
/// must have none open.
#[inline(always)]
pub(crate) fn open(
    probes: &Published<ProbeList>,
    len: usize,
    ip: u64,
    verdict: Option<u64>,
    rec: &OpenRecord,
) -> Opened {
    debug_assert!(!rec.is_open(), "a record is already open here");
    let Some(guard) = rcu::read_lock() else {
        return Opened::Off;
    };
    // The list lives as long as this read section (see `rcu::Published`).
    let Some(list) = probes.load(&guard) else {
        return Opened::Off;
    };
    if !list.rest.is_empty() {
        return Opened::Several;
    }
    let p = &list.first;
    let payload = Deferred { rec, ip, verdict };
    if !(is_active(&p.active) && p.passes(&payload, 0)) {
        return Opened::Off;
    }
    let now = p.channel.now();
    p.record(now, len, &payload, &guard);
    if !rec.is_open() {
        return Opened::Off;
    }
    // SAFETY: this thread's record (`!Sync`); nothing else borrows the
    // field. The guard moves there and lives until the commit.
    unsafe { *rec.guard.get() = Some(guard) };
    Opened::Open
}

/// The payload of an opened record: its bytes are written later.
struct Deferred<'a> {
    rec: &'a OpenRecord,
    ip: u64,
    /// The probes' filters' verdicts, bit `k` for probe `k` (the caller
    /// evaluated them on its values); none: the probe records only if it
    /// has no filter (a deferred payload has no values to give one).
    verdict: Option<u64>,
}

impl Payload for Deferred<'_> {
    const DEFERRED: bool = true;

    /// Notes where the payload goes.
    #[inline(always)]
    fn write(&self, out: &mut [u8]) {
        self.rec.payload.set((out.as_mut_ptr(), out.len()));
    }

    #[inline(always)]
    fn ip(&self) -> u64 {
        self.ip
    }

    #[inline(always)]
    fn verdict(&self, k: usize) -> Option<bool> {
        Some(self.verdict.is_some_and(|m| k < 64 && m >> k & 1 == 1))
    }

    #[inline(always)]
    fn keep<C: Config>(&self, slot: Slot<'_, C>, h: usize, id: u32) {
        const {
            assert!(std::mem::size_of::<Slot<'static, C>>() <= 8 * SLOT_WORDS);
            assert!(std::mem::align_of::<Slot<'static, C>>() <= 8);
        }
        // SAFETY: only the lifetime changes; the slot's buffer outlives
        // the read section that `open` keeps with it until the commit.
        let slot: Slot<'static, C> = unsafe { std::mem::transmute(slot) };
        // SAFETY: the storage is large and aligned enough (asserted above)
        // and holds no slot (none open: `open`'s precondition), so nothing
        // is overwritten that needed dropping.
        unsafe { self.rec.slot.get().cast::<Slot<'static, C>>().write(slot) };
        self.rec.h.set(h as u32);
        self.rec.id.set(id);
        self.rec.close.set(Some(close::<C>));
    }
}

/// Finishes and commits the slot of buffer kind `C` kept in `rec`.
///
/// # Safety
/// `rec` holds a slot of kind `C` stored by [`Deferred::keep`], not yet
/// taken out.
unsafe fn close<C: Config>(rec: &OpenRecord) {
    // SAFETY: the caller's contract; read once (the close is taken before
    // this runs), so the slot is not duplicated.
    let mut slot: Slot<'static, C> = unsafe { rec.slot.get().cast::<Slot<'static, C>>().read() };
    let ts = slot.ts();
    unfinished::finish(slot.bytes(), rec.h.get() as usize, rec.id.get(), ts);
    slot.commit();
}

#[cfg(test)]
mod tests {
    use std::marker::PhantomData;
    use std::sync::atomic::AtomicU16;

    use ringbuf::{Channel, ChannelAttr};

    use super::*;
    use crate::client::{kind, record_layout, Client, StreamIds};

    type PerThread = Client<kind::DiscardThread>;

    /// A per-thread channel of 2 × 4 KiB sub-buffers, no contexts, on the
    /// monotonic clock (no calibration: the test runs under Miri), and its
    /// read sides.
    fn channel() -> (Channel<PerThread>, Box<[ringbuf::ReadSide]>) {
        let client = PerThread {
            ids: StreamIds {
                stream_id: 0,
                uuid: [0; 16],
                instance_base: 0,
                clock: traceclock::TraceClock::monotonic(),
            },
            subbuf: 4096,
            contexts: AtomicU16::new(0),
            kind: PhantomData,
        };
        let attr = ChannelAttr {
            subbuf_size: 4096,
            num_subbuf: 2,
            thread_pool: 1,
            ..ChannelAttr::default()
        };
        Channel::new(client, &attr, "open").unwrap()
    }

    fn records(ch: &Channel<PerThread>) -> u64 {
        ch.buffers().iter().map(|b| b.stats().records).sum()
    }

    /// Opens a record of `len` payload bytes of event `id` in `rec`.
    fn open_in(ch: &Channel<PerThread>, rec: &OpenRecord, id: u32, len: usize) {
        let now = ch.config().ids.clock.now();
        assert!(record_layout::<_, _, 0>(
            ch,
            now,
            id,
            len,
            &Deferred {
                rec,
                ip: 0,
                verdict: None,
            }
        ));
        assert!(rec.is_open());
    }

    #[test]
    fn a_kept_record_is_finished_and_committed_once_at_the_commit() {
        std::thread::spawn(|| {
            let (ch, mut read) = channel();
            let rec = OpenRecord::new();
            for (k, id) in [(0u64, 3u32), (1, 30)] {
                open_in(&ch, &rec, id, 8);
                let (p, n) = rec.payload();
                assert_eq!(n, 8);
                // SAFETY: the open record's 8 payload bytes.
                unsafe { p.cast::<u64>().write_unaligned(0x1122_3344 + k) };
                assert_eq!(records(&ch), k, "not committed while open");
                rec.commit();
                assert!(!rec.is_open());
                assert_eq!(records(&ch), k + 1);
                rec.commit();
                assert_eq!(records(&ch), k + 1, "a second commit does nothing");
            }
            // The two records as a reader finds them: a compact header
            // (the id in its low 5 bits, written last over the mark) and
            // the payload written in place.
            ch.flush();
            let mut rd = read[0].reader(&ch.buffers()[0]);
            let sb = rd.get_subbuf().expect("the flushed sub-buffer");
            let data = sb.data();
            let at = ctf::PACKET_HEADER_SIZE;
            for (k, id) in [(0usize, 3u32), (1, 30)] {
                let r = &data[at + 12 * k..at + 12 * (k + 1)];
                assert_eq!(u32::from_le_bytes(r[..4].try_into().unwrap()) & 31, id);
                assert_eq!(
                    u64::from_le_bytes(r[4..].try_into().unwrap()),
                    0x1122_3344 + k as u64
                );
            }
        })
        .join()
        .unwrap();
    }

    #[test]
    fn an_open_record_dropped_is_committed_and_an_abandoned_one_is_not() {
        std::thread::spawn(|| {
            let (ch, _read) = channel();
            let rec = OpenRecord::new();
            open_in(&ch, &rec, 5, 8);
            drop(rec);
            assert_eq!(records(&ch), 1);
            let rec = OpenRecord::new();
            open_in(&ch, &rec, 5, 8);
            rec.abandon();
            assert!(!rec.is_open());
            drop(rec);
            assert_eq!(records(&ch), 1, "reserved, never committed");
        })
        .join()
        .unwrap();
    }
}
