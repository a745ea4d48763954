//! Whole programs (`per-process` in `RINGTRACE_SESSION`, what `ringtrace
//! record` passes): the traced program, a child it forks and a program it
//! starts each write their own sub-trace of the root directory, every event
//! of each saying which process and thread recorded it, and the root read
//! as one trace orders them as they happened, across processes. The test
//! binary runs itself as the traced program (and as the started one).

mod common;

use std::process::Command;
use std::time::Duration;

use common::*;
use ctf::value::Value;
use ringtrace::event;

const ROLE: &str = "RINGTRACE_TEST_ROLE";

fn run_role(role: &str, session: &str, clock: &str) -> std::process::Output {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "traced_program",
            "--exact",
            "--test-threads=1",
            "--nocapture",
        ])
        .env(ROLE, role)
        .env("RINGTRACE_SESSION", session)
        .env("RINGTRACE_CLOCK", clock)
        .output()
        .unwrap()
}

/// The traced program (does nothing unless run with a role).
#[test]
fn traced_program() {
    match std::env::var(ROLE).as_deref() {
        Ok("parent") => parent(),
        Ok("limited_parent") => limited_parent(),
        Ok("started") => {
            for i in 0..300u64 {
                event!(wholeprog, started, i: u64 = i);
            }
        }
        _ => {}
    }
}

fn parent() {
    for i in 0..1000u64 {
        event!(wholeprog, before_fork, i: u64 = i);
    }
    // SAFETY: the child records, then leaves with `exit` (which completes
    // its sub-trace); it never returns into the test harness.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        for i in 0..500u64 {
            event!(wholeprog, in_child, i: u64 = i);
        }
        std::process::exit(0);
    }
    let status = wait_child(pid, Duration::from_secs(20), "the fork child");
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    for i in 0..1000u64 {
        event!(wholeprog, after_fork, i: u64 = i);
    }
    // A program it starts: the session's variables are inherited.
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["traced_program", "--exact", "--test-threads=1"])
        .env(ROLE, "started")
        .output()
        .unwrap();
    assert!(out.status.success());
    event!(wholeprog, last, n: u64 = 1);
}

/// Forks a child that cannot trace: files limited to 64 KiB (standing for
/// a full disk) cannot hold its buffer files.
fn limited_parent() {
    for i in 0..100u64 {
        event!(wholeprog, before_fork, i: u64 = i);
    }
    let limit = |bytes: u64| {
        let lim = libc::rlimit {
            rlim_cur: bytes,
            rlim_max: libc::RLIM_INFINITY,
        };
        // SAFETY: setrlimit reads the struct we own.
        assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_FSIZE, &lim) }, 0);
    };
    // SAFETY: ignoring SIGXFSZ makes writes past the limit fail instead.
    unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) };
    limit(64 << 10);
    // SAFETY: the child records and leaves with `exit`.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        for i in 0..500u64 {
            event!(wholeprog, in_child, i: u64 = i);
        }
        std::process::exit(0);
    }
    limit(libc::RLIM_INFINITY);
    println!("child={pid}");
    let status = wait_child(pid, Duration::from_secs(20), "the fork child");
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    for i in 0..100u64 {
        event!(wholeprog, after_fork, i: u64 = i);
    }
}

