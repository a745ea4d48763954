//! Atomics used by the ring buffer: `std` normally, `loom` under `cfg(loom)`, so
//! the very same frontend and reader code is model-checked.
//!
//! [`Counter`] is the one place that knows the two synchronization flavours
//! (`DESIGN.md` §8):
//!
//! * [`Sync::Smp`]: lock-prefixed read-modify-writes, safe against writers on
//!   other CPUs (per-CPU and global buffers: threads migrate).
//! * [`Sync::Local`]: on x86_64, `cmpxchg`/`xadd` *without* the lock prefix.
//!   One instruction cannot be split by a signal handler, so these are atomic
//!   against the owning thread's own signal handlers, which is all a
//!   per-thread buffer needs. Other threads only *load* these counters (the
//!   reader, statistics); x86 stores become visible in program order (TSO),
//!   so a reader that loads the commit seq with Acquire sees every byte the
//!   writer stored before its commit. Elsewhere (and under loom or Miri) the
//!   plain atomics are used.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};

use crate::config::Sync;
use crate::rseq::{self, Outcome};

/// Why [`Head::cas`] did not move the head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fail {
    /// Another writer moved it first: compute again from the new values.
    Changed,
    /// Rseq buffers: the thread is not on the buffer's CPU.
    Moved,
    /// Rseq buffers: the kernel aborted the critical section.
    Aborted,
}

/// A free-running `u64` counter written with the flavour of atomics the
/// configuration selects. The flavour is a constant of the configuration, so
/// the branch below disappears after inlining.
#[repr(transparent)]
#[derive(Debug)]
pub(crate) struct Counter(AtomicU64);

impl Counter {
    pub(crate) fn new(v: u64) -> Self {
        Counter(AtomicU64::new(v))
    }

    #[inline(always)]
    pub(crate) fn load(&self, order: Ordering) -> u64 {
        self.0.load(order)
    }

    /// Compare-and-swap; `Ok(current)` on success, `Err(actual)` otherwise.
    /// Where [`Head::cas`] has no instructions of its own for
    /// [`Sync::Local`] (loom, Miri, other targets): the plain atomic.
    #[cfg(any(loom, miri, not(target_arch = "x86_64")))]
    #[inline(always)]
    pub(crate) fn cas(&self, sync: Sync, current: u64, new: u64) -> Result<u64, u64> {
        let _ = sync;
        self.0
            .compare_exchange(current, new, Ordering::AcqRel, Ordering::Acquire)
    }

    /// Adds `v` and returns the *previous* value.
    #[inline(always)]
    pub(crate) fn add(&self, sync: Sync, v: u64) -> u64 {
        #[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
        if let Sync::Local = sync {
            let mut prev = v;
            // SAFETY: the pointer comes from a live `AtomicU64`, so it is
            // valid and 8-byte aligned; a per-thread buffer's counter (the
            // `Sync::Local` contract of `local_xadd`).
            unsafe { local_xadd!(self.0.as_ptr(), 0, prev) };
            return prev;
        }
        let _ = sync;
        self.0.fetch_add(v, Ordering::AcqRel)
    }
}

/// `xadd` without the lock prefix: adds the register `$v` to the `u64` at
/// `$base` plus the constant `$off` and leaves the previous value in `$v`.
/// [`Sync::Local`]'s add: one instruction, which a signal handler of this
/// thread runs entirely before or after, never inside, so it is atomic
/// against the only other writers a per-thread buffer's counters have
/// (other threads only load them; see the module doc). No `nomem`: a
/// compiler barrier, which gives the release/acquire ordering that TSO
/// provides in hardware. The constant offset lets a caller address a
/// field from its struct's address without forming the field's first.
/// The caller's `SAFETY` says why `$base + $off` is a live, 8-byte
/// aligned `u64` that only the owning thread and its handlers write.
#[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
macro_rules! local_xadd {
    ($base:expr, $off:expr, $v:ident) => {
        core::arch::asm!(
            "xadd qword ptr [{b} + {o}], {v}",
            b = in(reg) $base,
            o = const $off,
            v = inout(reg) $v,
            options(nostack),
        )
    };
}
#[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
pub(crate) use local_xadd;

/// [`local_xadd!`] of 1 that returns nothing: one `add` to memory (an
/// `xadd` needs its operand set first and returns a value no one reads).
/// The same contract.
#[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
macro_rules! local_inc {
    ($base:expr, $off:expr) => {
        core::arch::asm!(
            "add qword ptr [{b} + {o}], 1",
            b = in(reg) $base,
            o = const $off,
            options(nostack),
        )
    };
}
#[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
pub(crate) use local_inc;

