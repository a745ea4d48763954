//! Traces LTTng-UST 2.13 records (#22, first part): a program with a
//! tracepoint of every field kind (`tests/lttng/tp.h`: integers of every
//! size and sign, hexadecimal, big-endian "network" integers, floats,
//! strings, integer and text arrays, sequences with `size_t` and `uint16_t`
//! lengths, text sequences, an enumeration with a range), recorded by a
//! real session daemon with the `vtid`, `vpid`, `procname` and `ip`
//! contexts, per-user and per-process buffers, discard, overwrite and a
//! flight recorder snapshot; and each of those rewritten by babeltrace2's
//! `sink.ctf.fs` (other packet and event header layouts). Our reader finds the trace under LTTng's folders,
//! reads its packetized metadata, and decodes every event: the same counts
//! of events and discarded events as babeltrace2, and `ringtrace view
//! --format babeltrace` prints babeltrace2's lines, times and deltas
//! included (`common::same_as_babeltrace2`). The program records no empty
//! text: babeltrace2 2.0.4 prints an empty string or text sequence with
//! the text of an earlier event (a stale buffer; seen here, then left out).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::lttng::{build, lttng, Daemon};
use common::*;

/// Rounds of the three events, per thread.
const ROUNDS: u64 = 300;

/// Records `prog ROUNDS 2` in an LTTng session (a snapshot session
/// overwrites); returns the trace folder.
fn record(
    exe: &Path,
    dir: &Path,
    name: &str,
    buffers: &str,
    overwrite: bool,
    snapshot: bool,
) -> PathBuf {
    let out = dir.join(name);
    let session = format!("rt{}{name}", std::process::id());
    let o = format!("--output={}", out.display());
    let mut create = vec!["create", &session, &o];
    if snapshot {
        create.push("--snapshot");
    }
    lttng(&create);
    let mut ch = vec!["enable-channel", "-u", "-s", &session, buffers, "ch"];
    if overwrite || snapshot {
        ch.insert(5, "--overwrite");
    }
    lttng(&ch);
    lttng(&[
        "add-context",
        "-u",
        "-s",
        &session,
        "-c",
        "ch",
        "-t",
        "vtid",
        "-t",
        "vpid",
        "-t",
        "procname",
        "-t",
        "ip",
    ]);
    lttng(&[
        "enable-event",
        "-u",
        "-s",
        &session,
        "-c",
        "ch",
        "interop:*",
    ]);
    lttng(&["start", &session]);
    let run = Command::new(exe)
        .args([ROUNDS.to_string(), "2".into()])
        .output()
        .unwrap();
    assert!(run.status.success());
    lttng(&["stop", &session]);
    if snapshot {
        lttng(&["snapshot", "record", "-s", &session]);
    }
    lttng(&["destroy", &session]);
    out
}

/// Events and discarded events our reader finds in `trace`.
fn ours(trace: &Path) -> (u64, (u64, u64)) {
    let t = ctf::read::Trace::open(trace).unwrap_or_else(|e| panic!("{e}"));
    let (mut events, mut discarded, mut packets) = (0, 0, 0);
    for item in ctf::merge::Merger::new(&t) {
        match item.unwrap_or_else(|e| panic!("{e}")).1 {
            ctf::read::Item::Event(_) => events += 1,
            ctf::read::Item::Discarded {
                events: n,
                packets: p,
                ..
            } => {
                discarded += n;
                packets += p;
            }
        }
    }
    (events, (discarded, packets))
}

/// The events and the packets babeltrace2 says the tracer discarded, from
/// its warnings ("WARNING: Tracer discarded 36 events between ...", and
/// "... discarded 1 packet ..." where an overwrite session's sub-buffer
/// was overwritten in flight).
fn their_discarded(stderr: &str) -> (u64, u64) {
    let (mut events, mut packets) = (0, 0);
    for rest in stderr.lines().filter_map(|l| l.split("discarded ").nth(1)) {
        let mut words = rest.split_whitespace();
        let Some(n) = words.next().and_then(|n| n.parse::<u64>().ok()) else {
            continue;
        };
        match words.next() {
            Some(w) if w.starts_with("packet") => packets += n,
            _ => events += n,
        }
    }
    (events, packets)
}

#[test]
fn lttng_ust_traces_read_as_babeltrace2_reads_them() {
    if !(tool_present("lttng", "lttng-tools")
        && tool_present("lttng-sessiond", "lttng-tools")
        && tool_present("cc", "build-essential")
        && babeltrace2_present())
    {
        return;
    }
    let dir = tmp("lttng-ust");
    std::fs::create_dir_all(&dir).unwrap();
    let exe = build(&dir);
    let _daemon = Daemon::start();
    for (name, buffers, overwrite, snapshot) in [
        ("per-uid", "--buffers-uid", false, false),
        ("per-pid", "--buffers-pid", false, false),
        ("overwrite", "--buffers-pid", true, false),
        ("snapshot", "--buffers-uid", true, true),
    ] {
        let recorded = record(&exe, &dir, name, buffers, overwrite, snapshot);
        let rewritten = dir.join(format!("{name}-rewritten"));
        rewrite_with_babeltrace2(&recorded, &rewritten);
        for (trace, name) in [
            (&recorded, name.to_owned()),
            (&rewritten, format!("{name}, rewritten")),
        ] {
            check_trace(trace, &name, !overwrite);
        }
    }
}

/// `ringtrace view --format babeltrace` prints babeltrace2's lines for
/// `trace`, and our reader and `ringtrace stats` count its events and
/// discarded events as babeltrace2 does (all that the program recorded
/// when the buffers `discard`).
fn check_trace(trace: &Path, name: &str, discard: bool) {
    {
        let (lines, stderr) = same_as_babeltrace2(trace);
        let (events, (lost, lost_packets)) = ours(trace);
        assert_eq!(events, lines as u64, "{name}: event count");
        assert_eq!(
            (lost, lost_packets),
            their_discarded(&stderr),
            "{name}: events and packets discarded"
        );
        if discard {
            // Per-process buffers are small by default: LTTng may discard.
            assert_eq!(events + lost, ROUNDS * 3 * 2, "{name}: every event");
        }
        assert!(events > 0, "{name}");
        // And `ringtrace stats` counts the same.
        let o = run(&["stats", trace.to_str().unwrap()]);
        assert!(o.ok, "{}", o.stderr);
        let counted: u64 = o
            .stdout
            .lines()
            .find(|l| l.starts_with("total"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{}", o.stdout));
        assert_eq!(counted, lines as u64, "{name}: stats");
    }
}
