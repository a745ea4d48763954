//! Per-CPU buffers with restartable sequences, through the tracer: a
//! session takes them where glibc registered rseq and says so in its
//! statistics; it falls back to lock-prefixed atomics where rseq is not
//! registered (`GLIBC_TUNABLES=glibc.pthread.rseq=0`, in a child process),
//! and refuses to be forced to rseq there with a message that says what to
//! do. Then a whole trace under a migration storm with a signal handler
//! recording, for both modes: every event recorded is in the trace, in a
//! stream whose CPU is the one the event reports when its writer provably
//! stayed there, and written + lost = attempted.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::time::{Duration, Instant};

use common::*;
use ringtrace::{event, ChannelConfig, CpuSync, Session};

const CHILD: &str = "RINGTRACE_TEST_CHILD";

/// The channel's buffers as `stats` names them.
fn sharing(s: &Session) -> &'static str {
    s.stats().channels[0].sharing.name()
}

fn session(name: &str, sync: CpuSync, dir: Option<&std::path::Path>) -> Result<Session, String> {
    let mut b = Session::builder(name)
        .channel(
            ChannelConfig::new("ch")
                .subbufs(64 << 10, 8)
                .cpu_sync(sync)
                .contexts(ringtrace::Contexts::NONE),
        )
        .enable("rseqtest:*");
    b = match dir {
        Some(d) => b.output(d),
        None => b.mode(ringtrace::Mode::FlightRecorder),
    };
    b.create().map_err(|e| e.to_string())
}

/// The child: prints what an `auto` session chose and what forcing rseq
/// says, with rseq disabled by the parent through GLIBC_TUNABLES.
#[test]
fn child_reports_its_buffers() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    println!("rseq available: {}", ringbuf::rseq::available());
    let s = session("child-auto", CpuSync::Auto, None).unwrap();
    s.start();
    for i in 0..10_000u64 {
        event!(rseqtest, tick, i: u64 = i);
    }
    s.stop().unwrap();
    println!("auto: {} records {}", sharing(&s), s.stats().records());
    match session("child-forced", CpuSync::Rseq, None) {
        Ok(_) => println!("forced: accepted"),
        Err(e) => println!("forced: refused: {e}"),
    }
}

#[test]
fn auto_takes_rseq_where_glibc_registered_it() {
    assert!(
        ringbuf::rseq::available(),
        "rseq is not registered here: glibc 2.35+ on Linux 4.18+ registers it"
    );
    let s = session("auto", CpuSync::Auto, None).unwrap();
    assert_eq!(sharing(&s), "per-cpu rseq");
    let a = session("atomics", CpuSync::Atomics, None).unwrap();
    assert_eq!(sharing(&a), "per-cpu atomics");
}

#[test]
fn without_rseq_a_session_falls_back_to_atomics_and_refuses_to_force_it() {
    let out = this_test("child_reports_its_buffers")
        .env(CHILD, "1")
        .env("GLIBC_TUNABLES", "glibc.pthread.rseq=0")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("rseq available: false"), "{text}");
    assert!(
        text.contains("auto: per-cpu atomics records 10000"),
        "{text}"
    );
    assert!(
        text.contains("forced: refused:")
            && text.contains("GLIBC_TUNABLES")
            && text.contains("rseq=atomics"),
        "{text}"
    );
}

/// Per writer: re-pinnings, odd while one is in progress.
static GEN: [AtomicU64; 2] = [const { AtomicU64::new(0) }; 2];
static HANDLED: AtomicU64 = AtomicU64::new(0);
static ARMED: AtomicBool = AtomicBool::new(false);

thread_local! {
    static WRITER: std::cell::Cell<usize> = const { std::cell::Cell::new(usize::MAX) };
}

fn cpu_now() -> u32 {
    // SAFETY: no preconditions; async-signal-safe.
    unsafe { libc::sched_getcpu() as u32 }
}

/// One event of writer `w` carrying the CPU it ran on just before, then a
/// verdict: whether that is certainly the CPU it was recorded on (no
/// re-pinning across it, the same CPU before and after).
fn tick(w: usize, seq: u64, from_handler: bool) {
    let g1 = GEN[w].load(Acquire);
    let c1 = cpu_now();
    event!(rseqtest, tick, w: u64 = w as u64, seq: u64 = seq, cpu: u32 = c1, handler: u8 = from_handler as u8);
    let c2 = cpu_now();
    let g2 = GEN[w].load(Acquire);
    let stable = g1 == g2 && g1.is_multiple_of(2) && c1 == c2;
    event!(rseqtest, verdict, w: u64 = w as u64, seq: u64 = seq, stable: u8 = stable as u8);
}

