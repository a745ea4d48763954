//! The consumer's drain rate in the discard cells, beside `dd`'s.

use crate::cell::{Cell, Mode, Payload};
use crate::ours;

/// The consumer's drain rate in the discard cells (trace bytes over the
/// time from session start to a complete trace on disk), beside `dd`'s.
pub fn drain_table(cells: &[Cell], dd: Option<(f64, f64)>) {
    println!(
        "Consumer drain rate, u64, discard (MB/s: trace bytes / start..stop returned, median; stream files {}), page cache by dd: {}",
        ours::file_io().name(),
        dd.map_or("-".into(), |(r, first)| format!(
            "{r:.0} MB/s (median of 3; the first, into new pages: {first:.0} MB/s)"
        ))
    );
    println!(
        "  {:<24} {:>8} {:>12} {:>12} {:>14} {:>18} {:>9}  slowest direct write (all runs; lossy runs)",
        "tracer", "threads", "drain MB/s", "lost", "runs lossless", "consumer CPU", "standby"
    );
    for c in cells.iter().filter(|c| {
        c.tracer.starts_with("ringtrace") && c.payload == Payload::U64 && c.mode == Mode::Discard
    }) {
        // The consumer's CPU time over the run, and the rate it copies at
        // while it runs (trace bytes per consumer CPU second).
        let cpu = match (c.consumer_ms(), c.bytes_per_event()) {
            (Some(ms), Some(b)) => format!(
                "{ms:.0} ms {:.1} GB/s",
                b * c.runs[0].per_thread as f64 * c.threads as f64 / (ms * 1e6)
            ),
            _ => "-".into(),
        };
        let slowest = |lossy: bool| {
            c.runs
                .iter()
                .filter(|r| !lossy || r.lost > 0)
                .map(|r| r.slowest_write_ns)
                .max()
                .filter(|&ns| ns > 0)
                .map_or("-".to_string(), |ns| format!("{:.1} ms", ns as f64 / 1e6))
        };
        // Passes the standby consumer took for a late consumer, all runs.
        let standby: u64 = c.runs.iter().map(|r| r.standby_passes).sum();
        println!(
            "  {:<24} {:>8} {:>12} {:>12.0} {:>14} {:>18} {:>9}  {}; {}",
            c.tracer,
            c.threads,
            c.drain_mb_s().map_or("-".into(), |r| format!("{r:.0}")),
            c.lost(),
            format!(
                "{}/{}",
                c.runs.iter().filter(|r| r.lost == 0).count(),
                c.runs.len()
            ),
            cpu,
            standby,
            slowest(false),
            slowest(true)
        );
    }
}
