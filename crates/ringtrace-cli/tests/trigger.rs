//! Triggers through `record` and `ctl`: a 10 s program with one slow
//! request at 5 s, under a flight recorder with `--trigger
//! 'demo:slow_request => snapshot' --after 2s`, gets one snapshot holding
//! the 3 s before the request and the 2 s after it (read by our reader
//! and by babeltrace2); `once-after:3` with `exec` runs its command once,
//! with the third match's fields; `ctl` adds, lists and removes triggers
//! of a running process.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::*;
use ctf::read::{Item, Trace};

/// The folders below `dir` (any depth) named `snapshot-*` that hold a trace.
fn snapshots(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = ctf::read::find_traces(dir)
        .unwrap()
        .into_iter()
        .flat_map(|t| std::fs::read_dir(t).unwrap().flatten().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("snapshot-"))
                && p.join("metadata").is_file()
        })
        .collect();
    v.sort();
    v
}

/// (name, ts, first field as u64) of every event of the trace at `dir`,
/// and the latest packet end.
fn events(dir: &Path) -> (Vec<(String, u64, u64)>, u64) {
    let trace = Trace::open(dir).unwrap();
    let mut v = Vec::new();
    for item in ctf::merge::Merger::new(&trace) {
        let (_, item) = item.unwrap();
        let Item::Event(e) = item else {
            panic!("a snapshot of buffers that never overflowed lost {item:?}")
        };
        let first = match e.values.first() {
            Some(ctf::value::Value::Uint(u)) => *u,
            _ => 0,
        };
        v.push((trace.desc.events[e.class].name.clone(), e.ts, first));
    }
    let mut end = 0;
    for k in 0..trace.streams.len() {
        let mut s = trace.stream(k).unwrap();
        while s.next_item().unwrap().is_some() {}
        end = end.max(s.packet_context().timestamp_end);
    }
    (v, end)
}

/// `ringtrace record -o dir RECORD_ARGS -- ringtrace demo DEMO_ARGS`.
fn record_demo(dir: &Path, record_args: &[&str], demo_args: &[&str]) -> Out {
    let me = assert_cmd::cargo::cargo_bin("ringtrace");
    let inner = tmp(&format!(
        "{}-inner",
        dir.file_name().unwrap().to_string_lossy()
    ));
    let mut a = vec!["record", "-o", dir.to_str().unwrap()];
    a.extend_from_slice(record_args);
    a.extend([
        "--",
        me.to_str().unwrap(),
        "demo",
        "-o",
        inner.to_str().unwrap(),
    ]);
    a.extend(["--show", "0"]);
    a.extend_from_slice(demo_args);
    run(&a)
}

