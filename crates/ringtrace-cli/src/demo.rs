//! `ringtrace demo`: a small multi-threaded request server instrumented
//! with ringtrace. A producer enqueues requests, workers take them, look
//! them up in a cache and answer; a 1 kHz timer signal records ticks from a
//! signal handler. Records a trace, then prints a summary and the first
//! events merged by time.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use ringtrace::{event, Mode, Session};

use crate::session_opts::SessionOpts;

/// Record a trace of a demo multi-threaded service and show it.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  ringtrace demo -o /tmp/t --seconds 5\n  \
                        ringtrace demo --mode flight-recorder --per-thread\n\
                        Then: ringtrace view <DIR>, ringtrace stats <DIR>, babeltrace2 <DIR>")]
pub struct Args {
    /// Trace directory: new (created 0700), empty, or an earlier ringtrace
    /// trace (replaced). Default: a new ringtrace-demo-<date>-<time> here.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// How long the workload runs, in seconds (more than 0, at most 86400).
    #[arg(long, default_value = "2", value_parser = crate::parse_seconds, allow_negative_numbers = true)]
    seconds: f64,
    /// Worker threads (1 to 256).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=256))]
    threads: u32,
    /// How many of the first events to print.
    #[arg(long, default_value_t = 20)]
    show: usize,
    /// At this many seconds, one request is slow (250 ms) and says so
    /// with a `demo:slow_request` event: what a trigger waits for
    /// (`--trigger 'demo:slow_request => snapshot'`).
    #[arg(long, value_name = "SECONDS", value_parser = crate::parse_seconds)]
    slow_at: Option<f64>,
    #[command(flatten)]
    session: SessionOpts,
}

struct Queue {
    q: Mutex<VecDeque<(u64, Instant)>>,
    cv: Condvar,
}

const PATHS: [&str; 6] = [
    "/",
    "/index.html",
    "/api/v1/users",
    "/api/v1/orders",
    "/static/app.js",
    "/healthz",
];

static TICKS: AtomicU64 = AtomicU64::new(0);

extern "C" fn on_timer(_: libc::c_int) {
    let n = TICKS.fetch_add(1, Relaxed);
    event!(demo, timer_tick, n: u64 = n);
}

fn producer(q: &Queue, stop: &AtomicBool) -> u64 {
    let mut id = 0u64;
    while !stop.load(Relaxed) {
        let depth = {
            let mut g = q.q.lock().unwrap();
            g.push_back((id, Instant::now()));
            g.len()
        };
        q.cv.notify_one();
        event!(demo, enqueue, id: u64 = id, depth: u32 = depth as u32);
        if depth > 4 {
            // Let the workers catch up.
            std::thread::yield_now();
        }
        if depth > 32 {
            event!(level: Warning, demo, queue_full, depth: u32 = depth as u32);
            std::thread::sleep(Duration::from_micros(50));
        }
        id += 1;
    }
    q.cv.notify_all();
    id
}

fn worker(w: u32, q: &Queue, stop: &AtomicBool) {
    let mut cache = [0u64; 64];
    loop {
        let t0 = Instant::now();
        let mut g = q.q.lock().unwrap();
        let waited = t0.elapsed().as_nanos() as u64;
        if waited > 2_000 {
            event!(level: Debug, demo, lock_wait, worker: u32 = w, ns: u64 = waited);
        }
        let (id, queued) = loop {
            if let Some(r) = g.pop_front() {
                break r;
            }
            if stop.load(Relaxed) {
                return;
            }
            g = q.cv.wait_timeout(g, Duration::from_millis(10)).unwrap().0;
        };
        drop(g);
        let path = PATHS[(id % PATHS.len() as u64) as usize];
        event!(demo, request_begin, id: u64 = id, path: &str = path, worker: u32 = w);
        // The "work": hash the path a few times; the hash keys a tiny cache
        // that the request's id sometimes evicts.
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        for _ in 0..40 {
            for b in path.bytes() {
                h = h.rotate_left(5) ^ b as u64;
            }
        }
        let slot = ((h ^ (id % 7)) % 64) as usize;
        if cache[slot] != h {
            event!(level: Debug, demo, cache_miss, id: u64 = id, key: u64 = h);
            cache[slot] = h;
        }
        let status: u16 = if id % 97 == 0 { 500 } else { 200 };
        event!(
            demo,
            request_end,
            id: u64 = id,
            status: u16 = status,
            bytes: u64 = 200 + h % 4000,
            ok: bool = status == 200,
            latency_ns: u64 = queued.elapsed().as_nanos() as u64
        );
    }
}

