//! The ring buffer's record alone, per-thread against per-CPU with
//! restartable sequences: the tracer's 12-byte u64 event (a 4-byte header
//! and the value) through `Channel::try_reserve_fast` (the TSC read once
//! the buffer is found) into a flight-recorder channel of each kind
//! (4 × 1 MiB, no reader), one thread, chunks of 20,000 records of each
//! kind in alternating order; prints the median ns per record of each and
//! their ratio. What the per-CPU record costs beyond the per-thread one is
//! the buffer kind's own (`BENCHMARKS.md`, "The rseq buffer's lookup").
//!
//! `cargo run --release -p ringbuf --example bare_record [-- ROUNDS]`

#[path = "../benches/support.rs"]
mod support;

use std::time::Instant;

use ringbuf::{Channel, ChannelAttr, Config};
use support::{rdtsc, Bench, CPU_RSEQ, THREAD};

/// Writes the header (id 1 and the timestamp's low bits) and `v`.
#[inline(always)]
fn fill(b: &mut [u8], ts: u64, v: u64) {
    b[..4].copy_from_slice(&(1 | (ts as u32) << 5).to_le_bytes());
    b[4..12].copy_from_slice(&v.to_le_bytes());
}

/// One record: the fast path inline, the whole reservation out of line.
#[inline(never)]
fn record<C: Config>(ch: &Channel<C>, v: u64) {
    if let Some(mut s) = ch.try_reserve_fast(rdtsc, |_| 12) {
        let ts = s.ts();
        fill(s.bytes(), ts, v);
        s.commit();
        return;
    }
    slow(ch, rdtsc(), v);
}

#[cold]
#[inline(never)]
fn slow<C: Config>(ch: &Channel<C>, now: u64, v: u64) {
    if let Ok(mut s) = ch.reserve_at(now, |_| 12) {
        fill(s.bytes(), now, v);
        s.commit();
    }
}

/// Records per chunk.
const CHUNK: u64 = 20_000;

/// Records the channel's buffers committed.
fn records<C: Config>(ch: &Channel<C>) -> u64 {
    ch.buffers().iter().map(|b| b.stats().records).sum()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    if !ringbuf::rseq::available() {
        eprintln!(
            "bare_record: restartable sequences are not registered here (glibc 2.35+, Linux 4.18+)"
        );
        std::process::exit(1);
    }
    let rounds: usize = match std::env::args().nth(1).map(|a| a.parse()) {
        None => 300,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            eprintln!("usage: bare_record [ROUNDS]");
            std::process::exit(2);
        }
    };
    let attr = ChannelAttr {
        subbuf_size: 1 << 20,
        num_subbuf: 4,
        ..Default::default()
    };
    let (pt, _pt_read) = Channel::new(Bench::<true, THREAD, true>, &attr, "per-thread").unwrap();
    let (rs, _rs_read) =
        Channel::new(Bench::<true, CPU_RSEQ, true>, &attr, "per-cpu-rseq").unwrap();
    let mut ns = [Vec::new(), Vec::new()];
    for r in 0..rounds {
        for j in 0..2 {
            let k = (j + r) % 2;
            let t = Instant::now();
            for i in 0..CHUNK {
                match k {
                    0 => record(&pt, std::hint::black_box(i)),
                    _ => record(&rs, std::hint::black_box(i)),
                }
            }
            ns[k].push(t.elapsed().as_nanos() as f64 / CHUNK as f64);
        }
    }
    let expected = rounds as u64 * CHUNK;
    assert_eq!(records(&pt), expected, "per-thread records");
    assert_eq!(records(&rs), expected, "per-CPU records");
    let [a, b] = ns.map(median);
    println!("{rounds} rounds of {CHUNK} records of each, median ns per record");
    println!("  {:<22} {a:>6.2}", "per-thread");
    println!("  {:<22} {b:>6.2}", "per-cpu-rseq");
    println!(
        "ratio per-cpu-rseq/per-thread (bare record, flight recorder): {:.3}",
        b / a
    );
}
