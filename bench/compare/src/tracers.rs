//! The tracer tables: ringtrace's buffers against LTTng-UST and two naive
//! baselines, cell by cell (payload, mode, threads), the tracers of a
//! cell interleaved run by run.

use crate::cell::{Cell, Mode, Payload, Run};
use crate::{baselines, contexts, lttng, ours};

/// The tracers of the full tables.
pub const TRACERS: [&str; 6] = [
    "lttng-ust",
    "ringtrace per-cpu",
    "ringtrace per-cpu-rseq",
    "ringtrace per-thread",
    "mutex ring",
    "crossbeam channel",
];

/// One run of `tracer`: `n` events on `t` threads, each paced to `rate`
/// events per second (0: as fast as it goes).
#[allow(clippy::too_many_arguments)]
pub fn measure(
    tracer: &str,
    bin: &std::path::Path,
    p: Payload,
    m: Mode,
    t: usize,
    n: u64,
    rate: u64,
    scratch: &std::path::Path,
) -> Result<Run, String> {
    crate::disk::settle(scratch);
    let (tracer, ctx) = contexts::split(tracer);
    if let Some(bufs) = ours::Bufs::of(tracer) {
        return ours::run(bufs, p, m, t, n, rate, scratch, ctx, None);
    }
    match tracer {
        "lttng-ust" => lttng::run(bin, p.name(), m, t, n, rate, scratch, ctx, None),
        "mutex ring" => Ok(baselines::mutex_ring(p, t, n)),
        _ => Ok(baselines::crossbeam(p, t, n)),
    }
}

pub fn print_tables(cells: &[Cell], n: u64, runs: usize) {
    println!("\n{n} events per run, median of {runs} runs; ns per event per writer thread\n");
    let mut keys: Vec<(Payload, Mode, usize)> = Vec::new();
    for c in cells {
        let k = (c.payload, c.mode, c.threads);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    for (p, m, t) in keys {
        let group: Vec<&Cell> = cells
            .iter()
            .filter(|c| (c.payload, c.mode, c.threads) == (p, m, t))
            .collect();
        let lttng = group.iter().copied().find(|c| c.tracer == "lttng-ust");
        println!("{} payload, {}, {} thread(s)", p.name(), m.name(), t);
        println!(
            "  {:<22} {:>10} {:>12} {:>12} {:>16} {:>8}",
            "tracer", "ns/event", "lost", "bytes/event", "lttng-ust/this", "paired"
        );
        for c in group {
            let ratio = lttng.map_or("-".to_string(), |l| format!("{:.2}", l.ns() / c.ns()));
            let paired = lttng.map_or("-".to_string(), |l| format!("{:.2}", c.paired_ratio(l)));
            let bpe = c
                .bytes_per_event()
                .map_or("-".to_string(), |b| format!("{b:.1}"));
            println!(
                "  {:<22} {:>10.1} {:>12.0} {:>12} {:>16} {:>8}",
                c.tracer,
                c.ns(),
                c.lost(),
                bpe,
                ratio,
                paired
            );
        }
        println!();
    }
}

/// A group of cells measured together: payload, mode, threads, tracers.
pub type Group = (Payload, Mode, usize, Vec<&'static str>);

/// The groups to measure: the tracer tables' (when `tables`), and the
/// contexts group last, into its own cells (when `contexts`).
pub fn plan(tables: bool, quick: bool, focus: bool, contexts: bool) -> Vec<Group> {
    let mut plan: Vec<Group> = Vec::new();
    for p in [Payload::U64, Payload::Str16]
        .into_iter()
        .filter(|p| tables && (!focus || *p == Payload::U64))
    {
        for m in [Mode::Discard, Mode::Flight] {
            for t in [1, 2] {
                if !focus || m == Mode::Discard {
                    plan.push((p, m, t, TRACERS.to_vec()));
                }
            }
        }
        if !focus {
            plan.push((p, Mode::Dormant, 1, vec!["lttng-ust", "ringtrace per-cpu"]));
        } else {
            // The write path's scaling without a consumer on the same CPUs.
            for t in [1, 2] {
                plan.push((
                    p,
                    Mode::Flight,
                    t,
                    vec!["ringtrace per-cpu-rseq", "ringtrace per-thread"],
                ));
            }
        }
    }
    if !quick && !focus && tables {
        // More threads than CPUs: behaviour under migration.
        for t in [4, 8] {
            plan.push((Payload::U64, Mode::Discard, t, TRACERS[..4].to_vec()));
        }
    }
    if contexts {
        plan.push((Payload::U64, Mode::Discard, 1, contexts::TRACERS.to_vec()));
    }
    plan
}

/// Measures every group of `plan`, `runs` runs of `n` events per cell, the
/// tracers of a group interleaved run by run (they see the same machine):
/// the cells, and the contexts group's apart (the last group, when
/// `contexts`).
pub fn measure_plan(
    plan: &[Group],
    contexts: bool,
    bin: &std::path::Path,
    n: u64,
    runs: usize,
    scratch: &std::path::Path,
) -> Result<(Vec<Cell>, Vec<Cell>), String> {
    let total: usize = plan.iter().map(|c| c.3.len()).sum::<usize>() * runs;
    let started = std::time::Instant::now();
    let mut done = 0;
    let mut cells: Vec<Cell> = Vec::new();
    let mut ctx_cells: Vec<Cell> = Vec::new();
    for (k, (p, m, t, tracers)) in plan.iter().enumerate() {
        let mut group: Vec<Cell> = tracers
            .iter()
            .map(|tr| Cell {
                tracer: tr,
                payload: *p,
                mode: *m,
                threads: *t,
                runs: Vec::new(),
            })
            .collect();
        for _ in 0..runs {
            for c in group.iter_mut() {
                let r = measure(c.tracer, bin, *p, *m, *t, n, 0, scratch)?;
                c.runs.push(r);
                done += 1;
                eprint!(
                    "\r[{done}/{total}] {:>5.0} s  {} {} {} thread(s)          ",
                    started.elapsed().as_secs_f64(),
                    p.name(),
                    m.name(),
                    t
                );
            }
        }
        if contexts && k == plan.len() - 1 {
            ctx_cells = group;
        } else {
            cells.extend(group);
        }
    }
    eprintln!();
    Ok((cells, ctx_cells))
}
