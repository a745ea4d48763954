//! `ringtrace record --filter` on a program instrumented for LTTng-UST
//! (`tests/lttng/`: integers of every size, floats, strings, text arrays
//! and sequences, an enumeration): the probe asks the tracer before it
//! reserves (`run_filter` on its interpreter stack), and the trace holds
//! exactly the events the filter accepts: the same as `view --filter`
//! applied to an unfiltered recording, as many as babeltrace2 reads, and
//! the same events LTTng-UST's own filter keeps under a real session
//! daemon.

mod common;

use std::path::Path;
use std::process::Command;

use common::lttng::{build, lttng, ringtrace_lttng_ust, Daemon};
use common::*;

/// `ringtrace view` of `trace`, each line from the event's name on (the
/// times differ between recordings), with `extra` arguments.
fn lines(trace: &Path, extra: &[&str]) -> Vec<String> {
    let mut args = vec!["view", trace.to_str().unwrap(), "--symbols", "off"];
    args.extend_from_slice(extra);
    let o = run(&args);
    assert!(o.ok, "{}", o.stderr);
    o.stdout
        .lines()
        .filter_map(|l| l.find("interop:").map(|i| l[i..].to_string()))
        .collect()
}

/// Records `exe ROUNDS 1` with `record` and `args`.
fn record(exe: &Path, trace: &Path, rounds: u64, args: &[&str]) {
    let mut a = vec!["record", "-o", trace.to_str().unwrap()];
    a.extend_from_slice(args);
    let rounds = rounds.to_string();
    a.extend(["--", exe.to_str().unwrap(), &rounds, "1"]);
    let o = run(&a);
    assert!(o.ok, "{}{}", o.stdout, o.stderr);
}

#[test]
fn record_filters_lttng_ust_events_exactly() {
    if !(tool_present("cc", "build-essential") && tool_present("lttng", "lttng-tools")) {
        return;
    }
    let dir = tmp("record-filter");
    std::fs::create_dir_all(&dir).unwrap();
    let exe = build(&dir);
    ringtrace_lttng_ust(&dir);

    // A million rounds, the integers filtered: i even, and i % 1000 > 5
    // (`s16` is -(i % 1000)).
    const N: u64 = 1_000_000;
    let filter = "(u64 & 1) == 0 && s16 < -5";
    let kept = (0..N).filter(|i| i % 2 == 0 && i % 1000 > 5).count();
    let filtered = dir.join("filtered");
    record(
        &exe,
        &filtered,
        N,
        &["-e", "interop:ints", "--filter", filter],
    );
    let all = dir.join("all");
    record(&exe, &all, N, &["-e", "interop:ints"]);
    let ours = lines(&filtered, &[]);
    assert_eq!(ours.len(), kept);
    let theirs = lines(&all, &["--filter", filter]);
    assert_eq!(theirs.len(), kept);
    assert!(
        ours == theirs,
        "the filtered recording differs from view --filter"
    );
    if tool_present("babeltrace2", "babeltrace2") {
        let o = Command::new("babeltrace2").arg(&filtered).output().unwrap();
        assert!(o.status.success());
        let n = String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter(|l| l.contains("interop:ints"))
            .count();
        assert_eq!(n, kept);
    }

    // Floats, strings, text arrays and sequences, an enumeration: over a
    // wildcard, each filter applies to the events that have its fields.
    let texts = r#"s == "gamma*" || (stext == "al*" && st != 0) || atext == "be""#;
    let floats = "d > 100.5 && f < 100";
    for (filter, want) in [(texts, "interop:texts"), (floats, "interop:floats")] {
        let trace = dir.join(want.replace(':', "-"));
        record(&exe, &trace, 1000, &["-e", "interop:*", "--filter", filter]);
        let got = lines(&trace, &[]);
        let all = dir.join(format!("{}-all", want.replace(':', "-")));
        record(&exe, &all, 1000, &["-e", "interop:*"]);
        let theirs = lines(&all, &["--filter", filter]);
        assert!(
            !got.is_empty() && got.iter().all(|l| l.starts_with(want)),
            "{got:?}"
        );
        assert_eq!(got, theirs, "{filter}");
    }
    let words = ["alpha", "be", "gamma-delta", "a \"q\"", "epsilon"];
    let want_texts = (0..1000u64)
        .filter(|r| {
            let s = words[(r % 5) as usize];
            let n = 1 + (r % 3) as usize;
            s.starts_with("gamma")
                || (s[..n.min(s.len())].starts_with("al") && r % 11 != 0)
                || s == "be"
        })
        .count();
    assert_eq!(lines(&dir.join("interop-texts"), &[]).len(), want_texts);
    assert_eq!(
        lines(&dir.join("interop-floats"), &[]).len(),
        (0..1000u64)
            .filter(|i| *i as f64 / 3.0 > 100.5 && (*i as f32 / 8.0) < 100.0)
            .count()
    );

    // A filter naming a field the event lacks (`state` is the enum's
    // name; its field is `st`): the provider registers after the session
    // started, so the program says it, and records none of the event.
    let trace = dir.join("no-field");
    let mut a = vec![
        "record",
        "-o",
        trace.to_str().unwrap(),
        "-e",
        "interop:texts",
    ];
    a.extend([
        "--filter",
        "state == 1",
        "--",
        exe.to_str().unwrap(),
        "10",
        "1",
    ]);
    let o = run(&a);
    assert!(
        o.stderr.contains(
            "filter `state == 1` cannot apply to interop:texts (no field `state` (fields: s, arr, atext, seq, stext, sbytes, st))"
        ),
        "{}",
        o.stderr
    );

    // The same filters in LTTng-UST itself, under its session daemon:
    // the same events.
    let _daemon = Daemon::start();
    for (filter, event, ours) in [
        (texts, "interop:texts", "interop-texts"),
        (floats, "interop:floats", "interop-floats"),
    ] {
        let session = format!("rtf{}{}", std::process::id(), &ours[8..]);
        let out = dir.join(format!("lttng-{ours}"));
        lttng(&["create", &session, &format!("--output={}", out.display())]);
        lttng(&[
            "enable-event",
            "-u",
            "-s",
            &session,
            event,
            "--filter",
            filter,
        ]);
        lttng(&["start", &session]);
        let o = Command::new(&exe)
            .args(["1000", "1"])
            .env_remove("LD_LIBRARY_PATH")
            .output()
            .unwrap();
        assert!(o.status.success());
        lttng(&["stop", &session]);
        lttng(&["destroy", &session]);
        assert_eq!(lines(&out, &[]), lines(&dir.join(ours), &[]), "{filter}");
    }
}
