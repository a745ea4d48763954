//! The ring-buffer client: sub-buffers are CTF packets written in place
//! (`ctf::layout`), records are a compact event header plus the payload.
//! One client type per (mode, allocation) pair, so that each channel's fast
//! path is compiled for its constant configuration; [`AnyChannel`] picks one
//! with a match.

use std::fs::File;
use std::sync::atomic::{AtomicBool, AtomicU16, Ordering::Relaxed};

use ctf::layout::{event_header_len, write_event_header, write_packet_begin, write_packet_end};
use ctf::types::HeaderKind;
use ringbuf::{
    Alloc, BufferStats, Channel, ChannelAttr, Config, Mode, Order, SubbufBegin, SubbufEnd, Sync,
};
use traceclock::TraceClock;

use crate::record::context::{words, Contexts, Layout};

/// Event header of every channel: 5-bit id and 27-bit timestamp, extended
/// when needed (`ctf::layout`).
pub const HEADER: HeaderKind = HeaderKind::Compact;

/// Byte offset of `packet_size` in the packet context (`ctf::layout`).
const PACKET_SIZE_AT: usize = 56;
/// Byte offset of `content_size`.
const CONTENT_SIZE_AT: usize = 48;

/// The client of one channel.
#[derive(Debug)]
pub struct Client<const OVERWRITE: bool, const PER_THREAD: bool> {
    pub(crate) uuid: [u8; 16],
    pub(crate) stream_id: u32,
    /// Stream instance ids of this channel's buffers start here (unique
    /// within the trace: babeltrace2 joins files of one instance).
    pub(crate) instance_base: u64,
    pub(crate) clock: TraceClock,
    /// Sub-buffer size in bytes.
    pub(crate) subbuf: u64,
    /// What every record carries between its header and its payload (a
    /// [`Layout::code`]): set when the channel is created, and changed only
    /// while no record was ever written to it ([`AnyChannel::set_contexts`]).
    pub(crate) contexts: AtomicU16,
}

impl<const O: bool, const P: bool> Client<O, P> {
    /// The channel's contexts, as the write path uses them.
    #[inline(always)]
    pub(crate) fn contexts(&self) -> Layout {
        Layout::from_code(self.contexts.load(Relaxed))
    }
}

impl<const O: bool, const P: bool> Config for Client<O, P> {
    const MODE: Mode = if O { Mode::Overwrite } else { Mode::Discard };
    const ALLOC: Alloc = if P { Alloc::PerThread } else { Alloc::PerCpu };
    const SYNC: Sync = if P { Sync::Local } else { Sync::Smp };
    /// Per-CPU buffers would count with a lock-prefixed add per record: the
    /// writing threads count instead (`tally.rs`).
    const COUNT_RECORDS: bool = P;

    /// Unordered for every buffer kind: the ring buffer clamps each
    /// timestamp to the previous one (`ringbuf`'s `Head`).
    #[inline(always)]
    fn clock(&self) -> u64 {
        self.clock.now_unordered()
    }

    fn header_size(&self) -> usize {
        ctf::PACKET_HEADER_SIZE
    }

    fn subbuf_begin(&self, h: &mut [u8], b: &SubbufBegin) {
        let size = self.subbuf;
        write_packet_begin(
            h,
            &self.uuid,
            self.stream_id,
            self.instance_base + b.buffer as u64,
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

/// Reads the packet length back from a delivered sub-buffer.
pub(crate) fn packet_bytes(sb: &[u8]) -> usize {
    let bits = u64::from_le_bytes(sb[PACKET_SIZE_AT..PACKET_SIZE_AT + 8].try_into().unwrap());
    ((bits / 8) as usize).min(sb.len())
}

/// What a probe writes after the event header: a closure (the C API, the
/// `tracing` layer) or `event!`'s tuple of fields ([`Encoded`]).
pub(crate) trait Payload {
    /// Fills `out`, exactly the payload's length.
    fn write(&self, out: &mut [u8]);

    /// The address of the code that records the event (the `ip` context);
    /// 0 when the caller does not say.
    #[inline(always)]
    fn ip(&self) -> u64 {
        0
    }
}

impl<F: Fn(&mut [u8])> Payload for F {
    #[inline(always)]
    fn write(&self, out: &mut [u8]) {
        self(out)
    }
}

/// `event!`'s fields and call site: serialized by inlined trait methods,
/// where a closure holding the same code may be left out of line.
pub(crate) struct Encoded<'a, T>(pub(crate) &'a T, pub(crate) u64);

impl<T: crate::record::field::Fields> Payload for Encoded<'_, T> {
    #[inline(always)]
    fn write(&self, out: &mut [u8]) {
        self.0.encode(out)
    }

    #[inline(always)]
    fn ip(&self) -> u64 {
        self.1
    }
}

/// A payload written by a closure, recorded from the code at `ip`.
pub(crate) struct At<F> {
    pub(crate) write: F,
    pub(crate) ip: u64,
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

