//! A channel of any of the six buffer kinds (`client::kind`), and the
//! route a record takes through it. The kind and the channel's context
//! layout make one number, the route, which the write path loads and
//! jumps on once: each of its thirty arms is a record path compiled for
//! its constant kind and layout (the kind's match and then the layout's
//! were two loads and two jumps: 192 instructions per event where the
//! route takes 186; BENCHMARKS.md, "Instructions per event"). A channel
//! whose session is not recording has the route [`STOPPED`], whose arm
//! records nothing: the probe's path needs no test of the session's flag
//! of its own.

use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU32, Ordering::Relaxed};

use ringbuf::{Channel, ChannelAttr, Config, ReadSide};

use crate::client::{kind, record_layout, Client, Payload, Sharing, StreamIds};
use crate::context::{Contexts, Layout};
use crate::ops::ChannelOps;

/// The channel of an [`AnyChannel`], one variant per buffer kind.
#[derive(Debug)]
pub enum ByKind {
    /// Discard, per CPU, lock-prefixed atomics.
    DiscardCpu(Channel<Client<kind::DiscardCpu>>),
    /// Discard, per CPU, restartable sequences.
    DiscardCpuRseq(Channel<Client<kind::DiscardCpuRseq>>),
    /// Discard, per thread.
    DiscardThread(Channel<Client<kind::DiscardThread>>),
    /// Flight recorder, per CPU, lock-prefixed atomics.
    OverwriteCpu(Channel<Client<kind::OverwriteCpu>>),
    /// Flight recorder, per CPU, restartable sequences.
    OverwriteCpuRseq(Channel<Client<kind::OverwriteCpuRseq>>),
    /// Flight recorder, per thread.
    OverwriteThread(Channel<Client<kind::OverwriteThread>>),
}

/// A channel of any of the six kinds, with its route.
#[derive(Debug)]
pub struct AnyChannel {
    /// `8 × kind + layout`: the variant's place in [`ByKind`] (0 to 5, set
    /// with it and never changed) and the low byte of the channel's
    /// [`Layout::code`] (0 to 4, changed with it by
    /// [`AnyChannel::set_contexts`]); or [`STOPPED`] while the channel
    /// does not record ([`AnyChannel::set_recording`]). A 32-bit word:
    /// the jump's index is loaded without a byte's widening.
    route: AtomicU32,
    by_kind: ByKind,
}

/// `$body` with `$c` bound to the channel of whichever variant `$ch` is:
/// each arm is compiled for its constant configuration.
macro_rules! each {
    ($ch:expr, $c:ident => $body:expr) => {
        match $ch {
            ByKind::DiscardCpu($c) => $body,
            ByKind::DiscardCpuRseq($c) => $body,
            ByKind::DiscardThread($c) => $body,
            ByKind::OverwriteCpu($c) => $body,
            ByKind::OverwriteCpuRseq($c) => $body,
            ByKind::OverwriteThread($c) => $body,
        }
    };
}

/// One arm of [`routes!`]: `$arm!(c => L)` with `c` bound to the channel
/// of variant `$v`, which the route says `$ch` is.
macro_rules! route_arm {
    ($ch:expr, $c:ident, $arm:ident, $v:ident, $l:literal) => {{
        let ByKind::$v($c) = &$ch.by_kind else {
            // SAFETY: the route's kind part is the variant's place, set
            // with the variant in `new` and never changed (`set_contexts`
            // changes the layout part only).
            unsafe { std::hint::unreachable_unchecked() }
        };
        $arm!($c => $l)
    }};
}

