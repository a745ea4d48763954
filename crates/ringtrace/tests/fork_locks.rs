//! fork() while other threads hold every lock of the tracer — the control
//! lock (sessions created and destroyed), the registry of run-time event
//! descriptions, the consumer's wake lock, the ring buffer's thread-exit
//! registry (threads with per-thread buffers exiting) — and the child must
//! neither deadlock nor lose its identity: it creates a session with a
//! per-thread channel, registers a description, records from a new thread,
//! and its thread's RCU reader slot is its own (a grace period waits for
//! its read section instead of freeing the slot under it).
//!
//! `RINGTRACE_STRESS_REPEAT` scales the number of forks (5 each). The
//! child's own threads start with `pthread_create`, as the tracer's do
//! (`src/sys/thread.rs`): a `std::thread::spawn` in a fork child can hang on a
//! lock of Rust's std (its stack-overflow thread registry) that a parent
//! thread starting at the fork held, once in about 1,400 forks. That is
//! std's hazard for every program that forks while threads start, not the
//! tracer's; the tracer's own threads avoid it.

// The tracer does not run under loom (only `rcu::Domain` is modelled).
#![cfg(not(loom))]

mod common;

use std::sync::atomic::{AtomicBool, Ordering::*};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use ringtrace::{event, ChannelConfig, EventDesc, Level, Session};

fn repeat() -> u32 {
    std::env::var("RINGTRACE_STRESS_REPEAT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
}

fn per_thread_session(name: &str, dir: &std::path::Path) -> Session {
    let s = Session::builder(name)
        .output(dir)
        .channel(ChannelConfig::new("t").subbufs(16 * 1024, 4).per_thread())
        .enable("forklock:*")
        .create()
        .unwrap();
    s.start();
    s
}

fn dynamic_desc(n: u64) -> &'static EventDesc {
    Box::leak(Box::new(EventDesc::new(
        "forklock",
        String::leak(format!("dyn{n}")),
        Level::Info,
        &[],
        file!(),
        line!(),
    )))
}

/// What a fork child does; its exit status says what failed.
fn child(dir: &std::path::Path) -> i32 {
    // The RCU slot of this thread (claimed in the parent, before the fork)
    // is its own: a grace period cannot end while it reads.
    let Some(guard) = ringtrace::rcu::read_lock() else {
        return 10;
    };
    let ended_early =
        on_raw_thread(|| ringtrace::rcu::DOMAIN.synchronize(Duration::from_millis(50)))
            .unwrap_or(true);
    drop(guard);
    if ended_early {
        return 11;
    }
    if !ringtrace::rcu::DOMAIN.synchronize(Duration::from_secs(5)) {
        return 12;
    }
    // Every lock is free in the child.
    let s = per_thread_session("forklock-child", dir);
    ringtrace::register(dynamic_desc(u64::MAX));
    let t = on_raw_thread(|| {
        for i in 0..100u64 {
            event!(forklock, in_child, i: u64 = i);
        }
    });
    if t.is_none() {
        return 13;
    }
    if s.stop().is_err() || s.stats().records() != 100 {
        return 14;
    }
    if s.destroy().is_err() {
        return 15;
    }
    0
}

#[test]
fn fork_while_other_threads_hold_every_tracer_lock() {
    let dir = tmpdir("forklock-parent");
    let s = per_thread_session("forklock-parent", &dir);
    // This thread's RCU slot, claimed here, is the one a child inherits.
    event!(forklock, parent, i: u64 = 0);
    let stop = Arc::new(AtomicBool::new(false));
    let mut hammers = Vec::new();
    // Sessions created and destroyed: control lock, channel registration in
    // the thread-exit registry, consumer wake-ups.
    let st = stop.clone();
    hammers.push(std::thread::spawn(move || {
        let d = tmpdir("forklock-churn");
        let mut n = 0u64;
        while !st.load(Relaxed) {
            let _ = std::fs::remove_dir_all(&d);
            let s = per_thread_session("forklock-churn", &d);
            s.stop().unwrap();
            s.destroy().unwrap();
            n += 1;
        }
        let _ = std::fs::remove_dir_all(&d);
        n
    }));
    // Run-time descriptions registered: the registry's lock.
    let st = stop.clone();
    hammers.push(std::thread::spawn(move || {
        let mut n = 0u64;
        while !st.load(Relaxed) {
            ringtrace::register(dynamic_desc(n));
            n += 1;
        }
        n
    }));
    // Threads with per-thread buffers exiting: the thread-exit registry.
    let st = stop.clone();
    hammers.push(std::thread::spawn(move || {
        let mut n = 0u64;
        while !st.load(Relaxed) {
            std::thread::spawn(move || event!(forklock, short, i: u64 = n))
                .join()
                .unwrap();
            n += 1;
        }
        n
    }));
    let forks = 5 * repeat();
    for k in 0..forks {
        let child_dir = tmpdir(&format!("forklock-child-{k}"));
        // SAFETY: the child runs this crate's code and `_exit`s; it never
        // returns into the test harness.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            // Another thread may have held the stderr lock at the fork:
            // failures report through the exit status only.
            std::panic::set_hook(Box::new(|_| {}));
            let code = std::panic::catch_unwind(|| child(&child_dir)).unwrap_or(3);
            // SAFETY: leaves the child without running the parent's exit
            // handlers or the test harness.
            unsafe { libc::_exit(code) };
        }
        let status = wait_child(
            pid,
            Duration::from_secs(30),
            &format!("fork child {k} (a lock inherited locked?)"),
        );
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "fork child {k}: status {status:#x} (exit code {})",
            libc::WEXITSTATUS(status)
        );
        let _ = std::fs::remove_dir_all(&child_dir);
    }
    stop.store(true, Relaxed);
    let done: Vec<u64> = hammers.into_iter().map(|h| h.join().unwrap()).collect();
    eprintln!("{forks} forks; sessions churned, descriptions registered, short threads: {done:?}");
    assert!(done.iter().all(|&n| n > 0));
    s.stop().unwrap();
    s.destroy().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
