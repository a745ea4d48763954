//! Choosing the trace clock and calibrating the TSC against CLOCK_MONOTONIC.

use std::time::Duration;

use crate::tsc::{invariant_tsc, monotonic_ns, rdtsc, rdtsc_ordered, realtime_ns};

/// What the trace clock counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClockSource {
    /// The invariant TSC.
    Tsc,
    /// CLOCK_MONOTONIC, nanoseconds.
    Monotonic,
    /// A clock the program supplies (LTTng-UST's clock plugins).
    Plugin(PluginClock),
}

/// A clock supplied by the program: a read function, with the identity
/// the trace's metadata gives it. The read function is called on the
/// recording path, so it must be as safe there as the tracer is (no lock,
/// no allocation, async-signal-safe), which is the contract LTTng-UST's
/// clock plugins already have.
#[derive(Debug, Clone, Copy)]
pub struct PluginClock {
    /// Reads the clock: monotonic, `freq` ticks per second.
    pub read: extern "C" fn() -> u64,
    /// Its name in the metadata (a TSDL identifier).
    pub name: &'static str,
    /// Its description in the metadata.
    pub description: &'static str,
}

impl PartialEq for PluginClock {
    fn eq(&self, o: &PluginClock) -> bool {
        // The same function at the same address, by the same name.
        self.read as usize == o.read as usize && self.name == o.name
    }
}

impl Eq for PluginClock {}

/// The result of a TSC calibration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Calibration {
    /// Estimated TSC ticks per second (median of the rounds).
    pub freq: u64,
    /// Half the spread of the rounds' estimates, in parts per million.
    pub error_ppm: f64,
    /// Rounds measured.
    pub rounds: u32,
}

/// A (TSC, CLOCK_MONOTONIC) pair taken as close together as possible: the
/// monotonic read is bracketed by two TSC reads, and the tightest bracket of
/// a few attempts is kept.
fn paired_sample() -> (u64, u64) {
    let mut best = (u64::MAX, 0, 0);
    for _ in 0..16 {
        let a = rdtsc_ordered();
        let m = monotonic_ns();
        let b = rdtsc_ordered();
        if b.wrapping_sub(a) < best.0 {
            best = (b.wrapping_sub(a), a + (b - a) / 2, m);
        }
    }
    (best.1, best.2)
}

/// Measures the TSC frequency over `rounds` intervals of `interval` each.
pub fn calibrate_tsc(rounds: u32, interval: Duration) -> Calibration {
    let mut est = Vec::with_capacity(rounds as usize);
    for _ in 0..rounds.max(1) {
        let (t0, m0) = paired_sample();
        std::thread::sleep(interval);
        let (t1, m1) = paired_sample();
        let dm = m1.saturating_sub(m0).max(1);
        est.push((t1.wrapping_sub(t0) as f64) * 1e9 / dm as f64);
    }
    est.sort_by(|a, b| a.total_cmp(b));
    let median = est[est.len() / 2];
    let spread = est[est.len() - 1] - est[0];
    Calibration {
        freq: median.round() as u64,
        error_ppm: spread / 2.0 / median * 1e6,
        rounds: est.len() as u32,
    }
}

/// The trace clock of a process: its source, frequency, and where its zero
/// is relative to the epoch.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TraceClock {
    /// What it counts.
    pub source: ClockSource,
    /// Ticks per second.
    pub freq: u64,
    /// The calibration, for the TSC.
    pub calibration: Option<Calibration>,
    /// Clock value 0 is `offset_s` seconds plus `offset` ticks after the
    /// epoch (both as CTF's `clock` block wants them; `0 <= offset < freq`).
    pub offset_s: i64,
    /// See `offset_s`.
    pub offset: i64,
}

impl TraceClock {
    /// Chooses the source (`RINGTRACE_CLOCK` first, then the TSC if it is
    /// invariant) and calibrates it (about 100 ms for the TSC).
    ///
    /// ```
    /// let clock = traceclock::TraceClock::detect();
    /// let (a, b) = (clock.now(), clock.now());
    /// assert!(b >= a, "one thread's readings never go back");
    /// assert!(clock.freq > 0);
    /// ```
    pub fn detect() -> TraceClock {
        // SAFETY: getauxval reads the auxiliary vector, the id calls the
        // process's credentials. A setuid or setgid program, or one whose
        // effective ids are not its real ones, ignores its invoker's
        // environment (the rule of ringtrace's `sys/env.rs`).
        let privileged = unsafe {
            libc::getauxval(libc::AT_SECURE) != 0
                || libc::getuid() != libc::geteuid()
                || libc::getgid() != libc::getegid()
        };
        let forced = std::env::var("RINGTRACE_CLOCK")
            .ok()
            .filter(|_| !privileged);
        // A whole clock, as `ringtrace record` hands it to every process it
        // traces: the same clock block in every sub-trace.
        if let Some(c) = forced.as_deref().and_then(TraceClock::from_description) {
            return c;
        }
        let tsc = match forced.as_deref() {
            Some("monotonic") => false,
            Some("tsc") => cfg!(target_arch = "x86_64"),
            _ => cfg!(target_arch = "x86_64") && invariant_tsc(),
        };
        if tsc {
            let cal = calibrate_tsc(5, Duration::from_millis(20));
            Self::with(ClockSource::Tsc, cal.freq, Some(cal))
        } else {
            Self::with(ClockSource::Monotonic, 1_000_000_000, None)
        }
    }

