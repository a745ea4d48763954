//! Whether the event's time moves with the machine: rounds of 20,000
//! `event!`s (per-thread flight recorder, u64), 20,000 iterations of a
//! throughput-bound loop of sixteen adds, and 20,000 `rdtsc`s, one after
//! the other in one process; prints the medians of each block of rounds
//! and the correlation of the event's and the add loop's block medians.
//!
//! ```sh
//! cargo build --release -p ringtrace --example drift
//! target/release/examples/drift 6000 250    # rounds, rounds per block
//! ```

use ringtrace::{event, ChannelConfig, Mode, Session};
use std::time::Instant;

/// `n` iterations of sixteen independent adds kept in memory.
fn adds(n: u64) -> u64 {
    let mut a = [1u64; 16];
    for i in 0..n {
        for (k, x) in a.iter_mut().enumerate() {
            *x = x.wrapping_add(i ^ k as u64);
        }
        std::hint::black_box(&mut a);
    }
    a.iter().sum()
}

/// `n` reads of clock `c` (the TSC where it is one).
fn clock_reads(c: traceclock::TraceClock, n: u64) -> u64 {
    (0..n).fold(0u64, |s, _| s.wrapping_add(c.now_unordered()))
}

/// Nanoseconds per iteration of `f(n)`.
fn per(n: u64, f: impl FnOnce(u64) -> u64) -> f64 {
    let t = Instant::now();
    std::hint::black_box(f(n));
    t.elapsed().as_nanos() as f64 / n as f64
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn correlation(x: &[f64], y: &[f64]) -> f64 {
    let n = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let cov: f64 = x.iter().zip(y).map(|(a, b)| (a - mx) * (b - my)).sum();
    let sx = x.iter().map(|a| (a - mx).powi(2)).sum::<f64>().sqrt();
    let sy = y.iter().map(|b| (b - my).powi(2)).sum::<f64>().sqrt();
    cov / (sx * sy)
}

fn main() {
    let arg = |i: usize, d: usize| {
        std::env::args()
            .nth(i)
            .map_or(d, |a| a.parse().expect("a number"))
    };
    let (rounds, block) = (arg(1, 6000), arg(2, 250).max(1));
    let ch = ChannelConfig::new("drift").subbufs(1 << 20, 4).per_thread();
    let s = Session::builder("drift")
        .channel(ch)
        .enable("drift:*")
        .mode(Mode::FlightRecorder)
        .create()
        .expect("a session");
    s.start();
    let clock = traceclock::TraceClock::detect();
    const N: u64 = 20_000;
    let rows: Vec<[f64; 3]> = (0..rounds)
        .map(|_| {
            let e = per(N, |n| {
                for i in 0..n {
                    event!(drift, u64, v: u64 = std::hint::black_box(i));
                }
                n
            });
            [e, per(N, adds), per(N, |n| clock_reads(clock, n))]
        })
        .collect();
    println!(
        "{:>8} {:>12} {:>12} {:>12}",
        "rounds", "event! ns", "adds ns", "clock ns"
    );
    let mut blocks = Vec::new();
    for (k, b) in rows.chunks(block).enumerate() {
        let m: Vec<f64> = (0..3)
            .map(|c| median(b.iter().map(|r| r[c]).collect()))
            .collect();
        println!(
            "{:>8} {:>12.1} {:>12.2} {:>12.2}",
            k * block,
            m[0],
            m[1],
            m[2]
        );
        blocks.push(m);
    }
    if blocks.len() > 2 {
        let e: Vec<f64> = blocks.iter().map(|m| m[0]).collect();
        let a: Vec<f64> = blocks.iter().map(|m| m[1]).collect();
        println!(
            "correlation of the block medians, event!/adds: {:.2}",
            correlation(&e, &a)
        );
    }
}
