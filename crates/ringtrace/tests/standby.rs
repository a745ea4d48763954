//! The standby consumer takes a pass when the consumer's CPU does not
//! run. What a virtual machine's host does to an idle vCPU (it gives the
//! physical CPU away, and the consumer's timer fires late), a real-time
//! thread spinning on the consumer's CPU does here: the consumer, pinned
//! there, cannot run for 300 ms while a writer on another CPU fills
//! buffers that hold 25 ms. With the standby (kept off the consumer's CPU)
//! every record reaches the trace; without it
//! (`RINGTRACE_CONSUMER_STANDBY=off`) the buffers overflow. Each case runs
//! in a child process of its own (the consumer threads are per process).

mod common;

use std::time::{Duration, Instant};

use common::*;
use ringtrace::{event, ChannelConfig, Session};

const CHILD: &str = "RINGTRACE_TEST_STANDBY_CHILD";

/// How long the consumer's CPU is held.
const HOLD: Duration = Duration::from_millis(300);

/// Threads of this process whose kernel name is `name`.
fn threads_named(name: &str) -> Vec<libc::pid_t> {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .flatten()
        .filter(|t| {
            std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim_end() == name)
        })
        .filter_map(|t| t.file_name().to_str()?.parse().ok())
        .collect()
}

/// The CPUs `tid` may run on.
fn affinity(tid: libc::pid_t) -> Vec<usize> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set, filled by
    // sched_getaffinity with its size; CPU_ISSET reads within it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        assert_eq!(
            libc::sched_getaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &mut set),
            0
        );
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

/// Pins `tid` (0: the calling thread) to `cpu`.
fn pin(tid: libc::pid_t, cpu: usize) {
    // SAFETY: as in `affinity`; sched_setaffinity reads the set.
    let r = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    assert_eq!(r, 0, "pin {tid} to CPU {cpu}");
}

/// The CPU `tid` last ran on (`/proc/self/task/<tid>/stat`, field 39).
fn last_cpu(tid: libc::pid_t) -> Option<usize> {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).ok()?;
    // After the command name, which may hold spaces, in parentheses.
    let rest = &stat[stat.rfind(')')? + 2..];
    rest.split_whitespace().nth(36)?.parse().ok()
}

/// The state letter of `tid` (`R`, `S`, `D`, ...).
fn thread_state(tid: libc::pid_t) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).ok()?;
    stat[stat.rfind(')')? + 2..].chars().next()
}

