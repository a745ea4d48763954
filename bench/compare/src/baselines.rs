//! Naive baselines carrying the same records (a timestamp and the payload):
//! a mutex-protected ring that overwrites, and a bounded crossbeam channel
//! drained by a consumer thread, dropping (and counting) when full.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

use traceclock::TraceClock;

use crate::cell::{Payload, Run};
use crate::ours::run_threads;

const S16: &[u8; 16] = b"0123456789abcde\0";
/// Same memory as 4 × 1 MiB of 16- or 24-byte records.
const RECORDS: usize = (4 << 20) / 24;

/// A record: a timestamp and the payload (read only through black_box).
#[derive(Clone, Copy)]
#[allow(dead_code)]
enum Rec {
    U64(u64, u64),
    Str(u64, [u8; 16]),
}

fn record(payload: Payload, clock: &TraceClock, i: u64) -> Rec {
    match payload {
        Payload::U64 => Rec::U64(clock.now(), i),
        Payload::Str16 => Rec::Str(clock.now(), *std::hint::black_box(S16)),
    }
}

/// Mutex-protected ring, overwriting the oldest record.
pub fn mutex_ring(payload: Payload, threads: usize, events: u64) -> Run {
    let clock = ringtrace::clock();
    let ring = Mutex::new(VecDeque::with_capacity(RECORDS));
    let per_thread = events / threads as u64;
    let elapsed = run_threads(threads, per_thread, |n| {
        for i in 0..n {
            let r = record(payload, &clock, i);
            let mut g = ring.lock().unwrap();
            if g.len() == RECORDS {
                g.pop_front();
            }
            g.push_back(r);
        }
    });
    std::hint::black_box(ring.lock().unwrap().len());
    Run {
        elapsed_ns: elapsed,
        per_thread,
        lost: 0,
        bytes: None,
        drained_ns: 0,
        consumer_ns: 0,
        slowest_write_ns: 0,
        standby_passes: 0,
    }
}

/// Bounded crossbeam channel with a consumer thread; full means dropped.
pub fn crossbeam(payload: Payload, threads: usize, events: u64) -> Run {
    let clock = ringtrace::clock();
    let (tx, rx) = crossbeam_channel::bounded::<Rec>(RECORDS);
    let lost = AtomicU64::new(0);
    let per_thread = events / threads as u64;
    let consumer = std::thread::spawn(move || {
        let mut n = 0u64;
        for r in rx {
            std::hint::black_box(&r);
            n += 1;
        }
        n
    });
    let elapsed = run_threads(threads, per_thread, |n| {
        let tx = tx.clone();
        for i in 0..n {
            if tx.try_send(record(payload, &clock, i)).is_err() {
                lost.fetch_add(1, Relaxed);
            }
        }
    });
    drop(tx);
    let received = consumer.join().unwrap();
    debug_assert_eq!(received + lost.load(Relaxed), per_thread * threads as u64);
    Run {
        elapsed_ns: elapsed,
        per_thread,
        lost: lost.load(Relaxed),
        bytes: None,
        drained_ns: 0,
        consumer_ns: 0,
        slowest_write_ns: 0,
        standby_passes: 0,
    }
}
