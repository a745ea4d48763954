//! The `ringtrace` command: run the demo, record a program, read traces
//! (view, stats, export) and control traced processes live (ctl).
//!
//! Module map: one module per subcommand, over shared parts; no
//! subcommand imports another (`view --follow` is `follow`, below `view`).
//! Each row imports only from the rows below it (`scripts/module_graph.py`
//! holds these rows as the crate's layers and checks every import).
//!
//! ```text
//!   demo, record, view, stats, export, recover, ctl, docs   (subcommands)
//!     follow                                  (view --follow)
//!       pretty (event text), select (which events view shows), symbols
//!       (addresses to functions and lines: view, stats --by function, export)
//!         read (open traces, progress), outdir (-o folders the user owns),
//!         out (aligned tables, errors), who (process and thread columns),
//!         filter (--filter), babeltrace (its text format), session_opts
//!         (demo's and record's session flags), session_stats (ctl stats),
//!         lttng_ust (record's liblttng-ust.so.1)
//! ```

#[macro_use]
mod out;

mod babeltrace;
mod ctl;
mod demo;
mod docs;
mod export;
mod filter;
mod follow;
mod lttng_ust;
mod outdir;
mod pretty;
mod read;
mod record;
mod recover;
mod select;
mod session_opts;
mod session_stats;
mod stats;
mod symbols;
mod view;
mod who;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// ringtrace: a user-space tracer on the lockless ring buffer of the LTTng
/// papers. Traces are CTF 1.8 directories that babeltrace2 and Trace Compass
/// open unchanged.
#[derive(Parser, Debug)]
#[command(
    name = "ringtrace",
    version = VERSION,
    after_help = "Examples:\n  ringtrace demo                                   record and show the demo workload\n  \
                  ringtrace record -o /tmp/t -- ./myprogram --its-args\n  \
                  ringtrace view /tmp/t --events 'myapp:*' --limit 20\n  \
                  ringtrace stats /tmp/t\n  \
                  ringtrace export /tmp/t --format chrome-json -o trace.json\n  \
                  ringtrace ctl list\n  \
                  ringtrace ctl 1234 snapshot fr -o /tmp/snap"
)]
pub struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Record the built-in demo workload and show a summary and its first events.
    Demo(demo::Args),
    /// Run a program built with ringtrace (or instrumented for LTTng-UST)
    /// under a session configured through the environment; print a
    /// summary when it exits.
    Record(record::Args),
    /// Print events merged by time, one per line.
    View(view::Args),
    /// Per-stream and per-event statistics of a trace.
    Stats(stats::Args),
    /// Convert a trace for ui.perfetto.dev / chrome://tracing, or traces into
    /// a Parquet dataset for SQL (DuckDB, Spark).
    Export(export::Args),
    /// Control traced processes of this user through their sockets.
    Ctl(ctl::Args),
    /// Rebuild a trace from the buffer directory of a process that died
    /// (sessions with a buffer directory: RINGTRACE_SESSION=...,bufdir=DIR).
    Recover(recover::Args),
    /// Print shell completions (bash, zsh, fish, elvish, powershell) to stdout.
    Completions(docs::CompletionArgs),
    /// Write the man pages (ringtrace.1 and one per subcommand).
    Man(docs::ManArgs),
}

/// `--version`: the program's version and the trace format it writes and reads.
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (traces: CTF 1.8)");

/// `--seconds` values: a finite number of seconds, more than 0 and at most
/// a day.
pub fn parse_seconds(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a number of seconds"))?;
    if !v.is_finite() || v <= 0.0 || v > 86_400.0 {
        return Err(format!(
            "'{s}': give a number of seconds more than 0 and at most 86400"
        ));
    }
    Ok(v)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let r = match cli.cmd {
        Cmd::Demo(a) => demo::run(a),
        // `record` exits with the status of the program it ran.
        Cmd::Record(a) => return record::run(a),
        Cmd::View(a) => view::run(a),
        Cmd::Stats(a) => stats::run(a),
        Cmd::Export(a) => export::run(a),
        Cmd::Ctl(a) => ctl::run(a),
        Cmd::Recover(a) => recover::run(a),
        Cmd::Completions(a) => docs::completions(a),
        Cmd::Man(a) => docs::man(a),
    };
    match r {
        Ok(()) if out::failed() => ExitCode::FAILURE,
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ringtrace: {e}");
            ExitCode::FAILURE
        }
    }
}
