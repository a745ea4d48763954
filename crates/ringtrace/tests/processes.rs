//! Several processes of one program traced as one (`per-process`): a pipe
//! ping-pong between a parent and its fork child appears in the merged
//! trace in causal order, round trip after round trip; a program that
//! forks three children, one of which execs another program, has every
//! process's events, each naming its process. The test binary runs itself
//! as the traced program.

mod common;

use std::process::Command;
use std::time::Duration;

use common::*;
use ctf::value::Value;
use ringtrace::event;

const ROLE: &str = "RINGTRACE_TEST_ROLE";
const ROUND_TRIPS: u64 = 10_000;

fn run_role(role: &str, root: &std::path::Path) -> std::process::Output {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "traced_program",
            "--exact",
            "--test-threads=1",
            "--nocapture",
        ])
        .env(ROLE, role)
        .env(
            "RINGTRACE_SESSION",
            format!("{},per-process,procs:*", root.display()),
        )
        .env("RINGTRACE_CLOCK", ringtrace::clock().description())
        .output()
        .unwrap()
}

/// The traced program (does nothing unless run with a role).
#[test]
fn traced_program() {
    match std::env::var(ROLE).as_deref() {
        Ok("pingpong") => ping_pong(),
        Ok("three") => three_children(),
        Ok("execed") => {
            for i in 0..200u64 {
                event!(procs, execed, i: u64 = i);
            }
        }
        _ => {}
    }
}

fn pipe() -> (i32, i32) {
    let mut fds = [0; 2];
    // SAFETY: pipe fills the two descriptors of the array we own.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    (fds[0], fds[1])
}

fn send(fd: i32, v: u64) {
    // SAFETY: writes the 8 bytes of `v`.
    let n = unsafe { libc::write(fd, (&v as *const u64).cast(), 8) };
    assert_eq!(n, 8);
}

fn recv(fd: i32) -> u64 {
    let mut v = 0u64;
    // SAFETY: reads at most 8 bytes into `v` (pipe writes of 8 bytes are
    // atomic: a read gets all of one).
    let n = unsafe { libc::read(fd, (&mut v as *mut u64).cast(), 8) };
    assert_eq!(n, 8);
    v
}

fn ping_pong() {
    let (to_child_r, to_child_w) = pipe();
    let (to_parent_r, to_parent_w) = pipe();
    // SAFETY: the child only records, uses its pipe ends and exits.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        for i in 0..ROUND_TRIPS {
            assert_eq!(recv(to_child_r), i);
            event!(procs, got_ping, i: u64 = i);
            event!(procs, pong, i: u64 = i);
            send(to_parent_w, i);
        }
        std::process::exit(0);
    }
    for i in 0..ROUND_TRIPS {
        event!(procs, ping, i: u64 = i);
        send(to_child_w, i);
        assert_eq!(recv(to_parent_r), i);
        event!(procs, got_pong, i: u64 = i);
    }
    let status = wait_child(pid, Duration::from_secs(60), "the ping-pong child");
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
}

fn three_children() {
    event!(procs, parent, k: u64 = 0);
    let mut pids = Vec::new();
    for k in 1..=3u64 {
        // SAFETY: each child records and exits, or execs this binary.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            if k == 3 {
                // Straight to another program (nothing recorded between
                // the fork and the exec).
                let err = std::os::unix::process::CommandExt::exec(
                    Command::new(std::env::current_exe().unwrap())
                        .args(["traced_program", "--exact", "--test-threads=1"])
                        .env(ROLE, "execed"),
                );
                panic!("exec: {err}");
            }
            for i in 0..100 * k {
                event!(procs, child, k: u64 = k, i: u64 = i);
            }
            std::process::exit(0);
        }
        pids.push(pid);
    }
    for pid in pids {
        let status = wait_child(pid, Duration::from_secs(20), "a child");
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    }
    event!(procs, parent, k: u64 = 1);
}

fn int(v: &Value) -> i64 {
    match v {
        Value::Int(x) => *x,
        Value::Uint(x) => *x as i64,
        v => panic!("{v:?}"),
    }
}

#[test]
fn a_pipe_ping_pong_between_two_processes_is_in_causal_order() {
    let root = tmpdir("ping-pong");
    let out = run_role("pingpong", &root);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(ctf::read::find_traces(&root).unwrap().len(), 2);
    let (evs, discarded) = read_all(&root);
    assert_eq!(discarded, 0);
    assert_eq!(evs.len() as u64, 4 * ROUND_TRIPS);
    // Exactly ping, got_ping, pong, got_pong for each round trip, in order.
    let order = [
        "procs:ping",
        "procs:got_ping",
        "procs:pong",
        "procs:got_pong",
    ];
    for (n, e) in evs.iter().enumerate() {
        let (i, step) = (n as u64 / 4, n % 4);
        assert_eq!(
            (e.name.as_str(), int(&e.values[0]) as u64),
            (order[step], i),
            "event {n} of the merged trace"
        );
    }
    // Two processes, each side's events naming its own.
    let pid = |name: &str| int(&evs.iter().find(|e| e.name == name).unwrap().context[0]);
    let (parent, child) = (pid("procs:ping"), pid("procs:pong"));
    assert_ne!(parent, child);
    for e in &evs {
        let side = if e.name.ends_with("ping") && e.name != "procs:got_ping"
            || e.name == "procs:got_pong"
        {
            parent
        } else {
            child
        };
        assert_eq!(int(&e.context[0]), side, "{}", e.name);
    }
}

#[test]
fn a_program_forking_three_children_one_of_which_execs_is_traced_whole() {
    let root = tmpdir("three-children");
    let out = run_role("three", &root);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (evs, discarded) = read_all(&root);
    assert_eq!(discarded, 0);
    let count = |n: &str| evs.iter().filter(|e| e.name == n).count();
    assert_eq!(count("procs:parent"), 2);
    assert_eq!(count("procs:child"), 100 + 200);
    assert_eq!(count("procs:execed"), 200);
    // Who: each child's events name one process, not the parent's; the
    // exec'd program keeps its pid (it is the third child).
    let parent = int(&evs[0].context[0]);
    let mut by_k = std::collections::BTreeMap::new();
    for e in evs.iter().filter(|e| e.name == "procs:child") {
        let k = int(&e.values[0]);
        let p = int(&e.context[0]);
        assert_eq!(*by_k.entry(k).or_insert(p), p, "child {k}: one process");
        assert_ne!(p, parent);
    }
    assert_eq!(by_k.len(), 2);
    let execed: Vec<i64> = evs
        .iter()
        .filter(|e| e.name == "procs:execed")
        .map(|e| int(&e.context[0]))
        .collect();
    assert!(execed.windows(2).all(|w| w[0] == w[1]));
    assert!(execed[0] != parent && !by_k.values().any(|p| *p == execed[0]));
    // Sub-traces: the parent, two children, the third child as forked
    // (nothing recorded) and as the program it exec'd.
    let subs = ctf::read::find_traces(&root).unwrap();
    let with_pid = |p: i64| {
        subs.iter()
            .filter(|s| s.to_string_lossy().contains(&format!("-{p}-")))
            .count()
    };
    assert_eq!(with_pid(parent), 1);
    assert_eq!(with_pid(execed[0]), 2, "{subs:?}");
    assert_eq!(subs.len(), 5, "{subs:?}");
}
