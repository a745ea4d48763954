//! ns per event through the whole tracer (dormant check, RCU read section,
//! probe list, session flag, reserve, serialize, commit) against the bare
//! ring-buffer record of the same size (same client, same channel
//! configuration, header + one u64), measured interleaved in the same run;
//! and the dormant event against an empty loop iteration.
//!
//! `cargo bench -p ringtrace --bench event`, then
//! `python3 bench/tracer_table.py` for the table of BENCHMARKS.md.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, Criterion};
use ringbuf::ChannelAttr;
use ringtrace::any_channel::AnyChannel;
use ringtrace::{event, ChannelConfig, Mode, Session};

const SUBBUF: usize = 1 << 20;
const NUM_SUBBUF: usize = 4;

fn session(per_thread: bool) -> Session {
    let mut ch = ChannelConfig::new("c").subbufs(SUBBUF, NUM_SUBBUF);
    if per_thread {
        ch = ch.per_thread();
    }
    // Flight recorder: nothing is dropped, nothing is written to disk; the
    // same work per event as a discard session that keeps up.
    let s = Session::builder(if per_thread {
        "bench-thread"
    } else {
        "bench-cpu"
    })
    .mode(Mode::FlightRecorder)
    .channel(ch)
    .enable(if per_thread {
        "bench_thread:*"
    } else {
        "bench_cpu:*"
    })
    .create()
    .unwrap();
    s.start();
    s
}

fn events(c: &mut Criterion) {
    let mut g = c.benchmark_group("event");
    g.warm_up_time(Duration::from_millis(300));
    g.measurement_time(Duration::from_millis(1500));
    g.sample_size(20);
    let attr = ChannelAttr {
        subbuf_size: SUBBUF,
        num_subbuf: NUM_SUBBUF,
        ..Default::default()
    };
    let (bare_cpu, _) = AnyChannel::standalone(true, false, &attr).unwrap();
    let (bare_thread, _) = AnyChannel::standalone(true, true, &attr).unwrap();
    let s_cpu = session(false);
    let s_thread = session(true);
    for round in 0..3 {
        g.bench_function(format!("percpu/bare/{round}"), |b| {
            let mut i = 0u64;
            b.iter(|| {
                let v = black_box(i);
                bare_cpu.record(1, 8, &|buf: &mut [u8]| {
                    buf[..8].copy_from_slice(&v.to_le_bytes())
                });
                i += 1;
            })
        });
        g.bench_function(format!("percpu/tracer/{round}"), |b| {
            let mut i = 0u64;
            b.iter(|| {
                event!(bench_cpu, value, v: u64 = black_box(i));
                i += 1;
            })
        });
        g.bench_function(format!("perthread/bare/{round}"), |b| {
            let mut i = 0u64;
            b.iter(|| {
                let v = black_box(i);
                bare_thread.record(1, 8, &|buf: &mut [u8]| {
                    buf[..8].copy_from_slice(&v.to_le_bytes())
                });
                i += 1;
            })
        });
        g.bench_function(format!("perthread/tracer/{round}"), |b| {
            let mut i = 0u64;
            b.iter(|| {
                event!(bench_thread, value, v: u64 = black_box(i));
                i += 1;
            })
        });
    }
    // Dormant: 100 call sites per iteration so the loop's own cost is
    // amortized; the reference is the same loop without the event.
    g.bench_function("dormant/x100", |b| {
        b.iter(|| {
            for i in 0..100u64 {
                event!(bench_dormant, value, v: u64 = black_box(i));
            }
        })
    });
    g.bench_function("empty/x100", |b| {
        b.iter(|| {
            for i in 0..100u64 {
                black_box(i);
            }
        })
    });
    g.finish();
    drop((s_cpu, s_thread));
}