/// Pads and aligns a value to its own cache line (128 bytes: adjacent-line
/// prefetch makes pairs of 64-byte lines behave as one on x86), so that the
/// writers' hot counters, the reader's and those of other buffers never
/// share a line.
#[derive(Debug, Default)]
#[repr(align(128))]
pub(crate) struct CacheAligned<T>(pub(crate) T);

impl<T> core::ops::Deref for CacheAligned<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// The write count `W` and the timestamp of the reservation that last moved
/// it, kept together so that timestamps stay ordered per buffer without an
/// ordered clock read.
///
/// Every reservation reads the clock *unordered* (plain `rdtsc`: it may run
/// before the load of `W`), clamps it to the last timestamp, and moves both
/// words with one compare-and-swap ([`Head::cas`]). The timestamps of records
/// physically consecutive in a buffer are then non-decreasing by
/// construction: a record's timestamp is at least the one stored by the
/// reservation before it, which the CAS proved current. This replaces the
/// `lfence; rdtsc` of an ordered read, whose cost here (the fence waits for
/// every earlier load and locked operation) was most of an SMP event.
///
/// * [`Sync::Smp`] on x86_64: one `lock cmpxchg16b` on the 16-byte pair.
/// * [`Sync::Local`]: two non-locked `cmpxchg`, the timestamp's first, then
///   `W`'s. Only the owning thread and its signal handlers write, and a
///   handler runs whole between two instructions of the thread, so take a
///   handler `H` that reserves while the writer is between its load and its
///   second `cmpxchg`: if `H` ran before the timestamp's `cmpxchg` and moved
///   anything, one of the two fails and the writer retries from what `H`
///   left; if `H` ran between the two, it loaded the writer's timestamp (so
///   its own is not smaller) and moved `W`, so the writer's second
///   `cmpxchg` fails and its retry clamps to `H`'s timestamp. A failed try
///   may leave the timestamp raised without moving `W`: later records are
///   clamped to it, never earlier than a record before them. So timestamps
///   are ordered per buffer whatever the clock does, as for SMP buffers.
/// * [`Sync::Rseq`]: compare both, store the timestamp, then `W`, inside a
///   restartable sequence on the buffer's CPU ([`crate::rseq`]): the same
///   reasoning as for `Local`, with the threads of one CPU in the part of
///   the signal handlers (the kernel aborts the section when it switches
///   to another thread on that CPU, so a section runs whole between two
///   other threads' sections or is restarted).
/// * Elsewhere, and under loom and Miri (which run no inline assembly), the
///   16-byte CAS is emulated under a one-bit spin lock: same semantics, not
///   lock-free. x86_64 is the target the tracer is built for.
#[repr(C, align(16))]
#[derive(Debug)]
pub(crate) struct Head {
    /// Write count `W`; first, so that the pair is (low, high) = (W, ts).
    pub(crate) w: Counter,
    ts: Counter,
    #[cfg(any(loom, miri, not(target_arch = "x86_64")))]
    lock: AtomicBool,
}

impl Head {
    /// Where `W` is in the pair (a buffer file's reader finds it there).
    pub(crate) const W_OFFSET: usize = std::mem::offset_of!(Head, w);

    pub(crate) fn new(w: u64) -> Self {
        Head {
            w: Counter::new(w),
            ts: Counter::new(0),
            #[cfg(any(loom, miri, not(target_arch = "x86_64")))]
            lock: AtomicBool::new(false),
        }
    }

    /// (W, last timestamp): two loads, a guess that the CAS validates.
    #[inline(always)]
    pub(crate) fn load(&self) -> (u64, u64) {
        (
            self.w.load(Ordering::Acquire),
            self.ts.load(Ordering::Relaxed),
        )
    }

