//! Reading speed: `ringtrace view` against babeltrace2's text output
//! and `ringtrace stats` against babeltrace2's event counter
//! (`-c sink.utils.counter`), on an LTTng-UST trace and a ringtrace trace
//! of the same N u64 events, both written to stdout redirected to
//! `/dev/null`. Runs alternate between the two readers of a pair; each
//! cell is the median. The goal for LTTng-UST traces: `view` at least 5x
//! babeltrace2's text output, `stats` at least 10x its counter. And
//! `view` of a trace with `ip` from 10,000 call sites (`c/sites.c`) with
//! its addresses resolved against without (the ratio line `ratio view
//! with symbols/without`; goal at most 1.5).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::cell::{median, Mode, Payload};

/// Seconds one run of `cmd` takes, its output discarded; it must succeed.
fn time(cmd: &mut Command) -> Result<f64, String> {
    let t = Instant::now();
    let st = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| format!("{cmd:?}: {e}"))?;
    if !st.success() {
        return Err(format!("{cmd:?} failed: {st}"));
    }
    Ok(t.elapsed().as_secs_f64())
}

/// The `ringtrace` command next to this benchmark's binary.
fn ringtrace() -> Result<std::path::PathBuf, String> {
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    let bin = me.with_file_name("ringtrace");
    if bin.exists() {
        Ok(bin)
    } else {
        Err(format!(
            "{} is missing: build it first (cargo build --release -p ringtrace-cli)",
            bin.display()
        ))
    }
}

/// Medians (ours, babeltrace2's) of `runs` alternated runs.
fn pair(ours: &mut Command, theirs: &mut Command, runs: usize) -> Result<(f64, f64), String> {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        a.push(time(ours)?);
        b.push(time(theirs)?);
    }
    Ok((median(a), median(b)))
}

/// Records the traces, measures, prints the table; one JSON object per
/// trace, and the ratio line of symbols.
pub fn table(
    lttng_bin: &Path,
    events: u64,
    runs: usize,
    scratch: &Path,
    keep_traces: bool,
) -> Result<(Vec<serde_json::Value>, String), String> {
    let rt = ringtrace()?;
    // Both traces kept out of `settle`'s way.
    let keep = scratch.join("reading");
    let _ = std::fs::remove_dir_all(&keep);
    std::fs::create_dir_all(&keep).map_err(|e| e.to_string())?;
    eprintln!("reading: recording {events} events with LTTng-UST and ringtrace");
    let lt = crate::lttng::run(
        lttng_bin,
        Payload::U64.name(),
        Mode::Discard,
        1,
        events,
        0,
        scratch,
        false,
        None,
    )?;
    std::fs::rename(scratch.join("lttng"), keep.join("lttng")).map_err(|e| e.to_string())?;
    let ours = crate::ours::run(
        crate::ours::Bufs::PerThread,
        Payload::U64,
        Mode::Discard,
        1,
        events,
        0,
        scratch,
        false,
        None,
    )?;
    std::fs::rename(scratch.join("ringtrace"), keep.join("ringtrace"))
        .map_err(|e| e.to_string())?;
    println!(
        "\nReading {events} u64 events (s, median of {runs} alternated runs; output to /dev/null)"
    );
    println!(
        "  {:<18} {:>10} {:>10} {:>12} {:>9} {:>9} {:>12} {:>9}",
        "trace", "events", "view", "babeltrace2", "ratio", "stats", "bt2 counter", "ratio"
    );
    let mut out = Vec::new();
    for (name, lost) in [("lttng", lt.lost), ("ringtrace", ours.lost)] {
        let dir = keep.join(name);
        eprintln!("reading: {name} trace, view and babeltrace2");
        let (view, text) = pair(
            Command::new(&rt).arg("view").arg(&dir),
            Command::new("babeltrace2").arg(&dir),
            runs,
        )?;
        eprintln!("reading: {name} trace, stats and the counter");
        let (stats, counter) = pair(
            Command::new(&rt).arg("stats").arg(&dir),
            Command::new("babeltrace2")
                .arg(&dir)
                .args(["-c", "sink.utils.counter"]),
            runs,
        )?;
        let n = events - lost;
        println!(
            "  {:<18} {:>10} {:>10.2} {:>12.2} {:>9.1} {:>9.2} {:>12.2} {:>9.1}",
            if name == "lttng" {
                "LTTng-UST 2.13"
            } else {
                "ringtrace"
            },
            n,
            view,
            text,
            text / view,
            stats,
            counter,
            counter / stats
        );
        out.push(serde_json::json!({
            "table": "reading", "trace": name, "events": n,
            "view_s": view, "babeltrace2_text_s": text,
            "stats_s": stats, "babeltrace2_counter_s": counter,
        }));
    }
    let (row, line) = symbols(events, runs, &keep)?;
    out.push(row);
    if !keep_traces {
        let _ = std::fs::remove_dir_all(&keep);
    }
    Ok((out, line))
}

/// `view` with and without symbols on a trace of `events` u64 events
/// with `ip` from 10,000 call sites (`c/sites.c`): the row's JSON and
/// the ratio line. The goal: at most 1.5.
fn symbols(events: u64, runs: usize, keep: &Path) -> Result<(serde_json::Value, String), String> {
    let rt = ringtrace()?;
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("c");
    eprintln!("reading: building c/sites.c (10,000 call sites, -O0 -g)");
    let bin = crate::c_build::build_with(&src, keep, "sites", &["-O0", "-g"])?;
    let dir = keep.join("sites-trace");
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!("reading: recording {events} events from 10,000 call sites with ip");
    let o = Command::new(&bin)
        .arg(&dir)
        .arg(events.to_string())
        .output()
        .map_err(|e| format!("{}: {e}", bin.display()))?;
    if !o.status.success() {
        return Err(format!(
            "sites failed: {}",
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    let said = String::from_utf8_lossy(&o.stdout);
    let n: Vec<u64> = said
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    let (recorded, lost) = (
        n.first().copied().unwrap_or(0),
        n.get(1).copied().unwrap_or(0),
    );
    eprintln!("reading: sites trace, view with symbols and without");
    let (with, without) = pair(
        Command::new(&rt).arg("view").arg(&dir),
        Command::new(&rt)
            .args(["view", "--symbols", "off"])
            .arg(&dir),
        runs,
    )?;
    println!(
        "  {:<18} {:>10} {:>10.2} {:>12} {:>9} (view --symbols off: {without:.2} s; {lost} lost)",
        "with ip, symbols", recorded, with, "", ""
    );
    Ok((
        serde_json::json!({
            "table": "reading", "trace": "sites", "events": recorded, "lost": lost,
            "view_symbols_s": with, "view_no_symbols_s": without,
        }),
        format!(
            "ratio view with symbols/without: {:.2} ({recorded} events with ip from 10,000 call sites, medians of {runs} alternated runs)",
            with / without
        ),
    ))
}
