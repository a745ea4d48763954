//! The same LTTng-UST program (`tests/lttng/`: a tracepoint of every field
//! kind, two threads), built once against LTTng-UST and recorded twice:
//! by LTTng-UST with a session daemon, and by ringtrace's
//! `liblttng-ust.so.1` (crate `ringtrace-lttng-ust`) under
//! `RINGTRACE_SESSION`, with no daemon. babeltrace2 prints the same events,
//! as many, with the same field values.
//!
//! Masked, and why: the timestamps and deltas (two runs), the host name
//! (LTTng's trace says it, ringtrace's packet header does not name the
//! same), the `cpu_id` packet context (where each run's threads ran) and
//! the event contexts (the sessions ask for different ones); the events
//! are compared as (name, payload) pairs, sorted (the two threads
//! interleave differently in each run).

mod common;

use std::path::Path;
use std::process::Command;

use common::lttng::{build, lttng, ringtrace_lttng_ust, Daemon};
use common::*;

/// Rounds of the three events, per thread (two threads).
const ROUNDS: u64 = 300;

/// The (event name, payload) of each line babeltrace2 prints for `trace`,
/// sorted, and babeltrace2's warnings.
fn events(trace: &Path) -> (Vec<(String, String)>, String) {
    let o = Command::new("babeltrace2").arg(trace).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "babeltrace2 {}: {err}", trace.display());
    let mut v: Vec<(String, String)> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| {
            let name = l
                .split_whitespace()
                .find(|w| w.starts_with("interop:"))
                .unwrap_or_else(|| panic!("no event name in {l}"));
            let payload = l
                .rsplit_once("}, { ")
                .unwrap_or_else(|| panic!("no payload in {l}"))
                .1;
            (name.to_owned(), payload.to_owned())
        })
        .collect();
    v.sort();
    (v, err)
}

#[test]
fn the_same_events_recorded_by_lttng_ust_and_by_ringtrace() {
    if !(tool_present("lttng", "lttng-tools")
        && tool_present("lttng-sessiond", "lttng-tools")
        && tool_present("cc", "build-essential")
        && babeltrace2_present())
    {
        return;
    }
    let dir = tmp("lttng-ust-record");
    std::fs::create_dir_all(&dir).unwrap();
    let exe = build(&dir);
    // LTTng-UST's own library, a session daemon.
    let theirs = dir.join("lttng");
    {
        let _daemon = Daemon::start();
        let session = format!("rtrec{}", std::process::id());
        let out = format!("--output={}", theirs.display());
        lttng(&["create", &session, &out]);
        lttng(&["enable-event", "-u", "-s", &session, "interop:*"]);
        lttng(&["start", &session]);
        let o = Command::new(&exe)
            .args([ROUNDS.to_string(), "2".into()])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        lttng(&["stop", &session]);
        lttng(&["destroy", &session]);
    }
    // The same program with ringtrace's library, no daemon.
    let ours = dir.join("ringtrace");
    let o = Command::new(&exe)
        .args([ROUNDS.to_string(), "2".into()])
        .env("LD_LIBRARY_PATH", ringtrace_lttng_ust(&dir))
        .env(
            "RINGTRACE_SESSION",
            format!("{},discard,interop:*", ours.display()),
        )
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success() && err.is_empty(), "{err}");
    let (want, their_warnings) = events(&theirs);
    let (got, our_warnings) = events(&ours);
    assert_eq!(
        want.len() as u64,
        ROUNDS * 3 * 2,
        "LTTng-UST recorded every event: {their_warnings}"
    );
    assert!(our_warnings.is_empty(), "nothing discarded: {our_warnings}");
    assert_eq!(got.len(), want.len(), "as many events");
    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "event {k} of {} (sorted)", want.len());
    }
    // The classes' names and levels as LTTng-UST declares them (13,
    // `DEBUG_LINE`, for events that declare none).
    let classes = |t: &Path| {
        let t = ctf::read::Trace::open(t).unwrap_or_else(|e| panic!("{e}"));
        let mut v: Vec<(String, u8)> = t
            .desc
            .events
            .iter()
            .map(|e| (e.name.clone(), e.loglevel))
            .collect();
        v.sort();
        v
    };
    let theirs = classes(&theirs);
    assert_eq!(theirs.len(), 3, "{theirs:?}");
    assert_eq!(classes(&ours), theirs);
}

#[test]
fn record_traces_an_lttng_ust_program_unless_told_not_to() {
    if !(tool_present("cc", "build-essential") && tool_present("lttng", "lttng-tools")) {
        return;
    }
    let dir = tmp("lttng-ust-via-record");
    std::fs::create_dir_all(&dir).unwrap();
    let exe = build(&dir);
    // Built beside the command, where `record` finds it.
    ringtrace_lttng_ust(&dir);
    let trace = dir.join("trace");
    let o = run(&[
        "record",
        "-o",
        trace.to_str().unwrap(),
        "--",
        exe.to_str().unwrap(),
        "10",
        "1",
    ]);
    assert!(o.ok, "{}{}", o.stdout, o.stderr);
    let said = format!("{}{}", o.stdout, o.stderr);
    assert!(
        said.lines()
            .any(|l| l.starts_with("trace events") && l.ends_with(" 30")),
        "{said}"
    );
    let o = run(&["stats", trace.to_str().unwrap()]);
    for name in ["interop:ints", "interop:floats", "interop:texts"] {
        assert!(
            o.stdout
                .lines()
                .any(|l| l.contains(name) && l.split_whitespace().any(|w| w == "10")),
            "{name} 10 times:\n{}",
            o.stdout
        );
    }
    // Off: LTTng-UST's own library, which records nothing without its
    // daemon; the command says why there is no trace.
    let off = dir.join("off");
    let o = run(&[
        "record",
        "--lttng-ust=off",
        "-o",
        off.to_str().unwrap(),
        "--",
        exe.to_str().unwrap(),
        "10",
        "1",
    ]);
    assert!(!o.ok);
    assert!(
        o.stderr.contains("instrumented for LTTng-UST? (it exited with status 0; LTTng-UST programs did not record: --lttng-ust=off)"),
        "{}",
        o.stderr
    );
}