fn start_timer() {
    // SAFETY: the handler only uses an atomic and the probe, both
    // async-signal-safe; setitimer takes valid pointers to locals.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_timer as *const () as usize;
        sa.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(libc::SIGALRM, &sa, std::ptr::null_mut());
        let period = libc::timeval {
            tv_sec: 0,
            tv_usec: 1000,
        };
        let it = libc::itimerval {
            it_interval: period,
            it_value: period,
        };
        libc::setitimer(libc::ITIMER_REAL, &it, std::ptr::null_mut());
    }
}

/// Blocks (`true`) or unblocks the timer's signal in the calling thread.
/// A new thread is named after it starts: blocked from its creation until
/// it runs its own code, its first event (its contexts cached, name
/// included, see `ringtrace::thread_renamed`) is never a timer tick taken
/// before the name.
fn block_timer(block: bool) {
    // SAFETY: a signal set built on the stack, valid pointers.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGALRM);
        let how = if block {
            libc::SIG_BLOCK
        } else {
            libc::SIG_UNBLOCK
        };
        libc::pthread_sigmask(how, &set, std::ptr::null_mut());
    }
}

fn stop_timer() {
    // SAFETY: a zero itimerval disarms the timer.
    unsafe {
        let it: libc::itimerval = std::mem::zeroed();
        libc::setitimer(libc::ITIMER_REAL, &it, std::ptr::null_mut());
    }
}

fn dir_size(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

/// Runs the demo.
/// `--slow-at` must come before the end.
fn check_slow_at(args: &Args) -> Result<(), String> {
    match args.slow_at {
        Some(s) if s >= args.seconds => Err(format!(
            "--slow-at {s}: the slow request must come before the end (--seconds {})",
            args.seconds
        )),
        _ => Ok(()),
    }
}

/// Waits `seconds`; at `slow_at`, serves one slow request.
fn run_for(seconds: f64, slow_at: Option<f64>) {
    let t0 = Instant::now();
    if let Some(at) = slow_at {
        std::thread::sleep(Duration::from_secs_f64(at));
        let began = Instant::now();
        std::thread::sleep(Duration::from_millis(250));
        let ms = began.elapsed().as_millis() as u64;
        event!(level: Warning, demo, slow_request, path: &str = "/api/v1/report", ms: u64 = ms);
    }
    std::thread::sleep(Duration::from_secs_f64(seconds).saturating_sub(t0.elapsed()));
}

pub fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    check_slow_at(&args)?;
    // Whether the folder is ours to remove again if the session is refused.
    let (output, created) = crate::outdir::prepare(args.output.as_deref(), "demo", "demo")?;
    // Who did what: process and thread ids and the thread's name on every
    // event (the threads below are named), unless --context says.
    let o = &args.session;
    let mut ch = o.channel(
        "demo",
        8,
        ringtrace::Contexts::DEFAULT | ringtrace::Contexts::PROCNAME,
    );
    if o.mode == Mode::Discard {
        // Every buffer's events reach the files within a quarter second,
        // as a live session's (`ringtrace view --follow` while it runs).
        ch = ch.switch_timer(std::time::Duration::from_millis(250));
    }
    let mut builder = Session::builder("demo")
        .output(&output)
        .file_io(o.io)
        .mode(o.mode)
        .channel(ch)
        .enable("demo:*");
    if let Some(url) = &o.relay {
        builder = builder.relay(url.clone());
        if let Some(ms) = o.live {
            builder = builder.live(Duration::from_millis(ms.max(1)));
        }
    }
    let session = builder.create().inspect_err(|_| {
        // Nothing left behind: the folder, if this run created it and
        // it is still empty.
        if created {
            let _ = std::fs::remove_dir(&output);
        }
    })?;
    session.start();
    let q = Arc::new(Queue {
        q: Mutex::new(VecDeque::new()),
        cv: Condvar::new(),
    });
    let stop = Arc::new(AtomicBool::new(false));
    let t0 = Instant::now();
    start_timer();
    let requests = std::thread::scope(|sc| {
        block_timer(true);
        for w in 0..args.threads {
            let (q, stop) = (&q, &stop);
            std::thread::Builder::new()
                .name(format!("worker-{w}"))
                .spawn_scoped(sc, move || {
                    block_timer(false);
                    worker(w, q, stop)
                })
                .expect("a demo thread");
        }
        let p = std::thread::Builder::new()
            .name("producer".into())
            .spawn_scoped(sc, || {
                block_timer(false);
                producer(&q, &stop)
            })
            .expect("a demo thread");
        block_timer(false);
        run_for(args.seconds, args.slow_at);
        stop.store(true, Relaxed);
        p.join().unwrap()
    });
    stop_timer();
    let elapsed = t0.elapsed().as_secs_f64();
    session.stop()?;
    if args.session.mode == Mode::FlightRecorder {
        session.snapshot(&output)?;
    }
    let st = session.stats();
    let size = dir_size(&output);
    let recorded = st.records();
    outln!(
        "ringtrace demo: {} workers, {:.1} s, {} requests, trace in {}",
        args.threads,
        elapsed,
        requests,
        output.display()
    );
    let (first, in_trace, discarded) = read_back(&output, args.show)?;
    outln!();
    outln!("{:<26} {:>14}", "events recorded", recorded);
    losses(&st);
    outln!(
        "{:<26} {:>14.0}",
        "events per second",
        recorded as f64 / elapsed
    );
    outln!("{:<26} {:>14}", "timer ticks (signal)", TICKS.load(Relaxed));
    outln!("{:<26} {:>14}", "events in the trace", in_trace);
    outln!("{:<26} {:>14}", "discarded (trace says)", discarded);
    outln!("{:<26} {:>14}", "trace bytes", size);
    if let Some(r) = &st.relay {
        outln!("{:<26} {:>14}", "packets sent to relayd", r.packets_sent);
        outln!("{:<26} {:>14}", "packets lost to relayd", r.packets_lost);
        outln!("{:<26} {:>14}", "relayd folder", r.path);
    }
    outln!(
        "{:<26} {:>14.1}",
        "bytes per event",
        size as f64 / in_trace.max(1) as f64
    );
    outln!();
    outln!("first {} events (UTC):", first.len());
    for l in first {
        outln!("{l}");
    }
    session.destroy()?;
    Ok(())
}

