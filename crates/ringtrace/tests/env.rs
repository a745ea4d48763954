//! Configuration from the environment: the test binary runs itself as a
//! child with `RINGTRACE_SESSION` set; the session starts before `main`,
//! records the child's events and completes its trace at exit.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use common::*;
use ringtrace::event;

const CHILD: &str = "RINGTRACE_TEST_CHILD";

/// The traced program (does nothing unless run as the child).
#[test]
fn child_program() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    for i in 0..1000u64 {
        event!(envtest, tick, i: u64 = i);
        event!(level: Debug, envtest, detail, i: u64 = i);
        event!(othertest, noise, i: u64 = i);
    }
}

fn run_child(session: &str) -> std::process::Output {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "child_program",
            "--exact",
            "--test-threads=1",
            "--nocapture",
        ])
        .env(CHILD, "1")
        .env("RINGTRACE_SESSION", session)
        .output()
        .unwrap()
}

#[test]
fn environment_session_records_and_completes_at_exit() {
    let dir = tmpdir("env-discard");
    let out = run_child(&format!(
        "{},discard,subbuf=64k,count=4,envtest:*,level=info",
        dir.display()
    ));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (evs, discarded) = read_all(&dir);
    assert_eq!(discarded, 0);
    assert_eq!(
        evs.len(),
        1000,
        "only envtest events at info level or more severe"
    );
    assert!(evs.iter().all(|e| e.name == "envtest:tick"));
    let seqs: Vec<u64> = evs.iter().map(|e| uint(&e.values[0])).collect();
    assert_eq!(seqs, (0..1000).collect::<Vec<_>>());
    // Least permissions: the trace is the user's alone.
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir), 0o700);
    for f in std::fs::read_dir(&dir).unwrap() {
        assert_eq!(mode(&f.unwrap().path()), 0o600);
    }
}

#[test]
fn environment_flight_recorder_is_written_at_exit() {
    let dir = tmpdir("env-flight");
    let out = run_child(&format!(
        "{},flight-recorder,per-thread,subbuf=4k,count=2,envtest:detail",
        dir.display()
    ));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (evs, _) = read_all(&dir);
    assert!(!evs.is_empty() && evs.len() < 1000, "{} events", evs.len());
    assert!(evs.iter().all(|e| e.name == "envtest:detail"));
    // The last sub-buffers: the tail of the sequence, ending with the last.
    let seqs: Vec<u64> = evs.iter().map(|e| uint(&e.values[0])).collect();
    let first = seqs[0];
    assert_eq!(seqs, (first..1000).collect::<Vec<_>>());
}

#[test]
fn bad_environment_is_reported_and_the_program_runs_untraced() {
    let out = run_child("/tmp/never-created-by-ringtrace,discard,frobnicate");
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "ringtrace: not tracing: RINGTRACE_SESSION: item 3 'frobnicate': unknown option"
        ),
        "{err}"
    );
    assert!(!std::path::Path::new("/tmp/never-created-by-ringtrace").exists());
}