    /// Moves (W, last timestamp) from `cur` to `new` if it is still `cur`.
    /// AcqRel, like the CAS on `W` alone. `cpu` is the buffer's CPU, which
    /// [`Sync::Rseq`] buffers check inside their restartable sequence.
    #[inline(always)]
    pub(crate) fn cas(
        &self,
        sync: Sync,
        cpu: u32,
        cur: (u64, u64),
        new: (u64, u64),
    ) -> Result<(), Fail> {
        match sync {
            Sync::Local => {
                // The timestamp first, then W (see the type's doc).
                #[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
                {
                    // SAFETY: `self` is live and starts with the two aligned
                    // words (W, ts) (`repr(C, align(16))`), which only the
                    // owning thread and its signal handlers write (the
                    // `Sync::Local` contract, as for `local_xadd`). Each
                    // non-locked `cmpxchg` is one instruction, which a
                    // handler cannot split; the second runs only if the
                    // first stored, and either's failure jumps out. No
                    // `nomem`: a compiler barrier, as for `local_xadd`.
                    unsafe {
                        core::arch::asm!(
                            "cmpxchg qword ptr [{p} + {ts}], {nts}",
                            "jne {changed}",
                            "mov rax, {w}",
                            "cmpxchg qword ptr [{p}], {nw}",
                            "jne {changed}",
                            p = in(reg) self as *const Head,
                            ts = const std::mem::offset_of!(Head, ts),
                            nts = in(reg) new.1,
                            w = in(reg) cur.0,
                            nw = in(reg) new.0,
                            inout("rax") cur.1 => _,
                            changed = label { return Err(Fail::Changed) },
                            options(nostack),
                        );
                    }
                    Ok(())
                }
                #[cfg(not(all(target_arch = "x86_64", not(loom), not(miri))))]
                {
                    self.ts.cas(sync, cur.1, new.1).map_err(|_| Fail::Changed)?;
                    self.w.cas(sync, cur.0, new.0).map_err(|_| Fail::Changed)?;
                    Ok(())
                }
            }
            Sync::Rseq => {
                // SAFETY: an rseq buffer exists, so the thread's area does
                // (its creation checked `rseq::available`); `self` starts
                // with the two aligned words (W, ts) (`repr(C,
                // align(16))`), which for an rseq buffer only such sections
                // on the buffer's CPU `cpu` write, or a quiescent owner
                // (`Head::cas_quiescent`).
                let o =
                    unsafe { rseq::cmp2_store2(cpu, self as *const Head as *mut u64, cur, new) };
                match o {
                    Outcome::Stored => Ok(()),
                    Outcome::Changed => Err(Fail::Changed),
                    Outcome::Moved => Err(Fail::Moved),
                    Outcome::Aborted => Err(Fail::Aborted),
                }
            }
            Sync::Smp => self.cas_pair(cur, new).map_err(|_| Fail::Changed),
        }
    }

    /// [`Head::cas`] with lock-prefixed atomics whatever the flavour: for
    /// a forced switch while no writer can be inside a reservation (the
    /// caller's contract for rseq buffers: their sections store without a
    /// lock prefix, which a concurrent locked CAS would not see).
    pub(crate) fn cas_quiescent(&self, cur: (u64, u64), new: (u64, u64)) -> Result<(), Fail> {
        self.cas_pair(cur, new).map_err(|_| Fail::Changed)
    }

    #[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
    #[inline(always)]
    fn cas_pair(&self, cur: (u64, u64), new: (u64, u64)) -> Result<(), ()> {
        let (lo, hi): (u64, u64);
        // SAFETY: `self` is 16-byte aligned (`repr(align(16))`) and its first
        // 16 bytes are the two `AtomicU64`s `w` and `ts` (`repr(C)`), valid
        // for the life of `&self`. Every x86_64 CPU this runs on has
        // cmpxchg16b (checked when a buffer is created: `Head::supported`).
        // The lock prefix makes the 16-byte compare-and-swap atomic against
        // every other CPU and a full barrier (what AcqRel needs). Other code
        // only loads the two halves (8-byte loads are atomic on x86_64 and
        // see either the old or the new value of each half), and every
        // writer of either half goes through this CAS. `rbx` is reserved by
        // LLVM, so the new low word is swapped into it around the CAS; the
        // address is in a named register, because a `reg` operand may be
        // given `rbx` itself.
        unsafe {
            core::arch::asm!(
                "xchg {nlo}, rbx",
                "lock cmpxchg16b xmmword ptr [rsi]",
                "mov rbx, {nlo}",
                in("rsi") self as *const Head,
                nlo = inout(reg) new.0 => _,
                in("rcx") new.1,
                inout("rax") cur.0 => lo,
                inout("rdx") cur.1 => hi,
                options(nostack),
            );
        }
        if (lo, hi) == cur {
            Ok(())
        } else {
            Err(())
        }
    }

    #[cfg(any(loom, miri, not(target_arch = "x86_64")))]
    fn cas_pair(&self, cur: (u64, u64), new: (u64, u64)) -> Result<(), ()> {
        while self
            .lock
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            #[cfg(loom)]
            loom::hint::spin_loop();
            #[cfg(not(loom))]
            core::hint::spin_loop();
        }
        let now = (
            self.w.load(Ordering::Relaxed),
            self.ts.load(Ordering::Relaxed),
        );
        let r = if now == cur {
            self.ts.0.store(new.1, Ordering::Relaxed);
            // Release: publishes what this writer did before (as the AcqRel
            // CAS on W does).
            self.w.0.store(new.0, Ordering::Release);
            Ok(())
        } else {
            Err(())
        };
        self.lock.store(false, Ordering::Release);
        r
    }

    /// Whether this machine can run [`Head::cas`] for SMP buffers.
    pub(crate) fn supported() -> bool {
        #[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
        return std::arch::is_x86_feature_detected!("cmpxchg16b");
        #[cfg(not(all(target_arch = "x86_64", not(loom), not(miri))))]
        return true;
    }
}
