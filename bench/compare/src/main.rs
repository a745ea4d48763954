//! `bench/compare`: ringtrace against LTTng-UST and two naive baselines,
//! the same work on the same machine in the same run. N events with one u64
//! field or a 16-byte string; discard and flight-recorder modes; 1 and 2
//! threads (and 4 and 8 without --quick); dormant probes; sub-buffers
//! 4 × 1 MiB per CPU for both tracers. Each cell is the median of --runs
//! runs. Then a workload-overhead table (a syscall loop with entry/exit
//! events: absent, dormant, flight recorder, discard to disk), the
//! front-end table (Rust macro, C API, `tracing` layer, fmt layer, LTTng-UST
//! tracepoint: `frontends.rs`), losses of 8 writer threads paced to equal
//! event rates (`losses.rs`) and the ring buffer tables of the 002 paper
//! (`ring.rs`), and the reading speed of `ringtrace view` and `stats`
//! against babeltrace2 on an LTTng-UST and a ringtrace trace (`reading.rs`).
//!
//! `cargo run --release -p compare -- [--quick] [--json FILE]`; the last
//! line printed is `ratio lttng-ust/ringtrace (1 thread, discard, u64): X.XX`.

mod baselines;
mod c_interleaved;
mod cell;
mod contexts;
mod cpus;
mod frontends;
mod interleaved;
mod losses;
mod lttng;
mod ours;
mod reading;
mod ring;
mod scaling;
mod scaling_interleaved;
mod wake;

use std::path::PathBuf;
use std::time::Instant;

use cell::{Cell, Mode, Payload, Run};
use clap::Parser;

/// ringtrace against LTTng-UST, same work, same machine, same run.
#[derive(Parser, Debug)]
struct Args {
    /// Under two minutes: 1 M events per run, 1 and 2 threads.
    #[arg(long)]
    quick: bool,
    /// Write one JSON object per cell to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Events per run (default 10 M, 1 M with --quick).
    #[arg(long)]
    events: Option<u64>,
    /// Runs per cell (median).
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Scratch directory for traces.
    #[arg(long, default_value = "target/compare")]
    scratch: PathBuf,
    /// Only these tables (comma-separated): tracers, frontends, losses,
    /// overhead, ring, reading, contexts, wake (how late a thread wakes on
    /// an idle CPU and a busy one). Default: all.
    #[arg(long, value_delimiter = ',')]
    tables: Vec<String>,
    /// Keep the `reading` table's traces in SCRATCH/reading (to profile
    /// the reader on them).
    #[arg(long)]
    keep_traces: bool,
    /// Only the cells the ratio lines need: u64, discard, 1 and 2 threads,
    /// and flight recorder for rseq and per-thread (with --tables
    /// tracers,frontends: a few minutes).
    #[arg(long)]
    focus: bool,
    /// How ringtrace's stream files are written: buffered (the default,
    /// as sessions: through the page cache), auto (direct I/O for fast
    /// streams, the page cache for slow ones) or direct (direct I/O where
    /// the file system takes it, every packet padded).
    #[arg(long, default_value = "buffered", value_parser = ringtrace::FileIo::parse)]
    io: ringtrace::FileIo,
}

