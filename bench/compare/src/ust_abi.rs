//! Programs instrumented for LTTng-UST, recorded by LTTng-UST's tracer and
//! by ringtrace's `liblttng-ust.so.1` (crate `ringtrace-lttng-ust`): the
//! same C workload binary (built once against LTTng-UST), one thread,
//! discard mode, 4 sub-buffers of 1 MiB per CPU and no contexts on both
//! sides; one event with a u64, then one with every field kind. Runs are
//! paired (LTTng-UST and ringtrace back to back, the order alternating)
//! and each pair gives a ratio; the cell is the median. ringtrace's side
//! runs under `ringtrace record` (which offers the library), whose summary
//! gives the events recorded and discarded.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::cell::{median, Mode};
use crate::lttng;

/// The workload's events measured, with the label of their ratio line.
const EVENTS: [(&str, &str); 2] = [("u64", "u64"), ("every", "every field kind")];

/// Builds `ringtrace` and its `liblttng-ust.so.1` beside this binary
/// (`record` finds the library there).
fn build() -> Result<PathBuf, String> {
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.toml");
    let release = me
        .parent()
        .is_some_and(|d| d.file_name().is_some_and(|n| n == "release"));
    let mut cmd = Command::new(env!("CARGO"));
    cmd.arg("build")
        .arg("-q")
        .arg("--manifest-path")
        .arg(&manifest)
        .args(["-p", "ringtrace-cli", "-p", "ringtrace-lttng-ust"]);
    if release {
        cmd.arg("--release");
    }
    let st = cmd.status().map_err(|e| format!("cargo build: {e}"))?;
    if !st.success() {
        return Err("cargo build -p ringtrace-cli -p ringtrace-lttng-ust failed".into());
    }
    Ok(me.with_file_name("ringtrace"))
}

/// One run under `ringtrace record`: ns per event, events discarded.
fn ours(
    ringtrace: &Path,
    bin: &Path,
    event: &str,
    n: u64,
    scratch: &Path,
) -> Result<(f64, u64), String> {
    let out = scratch.join("ringtrace-ust");
    let _ = std::fs::remove_dir_all(&out);
    let o = Command::new(ringtrace)
        .arg("record")
        .arg("-o")
        .arg(&out)
        .args(["--subbuf", "1m", "--count", "4", "--context", "none"])
        .args(["--mode", "discard", "-e", "bench:*", "--"])
        .arg(bin)
        .args([&n.to_string(), "1", event])
        .output()
        .map_err(|e| format!("{}: {e}", ringtrace.display()))?;
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    if !o.status.success() {
        return Err(format!("ringtrace record {}: {said}", bin.display()));
    }
    let value = |prefix: &str| -> Result<u64, String> {
        said.lines()
            .find_map(|l| l.strip_prefix(prefix))
            .and_then(|v| v.trim().parse().ok())
            .ok_or_else(|| format!("no '{prefix}' in: {said}"))
    };
    let elapsed: u64 = said
        .split_whitespace()
        .find_map(|w| w.strip_prefix("elapsed_ns="))
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| format!("no elapsed_ns in: {said}"))?;
    let (recorded, lost) = (value("trace events")?, value("trace discarded events")?);
    // Recorded by ringtrace's library, every event accounted for: not
    // LTTng-UST's tracer loaded by mistake (which would record nothing
    // here and look fast).
    if recorded + lost != n {
        return Err(format!(
            "ringtrace-ust recorded {recorded} and discarded {lost} of {n} events: {said}"
        ));
    }
    let _ = std::fs::remove_dir_all(&out);
    Ok((elapsed as f64 / n as f64, lost))
}

/// Measures, prints the table, and returns one JSON object per event and
/// the ratio lines (for the end of the output).
pub fn table(
    bin: &Path,
    n: u64,
    runs: usize,
    scratch: &Path,
) -> Result<(Vec<serde_json::Value>, Vec<String>), String> {
    let ringtrace = build()?;
    let mut rows = Vec::new();
    let mut lines = Vec::new();
    for (event, label) in EVENTS {
        // The every-field-kind event is about 100 bytes: a tenth as many
        // (the same time on disk's side as the u64's).
        let n = if event == "every" { (n / 10).max(1) } else { n };
        let (mut theirs, mut mine, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
        let (mut lost_theirs, mut lost_mine) = (0, 0);
        for k in 0..runs {
            eprint!("\r[lttng-ust programs {event} {}/{runs}]   ", k + 1);
            let lt = |s: &Path| lttng::run(bin, event, Mode::Discard, 1, n, 0, s, false, None);
            let (l, o) = if k % 2 == 0 {
                crate::disk::settle(scratch);
                let l = lt(scratch)?;
                crate::disk::settle(scratch);
                (l, ours(&ringtrace, bin, event, n, scratch)?)
            } else {
                crate::disk::settle(scratch);
                let o = ours(&ringtrace, bin, event, n, scratch)?;
                crate::disk::settle(scratch);
                (lt(scratch)?, o)
            };
            let l_ns = l.elapsed_ns as f64 / l.per_thread.max(1) as f64;
            theirs.push(l_ns);
            mine.push(o.0);
            ratio.push(l_ns / o.0);
            lost_theirs += l.lost;
            lost_mine += o.1;
        }
        eprintln!();
        let runs_text = ratio
            .iter()
            .map(|r| format!("{r:.2}"))
            .collect::<Vec<_>>()
            .join(" ");
        let (t, m, r) = (median(theirs), median(mine), median(ratio));
        rows.push((label, n, t, m, r, lost_theirs, lost_mine));
        lines.push(format!(
            "ratio lttng-ust/ringtrace-ust (1 thread, discard, {label}): {r:.2} (paired runs: {runs_text}; events discarded in all {runs} runs: lttng-ust {lost_theirs}, ringtrace-ust {lost_mine})"
        ));
    }
    println!(
        "\nLTTng-UST programs: LTTng-UST's tracer and ringtrace's liblttng-ust.so.1 \
         (1 thread, discard, 4 x 1 MiB per CPU, no contexts), median of {runs} paired runs"
    );
    println!(
        "  {:<18} {:>10} {:>14} {:>18} {:>8} {:>16} {:>20}",
        "event",
        "events",
        "lttng-ust ns",
        "ringtrace-ust ns",
        "ratio",
        "lost lttng-ust",
        "lost ringtrace-ust"
    );
    let mut json = Vec::new();
    for (label, n, t, m, r, lt, lm) in rows {
        println!("  {label:<18} {n:>10} {t:>14.1} {m:>18.1} {r:>8.2} {lt:>16} {lm:>20}");
        json.push(serde_json::json!({
            "table": "lttng-ust programs", "event": label, "events": n,
            "lttng_ust_ns": t, "ringtrace_ust_ns": m, "ratio": r,
            "lost_lttng_ust": lt, "lost_ringtrace_ust": lm,
        }));
    }
    Ok((json, lines))
}