/// Records lost, and what a loss in discard mode comes from: the buffers
/// waited for a reader longer than they take to fill, or a read (a write
/// of the trace) took that long.
fn losses(st: &ringtrace::SessionStats) {
    outln!("{:<26} {:>14}", "events lost", st.lost());
    if st.reads.reads > 0 {
        outln!(
            "{:<26} {:>14.1}",
            "longest unread (ms)",
            st.reads.longest_unread.as_secs_f64() * 1e3
        );
        outln!(
            "{:<26} {:>14.1}",
            "longest read (ms)",
            st.reads.longest_read.as_secs_f64() * 1e3
        );
    }
}

/// Reads the whole trace back: the first `n` lines, the number of events,
/// and the discarded count the packets report.
fn read_back(dir: &Path, n: usize) -> Result<(Vec<String>, u64, u64), Box<dyn std::error::Error>> {
    let trace = ctf::read::Trace::open(dir)?;
    let desc = trace.desc.clone();
    let who = crate::who::Contexts::of(&desc);
    let (mut prev, mut lines, mut events, mut discarded) = (None, Vec::new(), 0u64, 0u64);
    let errors = crate::read::walk(
        &trace,
        "reading back",
        crate::read::Show::OnTerminal,
        |item| {
            match item {
                ctf::read::ItemRef::Event(e) => {
                    if lines.len() < n {
                        let class = &desc.events[e.class];
                        lines.push(crate::pretty::event_line(
                            &desc.clock,
                            class,
                            e.ts,
                            prev,
                            e.cpu,
                            &who.who(e.class, e.context),
                            e.values,
                        ));
                    }
                    prev = Some(e.ts);
                    events += 1;
                }
                ctf::read::ItemRef::Discarded { events: d, cpu, .. } => {
                    if lines.len() < n {
                        lines.push(format!("[{d} events discarded on cpu {cpu}]"));
                    }
                    discarded += d;
                }
            }
            Ok::<_, std::convert::Infallible>(true)
        },
    )?;
    crate::read::damage(&errors, "the demo's own trace could not be read back")?;
    Ok((lines, events, discarded))
}
