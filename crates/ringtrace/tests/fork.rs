//! fork() of a traced process: the child neither writes into the parent's
//! buffers nor deadlocks; inherited sessions are off in the child and its
//! handles refuse or ignore operations; a session the child creates is its
//! own; the parent's trace is exact.

mod common;

use std::time::{Duration, Instant};

use common::*;
use ringtrace::{event, ChannelConfig, Level, Session};

/// The tests fork (or spawn): one at a time, so that each session counts
/// exactly its own test's children.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn fork_children_trace_into_their_own_sessions_only() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let parent_dir = tmpdir("fork-parent");
    let child_dir = tmpdir("fork-child");
    // The busy thread's events in a channel of their own, which it may
    // fill faster than the consumer empties it (on a loaded machine it
    // did, and the main thread's events after the fork were all
    // discarded): the counted ones go to a per-thread channel that holds
    // them all.
    let s = Session::builder("parent")
        .output(&parent_dir)
        .channel(ChannelConfig::new("busy"))
        .channel(ChannelConfig::new("counted").per_thread())
        .enable_in("busy", "forktest:busy", Level::Debug)
        .enable_in("counted", "forktest:before", Level::Debug)
        .enable_in("counted", "forktest:after", Level::Debug)
        .enable_in("counted", "forktest:in_child", Level::Debug)
        .create()
        .unwrap();
    s.start();
    // Keep the consumer busy across the fork.
    let busy = std::thread::spawn(|| {
        for i in 0..200_000u64 {
            event!(forktest, busy, i: u64 = i);
        }
    });
    for i in 0..1000u64 {
        event!(forktest, before, i: u64 = i);
    }
    // SAFETY: the child only runs this crate's code (tracing, sessions) and
    // then `_exit`s; it never returns into the test harness.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        // Another test thread may have held the stderr lock at the fork: a
        // failure here reports through the exit status only.
        std::panic::set_hook(Box::new(|_| {}));
        let code = std::panic::catch_unwind(|| {
            // Inherited: off here, and its handle is inert.
            assert!(!s.is_active());
            for i in 0..5000u64 {
                event!(forktest, in_child, i: u64 = i);
            }
            assert!(matches!(
                s.snapshot(&child_dir.join("x")),
                Err(ringtrace::Error::Inherited(_))
            ));
            assert!(s.stop().is_ok());
            // A session of its own works, consumer included.
            let mine = Session::builder("child")
                .output(&child_dir)
                .enable("forktest:in_child")
                .create()
                .unwrap();
            mine.start();
            for i in 0..5000u64 {
                event!(forktest, in_child, i: u64 = i);
            }
            mine.stop().unwrap();
            assert_eq!(mine.stats().records(), 5000);
            mine.destroy().unwrap();
            drop(s);
        })
        .map_or(3, |_| 0);
        // SAFETY: leaves the child at once, without running the parent's
        // exit handlers or the test harness.
        unsafe { libc::_exit(code) };
    }
    for i in 0..1000u64 {
        event!(forktest, after, i: u64 = i);
    }
    let status = wait_child(pid, Duration::from_secs(20), "the fork child");
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "child status {status:#x}"
    );
    busy.join().unwrap();
    s.stop().unwrap();
    // The child's events are in no trace of this session, and its stats
    // say so (a fork while stopped is not counted).
    // SAFETY: the child `_exit`s at once.
    let idle = unsafe { libc::fork() };
    if idle == 0 {
        // SAFETY: leaves the child at once.
        unsafe { libc::_exit(0) };
    }
    wait_child(idle, Duration::from_secs(20), "the second fork child");
    let st = s.stats();
    assert_eq!(st.forks_untraced, 1);
    let (evs, discarded) = read_all(&parent_dir);
    let count = |n: &str| evs.iter().filter(|e| e.name == n).count();
    assert_eq!(
        count("forktest:in_child"),
        0,
        "the child wrote into the parent's trace"
    );
    assert_eq!(
        (count("forktest:before"), count("forktest:after")),
        (1000, 1000)
    );
    assert_eq!(count("forktest:busy") as u64 + discarded, 200_000);
    let (child_evs, _) = read_all(&child_dir);
    assert_eq!(child_evs.len(), 5000);
    assert!(child_evs.iter().all(|e| e.name == "forktest:in_child"));
    // Who: the parent's events say the parent and the forking thread, the
    // child's the child (its only thread has the child's pid as its id),
    // though that thread recorded in the parent just before the fork.
    use ctf::value::Value;
    let me = Value::Int(std::process::id() as i64);
    let forking_thread = evs
        .iter()
        .find(|e| e.name == "forktest:before")
        .unwrap()
        .context
        .clone();
    assert_eq!(forking_thread[0], me);
    for e in evs.iter().filter(|e| e.name != "forktest:busy") {
        assert_eq!(e.context, forking_thread, "{}", e.name);
    }
    let child = Value::Int(pid as i64);
    for e in &child_evs {
        assert_eq!(e.context, [child.clone(), child.clone()]);
    }
}

/// exec() of a child of a traced process: the new program inherits none of
/// the tracer's descriptors (buffer memfds and files, stream files,
/// metadata, the control socket are all close-on-exec).
#[test]
fn exec_leaves_no_tracer_descriptor_behind() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let out = tmpdir("exec-out");
    let bufs = tmpdir("exec-bufs");
    let s1 = Session::builder("exec-discard")
        .output(&out)
        .enable("exectest:*")
        .create()
        .unwrap();
    let s2 = Session::builder("exec-fr")
        .mode(ringtrace::Mode::FlightRecorder)
        .buffer_dir(&bufs)
        .enable("exectest:*")
        .create()
        .unwrap();
    s1.start();
    s2.start();
    for i in 0..10_000u64 {
        event!(exectest, ev, i: u64 = i);
    }
    // What the parent holds, then what an exec'd child sees.
    let mine: Vec<String> = std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .map(|p| p.display().to_string())
        .collect();
    let traced = |l: &str| {
        l.contains("memfd:")
            || l.contains(out.to_str().unwrap())
            || l.contains(bufs.to_str().unwrap())
    };
    assert!(
        mine.iter().any(|l| traced(l)),
        "the parent holds tracer descriptors: {mine:?}"
    );
    let o = std::process::Command::new("sh")
        .args(["-c", "for f in /proc/$$/fd/*; do readlink $f; done"])
        .output()
        .unwrap();
    let theirs = String::from_utf8(o.stdout).unwrap();
    assert!(!theirs.lines().any(traced), "inherited by exec: {theirs}");
    let parent_sockets = mine.iter().filter(|l| l.starts_with("socket:")).count();
    assert!(
        theirs.lines().filter(|l| l.starts_with("socket:")).count() < parent_sockets.max(1),
        "control socket inherited: {theirs}"
    );
    s1.stop().unwrap();
    s2.stop().unwrap();
    drop((s1, s2));
    // The consumer lets go of the session state shortly after destroy.
    let t = Instant::now();
    while bufs.exists() {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "a normal end removes the buffer directory"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}
