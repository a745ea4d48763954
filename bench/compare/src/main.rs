//! `bench/compare`: ringtrace against LTTng-UST and two naive baselines,
//! the same work on the same machine in the same run. N events with one u64
//! field or a 16-byte string; discard and flight-recorder modes; 1 and 2
//! threads (and 4 and 8 without --quick); dormant probes; sub-buffers
//! 4 × 1 MiB per CPU for both tracers. Each cell is the median of --runs
//! runs. Then a workload-overhead table (a syscall loop with entry/exit
//! events: absent, dormant, flight recorder, discard to disk) and what one
//! or two events cost between system calls (`between.rs`), the
//! front-end table (Rust macro, C API, `tracing` layer, fmt layer, LTTng-UST
//! tracepoint: `frontends.rs`), losses of 8 writer threads paced to equal
//! event rates (`losses.rs`) and the ring buffer tables of the 002 paper
//! (`ring.rs`), and the reading speed of `ringtrace view` and `stats`
//! against babeltrace2 on an LTTng-UST and a ringtrace trace (`reading.rs`),
//! and an LTTng-UST program under LTTng-UST's tracer and ringtrace's
//! `liblttng-ust.so.1` (`ust_abi.rs`), and ringtrace's event against the
//! floor, a minimal record in the same process (`floor.rs`), what work
//! added to the floor's event costs (`shadow.rs`), and the
//! `tracing` layer against `event!`, interleaved in one process
//! (`layer.rs`).
//!
//! `cargo run --release -p compare -- [--quick] [--json FILE]`; the last
//! lines printed are the ratio lines, ending with
//! `ratio lttng-ust/ringtrace-ust (1 thread, discard, u64): X.XX` and
//! `ratio lttng-ust/ringtrace-ust (1 thread, discard, every field kind): X.XX`,
//! then `ratio ringtrace/floor per-thread (1 thread, flight recorder, u64): X.XX`,
//! its per-CPU rseq line, the two with the default contexts,
//! `ratio overhead ringtrace/floor (getppid loop, ...)` and
//! `ratio tracing-layer/event! (1 thread, discard, u64): X.XX`, and last
//! the filter's lines (`filtered.rs`): `filter cost, accepted (ns per
//! event): X`, `filter cost, rejected (ns per event): X` and `ratio
//! lttng-ust/ringtrace with filter (1 thread, discard, u64): X`. The
//! instructions of an event, counted by callgrind, are a table of their
//! own (`instructions.rs`).
//!
//! Module map (each row imports only from the rows below it, as
//! `scripts/module_graph.py` checks):
//!
//! ```text
//!   ratios                                  the ratio lines printed last
//!     frontends  losses  scaling            tables that run the tracers' cells
//!       tracers  overhead  between  shadow  the tracer tables; the workload's overhead,
//!                                           events between system calls; what the
//!                                           floor's clock read hides
//!         baselines c_interleaved interleaved scaling_interleaved
//!         drain reading ring wake           one table or measurement each
//!         instructions
//!         ust_abi floor layer filtered      (LTTng-UST programs; the floor; tracing;
//!                                           filters)
//!           ours  lttng  contexts           ringtrace's and LTTng-UST's runs
//!             cell  cpus  disk  c_build     a cell's runs; CPU pinning; the scratch
//!                                           disk; C programs against libringtrace.a
//! ```

mod baselines;
mod between;
mod c_build;
mod c_interleaved;
mod cell;
mod contexts;
mod cpus;
mod disk;
mod drain;
mod filtered;
mod floor;
mod frontends;
mod instructions;
mod interleaved;
mod layer;
mod losses;
mod lttng;
mod ours;
mod overhead;
mod ratios;
mod reading;
mod ring;
mod scaling;
mod scaling_interleaved;
mod shadow;
mod tracers;
mod ust_abi;
mod wake;

use std::path::PathBuf;

