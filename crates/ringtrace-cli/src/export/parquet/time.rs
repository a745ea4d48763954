//! Times of the Parquet export: trace clock ticks to epoch nanoseconds
//! (as `view` prints them) and the civil date that partitions them.

use ctf::types::ClockDesc;

/// Trace clock ticks to epoch nanoseconds, exactly as
/// [`crate::pretty::epoch_ns`] (which `view` prints), with one division per
/// event instead of four: the whole seconds of the last tick are kept, and
/// a tick of the same second only converts its remainder.
pub(super) struct EpochNs {
    freq: u64,
    /// Nanoseconds at tick 0 (clock offset included), when the offset is
    /// added in ticks first (`epoch_ns`'s order) as `shift`.
    shift: u64,
    /// The second (counted in ticks from the offset) last converted: its
    /// first tick, one past its last, and its nanoseconds.
    last: std::cell::Cell<(u64, u64, i128)>,
    clock: ClockDesc,
}

impl EpochNs {
    pub(super) fn new(clock: &ClockDesc) -> EpochNs {
        EpochNs {
            freq: clock.freq.max(1),
            shift: clock.offset.max(0) as u64,
            last: std::cell::Cell::new((1, 0, 0)),
            clock: clock.clone(),
        }
    }

    pub(super) fn get(&self, ts: u64) -> i128 {
        let f = self.freq;
        // The general case (a negative offset, huge clocks, ticks near
        // 2^64) as `view` computes it.
        if self.clock.offset < 0 || f > 18_000_000_000 || ts.checked_add(self.shift).is_none() {
            return crate::pretty::epoch_ns(&self.clock, ts);
        }
        let t = ts + self.shift;
        let (lo, hi, ns) = self.last.get();
        if (lo..hi).contains(&t) {
            return ns + ((t - lo) * 1_000_000_000 / f) as i128;
        }
        let q = t / f;
        let lo = q * f;
        let ns = self.clock.offset_s as i128 * 1_000_000_000 + q as i128 * 1_000_000_000;
        self.last.set((lo, lo.saturating_add(f), ns));
        ns + ((t - lo) * 1_000_000_000 / f) as i128
    }
}

/// The civil date (UTC) of `ns` nanoseconds since the epoch, `YYYY-MM-DD`
/// (the days-to-date conversion of H. Hinnant's `civil_from_days`).
pub(super) fn date(ns: i128) -> String {
    let z = ns.div_euclid(86_400 * 1_000_000_000) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoch_ns_as_view_computes_it() {
        let mut clock = ClockDesc {
            name: "c".into(),
            freq: 2_596_134_182,
            offset_s: 1_795_478_400,
            offset: 123_456_789,
            precision: 1,
            description: String::new(),
        };
        for offset in [123_456_789i64, 0, -5_000_000_000] {
            clock.offset = offset;
            let conv = EpochNs::new(&clock);
            let mut seed = 0x2545_f491_4f6c_dd1du64;
            let mut t = 5_000_000_000u64;
            for _ in 0..200_000 {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                // Mostly forward by little, sometimes far, sometimes back.
                t = match seed % 100 {
                    0 => seed >> 2,
                    1 => t.saturating_sub(seed % 3_000_000_000),
                    _ => t + seed % 5_000,
                };
                assert_eq!(conv.get(t), crate::pretty::epoch_ns(&clock, t), "tick {t}");
            }
            for t in [0, 1, u64::MAX, u64::MAX - 200_000_000] {
                assert_eq!(conv.get(t), crate::pretty::epoch_ns(&clock, t), "tick {t}");
            }
        }
    }

    #[test]
    fn dates() {
        assert_eq!(date(0), "1970-01-01");
        assert_eq!(date(-1), "1969-12-31");
        // 2026-11-24 00:00:00 UTC and the nanosecond before.
        let d = 1_795_478_400i128 * 1_000_000_000;
        assert_eq!(date(d), "2026-11-24");
        assert_eq!(date(d - 1), "2026-11-23");
        assert_eq!(date(951_782_400 * 1_000_000_000), "2000-02-29");
        // The column's whole range (what clamped times are) has a date.
        assert_eq!(date(i64::MIN as i128), "1677-09-21");
        assert_eq!(date(i64::MAX as i128), "2262-04-11");
    }
}