    #[inline(always)]
    fn ip(&self) -> u64 {
        self.payload.ip()
    }
}

/// Any other set of contexts, written field by field, then the payload.
struct WithContexts<'a, P> {
    set: Contexts,
    payload: &'a P,
}

impl<P: Payload> Payload for WithContexts<'_, P> {
    #[inline(always)]
    fn write(&self, out: &mut [u8]) {
        let (ctx, rest) = out.split_at_mut(self.set.len());
        self.set.write(ctx, self.payload.ip());
        self.payload.write(rest);
    }

    #[inline(always)]
    fn ip(&self) -> u64 {
        self.payload.ip()
    }
}

/// Records one event in the calling thread's buffer of `ch`: header, the
/// channel's contexts (`context.rs`), then the payload written by `write`
/// into exactly `len` bytes. Returns whether it was committed; losses are
/// counted by the buffer. One match on the channel's layout chooses a
/// record path compiled for it (no context: the record as it was before
/// contexts existed).
#[inline(always)]
fn record_in<const O: bool, const T: bool, P: Payload>(
    ch: &Channel<Client<O, T>>,
    now: u64,
    id: u32,
    len: usize,
    write: &P,
) -> bool {
    macro_rules! words {
        ($n:literal) => {
            record_body(
                ch,
                now,
                id,
                8 * $n + len,
                &WithWords::<P, $n> {
                    words: words::<$n>(),
                    payload: write,
                },
            )
        };
    }
    match ch.config().contexts() {
        Layout::None => record_body(ch, now, id, len, write),
        Layout::Words1 => words!(1),
        Layout::Words2 => words!(2),
        Layout::Words4 => words!(4),
        Layout::Other(set) => record_body(
            ch,
            now,
            id,
            set.len() + len,
            &WithContexts {
                set,
                payload: write,
            },
        ),
    }
}

/// The header, then `len` bytes that `write` fills.
#[inline(always)]
fn record_body<C: Config, P: Payload>(
    ch: &Channel<C>,
    now: u64,
    id: u32,
    len: usize,
    write: &P,
) -> bool {
    // `move`: id and len are captured by value, not through stack spills.
    let r = ch.reserve_at(now, move |ctx| {
        event_header_len(HEADER, id, ctx.ts, ctx.last_ts()) + len
    });
    match r {
        Ok(mut slot) => {
            let ts = slot.ts();
            let b = slot.bytes();
            let h = b.len() - len;
            write_event_header(b, HEADER, h, id, ts);
            write.write(&mut b[h..]);
            slot.commit();
            true
        }
        Err(_) => false,
    }
}

/// A channel of any of the four configurations.
#[derive(Debug)]
pub enum AnyChannel {
    /// Discard, per CPU.
    DiscardCpu(Channel<Client<false, false>>),
    /// Discard, per thread.
    DiscardThread(Channel<Client<false, true>>),
    /// Flight recorder, per CPU.
    OverwriteCpu(Channel<Client<true, false>>),
    /// Flight recorder, per thread.
    OverwriteThread(Channel<Client<true, true>>),
}

impl AnyChannel {
    /// Creates the channel.
    pub(crate) fn new(
        overwrite: bool,
        per_thread: bool,
        client: (u32, [u8; 16], u64, TraceClock),
        contexts: Contexts,
        attr: &ChannelAttr,
        name: &str,
    ) -> Result<AnyChannel, ringbuf::Error> {
        let (stream_id, uuid, instance_base, clock) = client;
        macro_rules! mk {
            ($v:ident, $o:literal, $p:literal) => {
                AnyChannel::$v(Channel::new(
                    Client::<$o, $p> {
                        uuid,
                        stream_id,
                        instance_base,
                        clock,
                        subbuf: attr.subbuf_size as u64,
                        contexts: AtomicU16::new(contexts.layout().code()),
                    },
                    attr,
                    name,
                )?)
            };
        }
        Ok(match (overwrite, per_thread) {
            (false, false) => mk!(DiscardCpu, false, false),
            (false, true) => mk!(DiscardThread, false, true),
            (true, false) => mk!(OverwriteCpu, true, false),
            (true, true) => mk!(OverwriteThread, true, true),
        })
    }

