//! The ratio lines printed last: paired and interleaved ratios of the
//! tracer tables' cells.

use std::path::Path;

use crate::cell::{Cell, Mode, Payload};
use crate::{interleaved, scaling, scaling_interleaved};

/// Run-by-run ratios as `1.12 1.30 ...`.
fn fmt_runs(v: &[f64]) -> String {
    v.iter()
        .map(|x| format!("{x:.2}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The ratio lines of the tracer tables' cells (those present): per-CPU
/// rseq against per-thread buffers, 2 threads against 1, LTTng-UST
/// against ringtrace; appended to `ratios`. `bin` is the LTTng-UST
/// workload, `n` events per run, `runs` runs for the paired measurements.
pub fn lines(
    cells: &[Cell],
    bin: &Path,
    n: u64,
    runs: usize,
    scratch: &Path,
    ratios: &mut Vec<String>,
) -> Result<(), String> {
    let find = |tr: &str, m: Mode, t: usize| {
        cells
            .iter()
            .find(|c| c.tracer == tr && c.payload == Payload::U64 && c.mode == m && c.threads == t)
    };
    let rseq = "ringtrace per-cpu-rseq";
    let (l, pc, pr, pt) = (
        find("lttng-ust", Mode::Discard, 1),
        find("ringtrace per-cpu", Mode::Discard, 1),
        find(rseq, Mode::Discard, 1),
        find("ringtrace per-thread", Mode::Discard, 1),
    );
    if let (Some(pr), Some(pt)) = (pr, pt) {
        rseq_over_per_thread(pr, pt, n, runs, scratch, ratios)?;
    }
    // 2 threads / 1 thread, paired (scaling.rs): the tables' two groups
    // run minutes apart; their medians' ratio is printed beside it.
    if let (Some(pr), Some(pr2)) = (pr, find(rseq, Mode::Discard, 2)) {
        let (r, v) = scaling::two_over_one(rseq, bin, Mode::Discard, n, runs, scratch)?;
        eprintln!();
        // Each thread against itself alone on its own CPU, in one process
        // (scaling_interleaved.rs): the paired runs' figure is the slower
        // thread's, and the two vCPUs drift apart.
        let il = scaling_interleaved::two_over_one(50, scratch, true)?;
        eprintln!();
        ratios.push(format!(
            "ratio per-cpu-rseq 2 threads/1 thread: {:.2} (each thread pinned to its CPU against itself alone, interleaved in one process: {} rounds, lost {}; paired runs {r:.2}: {}; the tables' medians: {:.2})",
            il.ratio,
            il.rounds,
            il.lost,
            fmt_runs(&v),
            pr2.ns() / pr.ns()
        ));
    }
    if let (Some(f1), Some(f2)) = (find(rseq, Mode::Flight, 1), find(rseq, Mode::Flight, 2)) {
        let (r, v) = scaling::two_over_one(rseq, bin, Mode::Flight, n, runs, scratch)?;
        eprintln!();
        let il = scaling_interleaved::two_over_one(200, scratch, false)?;
        eprintln!();
        ratios.push(format!(
            "ratio per-cpu-rseq 2 threads/1 thread (flight recorder: no consumer on the CPUs): {:.2} (interleaved, {} rounds; paired runs {r:.2}: {}; the tables' medians: {:.2})",
            il.ratio,
            il.rounds,
            fmt_runs(&v),
            f2.ns() / f1.ns()
        ));
    }
    if let (Some(l), Some(pc), Some(pr), Some(pt)) = (l, pc, pr, pt) {
        lttng_over_ringtrace(l, pc, pr, pt, ratios);
    }
    Ok(())
}

/// Per-CPU rseq against per-thread buffers, 1 thread: the two in one
/// process, in alternating chunks (interleaved.rs): the table's runs, a
/// second apart each, drift with the machine.
fn rseq_over_per_thread(
    pr: &Cell,
    pt: &Cell,
    n: u64,
    runs: usize,
    scratch: &Path,
    ratios: &mut Vec<String>,
) -> Result<(), String> {
    let il = interleaved::rseq_over_per_thread(n, Some(scratch))?;
    eprintln!();
    ratios.push(format!(
        "ratio per-cpu-rseq/per-thread (1 thread, discard, u64): {:.2} (interleaved in one process: {} rounds of 100000 events, lost: per-thread {}, rseq {}; the table's paired runs: {:.2})",
        il.ratio,
        il.rounds,
        il.lost[0],
        il.lost[1],
        // paired_ratio(reference) is reference/self, run by run.
        pt.paired_ratio(pr)
    ));
    let il = interleaved::rseq_over_per_thread(n * runs as u64, None)?;
    eprintln!();
    ratios.push(format!(
        "ratio per-cpu-rseq/per-thread, interleaved in one process (1 thread, flight recorder, u64): {:.2} ({} rounds of 100000 events; lost: per-thread {}, rseq {})",
        il.ratio, il.rounds, il.lost[0], il.lost[1]
    ));
    Ok(())
}

/// LTTng-UST against each of ringtrace's buffers, 1 thread, discard, u64:
/// the paired ratios, and the medians' (the last line is the one a script
/// reads).
fn lttng_over_ringtrace(l: &Cell, pc: &Cell, pr: &Cell, pt: &Cell, ratios: &mut Vec<String>) {
    println!();
    println!(
        "paired ratios (median of run-by-run ratios), 1 thread, discard, u64: per-cpu {:.2}, per-cpu-rseq {:.2}, per-thread {:.2}",
        pc.paired_ratio(l),
        pr.paired_ratio(l),
        pt.paired_ratio(l)
    );
    ratios.push(format!(
        "ratio lttng-ust/ringtrace per-cpu (1 thread, discard, u64): {:.2}",
        l.ns() / pc.ns()
    ));
    ratios.push(format!(
        "ratio lttng-ust/ringtrace per-cpu-rseq (1 thread, discard, u64): {:.2}",
        l.ns() / pr.ns()
    ));
    ratios.push(format!(
        "ratio lttng-ust/ringtrace (1 thread, discard, u64): {:.2}",
        l.ns() / pc.ns().min(pr.ns()).min(pt.ns())
    ));
}