use cell::Cell;
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
    /// overhead (and events between system calls, one thread), ring,
    /// reading, contexts, wake (how late a thread wakes on an idle CPU and
    /// a busy one), lttng-ust-programs (an LTTng-UST
    /// program under LTTng-UST and under ringtrace's liblttng-ust.so.1),
    /// floor (ringtrace's event against the least a record can cost),
    /// shadow (what work added to the floor's event costs, beside its
    /// clock read and beyond),
    /// tracing-layer (the `tracing` layer against `event!`), filter (a
    /// filter's cost, accepted and rejected, and against LTTng-UST's
    /// filter), instructions
    /// (per event, counted by callgrind: needs valgrind).
    /// Default: all.
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
    let ffi_bin = c_build::build(&src, &scratch, "ffi_workload")?;
    let chunks_bin = c_build::build(&src, &scratch, "ffi_chunks")?;
    let _daemon = lttng::start_daemon()?;
    let _ = ringtrace::clock(); // calibrate once, outside the measurements
    let want = |t: &str| a.tables.is_empty() || a.tables.iter().any(|x| x == t);

    let contexts = want("contexts") && !a.focus;
    let plan = tracers::plan(want("tracers"), a.quick, a.focus, contexts);
    // The page cache's write rate, beside which the consumer's drain rate
    // is printed (measured now, between the builds and the cells).
    let dd = want("tracers").then(|| disk::dd_rate(&scratch));
    let (cells, ctx_cells) = tracers::measure_plan(&plan, contexts, &bin, n, runs, &scratch)?;
    if want("tracers") {
        tracers::print_tables(&cells, n, runs);
    }
    let mut more = Vec::new();
    let mut ratios = Vec::new();
    if want("frontends") {
        let n = n.min(5_000_000);
        more.extend(frontends::table(
            &ffi_bin,
            &chunks_bin,
            &bin,
            n,
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
    let mut overhead_lines = Vec::new();
    if want("overhead") && !a.focus {
        more.extend(overhead::table(
            &scratch,
            if a.quick { 100_000 } else { 250_000 },
            if a.quick { 10 } else { 40 },
            &mut overhead_lines,
        )?);
        between::table(if a.quick { 50 } else { 200 })?;
    }
    if want("ring") && !a.focus {
        more.extend(ring::tables(
            if a.quick { 1_000_000 } else { 10_000_000 },
            if a.quick { 2.0 } else { 10.0 },
        )?);
    }
    if want("reading") && !a.focus {
        let runs = if a.quick { 1 } else { runs.min(3) };
        let (rows, line) = reading::table(&bin, n, runs, &scratch, a.keep_traces)?;
        more.extend(rows);
        ratios.push(line);
    }
    more.extend(machine_tables(&want, &a)?);
    // Printed last of the ratio lines.
    let [floor_lines, layer_lines, filter_lines] =
        in_process(&want, a.quick, &bin, n, runs, &scratch)?;
    let mut ust_lines = Vec::new();
    if want("lttng-ust-programs") {
        let (rows, lines) = ust_abi::table(&bin, n, runs, &scratch)?;
        more.extend(rows);
        ust_lines = lines;
    }
    if let Some(path) = &a.json {
        write_json(path, &cells, more)?;
    }
    if let Some(dd) = dd {
        drain::drain_table(&cells, dd);
    }
    ratios::lines(&cells, &bin, n, runs, &scratch, &mut ratios)?;
    if !ctx_cells.is_empty() {
        println!();
        if contexts::print(&ctx_cells).is_none() {
            eprintln!("compare: a contexts cell is missing");
        }
    }
    for more in [
        ust_lines,
        floor_lines,
        overhead_lines,
        layer_lines,
        filter_lines,
    ] {
        ratios.extend(more);
    }
    if !ratios.is_empty() {
        println!();
        for r in &ratios {
            println!("{r}");
        }
    }
    Ok(())
}

/// The tables of what the machine does beside the tracers: how late a
/// thread wakes, what the floor's clock read hides, instructions per
/// event (their JSON rows).
fn machine_tables(want: &dyn Fn(&str) -> bool, a: &Args) -> Result<Vec<serde_json::Value>, String> {
    let mut rows = Vec::new();
    if want("wake") {
        rows.push(wake::table()?);
    }
    if want("shadow") && !a.focus {
        shadow::table(if a.quick { 50 } else { 300 })?;
    }
    if want("instructions") && !a.focus {
        rows.extend(instructions::table()?);
    }
    Ok(rows)
}

/// The tables measured inside this process, interleaved: the floor, the
/// `tracing` layer, the filters (each one's ratio lines, empty when not
/// wanted).
fn in_process(
    want: &dyn Fn(&str) -> bool,
    quick: bool,
    bin: &std::path::Path,
    n: u64,
    runs: usize,
    scratch: &std::path::Path,
) -> Result<[Vec<String>; 3], String> {
    let rounds = if quick { 50 } else { 300 };
    let mut out: [Vec<String>; 3] = Default::default();
    if want("floor") {
        out[0] = floor::table(rounds)?;
    }
    if want("tracing-layer") {
        out[1] = layer::table(rounds, scratch)?;
    }
    if want("filter") {
        out[2] = filtered::table(bin, n, runs, rounds, scratch)?;
    }
    Ok(out)
}

/// One JSON object per cell (with its LTTng-UST reference) and per row of
/// the other tables, to `path`.
fn write_json(
    path: &std::path::Path,
    cells: &[Cell],
    more: Vec<serde_json::Value>,
) -> Result<(), String> {
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
    Ok(())
}
