//! The ring-buffer client: sub-buffers are CTF packets written in place
//! (`ctf::layout`), records are a compact event header plus the payload.
//! One client type per buffer kind (mode and sharing, [`kind`]), so that
//! each channel's fast path is compiled for its constant configuration;
//! [`AnyChannel`](crate::any_channel::AnyChannel) picks one by its route.

use std::marker::PhantomData;
use std::sync::atomic::{AtomicU16, Ordering::Relaxed};

use ctf::layout::{
    event_header_len, write_packet_begin, write_packet_end, COMPACT_MAX_ID, COMPACT_TS_BITS,
};
use ctf::types::HeaderKind;
use ringbuf::{Alloc, Channel, Config, Mode, SubbufBegin, SubbufEnd, Sync};
use traceclock::TraceClock;

use crate::context::{image_as_is, words, Contexts, Layout};
use crate::field::Val;
use crate::ops::PACKET_SIZE_AT;
use crate::unfinished;

mod fast;
pub(crate) use fast::record_layout_fast;

/// Event header of every channel: 5-bit id and 27-bit timestamp, extended
/// when needed (`ctf::layout`).
pub const HEADER: HeaderKind = HeaderKind::Compact;

/// Byte offset of `content_size`.
const CONTENT_SIZE_AT: usize = 48;

/// A channel's buffer kind: flight recorder or discard, and how its
/// buffers are shared ([`Sharing`]). Sealed: the six kinds of [`kind`] are
/// all there are (no per-thread buffer with restartable sequences).
pub trait Kind: sealed::Sealed + Send + std::marker::Sync + std::fmt::Debug + 'static {
    /// Flight recorder (overwrite the oldest) rather than discard.
    const OVERWRITE: bool;
    /// How the buffers are shared and moved.
    const SHARING: Sharing;
}

mod sealed {
    pub trait Sealed {}
}

/// The six buffer kinds.
pub mod kind {
    use super::{sealed::Sealed, Kind, Sharing};