const TRACERS: [&str; 6] = [
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
fn measure(
    tracer: &str,
    bin: &std::path::Path,
    p: Payload,
    m: Mode,
    t: usize,
    n: u64,
    rate: u64,
    scratch: &std::path::Path,
) -> Result<Run, String> {
    settle(scratch);
    let (tracer, ctx) = contexts::split(tracer);
    if let Some(bufs) = ours::Bufs::of(tracer) {
        return ours::run(bufs, p, m, t, n, rate, scratch, ctx);
    }
    match tracer {
        "lttng-ust" => lttng::run(bin, p, m, t, n, rate, scratch, ctx),
        "mutex ring" => Ok(baselines::mutex_ring(p, t, n)),
        _ => Ok(baselines::crossbeam(p, t, n)),
    }
}

/// Before a run: removes the traces earlier runs left in `scratch` and
/// flushes what the kernel still holds dirty, so that no run pays for the
/// write-back of another's trace (the discard cells write 100+ MB each).
pub fn settle(scratch: &std::path::Path) {
    for d in ["ringtrace", "lttng", "frontends", "overhead"] {
        let _ = std::fs::remove_dir_all(scratch.join(d));
    }
    let _ = std::process::Command::new("sync").status();
}

fn main() {
    if let Err(e) = run() {
        eprintln!("compare: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let a = Args::parse();
    ours::set_file_io(a.io);
    let n = a
        .events
        .unwrap_or(if a.quick { 1_000_000 } else { 10_000_000 });
    let runs = a.runs.max(1);
    std::fs::create_dir_all(&a.scratch).map_err(|e| format!("{}: {e}", a.scratch.display()))?;
    let scratch = std::fs::canonicalize(&a.scratch).map_err(|e| e.to_string())?;
    lttng::ensure_installed()?;
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("c");
    let bin = lttng::build_workload(&src, &scratch)?;
    let ffi_bin = frontends::build_c_workload(&src, &scratch)?;
    let chunks_bin = c_interleaved::build(&src, &scratch)?;
    let _daemon = lttng::start_daemon()?;
    let _ = ringtrace::clock(); // calibrate once, outside the measurements
    let want = |t: &str| a.tables.is_empty() || a.tables.iter().any(|x| x == t);

    // (payload, mode, threads, tracers); the contexts group is measured
    // last, into its own cells.
    let mut plan: Vec<(Payload, Mode, usize, Vec<&'static str>)> = Vec::new();
    for p in [Payload::U64, Payload::Str16]
        .into_iter()
        .filter(|p| want("tracers") && (!a.focus || *p == Payload::U64))
    {
        for m in [Mode::Discard, Mode::Flight] {
            for t in [1, 2] {
                if !a.focus || m == Mode::Discard {
                    plan.push((p, m, t, TRACERS.to_vec()));
                }
            }
        }
        if !a.focus {
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
    if !a.quick && !a.focus && want("tracers") {
        // More threads than CPUs: behaviour under migration.
        for t in [4, 8] {
            plan.push((Payload::U64, Mode::Discard, t, TRACERS[..4].to_vec()));
        }
    }
    let contexts_group = (want("contexts") && !a.focus).then(|| contexts::TRACERS.to_vec());
    // The page cache's write rate, beside which the consumer's drain rate
    // is printed (measured now, between the builds and the cells).
    let dd = want("tracers").then(|| dd_rate(&scratch));
    if let Some(t) = &contexts_group {
        plan.push((Payload::U64, Mode::Discard, 1, t.clone()));
    }
    let total: usize = plan.iter().map(|c| c.3.len()).sum::<usize>() * runs;
    let started = Instant::now();
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
        // Interleave the tracers run by run: they see the same machine.
        for _ in 0..runs {
            for c in group.iter_mut() {
                let r = measure(c.tracer, &bin, *p, *m, *t, n, 0, &scratch)?;
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
        if contexts_group.is_some() && k == plan.len() - 1 {
            ctx_cells = group;
        } else {
            cells.extend(group);
        }
    }
    eprintln!();
    if want("tracers") {
        print_tables(&cells, n, runs);
    }
    let mut more = Vec::new();
    let mut ratios = Vec::new();
    if want("frontends") {
        more.extend(frontends::table(
            &ffi_bin,
            &chunks_bin,
            &bin,
            n.min(5_000_000),
            runs,
            &scratch,
            &mut ratios,
        )?);
    }
    if want("losses") && !a.focus {
        // Up to the rate LTTng-UST sustains here with 8 threads (about
        // 11.7 M/s in all), then unpaced (0).
        more.extend(losses::table(
            &bin,
            8,
            &[250_000, 1_000_000, 1_400_000, 0],
            if a.quick { 2_000_000 } else { 8_000_000 },
            if a.quick { 3 } else { runs },
            &scratch,
        )?);
    }
    if want("overhead") && !a.focus {
        more.extend(overhead_table(
            &scratch,
            if a.quick { 200_000 } else { 2_000_000 },
        )?);
    }
    if want("ring") && !a.focus {
        more.extend(ring::tables(
            if a.quick { 1_000_000 } else { 10_000_000 },
            if a.quick { 2.0 } else { 10.0 },
        )?);
    }
    if want("reading") && !a.focus {
        more.extend(reading::table(
            &bin,
            n,
            if a.quick { 1 } else { runs.min(3) },
            &scratch,
            a.keep_traces,
        )?);
    }
    if want("wake") {
        more.push(wake::table()?);
    }
    if let Some(path) = &a.json {
        let mut v: Vec<serde_json::Value> = cells
            .iter()
            .map(|c| {
                let lttng = cells.iter().find(|l| {
                    l.tracer == "lttng-ust"
                        && (l.payload, l.mode, l.threads) == (c.payload, c.mode, c.threads)
                });
                c.json(lttng)
            })
            .collect();
        v.extend(more);
        let text = serde_json::to_string_pretty(&v).map_err(|e| e.to_string())?;
        std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        println!("\n{} cells written to {}", v.len(), path.display());
    }
    let find_t = |tr: &str, t: usize| {
        cells.iter().find(|c| {
            c.tracer == tr && c.payload == Payload::U64 && c.mode == Mode::Discard && c.threads == t
        })
    };
    let find = |tr: &str| find_t(tr, 1);
    if let Some(dd) = dd {
        drain_table(&cells, dd);
    }
    let (l, pc, pr, pt) = (
        find("lttng-ust"),
        find("ringtrace per-cpu"),
        find("ringtrace per-cpu-rseq"),
        find("ringtrace per-thread"),
    );
    if let (Some(pr), Some(pt)) = (pr, pt) {
        // The two in one process, in alternating chunks (interleaved.rs):
        // the table's runs, a second apart each, drift with the machine.
        let il = interleaved::rseq_over_per_thread(n, Some(&scratch))?;
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
    }
    // 2 threads / 1 thread, paired (scaling.rs): the tables' two groups
    // run minutes apart; their medians' ratio is printed beside it.
    if let (Some(pr), Some(pr2)) = (pr, find_t("ringtrace per-cpu-rseq", 2)) {
        let (r, v) = scaling::two_over_one(
            "ringtrace per-cpu-rseq",
            &bin,
            Mode::Discard,
            n,
            runs,
            &scratch,
        )?;
        eprintln!();
        // Each thread against itself alone on its own CPU, in one process
        // (scaling_interleaved.rs): the paired runs' figure is the slower
        // thread's, and the two vCPUs drift apart.
        let il = scaling_interleaved::two_over_one(50, &scratch, true)?;
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
    let flight = |t: usize| {
        cells.iter().find(|c| {
            c.tracer == "ringtrace per-cpu-rseq"
                && c.payload == Payload::U64
                && c.mode == Mode::Flight
                && c.threads == t
        })
    };
    if let (Some(f1), Some(f2)) = (flight(1), flight(2)) {
        let (r, v) = scaling::two_over_one(
            "ringtrace per-cpu-rseq",
            &bin,
            Mode::Flight,
            n,
            runs,
            &scratch,
        )?;
        eprintln!();
        let il = scaling_interleaved::two_over_one(200, &scratch, false)?;
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
    if !ratios.is_empty() {
        println!();
        for r in &ratios {
            println!("{r}");
        }
    }
    if !ctx_cells.is_empty() {
        println!();
        if contexts::print(&ctx_cells).is_none() {
            eprintln!("compare: a contexts cell is missing");
        }
    }
    Ok(())
}

/// `dd`'s rate writing 1 GiB of zeros into the page cache of the scratch
/// file system (MB/s, as dd counts: 10^6 bytes): the median of 3 runs and
/// the first, or `None` if dd failed. The first may be much slower: on a
/// virtual machine that returns freed memory to the host at once (free
/// page reporting), the page cache's new pages fault in the host, and the
/// next two runs reuse the pages the first freed (BENCHMARKS.md, "The page
/// cache's new pages": 241 MB/s, then 3.1 GB/s).
fn dd_rate(scratch: &std::path::Path) -> Option<(f64, f64)> {
    let v: Vec<f64> = (0..3).filter_map(|_| dd_once(scratch)).collect();
    let first = *v.first()?;
    let mut sorted = v.clone();
    sorted.sort_by(f64::total_cmp);
    Some((sorted[sorted.len() / 2], first))
}

fn dd_once(scratch: &std::path::Path) -> Option<f64> {
    let f = scratch.join("dd.out");
    let o = std::process::Command::new("dd")
        .args(["if=/dev/zero", "bs=1M", "count=1024"])
        .arg(format!("of={}", f.display()))
        .output()
        .ok()?;
    let _ = std::fs::remove_file(&f);
    settle(scratch);
    // "1073741824 bytes (1.1 GB, 1.0 GiB) copied, 0.93 s, 1.2 GB/s"
    let text = String::from_utf8_lossy(&o.stderr);
    let line = text.lines().find(|l| l.contains(" copied, "))?;
    let bytes: f64 = line.split_whitespace().next()?.parse().ok()?;
    let secs: f64 = line
        .split(" copied, ")
        .nth(1)?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(bytes / secs / 1e6)
}

/// The consumer's drain rate in the discard cells (trace bytes over the
/// time from session start to a complete trace on disk), beside `dd`'s.
fn drain_table(cells: &[Cell], dd: Option<(f64, f64)>) {
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

fn print_tables(cells: &[Cell], n: u64, runs: usize) {
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

fn overhead_table(
    scratch: &std::path::Path,
    per_thread: u64,
) -> Result<Vec<serde_json::Value>, String> {
    use ours::Tracing;
    println!("Workload overhead: getppid() loop with syscall_entry/syscall_exit events, 2 threads, {per_thread} calls each (median of 3)\n");
    println!(
        "  {:<18} {:>14} {:>10} {:>14} {:>12}",
        "tracing", "syscalls/s", "overhead", "events/s", "trace MiB/s"
    );
    let mut base = None;
    let mut out = Vec::new();
    for tr in [
        Tracing::Absent,
        Tracing::Dormant,
        Tracing::Flight,
        Tracing::Discard,
    ] {
        let mut samples = Vec::new();
        for _ in 0..3 {
            samples.push(ours::overhead(tr, 2, per_thread, scratch)?);
        }
        samples.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (ops, records, bytes) = samples[1];
        let b = *base.get_or_insert(ops);
        let secs = (2 * per_thread) as f64 / ops;
        let ev_s = records as f64 / secs;
        let mib_s = bytes as f64 / secs / (1 << 20) as f64;
        let mib = if tr == Tracing::Discard {
            format!("{mib_s:.1}")
        } else {
            "-".into()
        };
        println!(
            "  {:<18} {:>14.0} {:>9.1}% {:>14.0} {:>12}",
            tr.name(),
            ops,
            (b / ops - 1.0) * 100.0,
            ev_s,
            mib
        );
        out.push(serde_json::json!({"workload": "syscall loop", "tracing": tr.name(), "syscalls_per_s": ops,
            "overhead_percent": (b / ops - 1.0) * 100.0, "events_per_s": ev_s, "trace_mib_per_s": mib_s}));
    }
    Ok(out)
}

/// Run-by-run ratios as `1.12 1.30 ...`.
fn fmt_runs(v: &[f64]) -> String {
    v.iter()
        .map(|x| format!("{x:.2}"))
        .collect::<Vec<_>>()
        .join(" ")
}
