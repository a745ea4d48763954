//! Atomics used by the ring buffer: `std` normally, `loom` under `cfg(loom)`, so
//! the very same frontend and reader code is model-checked.
//!
//! [`Counter`] is the one place that knows the two synchronization flavours of
//! the paper (`003_…` section 5):
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
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use crate::config::Sync;

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
    #[inline(always)]
    pub(crate) fn cas(&self, sync: Sync, current: u64, new: u64) -> Result<u64, u64> {
        #[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
        if let Sync::Local = sync {
            let prev: u64;
            // SAFETY: the pointer comes from a live `AtomicU64`, so it is valid
            // and 8-byte aligned. Without the lock prefix the instruction is
            // still one instruction: a signal handler of this thread runs either
            // before or after it, never inside. `Sync::Local` is only selected
            // for per-thread buffers, whose counters no other thread modifies
            // (see the module doc); the asm has no `nomem`, so it is also a
            // compiler barrier, which gives the release/acquire ordering that
            // TSO provides in hardware.
            unsafe {
                core::arch::asm!(
                    "cmpxchg qword ptr [{p}], {new}",
                    p = in(reg) self.0.as_ptr(),
                    new = in(reg) new,
                    inout("rax") current => prev,
                    options(nostack),
                );
            }
            return if prev == current { Ok(prev) } else { Err(prev) };
        }
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
            // SAFETY: as for `cas`: a valid aligned pointer, one uninterruptible
            // instruction, only the owning thread (and its signal handlers)
            // modifies the counter.
            unsafe {
                core::arch::asm!(
                    "xadd qword ptr [{p}], {v}",
                    p = in(reg) self.0.as_ptr(),
                    v = inout(reg) prev,
                    options(nostack),
                );
            }
            return prev;
        }
        let _ = sync;
        self.0.fetch_add(v, Ordering::AcqRel)
    }
}

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
