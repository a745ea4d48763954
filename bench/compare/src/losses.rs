//! Losses at equal event rate: the issue's loss goal compares tracers "at
//! the same buffer size and event rate", which the as-fast-as-possible
//! tables cannot (ringtrace's writers produce about twice as fast, so its
//! consumer has twice the data and less CPU). Here every writer thread of
//! both tracers is paced to the same rate (256 events, then sleep until
//! due; rate 0: not paced), 8 threads on this machine's CPUs, discard mode, one u64 field,
//! 4 × 1 MiB sub-buffers per CPU (per thread for ringtrace per-thread).

use std::path::Path;

use crate::cell::{Mode, Payload, Run};

const TRACERS: [&str; 3] = ["lttng-ust", "ringtrace per-cpu", "ringtrace per-thread"];

/// Runs the table; one JSON object per cell.
pub fn table(
    lttng_bin: &Path,
    threads: usize,
    rates: &[u64],
    events: u64,
    runs: usize,
    scratch: &Path,
) -> Result<Vec<serde_json::Value>, String> {
    let mut out = Vec::new();
    let mut rows = Vec::new();
    for &rate in rates {
        let mut samples: Vec<Vec<Run>> = vec![Vec::new(); TRACERS.len()];
        for k in 0..runs {
            for (i, tr) in TRACERS.iter().enumerate() {
                eprint!("\r[losses {}/{} at {rate}/s] {tr:<24}", k + 1, runs);
                let r = crate::tracers::measure(
                    tr,
                    lttng_bin,
                    Payload::U64,
                    Mode::Discard,
                    threads,
                    events,
                    rate,
                    scratch,
                )?;
                samples[i].push(r);
            }
        }
        for (tr, mut v) in TRACERS.iter().zip(samples) {
            v.sort_by_key(|r| r.lost);
            let m = v[v.len() / 2];
            let total = m.per_thread * threads as u64;
            let achieved = total as f64 / (m.elapsed_ns as f64 / 1e9);
            rows.push((rate, *tr, achieved, m.lost, total));
            out.push(
                serde_json::json!({"table": "losses at equal rate", "tracer": tr,
                "threads": threads, "rate_per_thread": rate, "achieved_events_per_s": achieved,
                "lost": m.lost, "events": total}),
            );
        }
    }
    eprintln!();
    println!("Losses at equal event rate: {threads} threads each paced to the rate, discard, u64, 4 × 1 MiB sub-buffers, {events} events per run, median of {runs} (by lost)\n");
    println!(
        "  {:>12} {:<22} {:>16} {:>12} {:>9}",
        "rate/thread", "tracer", "achieved ev/s", "lost", "lost %"
    );
    for (rate, tr, achieved, lost, total) in rows {
        let rate = match rate {
            0 => "unpaced".to_string(),
            r => r.to_string(),
        };
        println!(
            "  {:>12} {:<22} {:>16.0} {:>12} {:>8.3}%",
            rate,
            tr,
            achieved,
            lost,
            lost as f64 * 100.0 / total as f64
        );
    }
    println!();
    Ok(out)
}