    macro_rules! kinds {
        ($($(#[$doc:meta])* $name:ident: $overwrite:literal, $sharing:ident;)*) => {$(
            $(#[$doc])*
            #[derive(Debug)]
            pub struct $name;
            impl Sealed for $name {}
            impl Kind for $name {
                const OVERWRITE: bool = $overwrite;
                const SHARING: Sharing = Sharing::$sharing;
            }
        )*};
    }

    kinds! {
        /// Discard, per CPU, lock-prefixed atomics.
        DiscardCpu: false, PerCpuAtomics;
        /// Discard, per CPU, restartable sequences.
        DiscardCpuRseq: false, PerCpuRseq;
        /// Discard, per thread.
        DiscardThread: false, PerThread;
        /// Flight recorder, per CPU, lock-prefixed atomics.
        OverwriteCpu: true, PerCpuAtomics;
        /// Flight recorder, per CPU, restartable sequences.
        OverwriteCpuRseq: true, PerCpuRseq;
        /// Flight recorder, per thread.
        OverwriteThread: true, PerThread;
    }
}

/// What a channel's packets say they belong to, and the clock its records
/// are stamped with.
#[derive(Debug, Clone, Copy)]
pub struct StreamIds {
    /// The channel's stream class id in the metadata.
    pub stream_id: u32,
    /// The trace's UUID, in every packet header.
    pub uuid: [u8; 16],
    /// The stream instance id of the channel's first buffer.
    pub instance_base: u64,
    /// The clock the records' timestamps are read from.
    pub clock: TraceClock,
}

/// The client of one channel of buffer kind `K` (`ringbuf::Config`).
#[derive(Debug)]
pub struct Client<K: Kind> {
    /// The stream class, the trace and the clock. Stream instance ids of
    /// this channel's buffers start at `ids.instance_base` (unique within
    /// the trace: babeltrace2 joins files of one instance).
    pub ids: StreamIds,
    /// Sub-buffer size in bytes.
    pub subbuf: u64,
    /// What every record carries between its header and its payload (a
    /// [`Layout::code`]): set when the channel is created, and changed only
    /// while no record was ever written to it ([`AnyChannel::set_contexts`](crate::any_channel::AnyChannel::set_contexts)).
    pub contexts: AtomicU16,
    pub(crate) kind: PhantomData<K>,
}

impl<K: Kind> Client<K> {
    /// The channel's contexts, as the write path uses them.
    #[inline(always)]
    pub fn contexts(&self) -> Layout {
        Layout::from_code(self.contexts.load(Relaxed))
    }
}

impl<K: Kind> Config for Client<K> {
    const MODE: Mode = if K::OVERWRITE {
        Mode::Overwrite
    } else {
        Mode::Discard
    };
    const ALLOC: Alloc = match K::SHARING {
        Sharing::PerThread => Alloc::PerThread,
        Sharing::PerCpuRseq | Sharing::PerCpuAtomics => Alloc::PerCpu,
    };
    const SYNC: Sync = match K::SHARING {
        Sharing::PerThread => Sync::Local,
        Sharing::PerCpuRseq => Sync::Rseq,
        Sharing::PerCpuAtomics => Sync::Smp,
    };
    /// Per-thread buffers count with a non-locked add, rseq ones in their
    /// commit's own store; per-CPU buffers with atomics would count with a
    /// lock-prefixed add per record: the writing threads count instead
    /// (`tally.rs`).
    const COUNT_RECORDS: bool = !matches!(K::SHARING, Sharing::PerCpuAtomics);

    /// Unordered for every buffer kind: the ring buffer clamps each
    /// timestamp to the previous one (`ringbuf`'s `Head`).
    #[inline(always)]
    fn clock(&self) -> u64 {
        self.ids.clock.now_unordered()
    }

    fn header_size(&self) -> usize {
        ctf::PACKET_HEADER_SIZE
    }

    fn subbuf_begin(&self, h: &mut [u8], b: &SubbufBegin) {
        let size = self.subbuf;
        write_packet_begin(
            h,
            &self.ids.uuid,
            self.ids.stream_id,
            self.ids.instance_base + b.buffer as u64,
            b.ts,
            size,
            b.seq,
            b.buffer,
        );
    }

    fn subbuf_end(&self, h: &mut [u8], e: &SubbufEnd) {
        write_packet_end(h, e.end_ts, e.data_size, e.lost.total());
        // The packet ends with its content (rounded to 8 bytes): the consumer
        // copies that much, not the padding of a flushed sub-buffer.
        let packet = packet_len(e.data_size, self.subbuf);
        h[PACKET_SIZE_AT..PACKET_SIZE_AT + 8].copy_from_slice(&(packet * 8).to_le_bytes());
    }

    fn data_size(&self, sb: &[u8]) -> usize {
        let bits = u64::from_le_bytes(sb[CONTENT_SIZE_AT..CONTENT_SIZE_AT + 8].try_into().unwrap());
        (bits / 8) as usize
    }
}

/// Bytes of a packet holding `content` bytes in a sub-buffer of `subbuf`.
fn packet_len(content: u64, subbuf: u64) -> u64 {
    content.div_ceil(8).saturating_mul(8).min(subbuf)
}

/// What a probe writes after the event header: a closure (the C API, the
/// `tracing` layer) or `event!`'s tuple of fields ([`Encoded`]).
pub trait Payload {
    /// Fills `out`, exactly the payload's length.
    fn write(&self, out: &mut [u8]);

    /// The address of the code that records the event (the `ip` context);
    /// 0 when the caller does not say.
    #[inline(always)]
    fn ip(&self) -> u64 {
        0
    }

    /// Payload field `i`'s value, for a filter evaluated before the
    /// record is reserved ([`crate::filter`]); [`Val::Absent`] where the
    /// payload's values are only bytes (a closure's).
    #[inline(always)]
    fn field(&self, _i: usize) -> Val<'_> {
        Val::Absent
    }

    /// Whether the filter of probe `k` of the event's list accepts this
    /// record, when the caller already knows (a foreign probe's filter,
    /// evaluated on its own copy of the values before the payload was
    /// put together: `ringtrace-lttng-ust`); `None` to evaluate the
    /// filter on [`Payload::field`]'s values.
    #[inline(always)]
    fn verdict(&self, _k: usize) -> Option<bool> {
        None
    }

    /// A payload whose bytes come later ([`crate::open`]: a foreign
    /// probe's fields, written one call at a time): the record is kept
    /// open by [`Payload::keep`] instead of finished and committed. A
    /// constant, folded away on every other payload's path.
    const DEFERRED: bool = false;

    /// With [`Payload::DEFERRED`]: takes the reserved record, its header
    /// `h` bytes long and event `id`, after its mark and contexts are
    /// written ([`write`](Payload::write) was given the payload's bytes);
    /// whoever keeps it finishes the header and commits it. Called for
    /// deferred payloads only; the default, which no path reaches,
    /// commits the record as it stands (unfinished: recovery steps over
    /// it).
    #[inline(always)]
    fn keep<C: Config>(&self, slot: ringbuf::Slot<'_, C>, h: usize, id: u32) {
        let _ = (h, id);
        slot.commit();
    }
}

impl<F: Fn(&mut [u8])> Payload for F {
    #[inline(always)]
    fn write(&self, out: &mut [u8]) {
        self(out)
    }
}

/// `event!`'s fields and call site: serialized by inlined trait methods,
/// where a closure holding the same code may be left out of line. The
/// fields by value: the record path reads them from this one place (with
/// a reference to them here, a field took two stores and two loads more).
pub struct Encoded<T>(pub T, pub u64);

impl<T: crate::field::Fields> Payload for Encoded<T> {
    #[inline(always)]
    fn write(&self, out: &mut [u8]) {
        self.0.encode(out)
    }