/// The jump on a channel's route: `$arm!(c => L)` with `c` bound to the
/// channel of the route's kind and `L` its layout's code, each of the
/// thirty arms compiled for its constant kind and layout; `$stopped` for
/// [`STOPPED`]. The routes `route_of` makes and `STOPPED` are the only
/// values ever stored: the kind's place times 8 plus the layout's code
/// (`Layout::code`'s low byte, 0 to 4). No other arm, so the jump needs
/// no range test before its table.
macro_rules! routes {
    ($ch:expr, $stopped:expr, $c:ident, $arm:ident) => {{
        match $ch.route.load(Relaxed) {
            STOPPED => $stopped,
            0 => route_arm!($ch, $c, $arm, DiscardCpu, 0),
            1 => route_arm!($ch, $c, $arm, DiscardCpu, 1),
            2 => route_arm!($ch, $c, $arm, DiscardCpu, 2),
            3 => route_arm!($ch, $c, $arm, DiscardCpu, 3),
            4 => route_arm!($ch, $c, $arm, DiscardCpu, 4),
            8 => route_arm!($ch, $c, $arm, DiscardCpuRseq, 0),
            9 => route_arm!($ch, $c, $arm, DiscardCpuRseq, 1),
            10 => route_arm!($ch, $c, $arm, DiscardCpuRseq, 2),
            11 => route_arm!($ch, $c, $arm, DiscardCpuRseq, 3),
            12 => route_arm!($ch, $c, $arm, DiscardCpuRseq, 4),
            16 => route_arm!($ch, $c, $arm, DiscardThread, 0),
            17 => route_arm!($ch, $c, $arm, DiscardThread, 1),
            18 => route_arm!($ch, $c, $arm, DiscardThread, 2),
            19 => route_arm!($ch, $c, $arm, DiscardThread, 3),
            20 => route_arm!($ch, $c, $arm, DiscardThread, 4),
            24 => route_arm!($ch, $c, $arm, OverwriteCpu, 0),
            25 => route_arm!($ch, $c, $arm, OverwriteCpu, 1),
            26 => route_arm!($ch, $c, $arm, OverwriteCpu, 2),
            27 => route_arm!($ch, $c, $arm, OverwriteCpu, 3),
            28 => route_arm!($ch, $c, $arm, OverwriteCpu, 4),
            32 => route_arm!($ch, $c, $arm, OverwriteCpuRseq, 0),
            33 => route_arm!($ch, $c, $arm, OverwriteCpuRseq, 1),
            34 => route_arm!($ch, $c, $arm, OverwriteCpuRseq, 2),
            35 => route_arm!($ch, $c, $arm, OverwriteCpuRseq, 3),
            36 => route_arm!($ch, $c, $arm, OverwriteCpuRseq, 4),
            40 => route_arm!($ch, $c, $arm, OverwriteThread, 0),
            41 => route_arm!($ch, $c, $arm, OverwriteThread, 1),
            42 => route_arm!($ch, $c, $arm, OverwriteThread, 2),
            43 => route_arm!($ch, $c, $arm, OverwriteThread, 3),
            44 => route_arm!($ch, $c, $arm, OverwriteThread, 4),
            // SAFETY: as above, and the gaps (a layout code's low byte is
            // at most 4) are no route either.
            _ => unsafe { std::hint::unreachable_unchecked() },
        }
    }};
}

/// A channel's read sides, one per buffer in the order of its buffers:
/// whoever holds them reads the channel (`ChannelOps::drain`, `snapshot`).
pub type ReadSides = Box<[ReadSide]>;

/// The route of a channel that does not record: no kind's (a layout's
/// code is at most 4).
const STOPPED: u32 = 7;

/// The route of a channel of kind `kind` (its place in [`ByKind`]) whose
/// layout has code `code`.
const fn route_of(kind: u8, code: u16) -> u32 {
    kind as u32 * 8 + (code & 0xff) as u32
}

impl ByKind {
    /// The variant's place in the enum: the route's kind part.
    fn index(&self) -> u8 {
        match self {
            ByKind::DiscardCpu(_) => 0,
            ByKind::DiscardCpuRseq(_) => 1,
            ByKind::DiscardThread(_) => 2,
            ByKind::OverwriteCpu(_) => 3,
            ByKind::OverwriteCpuRseq(_) => 4,
            ByKind::OverwriteThread(_) => 5,
        }
    }
}

impl AnyChannel {
    /// Creates the channel and its read sides.
    pub fn new(
        overwrite: bool,
        sharing: Sharing,
        ids: StreamIds,
        contexts: Contexts,
        attr: &ChannelAttr,
        name: &str,
    ) -> Result<(AnyChannel, ReadSides), ringbuf::Error> {
        let code = contexts.layout().code();
        // A channel is proof that the process's clock exists
        // (`AnyChannel::now`): its own, if it is the first.
        crate::clock::ensure(ids.clock);
        macro_rules! mk {
            ($v:ident) => {{
                let (ch, read) = Channel::new(
                    Client::<kind::$v> {
                        ids,
                        subbuf: attr.subbuf_size as u64,
                        contexts: AtomicU16::new(code),
                        kind: PhantomData,
                    },
                    attr,
                    name,
                )?;
                (ByKind::$v(ch), read)
            }};
        }
        let (by_kind, read) = match (overwrite, sharing) {
            (false, Sharing::PerCpuAtomics) => mk!(DiscardCpu),
            (false, Sharing::PerCpuRseq) => mk!(DiscardCpuRseq),
            (false, Sharing::PerThread) => mk!(DiscardThread),
            (true, Sharing::PerCpuAtomics) => mk!(OverwriteCpu),
            (true, Sharing::PerCpuRseq) => mk!(OverwriteCpuRseq),
            (true, Sharing::PerThread) => mk!(OverwriteThread),
        };
        let ch = AnyChannel {
            route: AtomicU32::new(route_of(by_kind.index(), code)),
            by_kind,
        };
        Ok((ch, read))
    }

