//! The workload-overhead table: a syscall loop with entry/exit events,
//! absent, dormant, at the floor's cost (`floor.rs`: the least two
//! records can cost, in a ring of each thread's own), flight recorder and
//! discard to disk. The kinds run in many short rounds, the order
//! rotating each round, so each round's overheads are measured against
//! its own `absent` run a fraction of a second apart; the ratio line is
//! the median flight-recorder overhead over the median floor overhead.
//! (The median of the rounds' own ratios, with five rounds of two million
//! calls, swung from 2.64 to 0.14 between two days: a round whose floor
//! overhead the machine's noise brought near zero, or below, gives any
//! ratio at all.)

use crate::cell::median;
use crate::floor;
use crate::ours::{self, Tracing};

/// The table's rows, in print order: a ringtrace kind, or the floor.
const ROWS: [Option<Tracing>; 5] = [
    Some(Tracing::Absent),
    Some(Tracing::Dormant),
    None,
    Some(Tracing::Flight),
    Some(Tracing::Discard),
];

/// The smallest floor overhead a ratio is given for.
const MIN_FLOOR_OVERHEAD: f64 = 0.02;

/// (calls per second, records, trace bytes) of one run of row `k`.
fn run(k: usize, scratch: &std::path::Path, per_thread: u64) -> Result<(f64, u64, u64), String> {
    match ROWS[k] {
        Some(tr) => ours::overhead(tr, 2, per_thread, scratch),
        None => {
            let ns = ours::run_threads(2, per_thread, floor::syscall_loop);
            Ok((
                (2 * per_thread) as f64 / (ns as f64 / 1e9),
                4 * per_thread,
                0,
            ))
        }
    }
}

/// Prints the table; pushes its ratio line to `ratios`.
pub fn table(
    scratch: &std::path::Path,
    per_thread: u64,
    rounds: usize,
    ratios: &mut Vec<String>,
) -> Result<Vec<serde_json::Value>, String> {
    println!("Workload overhead: getppid() loop with syscall_entry/syscall_exit events, 2 threads, {per_thread} calls each, {rounds} rounds of each row in rotating order (medians)\n");
    println!(
        "  {:<18} {:>14} {:>10} {:>14} {:>12}",
        "tracing", "syscalls/s", "overhead", "events/s", "trace MiB/s"
    );
    let mut samples: Vec<Vec<(f64, u64, u64)>> = vec![Vec::new(); ROWS.len()];
    let mut overheads: Vec<Vec<f64>> = vec![Vec::new(); ROWS.len()];
    for r in 0..rounds {
        eprint!("\r[overhead {}/{rounds}]          ", r + 1);
        let mut ops = [0.0; ROWS.len()];
        for j in 0..ROWS.len() {
            let k = (j + r) % ROWS.len();
            let s = run(k, scratch, per_thread)?;
            ops[k] = s.0;
            samples[k].push(s);
        }
        for k in 0..ROWS.len() {
            overheads[k].push(ops[0] / ops[k] - 1.0);
        }
    }
    eprintln!();
    let (flight, floor) = (median(overheads[3].clone()), median(overheads[2].clone()));
    let mut out = Vec::new();
    for (k, row) in ROWS.iter().enumerate() {
        let name = row.map_or("floor", |t| t.name());
        let mut s = std::mem::take(&mut samples[k]);
        s.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (ops, records, bytes) = s[s.len() / 2];
        let overhead = median(std::mem::take(&mut overheads[k])) * 100.0;
        let secs = (2 * per_thread) as f64 / ops;
        let ev_s = records as f64 / secs;
        let mib_s = bytes as f64 / secs / (1 << 20) as f64;
        let mib = if *row == Some(Tracing::Discard) {
            format!("{mib_s:.1}")
        } else {
            "-".into()
        };
        println!("  {name:<18} {ops:>14.0} {overhead:>9.1}% {ev_s:>14.0} {mib:>12}");
        out.push(
            serde_json::json!({"workload": "syscall loop", "tracing": name, "syscalls_per_s": ops,
            "overhead_percent": overhead, "events_per_s": ev_s, "trace_mib_per_s": mib_s}),
        );
    }
    // A floor overhead this small is the loop's own noise (the floor's
    // stores can also hide in the system call's shadow): no ratio.
    let ratio = if floor >= MIN_FLOOR_OVERHEAD {
        format!("{:.2}", flight / floor)
    } else {
        format!(
            "n/a (the floor's overhead, {:.1} %, is below {:.0} %: within the loop's noise; ringtrace's {:.1} %)",
            floor * 100.0,
            MIN_FLOOR_OVERHEAD * 100.0,
            flight * 100.0
        )
    };
    ratios.push(format!(
        "ratio overhead ringtrace/floor (getppid loop, 2 events per call, 2 threads, flight recorder): {ratio} (medians of {rounds} rounds)"
    ));
    Ok(out)
}
