//! The process's trace clock: detected and calibrated once, by the control
//! side (creating the first channel); read by the probes.

use std::sync::OnceLock;

use traceclock::TraceClock;

static CLOCK: OnceLock<TraceClock> = OnceLock::new();

/// The process's trace clock, detected and calibrated once. Not for the
/// recording path: the first call calibrates (it sleeps).
pub fn clock() -> TraceClock {
    *CLOCK.get_or_init(TraceClock::detect)
}

/// Makes `c` the process's trace clock, if none was chosen yet (before
/// the first channel); says whether it is now.
pub fn set(c: TraceClock) -> bool {
    CLOCK.set(c).is_ok()
}

/// A reading of [`clock`] (unordered: the ring buffer clamps it), or `None`
/// before the clock exists, that is before any channel. One load and the
/// clock read: no system call once calibrated.
#[inline(always)]
#[doc(hidden)]
pub fn now() -> Option<u64> {
    CLOCK.get().map(|c| c.now_unordered())
}

/// A reading of the process's clock, without testing that it exists
/// (what [`AnyChannel::now`](crate::any_channel::AnyChannel::now) reads:
/// one test of the clock's kind, the TSC read inline, and the reading).
///
/// # Safety
/// The clock was set ([`set`], [`clock`] or [`ensure`] returned) before,
/// and that is visible to the calling thread.
#[inline(always)]
pub(crate) unsafe fn now_set() -> u64 {
    // SAFETY: set, says the caller; a `OnceLock` once set stays set.
    unsafe { CLOCK.get().unwrap_unchecked() }.now_unordered()
}

/// Whether the process's clock is chosen and is the TSC.
pub(crate) fn is_tsc() -> bool {
    CLOCK
        .get()
        .is_some_and(|c| matches!(c.source, traceclock::ClockSource::Tsc))
}

/// Makes `c` the process's clock unless one was chosen: every channel's
/// creation, so that a channel is proof of a clock.
pub(crate) fn ensure(c: TraceClock) {
    let _ = CLOCK.set(c);
}