    /// Whether records are written (`true` from [`AnyChannel::new`]): a
    /// channel whose session stopped records nothing, and its writers
    /// skip the reservation (the session's flag is one store, this one
    /// more per channel). Either way a record begun before the change may
    /// still complete: the caller waits for a grace period where that
    /// matters (stopping a session).
    pub fn set_recording(&self, on: bool) {
        let route = if on {
            let code = each!(&self.by_kind, c => &c.config().contexts).load(Relaxed);
            route_of(self.by_kind.index(), code)
        } else {
            STOPPED
        };
        self.route.store(route, Relaxed);
    }

    /// Whether the channel records (see [`AnyChannel::set_recording`]).
    pub fn is_recording(&self) -> bool {
        self.route.load(Relaxed) != STOPPED
    }

    /// The channel, by kind.
    pub fn by_kind(&self) -> &ByKind {
        &self.by_kind
    }

    /// How the channel's buffers are shared.
    pub fn sharing(&self) -> Sharing {
        match self.by_kind {
            ByKind::DiscardCpu(_) | ByKind::OverwriteCpu(_) => Sharing::PerCpuAtomics,
            ByKind::DiscardCpuRseq(_) | ByKind::OverwriteCpuRseq(_) => Sharing::PerCpuRseq,
            ByKind::DiscardThread(_) | ByKind::OverwriteThread(_) => Sharing::PerThread,
        }
    }

    /// A channel outside any session (no metadata, no consumer): the bare
    /// ring-buffer record that benchmarks compare the tracer against.
    /// Per-CPU: lock-prefixed atomics (see [`AnyChannel::standalone_with`]).
    pub fn standalone(
        overwrite: bool,
        per_thread: bool,
        attr: &ChannelAttr,
    ) -> Result<(AnyChannel, ReadSides), ringbuf::Error> {
        let sharing = if per_thread {
            Sharing::PerThread
        } else {
            Sharing::PerCpuAtomics
        };
        AnyChannel::standalone_with(overwrite, sharing, attr)
    }

    /// [`AnyChannel::standalone`] with any sharing.
    pub fn standalone_with(
        overwrite: bool,
        sharing: Sharing,
        attr: &ChannelAttr,
    ) -> Result<(AnyChannel, ReadSides), ringbuf::Error> {
        AnyChannel::new(
            overwrite,
            sharing,
            StreamIds {
                stream_id: 0,
                uuid: [0; 16],
                instance_base: 0,
                clock: crate::clock::clock(),
            },
            Contexts::NONE,
            attr,
            "standalone",
        )
    }

    /// Records event `id` with a `len`-byte payload that `write` fills: the
    /// probe's work for one channel, without the control data. Returns
    /// whether it was committed (per-CPU channels with atomics do not count
    /// their records: the probe does, see [`AnyChannel::counts_records`]).
    #[inline(always)]
    pub fn record<F: Fn(&mut [u8])>(&self, id: u32, len: usize, write: &F) -> bool {
        self.record_payload(self.now(), id, len, write)
    }

    /// [`AnyChannel::record`] with the clock read by the caller (`now`, a
    /// reading of [`super::clock::clock`] at any time before the call).
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn record_payload<P: Payload>(&self, now: u64, id: u32, len: usize, write: &P) -> bool {
        self.route::<P, false>(now, id, len, write)
    }

    /// [`AnyChannel::record_payload`] for a probe: whether the record was
    /// committed *and* the writing thread must count it (per-CPU channels
    /// with atomics, `tally.rs`). A constant `false` for the other kinds,
    /// so that their probes carry no test of a tally they do not have.
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn record_to_tally<P: Payload>(&self, now: u64, id: u32, len: usize, write: &P) -> bool {
        self.route::<P, true>(now, id, len, write)
    }

