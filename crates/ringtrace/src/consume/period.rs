//! When the consumer reads a discard-mode channel again: writers never
//! wake it, so it polls, at a period that follows the write rate and
//! remembers the fastest rate seen lately.

use std::time::{Duration, Instant};

/// Shortest read period.
pub(crate) const MIN_READ_PERIOD: Duration = Duration::from_micros(500);

/// How fast the memory of a channel's fastest write rate fades: the period
/// that rate calls for doubles every `FASTEST_HALF_LIFE` without a window
/// as fast. A channel quiet for a second is read half as often as while it
/// was written at full speed; one quiet for about 3.3 s (at the 5 ms read
/// timer and 0.5 ms shortest period) is read at the read timer.
pub(crate) const FASTEST_HALF_LIFE: Duration = Duration::from_secs(1);

/// The read pace of one channel: writers never wake the consumer (no
/// system call on the write path), so the poll period must be shorter than
/// the time the writers take to fill a buffer.
///
/// Three bounds, the shortest wins (never below 0.5 ms, never above the
/// read timer):
///
/// - **The last window's rate**: at the rate of the writes since the last
///   read, a quarter of the buffer. Records lost in the window mean full
///   buffers (the write count stood still while writers dropped, so the
///   bytes understate the rate, and may be 0): read again as soon as
///   allowed.
/// - **Growth**: at most a quarter longer than the last period, so that a
///   window in which the writers wrote little (they had not started yet,
///   or were off the CPU for a moment) does not send the consumer to sleep
///   for the whole read timer while they resume at full speed.
/// - **The fastest rate seen lately**: a quarter of the buffer at the
///   fastest window's rate, that period doubling every
///   [`FASTEST_HALF_LIFE`] since. Growth alone does not cover writers that
///   pause and resume (bursts, or one thread alternating between two
///   sessions): each look at a paused channel lets the period grow a
///   quarter, and a few milliseconds of pause took it past the time the
///   writers then needed to fill the buffer. Measured
///   (`examples/pauses.rs`, 4 × 64 KiB buffers, one thread writing
///   100,000-event chunks at about 300 MB/s): two sessions in alternating
///   chunks lost 1.6-1.9 M of 20 M records, one session with a pause after
///   each chunk 0.6-2.0 M; with this bound 62,000-121,000 and 1,500-77,000,
///   near the same session without pauses (2,900-71,000 in ten runs: the
///   0.5 ms floor against a buffer that fills in 0.8 ms). BENCHMARKS.md,
///   "The consumer's read period".
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pace {
    period: Duration,
    /// The shortest quarter-buffer fill time measured, and when.
    fastest: Option<(Duration, Instant)>,
}

impl Pace {
    /// A channel that has not been read yet: the shortest period (writers
    /// may start any moment), no rate seen.
    pub(crate) fn new() -> Pace {
        Pace {
            period: MIN_READ_PERIOD,
            fastest: None,
        }
    }

    /// Reads start again from the shortest period (a live relay's flush,
    /// session start); the fastest rate seen is kept.
    pub(crate) fn restart(&mut self) {
        self.period = MIN_READ_PERIOD;
    }

    /// The session starts at `now`: its writers may write at any rate from
    /// the first moment, so it is read as if the fastest rate had just
    /// been seen (every 0.5 ms, that period doubling every second unless
    /// writes keep it short). Without it, a session started a few
    /// milliseconds before its writers had its period grown by the quiet
    /// looks and no rate to bound it: measured (`examples/pauses.rs
    /// alternate`, default 1 MiB buffers), the first session sat 11 ms
    /// while the second was created, was next read 3 ms into its first
    /// chunk, and lost 6,811 records (5 of 15 runs lost in that chunk).
    pub(crate) fn expect_writers(&mut self, now: Instant) {
        self.restart();
        self.fastest = Some((MIN_READ_PERIOD, now));
    }

    /// The period before the next read, after a read at `now` that saw
    /// `bytes` written and `lost` records dropped in the `elapsed` window
    /// since the end of the last one, for a buffer of `capacity` bytes.
    pub(crate) fn next(
        &mut self,
        bytes: u64,
        lost: u64,
        elapsed: Duration,
        capacity: u64,
        read_timer: Duration,
        now: Instant,
    ) -> Duration {
        let longest = read_timer.max(MIN_READ_PERIOD);
        // A window shorter than the shortest period (the read came right
        // after a long copy) is too short to call a channel idle.
        let period = if lost > 0 || elapsed < MIN_READ_PERIOD {
            if lost > 0 {
                self.fastest = Some((MIN_READ_PERIOD, now));
            }
            MIN_READ_PERIOD
        } else {
            let by_rate = if bytes == 0 {
                longest
            } else {
                let fill_ns = (capacity / 4) as u128 * elapsed.as_nanos().max(1) / bytes as u128;
                Duration::from_nanos(fill_ns.min(u64::MAX as u128) as u64)
            };
            let by_fastest = match self.fastest {
                Some((fill, at)) => {
                    let faded = faded(fill, now.saturating_duration_since(at));
                    if by_rate <= faded {
                        self.fastest = Some((by_rate, now));
                        by_rate
                    } else {
                        faded
                    }
                }
                None if bytes > 0 => {
                    self.fastest = Some((by_rate, now));
                    by_rate
                }
                None => longest,
            };
            by_rate
                .min(by_fastest)
                .min(self.period + self.period / 4)
                .clamp(MIN_READ_PERIOD, longest)
        };
        self.period = period;
        period
    }
}

/// `fill` doubled for every [`FASTEST_HALF_LIFE`] in `age`.
fn faded(fill: Duration, age: Duration) -> Duration {
    let doublings = age.as_secs_f64() / FASTEST_HALF_LIFE.as_secs_f64();
    // Past 64 doublings any read timer is shorter.
    Duration::try_from_secs_f64(fill.as_secs_f64() * 2f64.powf(doublings.min(64.0)))
        .unwrap_or(Duration::MAX)
}

#[cfg(test)]
#[path = "period_tests.rs"]
mod tests;