/// A child that cannot trace says so, beside the sub-traces, with why.
#[test]
fn a_process_that_cannot_trace_leaves_a_note_saying_why() {
    let root = tmpdir("whole-program-untraced");
    let bufs = tmpdir("whole-program-untraced-bufs");
    let session = format!(
        "{},per-process,bufdir={},wholeprog:*",
        root.display(),
        bufs.display()
    );
    let out = run_role(
        "limited_parent",
        &session,
        &ringtrace::clock().description(),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let child: u32 = stdout
        .lines()
        .find_map(|l| l.split("child=").nth(1))
        .unwrap_or_else(|| panic!("{stdout}\n{stderr}"))
        .parse()
        .unwrap();
    assert_eq!(ctf::read::find_traces(&root).unwrap().len(), 1);
    let notes: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".untraced"))
        .collect();
    assert_eq!(notes.len(), 1);
    let name = notes[0].file_name().to_string_lossy().to_string();
    assert!(name.contains(&format!("-{child}-")), "{name}");
    let text = std::fs::read_to_string(notes[0].path()).unwrap();
    assert!(
        text.starts_with(&format!("process {child} ("))
            && text.contains("not traced: channel 'channel0': no room for buffer file"),
        "{text}"
    );
    assert!(stderr.contains(text.trim_end()), "{stderr}");
    // The parent's trace is whole.
    let (evs, _) = read_all(&root);
    assert_eq!(evs.len(), 200);
    let _ = std::fs::remove_dir_all(&bufs);
}

#[test]
fn every_process_of_a_program_writes_its_own_sub_trace_merged_in_order() {
    let root = tmpdir("whole-program");
    let session = format!("{},per-process,wholeprog:*", root.display());
    let out = run_role("parent", &session, &ringtrace::clock().description());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Three processes, three sub-traces, named <procname>-<pid>-<date>-<time>.
    let subs = ctf::read::find_traces(&root).unwrap();
    assert_eq!(subs.len(), 3, "{subs:?}");
    let mut pids = Vec::new();
    for s in &subs {
        let name = s.file_name().unwrap().to_string_lossy().to_string();
        let parts: Vec<&str> = name.rsplitn(4, '-').collect();
        assert_eq!(parts.len(), 4, "{name}");
        assert_eq!(parts[0].len(), 6, "HHMMSS in {name}");
        assert_eq!(parts[1].len(), 8, "YYYYMMDD in {name}");
        pids.push(parts[2].parse::<i64>().unwrap());
    }
    // Read as one trace: every event once, in the order it happened.
    let (evs, discarded) = read_all(&root);
    assert_eq!(discarded, 0);
    let names: Vec<&str> = evs.iter().map(|e| e.name.as_str()).collect();
    let count = |n: &str| names.iter().filter(|x| **x == n).count();
    assert_eq!(
        [
            "wholeprog:before_fork",
            "wholeprog:in_child",
            "wholeprog:after_fork",
            "wholeprog:started",
            "wholeprog:last"
        ]
        .map(count),
        [1000, 500, 1000, 300, 1]
    );
    let phase = |n: &str| match n {
        "wholeprog:before_fork" => 0,
        "wholeprog:in_child" => 1,
        "wholeprog:after_fork" => 2,
        "wholeprog:started" => 3,
        _ => 4,
    };
    assert!(
        names.windows(2).all(|w| phase(w[0]) <= phase(w[1])),
        "causal order across processes"
    );
    assert!(evs.windows(2).all(|w| w[0].ts <= w[1].ts));
    // Who: each phase's events name their process; the parent's pid is
    // the same before and after the fork, the others are its children's.
    let pid_of = |n: &str| {
        let p: Vec<&Value> = evs
            .iter()
            .filter(|e| e.name == n)
            .map(|e| &e.context[0])
            .collect();
        assert!(p.windows(2).all(|w| w[0] == w[1]), "{n}: one process");
        match p[0] {
            Value::Int(v) => *v,
            v => panic!("{v:?}"),
        }
    };
    let parent = pid_of("wholeprog:before_fork");
    assert_eq!(pid_of("wholeprog:after_fork"), parent);
    assert_eq!(pid_of("wholeprog:last"), parent);
    let (child, started) = (pid_of("wholeprog:in_child"), pid_of("wholeprog:started"));
    assert!(parent != child && child != started && parent != started);
    pids.sort();
    let mut want = vec![parent, child, started];
    want.sort();
    assert_eq!(pids, want, "one sub-trace per process, named by its pid");
    // Identical clock blocks: the sub-traces merge without conversion.
    let t = ctf::read::Trace::open(&root).unwrap();
    assert!(t.parts.iter().all(|p| p.clock == ctf::read::ClockMap::Same));
}