    /// The record path of the channel's route: whether the record was
    /// committed (and, with `TALLY`, is the writing thread's to count).
    // Inlined whole into the probe in optimized builds (the speed of the
    // write path); in debug builds left as calls: unoptimized code gives
    // every inlined local its own stack slot, and the thirty arms inlined
    // at each event made one test function's frame 3.6 MB (a stack
    // overflow on a 2 MiB thread).
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn route<P: Payload, const TALLY: bool>(
        &self,
        now: u64,
        id: u32,
        len: usize,
        write: &P,
    ) -> bool {
        macro_rules! arm {
            ($c:ident => $l:literal) => {
                record_layout::<_, P, $l>($c, now, id, len, write)
                    && (!TALLY || !counts_records($c))
            };
        }
        routes!(self, false, c, arm)
    }

    /// [`AnyChannel::record_to_tally`]'s common path alone, with no call
    /// but its last (`client::record_layout_fast`): `Ok` when the record
    /// was written (or the channel records nothing), with `guard` dropped
    /// after its commit and the record counted in `tally` (per-CPU
    /// channels with atomics); `guard` handed back when nothing was done,
    /// for the whole path to take over.
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn record_fast<P: Payload>(
        &self,
        id: &u32,
        len: usize,
        write: &P,
        tally: &Option<std::sync::Arc<crate::tally::Tally>>,
        guard: crate::rcu::Guard,
    ) -> Result<(), crate::rcu::Guard> {
        macro_rules! arm {
            ($c:ident => $l:literal) => {
                crate::client::record_layout_fast::<_, P, $l>(
                    $c,
                    *id,
                    len,
                    write,
                    tally.as_deref(),
                    guard,
                )
            };
        }
        // The probe's id and tally by reference: loaded in the arms that
        // use them, not held in registers across the jump.
        routes!(self, Ok(()), c, arm)
    }

    /// A reading of the process's clock for a record of this channel
    /// (unordered: the ring buffer clamps it). No test of whether the
    /// clock exists: the channel is proof that it does.
    #[inline(always)]
    pub(crate) fn now(&self) -> u64 {
        // SAFETY: `self` exists, so `new` returned, after `clock::ensure`
        // (or an earlier setting). The setting happened before the
        // channel was made, and the channel reached this thread through
        // a publication (an Acquire load of a probe list,
        // `rcu::Published`) or from the thread that made it.
        unsafe { crate::clock::now_set() }
    }

    /// The contexts every record of the channel carries.
    pub fn contexts(&self) -> Contexts {
        let bits = each!(&self.by_kind, c => &c.config().contexts);
        Layout::from_code(bits.load(Relaxed)).contexts()
    }

    /// Changes the contexts of a channel to which no record was ever
    /// written. The caller guarantees that none is being written either:
    /// its session never recorded (or stopped, with a completed grace
    /// period) and cannot start meanwhile (`registry::add_contexts` holds
    /// the control lock that starting takes). Not a memory-safety
    /// precondition (the values are atomic, and each arm writes a whole
    /// layout: its own, or for `Other` the client's set, whatever it is
    /// then): a record written meanwhile would only be laid out with the
    /// other set.
    pub fn set_contexts(&self, set: Contexts) {
        let code = set.layout().code();
        let bits = each!(&self.by_kind, c => &c.config().contexts);
        bits.store(code, Relaxed);
        // A stopped channel stays stopped: its route is set when it
        // records again.
        if self.is_recording() {
            self.route
                .store(route_of(self.by_kind.index(), code), Relaxed);
        }
    }