    #[inline(always)]
    fn field(&self, i: usize) -> Val<'_> {
        self.0.value(i)
    }

    #[inline(always)]
    fn ip(&self) -> u64 {
        self.1
    }
}

/// A payload written by a closure, recorded from the code at `ip`.
pub struct At<F> {
    /// Writes the payload.
    pub write: F,
    /// The address of the code that records it.
    pub ip: u64,
}

impl<F: Fn(&mut [u8])> Payload for At<F> {
    #[inline(always)]
    fn write(&self, out: &mut [u8]) {
        (self.write)(out)
    }

    #[inline(always)]
    fn ip(&self) -> u64 {
        self.ip
    }
}

/// A wrapper's [`Payload`] items other than `write`: its payload's.
macro_rules! payload_of_wrapped {
    () => {
        #[inline(always)]
        fn ip(&self) -> u64 {
            self.payload.ip()
        }

        const DEFERRED: bool = P::DEFERRED;

        #[inline(always)]
        fn keep<C: Config>(&self, slot: ringbuf::Slot<'_, C>, h: usize, id: u32) {
            self.payload.keep(slot, h, id)
        }
    };
}

/// The first `N` words of the thread's contexts (`context.rs`), loaded
/// before the reservation, then the event's payload.
struct WithWords<'a, P, const N: usize> {
    words: [u64; N],
    payload: &'a P,
}

impl<P: Payload, const N: usize> Payload for WithWords<'_, P, N> {
    #[inline(always)]
    fn write(&self, out: &mut [u8]) {
        let (ctx, rest) = out.split_at_mut(8 * N);
        for (k, w) in self.words.iter().enumerate() {
            ctx[8 * k..8 * k + 8].copy_from_slice(&w.to_le_bytes());
        }
        self.payload.write(rest);
    }

    payload_of_wrapped!();
}

/// Any other set of contexts, written field by field from the thread's
/// image, then the payload. The image is read as the thread's cache holds
/// it: whoever makes one has seen the cache filled before the
/// reservation (`context::filled_words`, `context::words`), so that its
/// write has no call.
struct WithSet<'a, P> {
    set: Contexts,
    payload: &'a P,
}

impl<P: Payload> Payload for WithSet<'_, P> {
    #[inline(always)]
    fn write(&self, out: &mut [u8]) {
        // Never short: the record is the set's length and the payload's.
        let Some((ctx, rest)) = out.split_at_mut_checked(self.set.len()) else {
            return;
        };
        self.set.write_image(&image_as_is(), ctx, self.payload.ip());
        self.payload.write(rest);
    }

    payload_of_wrapped!();
}

