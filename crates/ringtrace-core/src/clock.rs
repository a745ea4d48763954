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

/// A reading of the process's clock for a probe of `_channel`: the
/// channel proves the clock exists ([`AnyChannel::new`] makes sure of it
/// before a channel is), so no test of whether it does. One test of the
/// clock's kind (the TSC, read inline) and the reading.
///
/// [`AnyChannel::new`]: crate::any_channel::AnyChannel::new
#[inline(always)]
pub(crate) fn now_for(_channel: &crate::any_channel::AnyChannel) -> u64 {
    // SAFETY: `_channel` exists, so `AnyChannel::new` returned, after
    // `CLOCK` was set (by it or before it); a `OnceLock` once set stays
    // set. Its contents were written before the channel was made, and the
    // channel reached this thread through a publication (an Acquire load
    // of the probe list, `rcu::Published`) or from the thread that made
    // it: they are visible here.
    unsafe { CLOCK.get().unwrap_unchecked() }.now_unordered()
}

/// Makes `c` the process's clock unless one was chosen: every channel's
/// creation, so that a channel is proof of a clock ([`now_for`]).
pub(crate) fn ensure(c: TraceClock) {
    let _ = CLOCK.set(c);
}
