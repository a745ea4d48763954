//! Instructions per event, counted by callgrind: the write path's size,
//! which the wall clock of a virtual machine cannot resolve and which
//! does not move from run to run, so a change that makes the event grow
//! shows here. Each row runs an example twice under
//! `valgrind --tool=callgrind`, with N and 2N events; the difference of
//! the two totals over N is the cost of one event (start-up cancels out).

use std::path::{Path, PathBuf};
use std::process::Command;

/// A row: what it measures, the example's package and name, its
/// arguments before and after the event count, and N.
struct Row {
    name: &'static str,
    package: &'static str,
    example: &'static str,
    before: &'static [&'static str],
    after: &'static [&'static str],
    n: u64,
}

const ROWS: [Row; 7] = [
    Row {
        name: "event! per-thread, flight, u64, no context",
        package: "ringtrace",
        example: "event_loop",
        before: &["per-thread"],
        after: &["flight", "u64", "none"],
        n: 1_000_000,
    },
    Row {
        name: "event! per-thread, flight, u64, vpid+vtid",
        package: "ringtrace",
        example: "event_loop",
        before: &["per-thread"],
        after: &["flight", "u64", "default"],
        n: 1_000_000,
    },
    Row {
        name: "event! per-CPU atomics, flight, u64, no context",
        package: "ringtrace",
        example: "event_loop",
        before: &["per-cpu-atomics"],
        after: &["flight", "u64", "none"],
        n: 1_000_000,
    },
    Row {
        name: "tracing layer, u64",
        package: "ringtrace-tracing",
        example: "layer_loop",
        before: &["layer"],
        after: &[],
        n: 100_000,
    },
    Row {
        name: "tracing layer, u64 and a message",
        package: "ringtrace-tracing",
        example: "layer_loop",
        before: &["text"],
        after: &[],
        n: 100_000,
    },
    Row {
        name: "tracing alone (its dispatch, a u64 visited)",
        package: "ringtrace-tracing",
        example: "layer_loop",
        before: &["visit"],
        after: &[],
        n: 100_000,
    },
    Row {
        name: "tracing to a bare subscriber (a u64 visited)",
        package: "ringtrace-tracing",
        example: "layer_loop",
        before: &["bare"],
        after: &[],
        n: 100_000,
    },
];

/// Builds the examples with this program's profile; the directory they
/// are in.
fn build_examples() -> Result<PathBuf, String> {
    let args = ["-p", "ringtrace", "--example", "event_loop"];
    let more = ["-p", "ringtrace-tracing", "--example", "layer_loop"];
    Ok(crate::c_build::cargo_build(&[&args[..], &more[..]].concat())?.join("examples"))
}

/// Instructions callgrind counted for the whole run of `bin ARGS`.
fn collected(bin: &Path, args: &[String]) -> Result<u64, String> {
    let out = Command::new("valgrind")
        .args(["--tool=callgrind", "--callgrind-out-file=/dev/null"])
        .arg(bin)
        .args(args)
        .output()
        .map_err(|e| format!("valgrind: {e} (apt-get install valgrind)"))?;
    let err = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(format!(
            "valgrind {} {args:?} failed:\n{err}",
            bin.display()
        ));
    }
    err.lines()
        .find_map(|l| l.split("Collected :").nth(1))
        .and_then(|n| n.trim().parse().ok())
        .ok_or_else(|| format!("no \"Collected :\" line from callgrind:\n{err}"))
}

/// Prints the table; one JSON row per line of it.
pub fn table() -> Result<Vec<serde_json::Value>, String> {
    let dir = build_examples()?;
    println!("\nInstructions per event (callgrind: the runs with 2N and N events, their difference over N)\n");
    println!("  {:<48} {:>10} {:>14}", "event", "N", "instructions");
    let mut out = Vec::new();
    for r in &ROWS {
        let bin = dir.join(r.example);
        let args = |n: u64| -> Vec<String> {
            let mut a: Vec<String> = r.before.iter().map(|s| s.to_string()).collect();
            a.push(n.to_string());
            a.extend(r.after.iter().map(|s| s.to_string()));
            a
        };
        let one = collected(&bin, &args(r.n))?;
        let two = collected(&bin, &args(2 * r.n))?;
        let per = two.saturating_sub(one) as f64 / r.n as f64;
        println!("  {:<48} {:>10} {per:>14.1}", r.name, r.n);
        out.push(
            serde_json::json!({"instructions": r.name, "package": r.package, "per_event": per}),
        );
    }
    Ok(out)
}
