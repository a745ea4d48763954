//! The `ringtrace` command: run the demo, record a program, read traces
//! (view, stats, export) and control traced processes live (ctl).

mod ctl;
mod demo;
mod export;
mod read;
mod record;
mod recover;
mod stats;
mod view;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use ringtrace::Mode;

/// ringtrace: a user-space tracer on the lockless ring buffer of the LTTng
/// papers. Traces are CTF 1.8 directories that babeltrace2 and Trace Compass
/// open unchanged.
#[derive(Parser, Debug)]
#[command(
    name = "ringtrace",
    version,
    after_help = "Examples:\n  ringtrace demo                                   record and show the demo workload\n  \
                  ringtrace record -o /tmp/t -- ./myprogram --its-args\n  \
                  ringtrace view /tmp/t --events 'myapp:*' --limit 20\n  \
                  ringtrace stats /tmp/t\n  \
                  ringtrace export /tmp/t --format chrome-json -o trace.json\n  \
                  ringtrace ctl list\n  \
                  ringtrace ctl 1234 snapshot fr -o /tmp/snap"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Record the built-in demo workload and show a summary and its first events.
    Demo(demo::Args),
    /// Run a program built with ringtrace under a session configured through
    /// the environment; print a summary when it exits.
    Record(record::Args),
    /// Print events merged by time, one per line.
    View(view::Args),
    /// Per-stream and per-event statistics of a trace.
    Stats {
        /// Trace directory.
        dir: PathBuf,
    },
    /// Convert a trace for ui.perfetto.dev / chrome://tracing.
    Export(export::Args),
    /// Control traced processes of this user through their sockets.
    Ctl(ctl::Args),
    /// Rebuild a trace from the buffer directory of a process that died
    /// (sessions with a buffer directory: RINGTRACE_SESSION=...,bufdir=DIR).
    Recover(recover::Args),
}

/// `--mode` values.
pub fn parse_mode(s: &str) -> Result<Mode, String> {
    s.parse::<Mode>().map_err(|e| e.to_string())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let r = match cli.cmd {
        Cmd::Demo(a) => demo::run(a),
        Cmd::Record(a) => record::run(a),
        Cmd::View(a) => view::run(a),
        Cmd::Stats { dir } => stats::run(&dir),
        Cmd::Export(a) => export::run(a),
        Cmd::Ctl(a) => ctl::run(a),
        Cmd::Recover(a) => recover::run(a),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ringtrace: {e}");
            ExitCode::FAILURE
        }
    }
}