    /// The clock as one line that [`TraceClock::from_description`] reads
    /// back to the same clock (`RINGTRACE_CLOCK`): source, frequency, epoch
    /// offset and calibration error (`tsc:2445431912:1795457435:575294832:0.25`).
    pub fn description(&self) -> String {
        let source = match self.source {
            ClockSource::Tsc => "tsc",
            ClockSource::Monotonic => "monotonic",
            // Not a clock another process can read: `from_description`
            // refuses it, and that process chooses its own.
            ClockSource::Plugin(_) => "plugin",
        };
        let ppm = self.calibration.map_or(0.0, |c| c.error_ppm);
        format!(
            "{source}:{}:{}:{}:{ppm}",
            self.freq, self.offset_s, self.offset
        )
    }

    /// Reads a [`TraceClock::description`]. `None` if it is not one, or
    /// names the TSC where this machine has no invariant one.
    pub fn from_description(s: &str) -> Option<TraceClock> {
        let mut it = s.split(':');
        let source = match it.next()? {
            "tsc" if cfg!(target_arch = "x86_64") && invariant_tsc() => ClockSource::Tsc,
            "monotonic" => ClockSource::Monotonic,
            _ => return None,
        };
        let freq: u64 = it.next()?.parse().ok().filter(|f| *f > 0)?;
        let offset_s: i64 = it.next()?.parse().ok()?;
        let offset: i64 = it
            .next()?
            .parse()
            .ok()
            .filter(|o| (0..freq as i64).contains(o))?;
        let error_ppm: f64 = it.next()?.parse().ok().filter(|p: &f64| p.is_finite())?;
        if it.next().is_some() || (source == ClockSource::Monotonic && freq != 1_000_000_000) {
            return None;
        }
        Some(TraceClock {
            source,
            freq,
            calibration: (source == ClockSource::Tsc).then_some(Calibration {
                freq,
                error_ppm,
                rounds: 0,
            }),
            offset_s,
            offset,
        })
    }

    /// A clock the program supplies, `freq` ticks per second (its offset
    /// from the epoch measured here, as for the others).
    pub fn plugin(clock: PluginClock, freq: u64) -> TraceClock {
        Self::with(ClockSource::Plugin(clock), freq.max(1), None)
    }

    /// CLOCK_MONOTONIC, no calibration needed.
    pub fn monotonic() -> TraceClock {
        Self::with(ClockSource::Monotonic, 1_000_000_000, None)
    }

    fn with(source: ClockSource, freq: u64, calibration: Option<Calibration>) -> TraceClock {
        // Read the realtime clock between two reads of ours: the epoch offset
        // is then good to the width of that bracket.
        let a = Self::read(source);
        let rt = realtime_ns() as i128;
        let b = Self::read(source);
        let now_ticks = (a as i128 + b as i128) / 2;
        let freq_i = freq as i128;
        // offset_s·freq + offset + now_ticks = rt·freq / 1e9
        let total = rt * freq_i / 1_000_000_000 - now_ticks;
        TraceClock {
            source,
            freq,
            calibration,
            offset_s: total.div_euclid(freq_i) as i64,
            offset: total.rem_euclid(freq_i) as i64,
        }
    }

    #[inline(never)]
    fn read_call(source: ClockSource) -> u64 {
        Self::read(source)
    }

    #[inline(always)]
    fn read(source: ClockSource) -> u64 {
        match source {
            ClockSource::Tsc => rdtsc_ordered(),
            ClockSource::Monotonic => monotonic_ns(),
            ClockSource::Plugin(p) => (p.read)(),
        }
    }

    /// Now, ordered after earlier loads.
    #[inline(always)]
    pub fn now(&self) -> u64 {
        Self::read(self.source)
    }

    /// Now, unordered: what ring-buffer writers read (the buffer clamps it).
    #[inline(always)]
    pub fn now_unordered(&self) -> u64 {
        // The TSC inline; the others are calls anyway (the vDSO, the
        // program's function), made from one place out of line.
        match self.source {
            ClockSource::Tsc => rdtsc(),
            other => Self::read_call(other),
        }
    }

    /// Nanoseconds since the epoch of clock value `v`.
    pub fn to_epoch_ns(&self, v: u64) -> i128 {
        let f = self.freq as i128;
        self.offset_s as i128 * 1_000_000_000
            + (self.offset as i128 + v as i128) * 1_000_000_000 / f
    }
}
