//! Two buffer kinds measured in one process, in alternating chunks: the
//! ratio of their ns per event on a machine whose speed drifts from one
//! second to the next (a shared VM), where two separate runs do not
//! compare. Two sessions (per-thread and per-CPU rseq by default; any two
//! of `per-thread`, `per-cpu-rseq`, `per-cpu-atomics`), each enabling its
//! own event; one thread records CHUNK events of the first, then of the
//! second, ROUNDS times (the order swapped every round). Prints each
//! kind's median ns per event, the median of the round-by-round ratios
//! second/first, and the events each session lost.
//!
//! ```sh
//! cargo build --release -p ringtrace --example interleave
//! target/release/examples/interleave per-thread per-cpu-rseq flight 100000 200
//! ```

use std::time::Instant;

use ringtrace::{event, ChannelConfig, CpuSync, Mode, Session};

fn session(name: &str, kind: &str, pattern: &str, discard: bool) -> Session {
    let mut ch = ChannelConfig::new("ch")
        .subbufs(1 << 20, 4)
        .contexts(ringtrace::Contexts::NONE);
    ch = match kind {
        "per-thread" => ch.per_thread(),
        "per-cpu-rseq" => ch.cpu_sync(CpuSync::Rseq),
        "per-cpu-atomics" => ch.cpu_sync(CpuSync::Atomics),
        other => usage(&format!("buffers: {other}")),
    };
    let b = Session::builder(name).channel(ch).enable(pattern);
    let b = if discard {
        let dir = std::env::temp_dir().join(format!("interleave-{name}"));
        let _ = std::fs::remove_dir_all(&dir);
        b.output(dir)
    } else {
        b.mode(Mode::FlightRecorder)
    };
    let s = b.create().unwrap_or_else(|e| usage(&e.to_string()));
    s.start();
    s
}

/// ns per event of `n` events of the session `which` (0 or 1).
fn chunk(which: usize, n: u64) -> f64 {
    let t = Instant::now();
    if which == 0 {
        for i in 0..n {
            event!(ilva, u64, v: u64 = std::hint::black_box(i));
        }
    } else {
        for i in 0..n {
            event!(ilvb, u64, v: u64 = std::hint::black_box(i));
        }
    }
    t.elapsed().as_nanos() as f64 / n.max(1) as f64
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, default: &str| args.get(i).cloned().unwrap_or(default.to_string());
    let kinds = [arg(0, "per-thread"), arg(1, "per-cpu-rseq")];
    let discard = match arg(2, "flight").as_str() {
        "discard" => true,
        "flight" => false,
        other => usage(&format!("mode: {other}")),
    };
    let n: u64 = arg(3, "100000")
        .parse()
        .unwrap_or_else(|e| usage(&format!("chunk: {e}")));
    let rounds: usize = arg(4, "200")
        .parse()
        .unwrap_or_else(|e| usage(&format!("rounds: {e}")));
    let sessions = [
        session("ilv-a", &kinds[0], "ilva:*", discard),
        session("ilv-b", &kinds[1], "ilvb:*", discard),
    ];
    // Warm both: the first lap of a buffer, the first event of a callsite.
    chunk(0, n);
    chunk(1, n);
    let mut ns = [Vec::new(), Vec::new()];
    let mut ratios = Vec::new();
    for r in 0..rounds {
        let order = if r % 2 == 0 { [0, 1] } else { [1, 0] };
        let mut t = [0.0; 2];
        for k in order {
            t[k] = chunk(k, n);
        }
        ns[0].push(t[0]);
        ns[1].push(t[1]);
        ratios.push(t[1] / t[0]);
    }
    let lost: Vec<u64> = sessions
        .iter()
        .map(|s| {
            s.stop().unwrap_or_else(|e| usage(&e.to_string()));
            s.stats().lost()
        })
        .collect();
    for k in 0..2 {
        println!(
            "{:<16} {:6.2} ns/event (median of {rounds} chunks of {n}), {} lost",
            kinds[k],
            median(&mut ns[k]),
            lost[k]
        );
    }
    println!(
        "ratio {}/{}: {:.3} (median of round-by-round ratios)",
        kinds[1],
        kinds[0],
        median(&mut ratios)
    );
}

fn usage(why: &str) -> ! {
    eprintln!("interleave: {why}\nusage: interleave [KIND_A] [KIND_B] [flight|discard] [CHUNK] [ROUNDS]\n  KIND: per-thread | per-cpu-rseq | per-cpu-atomics");
    std::process::exit(2)
}
