//! Per-thread buffers under the conditions that used to hang or corrupt a
//! traced program:
//!
//! - the first record of every thread made inside a signal handler that
//!   interrupted `malloc` (taking a buffer then registered a thread-exit
//!   destructor and pushed onto a `Vec`: a deadlock on the allocator's lock);
//! - a storm of short-lived threads against a pool of 4 buffers, with a
//!   signal handler recording at 20 kHz or more: exact accounting,
//!   written + lost = attempted, and every record written read back.
//!
//! Each scenario runs `RINGTRACE_STRESS_REPEAT` times (1 by default; the
//! test command sets 10). A hang fails the test after a deadline instead of
//! hanging the suite.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::*;
use ringtrace::{event, ChannelConfig, Session};

fn repeat() -> u32 {
    std::env::var("RINGTRACE_STRESS_REPEAT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
}

/// Events the handler tried to record.
static H_ATTEMPTS: AtomicU64 = AtomicU64::new(0);
/// Serializes the tests of this file: they share the handler and its count.
static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

extern "C" fn handler(_: libc::c_int) {
    // Async-signal-safe: an atomic and the probe.
    let n = H_ATTEMPTS.fetch_add(1, Relaxed);
    event!(storm, from_handler, n: u64 = n);
}

/// Blocks or unblocks SIGUSR1 in the calling thread (threads it creates
/// inherit the mask).
fn sigusr1(block: bool) {
    // SAFETY: a valid signal set, the calling thread's own mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGUSR1);
        let how = if block {
            libc::SIG_BLOCK
        } else {
            libc::SIG_UNBLOCK
        };
        libc::pthread_sigmask(how, &set, std::ptr::null_mut());
    }
}

/// Runs `f` on a thread and waits for it at most `limit`: a hang is a test
/// failure, not a stuck test suite.
fn within<T: Send + 'static>(
    limit: Duration,
    what: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(limit)
        .unwrap_or_else(|_| panic!("{what}: no end within {limit:?} (a hang)"))
}

fn per_thread_session(name: &str, pool: usize) -> (Session, std::path::PathBuf) {
    let dir = tmpdir(name);
    let mut ch = ChannelConfig::new("t").subbufs(64 * 1024, 4).per_thread();
    ch.thread_pool = pool;
    let s = Session::builder(name)
        .output(&dir)
        .channel(ch)
        .enable("storm:*")
        .create()
        .unwrap();
    s.start();
    (s, dir)
}

/// Stops the session and checks the accounting: what it recorded is what
/// the trace holds, and recorded + lost is what was attempted.
fn check(s: &Session, dir: &std::path::Path, attempted: u64) -> (u64, u64) {
    s.stop().unwrap();
    let st = s.stats();
    let (events, discarded) = read_all(dir);
    assert_eq!(
        events.len() as u64,
        st.records(),
        "trace holds what was recorded"
    );
    assert_eq!(discarded, 0, "discard mode with room: no packet gap");
    assert_eq!(
        st.records() + st.lost(),
        attempted,
        "written {} + lost {} = attempted {attempted}\n{st:#?}",
        st.records(),
        st.lost(),
    );
    (st.records(), st.lost())
}

#[test]
fn first_record_of_every_thread_inside_a_signal_handler_that_interrupted_malloc() {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    on_sigusr1(handler);
    for round in 0..repeat() {
        let (s, dir) = per_thread_session(&format!("sigfirst-{round}"), 64);
        H_ATTEMPTS.store(0, Relaxed);
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel::<libc::pthread_t>();
        // Eight threads that only allocate and free: their first (and only)
        // records are made by the handler, most often inside malloc/free.
        let workers: Vec<_> = (0..8)
            .map(|k| {
                let (stop, tx) = (stop.clone(), tx.clone());
                std::thread::spawn(move || {
                    // SAFETY: pthread_self has no preconditions.
                    tx.send(unsafe { libc::pthread_self() }).unwrap();
                    let mut keep = Vec::new();
                    let mut n = 0usize;
                    while !stop.load(Relaxed) {
                        let v: Vec<u8> = Vec::with_capacity(16 + (n * 7919 + k) % 4000);
                        keep.push(v);
                        if keep.len() > 64 {
                            keep.clear();
                        }
                        n += 1;
                    }
                    n
                })
            })
            .collect();
        let threads: Vec<libc::pthread_t> = (0..8).map(|_| rx.recv().unwrap()).collect();
        let stop2 = stop.clone();
        let sent = within(
            Duration::from_secs(60),
            "signals during malloc",
            move || {
                let t = Instant::now();
                let mut sent = 0u64;
                while t.elapsed() < Duration::from_millis(300) {
                    for &th in &threads {
                        // SAFETY: the workers run until `stop` is set below.
                        unsafe { libc::pthread_kill(th, libc::SIGUSR1) };
                        sent += 1;
                    }
                    std::thread::sleep(Duration::from_micros(20));
                }
                stop2.store(true, Relaxed);
                for w in workers {
                    w.join().unwrap();
                }
                sent
            },
        );
        let attempted = H_ATTEMPTS.load(Relaxed);
        assert!(attempted > 0 && attempted <= sent);
        let (written, lost) = check(&s, &dir, attempted);
        assert!(
            written >= 8,
            "every thread recorded from its handler ({written})"
        );
        eprintln!("round {round}: {sent} signals, {attempted} handler events, written {written}, lost {lost}");
        s.destroy().unwrap();
    }
}

#[test]
fn ten_thousand_short_lived_threads_share_a_pool_of_four() {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    on_sigusr1(handler);
    const THREADS: u64 = 10_000;
    const PER_THREAD: u64 = 5;
    for round in 0..repeat() {
        let (s, dir) = per_thread_session(&format!("storm-{round}"), 4);
        H_ATTEMPTS.store(0, Relaxed);
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        // The signals go to the process: every thread but this one and the
        // signaller (which block SIGUSR1) may take them, most often one of
        // the short-lived threads.
        sigusr1(true);
        let signaller = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let t = Instant::now();
                let mut sent = 0u64;
                while !stop.load(Relaxed) {
                    // SAFETY: signals this process; the handler is installed.
                    unsafe { libc::kill(libc::getpid(), libc::SIGUSR1) };
                    sent += 1;
                    let s = Instant::now();
                    while s.elapsed() < Duration::from_micros(25) {
                        std::hint::spin_loop();
                    }
                }
                (sent, t.elapsed())
            })
        };
        let spawned = within(Duration::from_secs(120), "thread storm", move || {
            sigusr1(false);
            for k in 0..THREADS {
                std::thread::spawn(move || {
                    for i in 0..PER_THREAD {
                        event!(storm, from_thread, k: u64 = k * PER_THREAD + i);
                    }
                })
                .join()
                .unwrap();
            }
            THREADS
        });
        stop.store(true, Relaxed);
        let (sent, took) = signaller.join().unwrap();
        sigusr1(false);
        // Signals still pending are delivered by now (to this thread, once
        // unblocked); the handler's count is final.
        std::thread::sleep(Duration::from_millis(20));
        let attempted = spawned * PER_THREAD + H_ATTEMPTS.load(Relaxed);
        let (written, lost) = check(&s, &dir, attempted);
        let rate = sent as f64 / took.as_secs_f64();
        eprintln!(
            "round {round}: {spawned} threads, {sent} signals ({rate:.0}/s), attempted {attempted}, written {written}, lost {lost}"
        );
        assert!(
            written > 0 && lost > 0,
            "a pool of 4 for 10,000 threads both records and loses"
        );
        s.destroy().unwrap();
    }
}
