//! A process whose trace clock is `CLOCK_MONOTONIC` (`RINGTRACE_CLOCK=monotonic`,
//! what a machine without an invariant TSC gets): `event!`'s records take
//! the probe's general path, which reads that clock. The common path reads
//! `rdtsc` alone and is taken only where the clock is the TSC
//! (`ProbeList::screened`); a record of it here would carry a TSC value,
//! far from the monotonic readings around the loop. The clock is the
//! process's: this binary has no other test.

mod common;

use common::*;
use ringtrace::{event, ChannelConfig, Level, Session};

fn monotonic_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec to fill.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    assert_eq!(r, 0);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

#[test]
fn events_read_the_monotonic_clock_when_it_is_the_trace_clock() {
    // Before the first channel, which chooses the process's clock; no other
    // thread of this binary reads the environment meanwhile.
    std::env::set_var("RINGTRACE_CLOCK", "monotonic");
    let dir = tmpdir("monotonic-clock");
    let s = Session::builder("monotonic-clock")
        .output(&dir)
        .channel(ChannelConfig::new("ch").per_thread())
        .enable("monoclk:plain")
        // One comparison: the call site's screen tests it.
        .enable_where(None, "monoclk:screened", Level::Debug, Some("v >= 500"))
        .create()
        .unwrap();
    s.start();
    let before = monotonic_ns();
    for i in 0..1000u64 {
        event!(monoclk, plain, v: u64 = i);
        event!(monoclk, screened, v: u64 = i);
    }
    let after = monotonic_ns();
    s.stop().unwrap();
    s.destroy().unwrap();
    let (evs, lost) = read_all(&dir);
    let count = |name: &str| evs.iter().filter(|e| e.name == name).count();
    assert_eq!(
        (count("monoclk:plain"), count("monoclk:screened"), lost),
        (1000, 500, 0)
    );
    for e in &evs {
        assert!(
            (before..=after).contains(&e.ts),
            "{} at {}: not a monotonic reading between {before} and {after}",
            e.name,
            e.ts
        );
    }
    assert!(evs.windows(2).all(|w| w[0].ts <= w[1].ts));
}
