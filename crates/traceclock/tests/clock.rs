//! The trace clock: source selection, calibration, epoch offset.

use std::time::Duration;

use traceclock::calibrate::calibrate_tsc;
use traceclock::tsc::{cpuinfo_has_invariant_tsc, monotonic_ns, realtime_ns};
use traceclock::{ClockSource, TraceClock};

#[test]
fn invariant_tsc_needs_both_flags() {
    assert!(cpuinfo_has_invariant_tsc(
        "processor: 0\nflags\t\t: fpu tsc constant_tsc nonstop_tsc sse\n"
    ));
    assert!(!cpuinfo_has_invariant_tsc(
        "flags\t\t: fpu tsc constant_tsc sse\n"
    ));
    assert!(!cpuinfo_has_invariant_tsc(
        "flags\t\t: fpu tsc nonstop_tsc\n"
    ));
    assert!(!cpuinfo_has_invariant_tsc(""));
}

#[test]
fn monotonic_clock_maps_to_wall_time() {
    let c = TraceClock::monotonic();
    assert_eq!((c.source, c.freq), (ClockSource::Monotonic, 1_000_000_000));
    assert!((0..1_000_000_000).contains(&c.offset));
    let wall = c.to_epoch_ns(c.now());
    let rt = realtime_ns() as i128;
    assert!(
        (wall - rt).abs() < 5_000_000,
        "wall {wall} vs realtime {rt}"
    );
}

#[cfg(target_arch = "x86_64")]
#[test]
fn tsc_calibration_agrees_with_monotonic() {
    if !traceclock::tsc::invariant_tsc() {
        eprintln!("SKIPPED: no invariant TSC on this machine");
        return;
    }
    let cal = calibrate_tsc(5, Duration::from_millis(20));
    eprintln!(
        "TSC: {} Hz ± {:.1} ppm over {} rounds",
        cal.freq, cal.error_ppm, cal.rounds
    );
    // Check against a longer, independent interval. A preemption between
    // the two reads of a pair skews one attempt; the best of three counts.
    let rel = (0..3)
        .map(|_| {
            let (t0, m0) = (traceclock::tsc::rdtsc_ordered(), monotonic_ns());
            std::thread::sleep(Duration::from_millis(200));
            let (t1, m1) = (traceclock::tsc::rdtsc_ordered(), monotonic_ns());
            let f = (t1 - t0) as f64 * 1e9 / (m1 - m0) as f64;
            (f - cal.freq as f64).abs() / f
        })
        .fold(f64::MAX, f64::min);
    assert!(
        rel < 0.005,
        "calibrated {} Hz is {rel} away from CLOCK_MONOTONIC",
        cal.freq
    );
    let clock = TraceClock::detect();
    let wall = clock.to_epoch_ns(clock.now());
    let rt = realtime_ns() as i128;
    assert!(
        (wall - rt).abs() < 5_000_000,
        "wall {wall} vs realtime {rt}"
    );
}

#[test]
fn environment_forces_the_monotonic_clock() {
    // Run in a child process so the variable does not leak into other tests.
    if std::env::var_os("TRACECLOCK_CHILD").is_some() {
        assert_eq!(TraceClock::detect().source, ClockSource::Monotonic);
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let st = std::process::Command::new(exe)
        .args([
            "environment_forces_the_monotonic_clock",
            "--exact",
            "--nocapture",
        ])
        .env("TRACECLOCK_CHILD", "1")
        .env("RINGTRACE_CLOCK", "monotonic")
        .status()
        .unwrap();
    assert!(st.success());
}

#[test]
fn a_clock_description_reads_back_to_the_same_clock() {
    let c = TraceClock::detect();
    let back = TraceClock::from_description(&c.description()).unwrap();
    assert_eq!(
        (back.source, back.freq, back.offset_s, back.offset),
        (c.source, c.freq, c.offset_s, c.offset)
    );
    assert_eq!(
        back.calibration.map(|x| x.error_ppm),
        c.calibration.map(|x| x.error_ppm)
    );
    assert_eq!(back.description(), c.description());
    let m = TraceClock::monotonic();
    assert_eq!(
        TraceClock::from_description(&m.description()).map(|b| (b.offset_s, b.offset)),
        Some((m.offset_s, m.offset))
    );
    for bad in [
        "",
        "tsc",
        "monotonic:1000000000:1:2",
        "monotonic:5:1:2:0",
        "monotonic:1000000000:1:1000000000:0",
        "monotonic:1000000000:1:2:0:extra",
        "monotonic:1000000000:1:2:NaN",
        "hpet:1000:1:2:0",
    ] {
        assert!(TraceClock::from_description(bad).is_none(), "{bad}");
    }
}

/// A program's own clock: milliseconds of CLOCK_MONOTONIC, as LTTng-UST's
/// clock-override example counts.
extern "C" fn millis() -> u64 {
    monotonic_ns() / 1_000_000
}

#[test]
fn a_plugin_clock_is_read_through_its_function_and_maps_to_wall_time() {
    let p = traceclock::PluginClock {
        read: millis,
        name: "my_clock",
        description: "milliseconds",
    };
    let c = TraceClock::plugin(p, 1000);
    assert_eq!(
        (c.source, c.freq, c.calibration),
        (ClockSource::Plugin(p), 1000, None)
    );
    let (a, b) = (c.now(), c.now_unordered());
    let m = millis();
    assert!(a <= b && b <= m && m - a < 1000, "{a} {b} {m}");
    assert!((0..1000).contains(&c.offset));
    // Its wall time is the realtime clock's, to its tick and the bracket.
    let wall = c.to_epoch_ns(c.now());
    let rt = realtime_ns() as i128;
    assert!((wall - rt).abs() < 5_000_000, "{wall} vs {rt}");
    // No other process can read it from a description.
    assert!(c.description().starts_with("plugin:"));
    assert_eq!(TraceClock::from_description(&c.description()), None);
}