extern "C" fn on_signal(_: libc::c_int) {
    let w = WRITER.with(|c| c.get());
    if w < 2 && ARMED.load(Relaxed) {
        let n = HANDLED.fetch_add(1, Relaxed);
        tick(w, 1 << 40 | n, true);
    }
}

fn run_storm(sync: CpuSync) {
    let dir = tmpdir(&format!("rseq-storm-{sync:?}"));
    let s = session(&format!("storm-{sync:?}"), sync, Some(&dir)).unwrap();
    on_sigusr1(on_signal);
    HANDLED.store(0, Relaxed);
    ARMED.store(true, Relaxed);
    s.start();
    let cpus = storm::allowed_cpus();
    let done = AtomicBool::new(false);
    let started = Instant::now();
    let attempted = std::thread::scope(|sc| {
        let (tx, rx) = std::sync::mpsc::channel();
        let writers: Vec<_> = (0..2)
            .map(|w| {
                let tx = tx.clone();
                let done = &done;
                sc.spawn(move || {
                    WRITER.with(|c| c.set(w));
                    tx.send(storm::gettid()).unwrap();
                    let cpu0 = storm::thread_cpu_secs();
                    let timer = storm::Timer::every(libc::SIGUSR1, Duration::from_micros(25));
                    let mut seq = 0u64;
                    while !done.load(Relaxed) {
                        tick(w, seq, false);
                        seq += 1;
                        let t = Instant::now();
                        while t.elapsed() < Duration::from_nanos(500) {
                            std::hint::spin_loop();
                        }
                    }
                    drop(timer);
                    WRITER.with(|c| c.set(usize::MAX));
                    (seq, storm::thread_cpu_secs() - cpu0)
                })
            })
            .collect();
        let ids: Vec<libc::pid_t> = (0..2).map(|_| rx.recv().unwrap()).collect();
        let start = Instant::now();
        let mut k = 0;
        while start.elapsed() < Duration::from_millis(600) {
            for (w, &tid) in ids.iter().enumerate() {
                GEN[w].fetch_add(1, AcqRel);
                storm::pin(tid, cpus[(k + w) % cpus.len()]);
                GEN[w].fetch_add(1, AcqRel);
            }
            k += 1;
            std::thread::sleep(Duration::from_micros(100));
        }
        done.store(true, Relaxed);
        writers
            .into_iter()
            .map(|h| h.join().unwrap())
            .fold((0u64, 0f64), |(n, c), (s, cpu)| (n + s, c + cpu / 2.0))
    });
    // The writers' mean time on CPU (`storm::thread_cpu_secs`).
    let (attempted, writer_secs) = attempted;
    ARMED.store(false, Relaxed);
    let secs = started.elapsed().as_secs_f64();
    s.stop().unwrap();
    let st = s.stats();
    let handled = HANDLED.load(Relaxed);
    // Two events per tick.
    let attempted = 2 * (attempted + handled);
    assert_eq!(
        st.records() + st.lost(),
        attempted,
        "written + lost = attempted"
    );
    let (evs, discarded) = read_all(&dir);
    assert_eq!(
        evs.len() as u64,
        st.records(),
        "every event recorded is in the trace"
    );
    assert_eq!(discarded, st.lost());
    assert_streams_ordered(&dir);
    // A tick whose verdict says its writer stayed on one CPU is in that
    // CPU's stream.
    let key = |e: &Ev| (uint(&e.values[0]), uint(&e.values[1]));
    let ticks: std::collections::HashMap<(u64, u64), (u64, u32)> = evs
        .iter()
        .filter(|e| e.name == "rseqtest:tick")
        .map(|e| (key(e), (uint(&e.values[2]), e.cpu)))
        .collect();
    let mut placed = 0;
    for v in evs.iter().filter(|e| e.name == "rseqtest:verdict") {
        if uint(&v.values[2]) == 1 {
            if let Some(&(ran_on, stream)) = ticks.get(&key(v)) {
                assert_eq!(
                    ran_on, stream as u64,
                    "an event that ran on CPU {ran_on} is in CPU {stream}'s stream"
                );
                placed += 1;
            }
        }
    }
    let t = st.channels[0].total();
    eprintln!(
        "{sync:?}: {attempted} events attempted, {} recorded, {} lost, {handled} from the handler, \
         {placed} placement-checked; rseq aborts {} moves {}",
        st.records(),
        st.lost(),
        t.rseq_aborts,
        t.rseq_moves
    );
    assert!(
        handled as f64 / writer_secs > 20_000.0,
        "the handlers recorded at 20 kHz or more of the writers' time on CPU \
         ({handled} in {writer_secs:.2} s; {secs:.2} s of wall time)"
    );
    assert!(placed > 1000);
    s.destroy().unwrap();
}

#[test]
fn a_trace_under_a_migration_storm_with_signals_is_exact() {
    run_storm(CpuSync::Rseq);
    run_storm(CpuSync::Atomics);
}
