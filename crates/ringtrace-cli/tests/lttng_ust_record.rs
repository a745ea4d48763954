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

use std::path::{Path, PathBuf};
use std::process::Command;

use common::lttng::{build, lttng, Daemon};
use common::*;

/// Rounds of the three events, per thread (two threads).
const ROUNDS: u64 = 300;

/// `liblttng_ust.so` (built now, with this test's profile), linked into
/// `dir` as the `liblttng-ust.so.1` a program linked with `-llttng-ust`
/// loads.
fn ringtrace_lttng_ust(dir: &Path) -> PathBuf {
    let built = assert_cmd::cargo::cargo_bin("ringtrace")
        .parent()
        .unwrap()
        .to_path_buf();
    let mut cmd = Command::new(env!("CARGO"));
    cmd.args(["build", "-q", "-p", "ringtrace-lttng-ust", "--lib"]);
    if built.file_name().is_some_and(|n| n == "release") {
        cmd.arg("--release");
    }
    assert!(
        cmd.status().unwrap().success(),
        "cargo build -p ringtrace-lttng-ust"
    );
    let lib = dir.join("lib");
    std::fs::create_dir_all(&lib).unwrap();
    std::os::unix::fs::symlink(built.join("liblttng_ust.so"), lib.join("liblttng-ust.so.1"))
        .unwrap();
    lib
}

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
}