/// Records one event in the calling thread's buffer of `ch`: header, the
/// channel's contexts (`context.rs`), then the payload written by `write`
/// into exactly `len` bytes. Returns whether it was committed; losses are
/// counted by the buffer. `L` is the low byte of the channel's
/// [`Layout::code`], the layout this path is compiled for (no context: the
/// record as it was before contexts existed); `AnyChannel`'s route chose
/// it. `Other` (4) writes the client's set field by field, whatever it is.
#[cfg_attr(not(debug_assertions), inline(always))]
pub(crate) fn record_layout<K: Kind, P: Payload, const L: u8>(
    ch: &Channel<Client<K>>,
    now: u64,
    id: u32,
    len: usize,
    write: &P,
) -> bool {
    macro_rules! words {
        ($n:literal) => {{
            let words = words::<$n>();
            record_body(ch, now, id, 8 * $n + len, move || WithWords::<P, $n> {
                words,
                payload: write,
            })
        }};
    }
    match L {
        0 => record_body(ch, now, id, len, || Ref(write)),
        1 => words!(1),
        2 => words!(2),
        3 => words!(4),
        _ => {
            // The thread's cache filled (once per thread), so that the
            // set is written from it as it is.
            let _ = words::<1>();
            let set = ch.config().contexts().contexts();
            record_body(ch, now, id, set.len() + len, move || WithSet {
                set,
                payload: write,
            })
        }
    }
}

/// A record: the event header and `len` bytes that the payload `make`
/// returns fills. The reservation's fast path here, everything else out
/// of line ([`record_body_slow`]): the two write the record each in their
/// own code, so that the fast path's slot stays in registers. Each makes
/// its own payload: one made before the branch is stored to the stack for
/// the slow path's reference (four stores per event with the contexts).
#[cfg_attr(not(debug_assertions), inline(always))]
fn record_body<C: Config, P: Payload>(
    ch: &Channel<C>,
    now: u64,
    id: u32,
    len: usize,
    make: impl Fn() -> P,
) -> bool {
    // A length that could wrap the record's size goes the slow way, which
    // saturates it (refused as too big): `fill` relies on the sum. A
    // constant length (`event!`'s numbers) folds the test away.
    if len > isize::MAX as usize {
        return record_body_slow(ch, stamp(now), id, len, &make());
    }
    // `move`: id and len are captured by value, not through stack spills.
    // The header's form chosen by the id alone, before the reservation:
    // each form's fast path reserves a constant length, so the record's
    // layout is not tested again when it is written. The compact form
    // also needs the timestamp's delta to fit its bits; a record after a
    // longer gap goes the slow way (its size here is 0, which the fast
    // path never reserves).
    if id <= COMPACT_MAX_ID {
        let size = move |ctx: ringbuf::SlotCtx| {
            let fits = ctx.ts.wrapping_sub(ctx.last_ts()) >> COMPACT_TS_BITS == 0;
            if fits {
                COMPACT_LEN + len
            } else {
                not_fast()
            }
        };
        if let Some(slot) = ch.try_reserve_fast(move || stamp(now), size) {
            fill(slot, COMPACT_LEN, id, len, &make(), ());
            return true;
        }
    } else if let Some(slot) = ch.try_reserve_fast(move || stamp(now), move |_| EXTENDED_LEN + len)
    {
        fill(slot, EXTENDED_LEN, id, len, &make(), ());
        return true;
    }
    record_body_slow(ch, stamp(now), id, len, &make())
}

/// A record's timestamp still to be read: the TSC, once the record's
/// buffer is found (`ringbuf::Channel::try_reserve_fast`), not before the
/// loads that find it, which would wait behind `rdtsc` (BENCHMARKS.md,
/// "The clock read last"). What the common path passes for `now`; no
/// clock reads `u64::MAX` (a timestamp only grows from the clock's start,
/// and the ring buffer's are 64 bits).
pub(crate) const TSC_LATER: u64 = u64::MAX;

/// The timestamp `now`, or for [`TSC_LATER`] the TSC read now.
#[inline(always)]
fn stamp(now: u64) -> u64 {
    if now == TSC_LATER {
        traceclock::tsc::rdtsc()
    } else {
        now
    }
}

