//! When the consumer reads a discard-mode channel again: writers never
//! wake it, so it polls, at a period that follows the write rate.

use std::time::Duration;

/// Shortest read period.
pub(crate) const MIN_READ_PERIOD: Duration = Duration::from_micros(500);

/// When to read a channel again: writers never wake the consumer (no
/// system call on the write path), so the poll period must be shorter than
/// the time the writers take to fill a buffer. At the rate of the last
/// period (`bytes` in `elapsed`), a quarter of a buffer of `capacity`
/// bytes; never longer than the read timer, never shorter than 0.5 ms.
/// Records `lost` in the period mean full buffers: the write count stood
/// still while writers dropped, so the bytes understate the rate (they may
/// be 0, which would otherwise read as idle); read again as soon as allowed.
///
/// The period shortens at once but grows by at most a quarter per look:
/// a window in which the writers wrote little (they had not started yet,
/// or were off the CPU for a moment) does not send the consumer to sleep
/// for the whole read timer while they resume at full speed. Measured in
/// bench/compare (per-look debug output): a look whose window saw the
/// writers stalled planned 5 ms, and the 2 writers, back at 545 MB/s each,
/// overran 4 × 1 MiB before it; and the look right after `start` jumped
/// to the read timer before the writer threads had run.
pub(crate) fn read_period(
    bytes: u64,
    lost: u64,
    elapsed: Duration,
    capacity: u64,
    read_timer: Duration,
    prev: Duration,
) -> Duration {
    // A window shorter than the shortest period (the read came right after
    // a long copy) is too short to call a channel idle.
    if lost > 0 || elapsed < MIN_READ_PERIOD {
        return MIN_READ_PERIOD;
    }
    let longest = read_timer.max(MIN_READ_PERIOD);
    let by_rate = if bytes == 0 {
        longest
    } else {
        let fill_ns = (capacity / 4) as u128 * elapsed.as_nanos().max(1) / bytes as u128;
        Duration::from_nanos(fill_ns.min(u64::MAX as u128) as u64)
    };
    by_rate.min(prev + prev / 4).clamp(MIN_READ_PERIOD, longest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_period_follows_the_write_rate() {
        let ms = Duration::from_millis;
        // Idle: a quarter longer than the last period each time, up to the
        // read timer.
        assert_eq!(read_period(0, 0, ms(5), 4 << 20, ms(5), ms(5)), ms(5));
        assert_eq!(
            read_period(0, 0, ms(1), 4 << 20, ms(5), Duration::from_micros(500)),
            Duration::from_micros(625)
        );
        assert_eq!(read_period(0, 0, ms(4), 4 << 20, ms(5), ms(4)), ms(5));
        // A slow window after fast ones: a quarter longer, not the read
        // timer (1 KiB in 1.3 ms would say 5 ms).
        assert_eq!(
            read_period(
                1024,
                0,
                Duration::from_micros(1300),
                4 << 20,
                ms(5),
                Duration::from_micros(1340)
            ),
            Duration::from_micros(1675)
        );
        // 4 MiB buffer, 1 MiB written in 5 ms: a quarter buffer in 5 ms.
        assert_eq!(
            read_period(1 << 20, 0, ms(5), 4 << 20, ms(20), ms(5)),
            ms(5)
        );
        // Ten times faster: 0.5 ms.
        assert_eq!(
            read_period(10 << 20, 0, ms(5), 4 << 20, ms(20), ms(5)),
            Duration::from_micros(500)
        );
        // Slow writers: capped by the read timer.
        assert_eq!(read_period(1, 0, ms(5), 4 << 20, ms(5), ms(5)), ms(5));
        // Full buffers: nothing written (writers dropped), yet not idle.
        assert_eq!(
            read_period(0, 7, ms(5), 4 << 20, ms(5), ms(5)),
            Duration::from_micros(500)
        );
        assert_eq!(
            read_period(1 << 20, 1, ms(5), 4 << 20, ms(20), ms(5)),
            Duration::from_micros(500)
        );
        // Nothing written in 10 µs says nothing.
        assert_eq!(
            read_period(0, 0, Duration::from_micros(10), 4 << 20, ms(5), ms(5)),
            Duration::from_micros(500)
        );
    }
}