/// CPU time `tid` has used, ns (`schedstat`).
fn cpu_ns(tid: libc::pid_t) -> u64 {
    std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat"))
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// A `SCHED_FIFO` thread spinning on one CPU until dropped: no thread of
/// the normal class runs there meanwhile.
struct Hog {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Hog {
    /// Returns once the spinner runs.
    fn start(cpu: usize) -> Hog {
        use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let running = std::sync::Arc::new(AtomicBool::new(false));
        let (st, run) = (stop.clone(), running.clone());
        let thread = std::thread::spawn(move || {
            pin(0, cpu);
            let p = libc::sched_param { sched_priority: 10 };
            // SAFETY: a valid sched_param for the calling thread.
            if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) } != 0 {
                eprintln!("SCHED_FIFO: {}", std::io::Error::last_os_error());
                return;
            }
            run.store(true, SeqCst);
            // Bounded, whatever happens to the test.
            let t0 = Instant::now();
            while !st.load(SeqCst) && t0.elapsed() < Duration::from_secs(2) {
                std::hint::spin_loop();
            }
        });
        while !running.load(SeqCst) {
            assert!(!thread.is_finished(), "the spinner could not start");
            std::thread::yield_now();
        }
        Hog {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Waits for `ok`, 30 s at most: a thread to appear or move takes
/// milliseconds, but a loaded machine may not run it for a while, and the
/// bound is only there to fail loudly.
fn wait_for(what: &str, mut ok: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !ok() {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "{what}: not within 30 s"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The child's case: hold the consumer's CPU with a `SCHED_FIFO` spinner
/// while this thread, on another CPU, writes about 8 MB/s; prints what
/// happened for the parent.
#[test]
fn child_holds_the_consumers_cpu() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let cpus = affinity(0);
    let (held, mine) = (cpus[0], cpus[1]);
    // The writer pins itself first, as a low-latency program does: the
    // tracer's threads take the process's CPUs all the same.
    pin(0, mine);
    let dir = tmpdir("standby");
    let s = Session::builder("standby")
        .output(&dir)
        // 4 × 64 KiB: 25 ms of this writer's records.
        .channel(ChannelConfig::new("ch").subbufs(64 << 10, 4).per_thread())
        .enable("standbytest:*")
        .create()
        .unwrap();
    s.start();
    let mut attempted = 0u64;
    let mut emit = |n: u64| {
        for _ in 0..n {
            event!(standbytest, tick, i: u64 = attempted);
            attempted += 1;
        }
    };
    emit(100);
    wait_for("a consumer thread", || {
        !threads_named("ringtrace-cons").is_empty()
    });
    let consumer = threads_named("ringtrace-cons")[0];
    // Born on the process's CPUs (pthread attributes: no window in which
    // it has the writer's), whatever this test does to it next.
    assert_eq!(affinity(consumer), cpus, "the consumer's CPUs");
    // The consumer starts the standby when it starts, from the process's
    // CPUs (not its own, which the test changes below): wait for it, unless
    // turned off (then there is none at the end either).
    let off = std::env::var("RINGTRACE_CONSUMER_STANDBY").as_deref() == Ok("off");
    if !off {
        wait_for("a standby thread", || {
            !threads_named("ringtrace-stby").is_empty()
        });
    }
    let standby = threads_named("ringtrace-stby").first().copied();
    // The test's hold: the consumer on one CPU, which a spinner takes.
    pin(consumer, held);
    wait_for("the consumer on its CPU", || {
        last_cpu(consumer) == Some(held)
    });
    if let Some(sb) = standby {
        // The consumer's next pass moves the standby off its CPU.
        wait_for("the standby off the consumer's CPU", || {
            !affinity(sb).contains(&held)
        });
    }
    // The hold starts while the consumer sleeps between passes: stopped
    // inside a pass, it would hold the session, which no other thread
    // may consume meanwhile. Each try waits until it sleeps first: on a
    // machine whose CPUs something else keeps busy, a consumer caught
    // runnable by the spinner was still runnable at each of 100 tries 2 ms
    // apart (an outside busy loop failed 1 run in 6 that way).
    let t0 = Instant::now();
    let mut seen = String::new();
    let hog = loop {
        wait_for("the consumer asleep", || {
            thread_state(consumer) == Some('S')
        });
        let hog = Hog::start(held);
        match thread_state(consumer) {
            Some('S') => break hog,
            st => seen.push(st.unwrap_or('?')),
        }
        drop(hog);
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the consumer never seen asleep under the spinner (states seen: {seen})"
        );
    };
    let consumer_cpu = cpu_ns(consumer);
    // About 8 MB/s (16-byte records) while the CPU is held.
    let t0 = Instant::now();
    while t0.elapsed() < HOLD {
        emit(500);
        std::thread::sleep(Duration::from_millis(1));
    }
    let consumer_ran = cpu_ns(consumer) - consumer_cpu;
    drop(hog);
    s.stop().unwrap();
    let st = s.stats();
    let (events, discarded) = read_all(&dir);
    println!(
        "RESULT attempted={attempted} records={} lost={} read={} discarded={} passes={} standby={} consumer_ran_ns={consumer_ran}",
        st.records(),
        st.lost(),
        events.len(),
        discarded,
        st.consumer_standby.map_or(0, |b| b.passes),
        standby.is_some(),
    );
    s.destroy().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// The child's case of a program that pins the thread starting the
/// session to one CPU: the consumer and the standby still run on the
/// process's CPUs (the standby's set less the consumer's current CPU).
#[test]
fn child_pins_itself_to_one_cpu_first() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let cpus = affinity(0);
    pin(0, cpus[0]);
    let dir = tmpdir("standby-pinned");
    let s = Session::builder("pinned")
        .output(&dir)
        .channel(ChannelConfig::new("ch").per_thread())
        .enable("standbytest:*")
        .create()
        .unwrap();
    s.start();
    event!(standbytest, pinned, i: u64 = 1);
    wait_for("a consumer thread", || {
        !threads_named("ringtrace-cons").is_empty()
    });
    wait_for("a standby thread", || {
        !threads_named("ringtrace-stby").is_empty()
    });
    let consumer = threads_named("ringtrace-cons")[0];
    let standby = threads_named("ringtrace-stby")[0];
    assert_eq!(affinity(consumer), cpus, "the consumer's CPUs");
    let sb = affinity(standby);
    assert!(
        !sb.is_empty() && sb.iter().all(|c| cpus.contains(c)),
        "the standby's CPUs {sb:?} are the process's {cpus:?} (less the consumer's)"
    );
    s.stop().unwrap();
    let st = s.stats();
    assert_eq!((st.records(), st.lost()), (1, 0));
    assert!(st.consumer_standby.is_some(), "stats shows the standby");
    s.destroy().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    println!("RESULT pinned=ok");
}

#[test]
fn a_program_pinned_to_one_cpu_gets_a_consumer_on_all_of_its_cpus_and_a_standby() {
    if std::env::var_os(CHILD).is_some() {
        return;
    }
    if affinity(0).len() < 2 {
        assert!(std::env::var_os("CI").is_none(), "needs two CPUs");
        eprintln!("SKIPPED: needs two CPUs");
        return;
    }
    let out = this_test("child_pins_itself_to_one_cpu_first")
        .env(CHILD, "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("RESULT pinned=ok"),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// What a child reported: `key=value` pairs of its RESULT line.
fn run_child(standby: &str) -> std::collections::HashMap<String, String> {
    let out = this_test("child_holds_the_consumers_cpu")
        .env(CHILD, "1")
        .env("RINGTRACE_CONSUMER_STANDBY", standby)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "standby={standby}: {text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = text
        .lines()
        .find_map(|l| Some(l.split_once("RESULT ")?.1))
        .unwrap_or_else(|| panic!("no RESULT line: {text}"));
    line.split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn the_standby_drains_the_buffers_while_the_consumers_cpu_does_not_run() {
    if std::env::var_os(CHILD).is_some() {
        return;
    }
    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    if !root || affinity(0).len() < 2 {
        // CI runs as root on two CPUs: this test must run there.
        assert!(
            std::env::var_os("CI").is_none(),
            "needs root (SCHED_FIFO) and two CPUs"
        );
        eprintln!("SKIPPED: needs root (a SCHED_FIFO thread) and two CPUs");
        return;
    }
    let n =
        |m: &std::collections::HashMap<String, String>, k: &str| -> u64 { m[k].parse().unwrap() };
    let with = run_child("on");
    eprintln!("with the standby: {with:?}");
    assert_eq!(with["standby"], "true", "{with:?}");
    assert_eq!(n(&with, "lost"), 0, "{with:?}");
    assert_eq!(n(&with, "records"), n(&with, "attempted"), "{with:?}");
    assert_eq!(n(&with, "read"), n(&with, "attempted"), "{with:?}");
    assert!(n(&with, "passes") > 0, "the standby took passes: {with:?}");
    let without = run_child("off");
    eprintln!("without: {without:?}");
    assert_eq!(without["standby"], "false", "{without:?}");
    assert!(
        n(&without, "lost") > 0,
        "without the standby the buffers overflow: {without:?}"
    );
    // Written + lost = attempted, and the reader reports the loss.
    assert_eq!(
        n(&without, "records") + n(&without, "lost"),
        n(&without, "attempted"),
        "{without:?}"
    );
    assert_eq!(n(&without, "read"), n(&without, "records"), "{without:?}");
    assert_eq!(n(&without, "discarded"), n(&without, "lost"), "{without:?}");
    // The hold held: the consumer ran at most what RT throttling leaves.
    for r in [&with, &without] {
        assert!(n(r, "consumer_ran_ns") < 20_000_000, "{r:?}");
    }
}
