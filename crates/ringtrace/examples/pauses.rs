//! Records lost by a discard session whose writer pauses: one thread
//! writes ROUNDS chunks of CHUNK events (header + u64, no contexts) into
//! buffers of 4 × SUBBUF bytes, in one of three patterns:
//!
//! - `steady`: one session, the chunks back to back;
//! - `bursts`: one session, each chunk followed by a pause as long as it
//!   took (the thread spins, writing nothing);
//! - `alternate`: two sessions, the chunks alternating between them (each
//!   session pauses while the other is written).
//!
//! The consumer polls (writers never wake it), at a period that must stay
//! shorter than the writers' time to fill a buffer across their pauses
//! (`consume/period.rs`). Prints the MB written, the records lost of those
//! attempted, how many chunks lost any and which was the first (chunk 0:
//! the start). Per-thread buffers by default, `per-cpu-rseq` as the fifth
//! argument. A sixth, PAYLOAD, adds a string of that many bytes to each
//! event, to write more bytes per second than the output takes
//! (BENCHMARKS.md, "A sink slower than the writers"). The thread reads the
//! sessions' counters after each chunk, which waits for a consumer pass
//! under way: against a slow disk the ns per event printed include those
//! waits.
//!
//! ```sh
//! cargo build --release -p ringtrace --example pauses
//! target/release/examples/pauses alternate 100000 100 65536
//! ```

use std::time::Instant;

use ringtrace::{event, ChannelConfig, CpuSync, Session};

fn session(name: &str, patterns: &[&str], subbuf: usize, kind: &str) -> Session {
    let ch = ChannelConfig::new("ch")
        .subbufs(subbuf, 4)
        .contexts(ringtrace::Contexts::NONE);
    let ch = match kind {
        "per-thread" => ch.per_thread(),
        "per-cpu-rseq" => ch.cpu_sync(CpuSync::Rseq),
        other => usage(&format!("buffers: {other}")),
    };
    let dir = std::env::temp_dir().join(format!("pauses-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    let mut b = Session::builder(name).channel(ch).output(dir);
    for p in patterns {
        b = b.enable(p);
    }
    let s = b.create().unwrap_or_else(|e| usage(&e.to_string()));
    s.start();
    s
}

fn chunk(which: usize, n: u64, payload: &str) {
    match (which, payload.is_empty()) {
        (0, true) => {
            for i in 0..n {
                event!(pausea, u64, v: u64 = std::hint::black_box(i));
            }
        }
        (_, true) => {
            for i in 0..n {
                event!(pauseb, u64, v: u64 = std::hint::black_box(i));
            }
        }
        (0, false) => {
            for i in 0..n {
                event!(pausea, text, v: u64 = std::hint::black_box(i), s: &str = payload);
            }
        }
        (_, false) => {
            for i in 0..n {
                event!(pauseb, text, v: u64 = std::hint::black_box(i), s: &str = payload);
            }
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, default: &str| args.get(i).cloned().unwrap_or(default.to_string());
    let num = |i: usize, default: &str| -> u64 {
        arg(i, default)
            .parse()
            .unwrap_or_else(|e| usage(&format!("argument {}: {e}", i + 1)))
    };
    let pattern = arg(0, "alternate");
    let (n, rounds, subbuf) = (num(1, "100000"), num(2, "100"), num(3, "65536"));
    let kind = arg(4, "per-thread");
    let payload = "x".repeat(num(5, "0") as usize);
    let sessions = match pattern.as_str() {
        "alternate" => vec![
            session("pauses-a", &["pausea:*"], subbuf as usize, &kind),
            session("pauses-b", &["pauseb:*"], subbuf as usize, &kind),
        ],
        "steady" | "bursts" => vec![session(
            "pauses-a",
            &["pausea:*", "pauseb:*"],
            subbuf as usize,
            &kind,
        )],
        other => usage(&format!("pattern: {other}")),
    };
    let lost = || sessions.iter().map(|s| s.stats().lost()).sum::<u64>();
    let (mut before, mut lossy, mut first) = (0, 0, None);
    let t = Instant::now();
    for r in 0..rounds {
        let k = (r % 2) as usize;
        let c = Instant::now();
        chunk(k, n, &payload);
        if pattern == "bursts" {
            let took = c.elapsed();
            let p = Instant::now();
            while p.elapsed() < took {
                std::hint::spin_loop();
            }
        }
        let now = lost();
        if now > before {
            lossy += 1;
            first = first.or(Some(r));
        }
        before = now;
    }
    let took = t.elapsed();
    for s in &sessions {
        s.stop().unwrap_or_else(|e| usage(&e.to_string()));
    }
    let attempted = n * rounds;
    let bytes = |s: &Session| s.stats().bytes_written();
    println!(
        "{pattern:<9} {kind}, 4 x {subbuf} B, {} MB: {} lost of {attempted}, {lossy} of {rounds} chunks lossy{}, {:.1} ns/event with pauses",
        sessions.iter().map(bytes).sum::<u64>() / 1_000_000,
        lost(),
        first.map_or(String::new(), |r| format!(" (the first: chunk {r})")),
        took.as_nanos() as f64 / attempted.max(1) as f64
    );
}

fn usage(why: &str) -> ! {
    eprintln!("pauses: {why}\nusage: pauses [steady|bursts|alternate] [CHUNK] [ROUNDS] [SUBBUF] [per-thread|per-cpu-rseq] [PAYLOAD]");
    std::process::exit(2)
}