/// The compact header's length (`ctf::layout`: 5-bit id, 27-bit time).
const COMPACT_LEN: usize = 4;
/// The extended compact header's length (31, 32-bit id, 64-bit time).
const EXTENDED_LEN: usize = 13;

/// The size that sends a reservation from the fast path to the slow one.
/// Behind a call, so that the timestamp's test stays a predicted branch
/// and never becomes a data dependency of the reservation on `rdtsc`'s
/// result (see `ctf::layout::event_header_len`).
#[cold]
#[inline(never)]
fn not_fast() -> usize {
    0
}

/// A payload by reference, as one by value: every method the payload's
/// own (a filter asks a reference for its fields and verdicts).
pub(crate) struct Ref<'a, P>(pub(crate) &'a P);

impl<P: Payload> Payload for Ref<'_, P> {
    #[inline(always)]
    fn write(&self, out: &mut [u8]) {
        self.0.write(out)
    }

    #[inline(always)]
    fn ip(&self) -> u64 {
        self.0.ip()
    }

    #[inline(always)]
    fn field(&self, i: usize) -> Val<'_> {
        self.0.field(i)
    }

    #[inline(always)]
    fn verdict(&self, k: usize) -> Option<bool> {
        self.0.verdict(k)
    }

    const DEFERRED: bool = P::DEFERRED;

    #[inline(always)]
    fn keep<C: Config>(&self, slot: ringbuf::Slot<'_, C>, h: usize, id: u32) {
        self.0.keep(slot, h, id)
    }
}

/// [`record_body`] past its fast path: the whole reservation (a new
/// sub-buffer, a retry, a thread's first record, a loss).
#[cold]
#[inline(never)]
fn record_body_slow<C: Config, P: Payload>(
    ch: &Channel<C>,
    now: u64,
    id: u32,
    len: usize,
    write: &P,
) -> bool {
    let r = ch.reserve_at(now, move |ctx| {
        event_header_len(HEADER, id, ctx.ts, ctx.last_ts()).saturating_add(len)
    });
    match r {
        Ok(slot) => {
            let h = slot.len() - len;
            fill(slot, h, id, len, write, ());
            true
        }
        Err(_) => false,
    }
}

/// Writes a reserved record (an `h`-byte event header, then `len` bytes
/// of payload) and commits it.
#[inline(always)]
fn fill<C: Config, P: Payload, T>(
    mut slot: ringbuf::Slot<'_, C>,
    h: usize,
    id: u32,
    len: usize,
    write: &P,
    keep: T,
) {
    let ts = slot.ts();
    let b = slot.bytes();
    // SAFETY: the slot is as long as the size function's answer
    // (`ringbuf::Slot`; a record fits its sub-buffer, at most 1 GiB, so
    // the slot's 32-bit length is exact): the event header of `h` bytes
    // (4 or 13) plus `len`, not wrapped (`record_body` sends a `len`
    // above `isize::MAX` to the slow path, whose saturated sum is larger
    // than any sub-buffer and never reserved). Said here so that the
    // payload's bounds go unchecked.
    unsafe { std::hint::assert_unchecked(b.len() == h + len && h >= 4) };
    // The mark, the payload, the header: see `unfinished`.
    unfinished::mark(b);
    write.write(&mut b[h..]);
    if P::DEFERRED {
        write.keep(slot, h, id);
        return;
    }
    unfinished::finish(b, h, id, ts);
    slot.commit_then(keep);
}

/// How a channel's buffers are shared and moved (see `ringbuf::Sync`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sharing {
    /// Per CPU, reserving inside restartable sequences (no lock prefix).
    PerCpuRseq,
    /// Per CPU, lock-prefixed atomics (where rseq is not registered).
    PerCpuAtomics,
    /// Per thread, non-locked atomics.
    PerThread,
}

impl Sharing {
    /// What `stats` calls it.
    pub fn name(self) -> &'static str {
        match self {
            Sharing::PerCpuRseq => "per-cpu rseq",
            Sharing::PerCpuAtomics => "per-cpu atomics",
            Sharing::PerThread => "per-thread",
        }
    }
}
