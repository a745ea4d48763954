//! Configuration from the environment: the test binary runs itself as a
//! child with `RINGTRACE_SESSION` set; the session starts before `main`,
//! records the child's events and completes its trace at exit.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt as _;
use std::process::Command;

use common::*;
use ringtrace::event;
use scratch::users::{chown, other_user, setuid_works_here};

const CHILD: &str = "RINGTRACE_TEST_CHILD";

/// The traced program (does nothing unless run as the child).
#[test]
fn child_program() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    println!("at_secure={}", ringtrace::env::privileged() as u8);
    for i in 0..1000u64 {
        event!(envtest, tick, i: u64 = i);
        event!(level: Debug, envtest, detail, i: u64 = i);
        event!(othertest, noise, i: u64 = i);
    }
}

/// `exe` (this test binary, or a copy) running test `program` as the
/// traced child, with `RINGTRACE_SESSION=session`.
fn child_cmd(exe: &std::path::Path, program: &str, session: &str) -> Command {
    let mut cmd = test_in_child(exe, program);
    cmd.env(CHILD, "1").env("RINGTRACE_SESSION", session);
    cmd
}

fn run_child(session: &str) -> std::process::Output {
    child_cmd(&std::env::current_exe().unwrap(), "child_program", session)
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

#[test]
fn unreachable_relay_alone_is_reported_and_the_program_runs_untraced() {
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = run_child(&format!("net://127.0.0.1:{port},discard,envtest:*"));
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "ringtrace: not tracing: cannot stream to relayd at net://127.0.0.1:{port}:{}:",
            port + 1
        )) && err.contains("is lttng-relayd running there"),
        "{err}"
    );
    let e = ringtrace::env::parse("/tmp/x,live=100")
        .unwrap_err()
        .to_string();
    assert!(e.contains("live=<ms> goes with a relay"), "{e}");
    let e = ringtrace::env::parse("/tmp/x,relay=http://h")
        .unwrap_err()
        .to_string();
    assert!(e.contains("relay URL 'http://h': unknown scheme"), "{e}");
    let b = ringtrace::env::parse("net://h:1:2,live=250").unwrap();
    let dbg = format!("{b:?}");
    assert!(dbg.contains("output: None"), "{dbg}");
    assert!(dbg.contains("control: 1, data: 2"), "{dbg}");
    assert!(dbg.contains("live: Some(250ms)"), "{dbg}");
}

/// This test binary as a traced child running test `program`, with
/// `RINGTRACE_SESSION=session` and files limited to `fsize` bytes (a file
/// size limit stands for a full disk; SIGXFSZ ignored, so writes fail).
fn limited_child(program: &str, session: &str, fsize: u64) -> Command {
    use std::os::unix::process::CommandExt;
    let mut cmd = child_cmd(&std::env::current_exe().unwrap(), program, session);
    // SAFETY: between fork and exec the closure only calls setrlimit and
    // signal, both async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: fsize,
                rlim_max: fsize,
            };
            libc::setrlimit(libc::RLIMIT_FSIZE, &lim);
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            Ok(())
        });
    }
    cmd
}

/// The output cannot take the trace (a file size limit stands for a full
/// disk): the traced program neither blocks nor crashes, the drops are
/// reported, and the trace written so far stays readable by babeltrace2.
#[test]
fn output_trouble_never_blocks_the_program_and_keeps_the_trace_readable() {
    let dir = tmpdir("env-fsize");
    // 300 kB of file at most: the memfd buffers of 5 × 16 KiB fit under it,
    // the trace does not.
    let mut cmd = limited_child(
        "child_program_heavy",
        &format!("{},discard,subbuf=16k,count=4,envtest:*", dir.display()),
        300_000,
    );
    let t = std::time::Instant::now();
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(t.elapsed() < std::time::Duration::from_secs(60));
    assert!(
        err.contains("writing the trace failed") && err.contains("packets dropped"),
        "{err}"
    );
    // Every stream file holds whole packets only: both readers accept it.
    let (evs, _) = read_all(&dir);
    assert!(!evs.is_empty());
    let size: u64 = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.metadata().unwrap().len())
        .sum();
    assert!(size <= 300_000 * 3, "{size}");
    if let Some(bt) = babeltrace2() {
        let o = bt2(bt, &dir);
        assert_eq!(o.events.len(), evs.len());
    }
}

/// A heavier traced program: more events than the size limit allows.
#[test]
fn child_program_heavy() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    for i in 0..300_000u64 {
        event!(envtest, tick, i: u64 = i);
    }
}

/// A setuid program (here: a copy of this test binary, setuid to a second
/// user who owns the directory `RINGTRACE_SESSION` names) ignores the
/// variable: whoever runs it must not choose where a privileged program
/// writes. Needs root to make the second user and the setuid file.
#[test]
fn a_setuid_program_ignores_the_environment() {
    let Some(uid) = other_user() else {
        eprintln!("SKIPPED: making a setuid program of another user needs root");
        return;
    };
    let bin_dir = tmpdir("setuid-bin");
    std::fs::create_dir(&bin_dir).unwrap();
    if !setuid_works_here(&bin_dir) {
        eprintln!("SKIPPED: setuid has no effect here (no_new_privs, or a nosuid mount)");
        let _ = std::fs::remove_dir(&bin_dir);
        return;
    }
    let bin = bin_dir.join("traced");
    std::fs::copy(std::env::current_exe().unwrap(), &bin).unwrap();
    chown(&bin, uid);
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o4755)).unwrap();
    // A directory the privileged user (and only they) can write into: the
    // trace would appear there if the variable were honoured.
    let theirs = tmpdir("setuid-theirs");
    std::fs::create_dir(&theirs).unwrap();
    chown(&theirs, uid);
    let trace = theirs.join("trace");
    let session = format!("{},discard", trace.display());
    let out = child_cmd(&bin, "child_program", &session).output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("at_secure=1"), "not run setuid: {stdout}");
    assert!(!stderr.contains("ringtrace"), "{stderr}");
    assert!(
        !trace.exists(),
        "the setuid program traced into {}",
        trace.display()
    );
    // The same program without the setuid bit, as the same user, traces.
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = child_cmd(&bin, "child_program", &session)
        .uid(uid)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("at_secure=0"));
    assert!(trace.join("metadata").is_file());
    std::fs::remove_dir_all(&bin_dir).unwrap();
    std::fs::remove_dir_all(&theirs).unwrap();
}

/// Buffer files get their space when the session starts: a file system
/// without room (a file size limit stands for it here) refuses the session
/// with the file named, the program runs untraced (no SIGBUS later), and
/// nothing of the refused session is left on disk.
#[test]
fn no_room_for_buffer_files_refuses_the_session_and_leaves_nothing() {
    let dir = tmpdir("env-noroom");
    let bufdir = tmpdir("env-noroom-buf");
    let mut cmd = limited_child(
        "child_program",
        &format!(
            "{},discard,subbuf=1m,count=4,bufdir={}",
            dir.display(),
            bufdir.display()
        ),
        1 << 20,
    );
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("ringtrace: not tracing") && err.contains("no room for buffer file"),
        "{err}"
    );
    assert!(err.contains(&bufdir.display().to_string()), "{err}");
    assert!(!dir.exists() && !bufdir.exists(), "left behind");
}
