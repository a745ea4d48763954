//! How late a sleeping thread wakes on an idle CPU and on a busy one: on
//! a virtual machine the host may give an idle vCPU's physical CPU away,
//! and a timer on that vCPU fires when the host runs it again. What the
//! consumer's standby thread is for (`consume/standby.rs`).
//!
//! Two threads sleep to the same deadlines, 2 ms apart (absolute, so one
//! late wake-up does not shift the next): one on the first CPU, where
//! nothing else runs, the other on the second, where a thread spins. A
//! deadline both missed stopped both CPUs (writers too, harmless to a
//! trace); one only the idle CPU missed is what the standby covers.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::cpus;

/// Deadlines per thread.
const DEADLINES: usize = 2500;

const PERIOD: Duration = Duration::from_millis(2);

/// Lateness past which a deadline counts as missed, ms.
const MISSED: [f64; 3] = [1.0, 3.0, 6.0];

/// Sleeps to each deadline on `cpu`; how late it woke, ms, per deadline.
fn sleeper(cpu: usize, start: Instant) -> Result<Vec<f64>, String> {
    cpus::pin(cpu)?;
    Ok((1..=DEADLINES)
        .map(|i| {
            let due = start + PERIOD * i as u32;
            if let Some(d) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(d);
            }
            Instant::now().saturating_duration_since(due).as_secs_f64() * 1e3
        })
        .collect())
}

/// The table; its figures as JSON.
pub fn table() -> Result<serde_json::Value, String> {
    let [idle, busy] = cpus::two()?;
    println!(
        "\nWake-up lateness, {DEADLINES} deadlines {} ms apart: a thread on CPU {idle} (idle) and one on CPU {busy} (a thread spins there)",
        PERIOD.as_millis()
    );
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let spinner = std::thread::spawn(move || {
        let _ = cpus::pin(busy);
        while !s.load(Relaxed) {
            std::hint::spin_loop();
        }
    });
    let start = Instant::now() + Duration::from_millis(20);
    // Each on a thread of its own: the caller's CPU set stays as it was.
    let on_busy = std::thread::spawn(move || sleeper(busy, start));
    let on_idle = std::thread::spawn(move || sleeper(idle, start));
    let on_idle = on_idle.join().map_err(|_| "sleeper panicked")?;
    let on_busy = on_busy.join().map_err(|_| "sleeper panicked")?;
    stop.store(true, Relaxed);
    let _ = spinner.join();
    let (on_idle, on_busy) = (on_idle?, on_busy?);
    println!(
        "  {:<26} {:>10} {:>10} {:>10} {:>12}",
        "late by more than", "1 ms", "3 ms", "6 ms", "longest ms"
    );
    let count = |v: &[f64], ms: f64| v.iter().filter(|&&l| l > ms).count();
    let both: Vec<f64> = on_idle
        .iter()
        .zip(&on_busy)
        .map(|(a, b)| a.min(*b))
        .collect();
    let mut json = serde_json::Map::new();
    for (name, v) in [
        ("idle CPU", &on_idle),
        ("busy CPU", &on_busy),
        ("both at once", &both),
    ] {
        let longest = v.iter().copied().fold(0.0, f64::max);
        let [a, b, c] = MISSED.map(|ms| count(v, ms));
        println!("  {name:<26} {a:>10} {b:>10} {c:>10} {longest:>12.2}");
        json.insert(
            name.to_string(),
            serde_json::json!({ "over_1ms": a, "over_3ms": b, "over_6ms": c, "longest_ms": longest }),
        );
    }
    Ok(serde_json::json!({ "table": "wake", "deadlines": DEADLINES, "rows": json }))
}