/// What a command wrote to `path`, once it holds a whole line (at most
/// 20 s after the program ended).
fn line_of(path: &Path) -> String {
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.ends_with('\n') {
            return text;
        }
        assert!(
            Instant::now() < end,
            "the command never wrote {}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_slow_request_is_saved_with_the_seconds_around_it() {
    let d = tmp("trigger-slow");
    let o = record_demo(
        &d,
        &[
            "--mode",
            "flight-recorder",
            "-e",
            "demo:timer_tick,demo:slow_request",
            "--trigger",
            "demo:slow_request => snapshot",
            "--after",
            "2s",
        ],
        &["--seconds", "10", "--slow-at", "5"],
    );
    assert!(o.ok, "{}", o.stderr);
    let snaps = snapshots(&d);
    assert_eq!(snaps.len(), 1, "{snaps:?}");
    assert!(
        o.stdout
            .contains(&format!("{:<24} {:>14}", "triggered snapshots", 1)),
        "{}",
        o.stdout
    );
    let (evs, end) = events(&snaps[0]);
    let slow: Vec<_> = evs.iter().filter(|e| e.0 == "demo:slow_request").collect();
    assert_eq!(slow.len(), 1, "one slow request");
    let at = slow[0].1;
    let trace = Trace::open(&snaps[0]).unwrap();
    let ns = |ts: u64| {
        let c = &trace.desc.clock;
        ts as f64 * 1e9 / c.freq as f64
    };
    let first = evs.first().unwrap().1;
    let before = (ns(at) - ns(first)) / 1e9;
    let after = (ns(end) - ns(at)) / 1e9;
    assert!(
        before >= 3.0,
        "the snapshot begins {before:.3} s before the request"
    );
    assert!(
        after >= 2.0,
        "the snapshot ends {after:.3} s after the request"
    );
    // Every timer tick from the first kept to the last: no gap.
    let mut ticks: Vec<u64> = evs
        .iter()
        .filter(|e| e.0 == "demo:timer_tick")
        .map(|e| e.2)
        .collect();
    ticks.sort();
    assert!(ticks.len() > 4000, "{} ticks", ticks.len());
    assert!(
        ticks.windows(2).all(|w| w[1] == w[0] + 1),
        "a gap in the ticks: {:?}",
        ticks.windows(2).find(|w| w[1] != w[0] + 1)
    );
    if babeltrace2_present() {
        let bt = std::process::Command::new("babeltrace2")
            .arg(&snaps[0])
            .output()
            .unwrap();
        assert!(
            bt.status.success(),
            "{}",
            String::from_utf8_lossy(&bt.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&bt.stdout).lines().count(),
            evs.len()
        );
    } else {
        panic!("babeltrace2 is missing: scripts/setup.sh installs it");
    }
    // The program's own trace (the snapshot at its exit) is apart.
    let parts = ctf::read::find_traces(&d).unwrap();
    assert_eq!(parts.len(), 1, "{parts:?}");
}

#[test]
fn once_after_three_runs_its_command_once_with_the_third_matchs_fields() {
    let d = tmp("trigger-exec");
    let ran = tmp_path("trigger-exec-ran");
    let _ = std::fs::remove_file(&ran);
    let trigger = format!(
        r#"demo:timer_tick if n < 1000 => once-after:3 exec echo "$RINGTRACE_EVENT n=$RINGTRACE_FIELD_n" >> {}"#,
        ran.display()
    );
    let o = record_demo(
        &d,
        &["-e", "demo:timer_tick", "--trigger", &trigger],
        &["--seconds", "0.5"],
    );
    assert!(o.ok, "{}", o.stderr);
    // The command may still run when the program has exited: it was
    // started before (the last pass at exit starts what matched). The
    // program is gone: no later match can run it again.
    assert_eq!(line_of(&ran), "demo:timer_tick n=2\n");
}

#[test]
fn ctl_adds_lists_and_removes_triggers() {
    let d = tmp("trigger-ctl");
    let (pid, _traced) = traced_demo(&d, &["--mode", "flight-recorder"]);
    let pid = pid.to_string();
    let ctl = |args: &[&str]| {
        let mut a = vec!["ctl", pid.as_str()];
        a.extend_from_slice(args);
        run(&a)
    };
    let o = ctl(&[
        "add-trigger",
        "demo",
        "demo:timer_tick => every:100 exec true",
    ]);
    assert!(
        o.ok && o.stdout.contains("added"),
        "{} {}",
        o.stdout,
        o.stderr
    );
    let id: String = o.stdout.split_whitespace().nth(1).unwrap().to_string();
    // A snapshot trigger on the flight recorder, with --after.
    let o = ctl(&[
        "add-trigger",
        "demo",
        "demo:slow_request => snapshot",
        "--after",
        "1s",
    ]);
    assert!(
        o.ok && o
            .stdout
            .contains("demo:slow_request => snapshot after 1000ms"),
        "{} {}",
        o.stdout,
        o.stderr
    );
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        let o = ctl(&["triggers", "demo"]);
        assert!(o.ok, "{}", o.stderr);
        let row = o
            .stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(id.as_str()))
            .unwrap_or_else(|| panic!("no row for trigger {id}: {}", o.stdout));
        let cols: Vec<u64> = row
            .split_whitespace()
            .skip(1)
            .take(6)
            .map(|c| c.parse().unwrap())
            .collect();
        // matched, lost, fired, done, failed, skipped
        if cols[3] >= 2 {
            assert_eq!(cols[2], cols[0] / 100, "{row}");
            assert_eq!(cols[4], 0, "{row}");
            break;
        }
        assert!(
            Instant::now() < end,
            "no command done in 20 s: {}",
            o.stdout
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let st = ctl(&["stats", "demo"]);
    assert!(
        st.ok && st.stdout.contains("demo:timer_tick => every:100 exec true"),
        "{}",
        st.stdout
    );
    let o = ctl(&["add-trigger", "demo", "demo:x stop"]);
    assert!(!o.ok && o.stderr.contains("no `=>`"), "{}", o.stderr);
    let o = ctl(&["remove-trigger", "demo", &id]);
    assert!(o.ok, "{}", o.stderr);
    let o = ctl(&["remove-trigger", "demo", &id]);
    assert!(!o.ok && o.stderr.contains("no trigger"), "{}", o.stderr);
}

#[test]
fn an_lttng_ust_programs_events_trigger_too() {
    use common::lttng::{build, ringtrace_lttng_ust};
    assert!(tool_present("cc", "build-essential"));
    let dir = tmp("trigger-ust");
    std::fs::create_dir_all(&dir).unwrap();
    let exe = build(&dir);
    ringtrace_lttng_ust(&dir);
    let ran = dir.join("ran");
    // The filter runs on the probe's interpreter stack (`run_filter`), as
    // a session's: rounds 10, 20, 30, … match; the third is round 30.
    let trigger = format!(
        r#"interop:ints if s16 % 10 == 0 && s16 != 0 => once-after:3 exec echo "$RINGTRACE_EVENT s32=$RINGTRACE_FIELD_s32" > {}"#,
        ran.display()
    );
    let trace = dir.join("trace");
    let o = run(&[
        "record",
        "-o",
        trace.to_str().unwrap(),
        "--trigger",
        &trigger,
        "--",
        exe.to_str().unwrap(),
        "1000",
        "1",
    ]);
    assert!(o.ok, "{}", o.stderr);
    assert_eq!(line_of(&ran), "interop:ints s32=-30\n");
}