    /// A channel outside any session (no metadata, no consumer): the bare
    /// ring-buffer record that benchmarks compare the tracer against.
    pub fn standalone(
        overwrite: bool,
        per_thread: bool,
        attr: &ChannelAttr,
    ) -> Result<AnyChannel, ringbuf::Error> {
        AnyChannel::new(
            overwrite,
            per_thread,
            (0, [0; 16], 0, crate::record::clock::clock()),
            Contexts::NONE,
            attr,
            "standalone",
        )
    }

    /// Records event `id` with a `len`-byte payload that `write` fills: the
    /// probe's work for one channel, without the control data. Returns
    /// whether it was committed (per-CPU channels do not count their
    /// records: the probe does, see [`AnyChannel::counts_records`]).
    #[inline(always)]
    pub fn record<F: Fn(&mut [u8])>(&self, id: u32, len: usize, write: &F) -> bool {
        // Every channel's client reads `clock::clock()`, which exists once a
        // channel does.
        let now = crate::record::clock::now().unwrap_or_default();
        self.record_payload(now, id, len, write)
    }

    /// [`AnyChannel::record`] with the clock read by the caller (`now`, a
    /// reading of [`super::clock::clock`] at any time before the call).
    #[inline(always)]
    pub(crate) fn record_payload<P: Payload>(
        &self,
        now: u64,
        id: u32,
        len: usize,
        write: &P,
    ) -> bool {
        match self {
            AnyChannel::DiscardCpu(c) => record_in(c, now, id, len, write),
            AnyChannel::DiscardThread(c) => record_in(c, now, id, len, write),
            AnyChannel::OverwriteCpu(c) => record_in(c, now, id, len, write),
            AnyChannel::OverwriteThread(c) => record_in(c, now, id, len, write),
        }
    }

    /// The contexts every record of the channel carries.
    pub fn contexts(&self) -> Contexts {
        let bits = match self {
            AnyChannel::DiscardCpu(c) => &c.config().contexts,
            AnyChannel::DiscardThread(c) => &c.config().contexts,
            AnyChannel::OverwriteCpu(c) => &c.config().contexts,
            AnyChannel::OverwriteThread(c) => &c.config().contexts,
        };
        Layout::from_code(bits.load(Relaxed)).contexts()
    }

    /// Changes the contexts of a channel to which no record was ever
    /// written. The caller guarantees that none is being written either:
    /// its session never recorded (or stopped, with a completed grace
    /// period) and cannot start meanwhile (`registry::add_contexts` holds
    /// the control lock that starting takes). Not a memory-safety
    /// precondition (the value is atomic): a record written meanwhile
    /// would only be laid out with the other set.
    pub(crate) fn set_contexts(&self, set: Contexts) {
        let bits = match self {
            AnyChannel::DiscardCpu(c) => &c.config().contexts,
            AnyChannel::DiscardThread(c) => &c.config().contexts,
            AnyChannel::OverwriteCpu(c) => &c.config().contexts,
            AnyChannel::OverwriteThread(c) => &c.config().contexts,
        };
        bits.store(set.layout().code(), Relaxed);
    }

    /// Whether the buffers count their committed records (per-thread
    /// channels); per-CPU channels leave it to the writing threads.
    pub fn counts_records(&self) -> bool {
        matches!(
            self,
            AnyChannel::DiscardThread(_) | AnyChannel::OverwriteThread(_)
        )
    }

    /// Forced switch of every buffer, so that a reader gets the partly
    /// filled sub-buffers too. Call it only when no thread is writing to the
    /// channel (see `ChannelOps::flush_quiescent`).
    pub fn flush_quiescent(&self) -> usize {
        self.ops().flush_quiescent()
    }

    /// Records lost (every cause), summed over the channel's buffers.
    pub fn lost(&self) -> u64 {
        self.written_and_lost().1
    }

    /// Bytes reserved and records lost (every cause), summed over the
    /// channel's buffers.
    pub(crate) fn written_and_lost(&self) -> (u64, u64) {
        let o = self.ops();
        (0..o.buffers())
            .map(|b| o.stats(b))
            .fold((0, o.records_lost_no_buffer()), |(w, l), st| {
                (w + st.bytes_written, l + st.lost.total())
            })
    }

    /// The consumer's view of the channel.
    pub(crate) fn ops(&self) -> &dyn ChannelOps {
        match self {
            AnyChannel::DiscardCpu(c) => c,
            AnyChannel::DiscardThread(c) => c,
            AnyChannel::OverwriteCpu(c) => c,
            AnyChannel::OverwriteThread(c) => c,
        }
    }
}