/// 100 dormant call sites in a row, no loop: each its own descriptor.
macro_rules! dormant100 {
    ($i:expr) => {
        dormant100!(@10 $i); dormant100!(@10 $i); dormant100!(@10 $i); dormant100!(@10 $i);
        dormant100!(@10 $i); dormant100!(@10 $i); dormant100!(@10 $i); dormant100!(@10 $i);
        dormant100!(@10 $i); dormant100!(@10 $i);
    };
    (@10 $i:expr) => {
        event!(bench_dormant, d, v: u64 = $i); event!(bench_dormant, d, v: u64 = $i);
        event!(bench_dormant, d, v: u64 = $i); event!(bench_dormant, d, v: u64 = $i);
        event!(bench_dormant, d, v: u64 = $i); event!(bench_dormant, d, v: u64 = $i);
        event!(bench_dormant, d, v: u64 = $i); event!(bench_dormant, d, v: u64 = $i);
        event!(bench_dormant, d, v: u64 = $i); event!(bench_dormant, d, v: u64 = $i);
    };
}

fn dormant(c: &mut Criterion) {
    let mut g = c.benchmark_group("event");
    g.warm_up_time(Duration::from_millis(300));
    g.measurement_time(Duration::from_millis(1500));
    g.sample_size(20);
    g.bench_function("dormant/unrolled100", |b| {
        b.iter(|| {
            dormant100!(black_box(1u64));
        })
    });
    g.bench_function("nothing", |b| b.iter(|| ()));
    g.finish();
}

/// The ratio tracer/bare measured in alternating bursts of 20 000 events
/// (about a millisecond each), so that both see the same machine state; the
/// median over 300 pairs resists the noise of a shared VM far better than
/// two separate measurements.
fn paired(label: &str, mut bare: impl FnMut(u64), mut tracer: impl FnMut(u64)) {
    const BURST: u64 = 20_000;
    let (mut rb, mut rt, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    let run = |f: &mut dyn FnMut(u64)| {
        let t = std::time::Instant::now();
        for i in 0..BURST {
            f(i);
        }
        t.elapsed().as_nanos() as f64 / BURST as f64
    };
    for k in 0..300 {
        let (b, t) = if k % 2 == 0 {
            let b = run(&mut bare);
            (b, run(&mut tracer))
        } else {
            let t = run(&mut tracer);
            (run(&mut bare), t)
        };
        rb.push(b);
        rt.push(t);
        ratios.push(t / b);
    }
    let med = |v: &mut Vec<f64>| {
        v.sort_by(|a, b| a.total_cmp(b));
        v[v.len() / 2]
    };
    println!(
        "{label:<28} {:>10.1} {:>12.1} {:>9.2}x",
        med(&mut rb),
        med(&mut rt),
        med(&mut ratios)
    );
}

fn paired_all() {
    let attr = ChannelAttr {
        subbuf_size: SUBBUF,
        num_subbuf: NUM_SUBBUF,
        ..Default::default()
    };
    let (bare_cpu, _) = AnyChannel::standalone(true, false, &attr).unwrap();
    let (bare_thread, _) = AnyChannel::standalone(true, true, &attr).unwrap();
    let s_cpu = session(false);
    let s_thread = session(true);
    println!("\npaired bursts (median of 300 pairs)  bare ns/ev  tracer ns/ev  tracer/bare");
    paired(
        "per-CPU, SMP atomics",
        |i| {
            bare_cpu.record(1, 8, &|b: &mut [u8]| {
                b[..8].copy_from_slice(&black_box(i).to_le_bytes())
            });
        },
        |i| event!(bench_cpu, value, v: u64 = black_box(i)),
    );
    paired(
        "per-thread, non-locked",
        |i| {
            bare_thread.record(1, 8, &|b: &mut [u8]| {
                b[..8].copy_from_slice(&black_box(i).to_le_bytes())
            });
        },
        |i| event!(bench_thread, value, v: u64 = black_box(i)),
    );
    drop((s_cpu, s_thread));
}

criterion_group!(benches, events, dormant);

fn main() {
    benches();
    if std::env::args().any(|a| a == "--bench") && !std::env::args().any(|a| a == "--list") {
        paired_all();
    }
    Criterion::default().configure_from_args().final_summary();
}