    /// Whether the buffers count their committed records (per-thread and
    /// per-CPU rseq channels); per-CPU channels with atomics leave it to
    /// the writing threads (`tally.rs`).
    pub fn counts_records(&self) -> bool {
        self.sharing() != Sharing::PerCpuAtomics
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
    pub fn written_and_lost(&self) -> (u64, u64) {
        let o = self.ops();
        (0..o.buffers())
            .map(|b| o.stats(b))
            .fold((0, o.records_lost_no_buffer()), |(w, l), st| {
                (w + st.bytes_written, l + st.lost.total())
            })
    }

    /// The consumer's view of the channel.
    pub fn ops(&self) -> &dyn ChannelOps {
        each!(&self.by_kind, c => c)
    }
}

/// Whether `ch`'s buffers count their own records (a constant of its kind).
#[inline(always)]
fn counts_records<C: Config>(_ch: &Channel<C>) -> bool {
    C::COUNT_RECORDS
}

/// Whether the session owning a probe is recording.
#[inline(always)]
pub fn is_active(a: &AtomicBool) -> bool {
    a.load(Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A standalone channel of two 4 KiB sub-buffers per buffer.
    fn small(overwrite: bool, sharing: Sharing) -> (AnyChannel, ReadSides) {
        let attr = ChannelAttr {
            subbuf_size: 4096,
            num_subbuf: 2,
            ..ChannelAttr::default()
        };
        AnyChannel::standalone_with(overwrite, sharing, &attr).unwrap()
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "a channel maps its buffers and calibrates the clock: not under Miri"
    )]
    fn a_payload_too_long_for_any_sub_buffer_is_counted_lost_and_never_written() {
        for sharing in [Sharing::PerThread, Sharing::PerCpuAtomics] {
            let (ch, _read) = small(true, sharing);
            let never = |_: &mut [u8]| panic!("a refused record is never written");
            // Two lengths whose sum with the header would wrap, two that
            // do not but are larger than a sub-buffer (the first past
            // `isize::MAX`, sent straight to the slow path), then one that
            // fits.
            for (k, len) in [usize::MAX, usize::MAX - 12, isize::MAX as usize + 1, 4096]
                .into_iter()
                .enumerate()
            {
                assert!(!ch.record(1, len, &never), "{len}");
                assert_eq!(ch.lost(), k as u64 + 1, "{len}");
            }
            assert!(ch.record(1, 8, &|out: &mut [u8]| out
                .copy_from_slice(&7u64.to_le_bytes())));
            assert_eq!(ch.lost(), 4);
        }
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "a channel maps its buffers and calibrates the clock: not under Miri"
    )]
    fn a_stopped_channel_writes_nothing_and_records_again_in_its_latest_layout() {
        let u64_record = |ch: &AnyChannel, v: u64| {
            ch.record(1, 8, &|out: &mut [u8]| {
                out.copy_from_slice(&v.to_le_bytes())
            })
        };
        for overwrite in [false, true] {
            for sharing in [Sharing::PerThread, Sharing::PerCpuAtomics] {
                let (ch, _read) = small(overwrite, sharing);
                let kind = u32::from(ch.by_kind.index());
                assert!(ch.is_recording());
                assert!(u64_record(&ch, 1));
                let written = ch.written_and_lost();
                ch.set_recording(false);
                assert!(!ch.is_recording());
                assert_eq!(ch.route.load(Relaxed), STOPPED);
                for v in 0..100 {
                    assert!(!u64_record(&ch, v));
                }
                // Nothing reserved, nothing counted lost: not recording is
                // not a loss.
                assert_eq!(ch.written_and_lost(), written);
                // Contexts chosen while stopped take effect at the start.
                ch.set_contexts(Contexts::DEFAULT);
                assert_eq!(ch.route.load(Relaxed), STOPPED);
                ch.set_recording(true);
                assert_eq!(ch.route.load(Relaxed), kind * 8 + 1);
                assert!(u64_record(&ch, 2));
                let (w, lost) = ch.written_and_lost();
                // The compact header, vpid and vtid (4 bytes each), the u64.
                assert_eq!((w - written.0, lost), (4 + 8 + 8, written.1));
            }
        }
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "a channel maps its buffers and calibrates the clock: not under Miri"
    )]
    fn every_kind_and_layout_has_its_route_and_contexts_change_only_the_layout() {
        for overwrite in [false, true] {
            for sharing in [Sharing::PerThread, Sharing::PerCpuAtomics] {
                let (ch, _read) = small(overwrite, sharing);
                let kind = u32::from(ch.by_kind.index());
                assert_eq!(ch.route.load(Relaxed), kind * 8);
                for (set, layout) in [
                    (Contexts::DEFAULT, 1),
                    (Contexts::from_bits(0b0111), 2),
                    (Contexts::from_bits(0b1111), 3),
                    (Contexts::parse("all").unwrap(), 4),
                    (Contexts::NONE, 0),
                ] {
                    ch.set_contexts(set);
                    assert_eq!(ch.route.load(Relaxed), kind * 8 + layout);
                    assert_eq!(ch.contexts(), set);
                    assert_eq!(u32::from(ch.by_kind.index()), kind);
                }
            }
        }
    }
}