/// Where a packet goes: the sink gets the bytes and, for file-backed
/// buffers, the file and offset they sit at (for `sendfile`).
pub(crate) trait PacketSink {
    fn packet(&mut self, buffer: usize, bytes: &[u8], file: Option<(&File, u64)>);
}

/// What the consumer and the session do with a channel, whatever its
/// configuration (dynamic dispatch: never on the write path).
pub(crate) trait ChannelOps: std::marker::Sync + Send {
    /// Number of buffers.
    fn buffers(&self) -> usize;
    /// Copies every ready packet of buffer `i` to `sink`, consuming them.
    /// Returns how many.
    fn drain(&self, i: usize, sink: &mut dyn PacketSink) -> usize;
    /// Forced switch of every buffer this thread may switch now (per-thread
    /// buffers: only those whose thread exited).
    fn flush_live(&self) -> usize;
    /// Forced switch of every buffer.
    ///
    /// Precondition (not a memory-safety one, the buffer's counters stay
    /// atomic): no writer is inside a record — the session is stopped and a
    /// grace period has passed — or per-thread buffers might miscount.
    fn flush_quiescent(&self) -> usize;
    /// Walks every complete packet of buffer `i` without consuming,
    /// oldest first (after a forced switch when `switch` is set and the
    /// buffer is an SMP one: another thread never switches a live
    /// per-thread buffer).
    fn snapshot(&self, i: usize, switch: bool, sink: &mut dyn PacketSink) -> usize;
    /// Counters of buffer `i`.
    fn stats(&self, i: usize) -> BufferStats;
    /// Per-thread channels: records dropped because the pool had no free
    /// buffer.
    fn records_lost_no_buffer(&self) -> u64;
    /// Per-thread channels: gives drained buffers of exited threads back to
    /// the pool.
    fn recycle(&self) -> usize;
    /// Whether the reader has consumed everything written to every buffer.
    fn drained(&self) -> bool;
}

impl<C: Config> ChannelOps for Channel<C> {
    fn buffers(&self) -> usize {
        Channel::buffers(self).len()
    }

    fn drain(&self, i: usize, sink: &mut dyn PacketSink) -> usize {
        let b = &Channel::buffers(self)[i];
        let Some(mut rd) = b.reader() else {
            return 0;
        };
        let mut n = 0;
        while let Some(sb) = rd.get_subbuf() {
            let data = sb.data();
            let len = packet_bytes(data);
            let file = b.store().file().map(|f| (f, sb.file_offset()));
            sink.packet(i, &data[..len], file);
            let _ = sb.put();
            n += 1;
        }
        n
    }

    fn flush_live(&self) -> usize {
        self.flush()
    }

    fn flush_quiescent(&self) -> usize {
        Channel::buffers(self)
            .iter()
            // SAFETY: the trait method's precondition: the session is
            // stopped and a grace period has passed (no probe is inside a
            // record, and none enters one: probes see the session inactive),
            // and `control::stop` holds the control lock, which
            // `Session::start` takes, so no writer comes back meanwhile.
            .filter(|b| unsafe { b.writer_unchecked() }.flush())
            .count()
    }

    fn snapshot(&self, i: usize, switch: bool, sink: &mut dyn PacketSink) -> usize {
        let b = &Channel::buffers(self)[i];
        let Some(mut rd) = b.reader() else {
            return 0;
        };
        let walk = |sb: &ringbuf::Subbuf<'_, '_, C>| {
            let data = sb.data();
            let len = packet_bytes(data);
            sink.packet(i, &data[..len], None);
        };
        let st = if switch && C::SYNC == ringbuf::Sync::Smp {
            // SAFETY: an SMP buffer: any thread may switch it.
            unsafe { rd.snapshot_unchecked(Order::OldestFirst, walk) }
        } else {
            rd.snapshot_complete(Order::OldestFirst, walk)
        };
        st.read as usize
    }

    fn stats(&self, i: usize) -> BufferStats {
        Channel::buffers(self)[i].stats()
    }

    fn records_lost_no_buffer(&self) -> u64 {
        self.lost_no_buffer()
    }

    fn recycle(&self) -> usize {
        Channel::recycle(self)
    }

    fn drained(&self) -> bool {
        Channel::buffers(self).iter().all(|b| b.is_drained())
    }
}

/// Whether the session owning a probe is recording.
#[inline(always)]
pub(crate) fn is_active(a: &AtomicBool) -> bool {
    a.load(Relaxed)
}
