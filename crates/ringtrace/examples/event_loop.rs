//! One thread records N events in a session: ns per event, records lost.
//! For A/B timing of the write path, and for counting its instructions
//! with callgrind (the difference of two runs with N and 2N events, so
//! start-up cancels out):
//!
//! ```sh
//! cargo build --release -p ringtrace --example event_loop
//! target/release/examples/event_loop per-thread 10000000 discard u64
//! valgrind --tool=callgrind target/release/examples/event_loop per-thread 1000000 flight
//! ```
//!
//! Arguments: `per-cpu|per-thread` (`per-cpu` is rseq where glibc
//! registered it; `per-cpu-rseq` and `per-cpu-atomics` force either), the
//! number of events, `flight`
//! (flight recorder, the default) or `discard` (to `$TMPDIR/event-loop-trace`,
//! replaced), `u64` (the default) or `str16` for the payload, and the
//! contexts every event carries (`none`, the default, as in the earlier
//! measurements; `default` for vpid+vtid, `all`, or names joined by `+`),
//! how stream files are written (`auto`, the default, `buffered` or
//! `direct`), `stats` to print the session's statistics after (or `-`),
//! a filter the events are enabled with (`"(v & 1) == 0"`: half of
//! the u64 events pass; `"v > 1000000000000"`: none; empty: no filter),
//! and a trigger (`"evloop:* if v > 1000000000000 => stop"`: one that
//! never matches; `"evloop:* => once-after:1000000000 stop"`: every event
//! matches).

use ringtrace::{event, ChannelConfig, Mode, Session};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, default: &str| args.get(i).cloned().unwrap_or(default.to_string());
    let (per_thread, sync) = match arg(0, "per-thread").as_str() {
        "per-thread" => (true, ringtrace::CpuSync::Auto),
        "per-cpu" => (false, ringtrace::CpuSync::Auto),
        "per-cpu-rseq" => (false, ringtrace::CpuSync::Rseq),
        "per-cpu-atomics" => (false, ringtrace::CpuSync::Atomics),
        other => usage(&format!("buffers: {other}")),
    };
    let n: u64 = arg(1, "10000000")
        .parse()
        .unwrap_or_else(|e| usage(&format!("events: {e}")));
    let discard = match arg(2, "flight").as_str() {
        "discard" => true,
        "flight" => false,
        other => usage(&format!("mode: {other}")),
    };
    let str16 = match arg(3, "u64").as_str() {
        "str16" => true,
        "u64" => false,
        other => usage(&format!("payload: {other}")),
    };
    let contexts =
        ringtrace::Contexts::parse(&arg(4, "none")).unwrap_or_else(|e| usage(&e.to_string()));
    let io = ringtrace::FileIo::parse(&arg(5, "auto")).unwrap_or_else(|e| usage(&e));
    let show_stats = arg(6, "") == "stats";
    let filter = args.get(7).cloned().filter(|f| !f.is_empty());
    let trigger = args
        .get(8)
        .filter(|t| !t.is_empty())
        .map(|t| ringtrace::TriggerSpec::parse(t).unwrap_or_else(|e| usage(&e)));
    let mut ch = ChannelConfig::new("loop")
        .subbufs(1 << 20, 4)
        .contexts(contexts)
        .cpu_sync(sync);
    if per_thread {
        ch = ch.per_thread();
    }
    let b = Session::builder("event-loop")
        .file_io(io)
        .channel(ch)
        .enable_where(None, "evloop:*", ringtrace::Level::Debug, filter.as_deref());
    let b = if discard {
        let dir = std::env::temp_dir().join("event-loop-trace");
        let _ = std::fs::remove_dir_all(&dir);
        b.output(dir)
    } else {
        b.mode(Mode::FlightRecorder)
    };
    let b = match trigger {
        Some(t) => b.trigger(t),
        None => b,
    };
    let s = b.create().unwrap_or_else(|e| usage(&e.to_string()));
    s.start();
    let t = std::time::Instant::now();
    if str16 {
        for _ in 0..n {
            event!(evloop, str16, s: &str = std::hint::black_box("0123456789abcde"));
        }
    } else {
        for i in 0..n {
            event!(evloop, u64, v: u64 = std::hint::black_box(i));
        }
    }
    let e = t.elapsed();
    if let Err(e) = s.stop() {
        usage(&e.to_string());
    }
    println!(
        "{:.1} ns/event, {} lost of {n}",
        e.as_nanos() as f64 / n.max(1) as f64,
        s.stats().lost()
    );
    if show_stats {
        // Every counter (`ringtrace ctl PID stats` renders them as a table).
        println!("{:#?}", s.stats());
    }
}

fn usage(why: &str) -> ! {
    eprintln!("event_loop: {why}\nusage: event_loop [per-cpu|per-cpu-rseq|per-cpu-atomics|per-thread] [N] [flight|discard] [u64|str16] [none|default|all|<names>] [auto|buffered|direct] [stats|-] [FILTER] [TRIGGER]");
    std::process::exit(2)
}
