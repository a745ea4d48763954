//! # traceclock — the trace clock
//!
//! A 64-bit monotonic count for timestamps: the TSC when the CPU says it is
//! invariant (`constant_tsc` and `nonstop_tsc`), calibrated against
//! CLOCK_MONOTONIC at start-up, otherwise CLOCK_MONOTONIC itself (through the
//! vDSO). The frequency and the offset from the epoch (CLOCK_REALTIME at
//! start) are what trace metadata needs so readers show wall time.
//! `RINGTRACE_CLOCK=monotonic` (or `tsc`) overrides the choice; a whole
//! clock description (`TraceClock::description`, which `ringtrace record`
//! hands to every process it traces) is used as it is, uncalibrated. A
//! program may supply its own clock ([`PluginClock`]: LTTng-UST's clock
//! plugins, through `ringtrace-lttng-ust`).
//!
//! [`synthetic`] is the wait-free synthetic clock of M. Desnoyers and
//! M. Dagenais, *Synchronization for fast and reentrant operating system
//! kernel tracing* (2010), section 5.3, which extends a narrower hardware
//! counter to 64 bits (explained in `synthetic.rs`). Reading a clock
//! never allocates, locks or makes a system call.
//!
//! ## Module map
//!
//! ```text
//!   calibrate (TraceClock: source, frequency, offset) ─► tsc (rdtsc, CPU flags, clock_gettime)
//!   synthetic (the 64-bit extension of a narrow counter; stands alone)
//! ```

#![warn(missing_docs)]

pub mod calibrate;
pub mod synthetic;
pub mod tsc;

pub use calibrate::{Calibration, ClockSource, PluginClock, TraceClock};
