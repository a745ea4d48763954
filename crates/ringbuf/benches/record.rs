//! ns per record, reproducing the per-event cost table of the LTTng-UST ring
//! buffer's publications (a record of the paper's size) on this machine, with the
//! hardware floors measured in the same run:
//!
//! * `floor/rdtsc`, `floor/lock_cmpxchg`, `floor/cmpxchg_nolock`;
//! * `floor/bare_event_locked`: `lfence;rdtsc` + `lock cmpxchg` on a write
//!   count + a 16-byte store + `lock xadd` on a commit count — the least any
//!   SMP-safe timestamped event can cost;
//! * `floor/bare_event_local`: the same with plain `rdtsc` and non-locked
//!   `cmpxchg`/`xadd` — the least a signal-safe per-thread event can cost;
//! * `floor/bare_event_cas16`: the same without an ordered clock read:
//!   plain `rdtsc`, clamped to the last timestamp, reserved with one
//!   `lock cmpxchg16b` on (write count, last timestamp), so timestamps stay
//!   ordered per buffer — how SMP buffers reserve (on the
//!   AMD EPYC machine it costs 10 ns against 25 ns for `bare_event_locked`);
//! * `floor/bare_event_local_two_cas`: how per-thread buffers
//!   reserve: non-locked `cmpxchg` on the last timestamp, then on the
//!   write count (ordered timestamps whatever the clock, against the
//!   thread's signal handlers); `floor/bare_event_local_cas16`: the
//!   alternative, one non-locked `cmpxchg16b` on the pair (slower here);
//! * `record/{percpu|perthread}/{discard|overwrite}/{8,16,64}B/{4K,128K,512K}/{reader|noreader}/{1,2}w`.
//!
//! `cargo bench -p ringbuf --bench record` (add a filter to run a subset);
//! `python3 bench/ringbuf_table.py` turns the results into BENCHMARKS.md's table.

#[path = "support.rs"]
mod support;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};
use ringbuf::{Channel, ChannelAttr, Config};
use support::*;

fn floors(c: &mut Criterion) {
    let mut g = c.benchmark_group("floor");
    g.bench_function("rdtsc", |b| b.iter(|| black_box(rdtsc())));
    let a = AtomicU64::new(0);
    g.bench_function("lock_cmpxchg", |b| {
        b.iter(|| {
            let v = a.load(Ordering::Relaxed);
            black_box(a.compare_exchange(v, v + 1, Ordering::AcqRel, Ordering::Relaxed))
        })
    });
    g.bench_function("cmpxchg_nolock", |b| {
        b.iter(|| {
            let v = a.load(Ordering::Relaxed);
            black_box(cas_nolock(&a, v, v + 1))
        })
    });
    let mut floor = Floor::new();
    g.bench_function("bare_event_locked", |b| b.iter(|| floor.locked()));
    g.bench_function("bare_event_local", |b| b.iter(|| floor.local()));
    g.bench_function("bare_event_local_two_cas", |b| {
        b.iter(|| floor.local_two_cas())
    });
    if std::arch::is_x86_feature_detected!("cmpxchg16b") {
        g.bench_function("bare_event_cas16", |b| b.iter(|| floor.cas16()));
        g.bench_function("bare_event_local_cas16", |b| b.iter(|| floor.local_cas16()));
    }
    g.finish();
}

/// The bare events: a write count, a commit count and 64 KiB of records,
/// written the way the ring buffer's fast path does, with nothing else.
struct Floor {
    mem: Vec<u8>,
    w: AtomicU64,
    cc: AtomicU64,
    /// A second commit count, for the variants that use `cc` as the last
    /// timestamp.
    w2: AtomicU64,
    /// (write count, last timestamp) for `cas16`, as one 16-byte word.
    pair: Box<Pair>,
}

#[repr(C, align(16))]
struct Pair(u128);

impl Floor {
    fn new() -> Self {
        Floor {
            mem: vec![0u8; 1 << 16],
            w: AtomicU64::new(0),
            cc: AtomicU64::new(0),
            w2: AtomicU64::new(0),
            pair: Box::new(Pair(0)),
        }
    }

    /// Plain `rdtsc` clamped to the last timestamp + `lock cmpxchg16b` on
    /// (W, last) + 16-byte store + `lock xadd`.
    #[inline(always)]
    fn cas16(&mut self) {
        // SAFETY: the CPU has cmpxchg16b (checked before this bench runs).
        self.pair_event(
            |p, old, new| unsafe { cas128(p, old, new) },
            |c| {
                c.fetch_add(16, Ordering::AcqRel);
            },
        );
    }

    /// The same with one non-locked `cmpxchg16b` on (W, last timestamp)
    /// and a non-locked `xadd`.
    #[inline(always)]
    fn local_cas16(&mut self) {
        // SAFETY: as in `cas16`.
        self.pair_event(
            |p, old, new| unsafe { cas128_nolock(p, old, new) },
            |c| {
                xadd_nolock(c, 16);
            },
        );
    }

    /// An event reserved with a 16-byte compare-and-swap `cas` on
    /// (W, last timestamp), committed with `commit`.
    #[inline(always)]
    fn pair_event(
        &mut self,
        cas: impl Fn(*mut u128, u128, u128) -> u128,
        commit: impl Fn(&AtomicU64),
    ) {
        let p = &mut self.pair.0 as *mut u128;
        // SAFETY: `p` is a live, 16-byte aligned u128 only this thread
        // uses; a torn read is harmless (the CAS then fails).
        let old = unsafe { std::ptr::read_volatile(p) };
        let (cur, last) = (old as u64, (old >> 64) as u64);
        let ts = rdtsc().max(last);
        let new = (cur + 16) as u128 | ((ts as u128) << 64);
        if cas(p, old, new) == old {
            self.store(cur, ts);
            commit(&self.cc);
        }
    }

    #[inline(always)]
    fn store(&mut self, cur: u64, ts: u64) {
        let off = (cur as usize) & ((1 << 16) - 16);
        self.mem[off..off + 8].copy_from_slice(&ts.to_le_bytes());
        self.mem[off + 8..off + 16].copy_from_slice(&cur.to_le_bytes());
    }

    /// `lfence; rdtsc` + `lock cmpxchg` + 16-byte store + `lock xadd`.
    #[inline(always)]
    fn locked(&mut self) {
        let cur = self.w.load(Ordering::Acquire);
        let ts = rdtsc_ordered();
        if self
            .w
            .compare_exchange(cur, cur + 16, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            self.store(cur, ts);
            self.cc.fetch_add(16, Ordering::AcqRel);
        }
    }

    /// Per-thread buffers as they reserve now (`sync::Head`, `Sync::Local`):
    /// `rdtsc` clamped to the last timestamp, `cmpxchg` on the timestamp,
    /// then on W, 16-byte store, `xadd`, without lock prefixes.
    #[inline(always)]
    fn local_two_cas(&mut self) {
        let cur = self.w.load(Ordering::Acquire);
        let last = self.cc.load(Ordering::Relaxed);
        let ts = rdtsc().max(last);
        if cas_nolock(&self.cc, last, ts) == last && cas_nolock(&self.w, cur, cur + 16) == cur {
            self.store(cur, ts);
            xadd_nolock(&self.w2, 16);
        }
    }

    /// `rdtsc` + `cmpxchg` + 16-byte store + `xadd`, without lock prefixes.
    #[inline(always)]
    fn local(&mut self) {
        let cur = self.w.load(Ordering::Acquire);
        let ts = rdtsc();
        if cas_nolock(&self.w, cur, cur + 16) == cur {
            self.store(cur, ts);
            xadd_nolock(&self.cc, 16);
        }
    }
}

/// A 16-byte compare-and-swap function named `$name`, the instruction
/// `$insn`.
macro_rules! cas128_fn {
    ($(#[$doc:meta])* $name:ident, $insn:literal) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// The CPU supports cmpxchg16b; `p` is valid and 16-byte aligned.
        #[target_feature(enable = "cmpxchg16b")]
        unsafe fn $name(p: *mut u128, old: u128, new: u128) -> u128 {
            let (mut lo, mut hi) = (old as u64, (old >> 64) as u64);
            // SAFETY: the caller's contract. Inline asm rather than the
            // intrinsic, which without the target feature compiled in calls
            // libatomic in debug builds. `rbx` is reserved by LLVM: swapped
            // in and out around the CAS.
            unsafe {
                core::arch::asm!(
                    "xchg {nlo}, rbx",
                    $insn,
                    "mov rbx, {nlo}",
                    // Named: a `reg` operand may be given `rbx` itself.
                    in("rsi") p,
                    nlo = inout(reg) new as u64 => _,
                    in("rcx") (new >> 64) as u64,
                    inout("rax") lo,
                    inout("rdx") hi,
                    options(nostack),
                );
            }
            lo as u128 | (hi as u128) << 64
        }
    };
}

cas128_fn!(
    /// `lock cmpxchg16b`.
    cas128,
    "lock cmpxchg16b xmmword ptr [rsi]"
);
cas128_fn!(
    /// `cmpxchg16b` without the lock prefix (atomic against the thread's
    /// own signal handlers only).
    cas128_nolock,
    "cmpxchg16b xmmword ptr [rsi]"
);

#[inline(always)]
fn cas_nolock(a: &AtomicU64, cur: u64, new: u64) -> u64 {
    let prev: u64;
    // SAFETY: a valid, aligned AtomicU64; only this thread touches it.
    unsafe {
        core::arch::asm!("cmpxchg qword ptr [{p}], {n}", p = in(reg) a.as_ptr(), n = in(reg) new,
            inout("rax") cur => prev, options(nostack));
    }
    prev
}

#[inline(always)]
fn xadd_nolock(a: &AtomicU64, v: u64) -> u64 {
    let mut prev = v;
    // SAFETY: a valid, aligned AtomicU64; only this thread touches it.
    unsafe {
        core::arch::asm!("xadd qword ptr [{p}], {v}", p = in(reg) a.as_ptr(), v = inout(reg) prev,
            options(nostack));
    }
    prev
}

/// Runs `iters` records on each of `writers` threads (optionally with a
/// reader thread draining), returning the mean time per record per writer.
fn run<C: Config + Default>(
    subbuf: usize,
    payload: usize,
    writers: usize,
    reader: bool,
    iters: u64,
) -> Duration {
    match payload {
        8 => run_n::<C, 8>(subbuf, writers, reader, iters),
        16 => run_n::<C, 16>(subbuf, writers, reader, iters),
        64 => run_n::<C, 64>(subbuf, writers, reader, iters),
        _ => unreachable!("payload sizes of the table"),
    }
}

fn run_n<C: Config + Default, const P: usize>(
    subbuf: usize,
    writers: usize,
    reader: bool,
    iters: u64,
) -> Duration {
    let attr = ChannelAttr {
        subbuf_size: subbuf,
        num_subbuf: 4,
        thread_pool: writers,
        ..Default::default()
    };
    let (ch, mut read) = Channel::new(C::default(), &attr, "bench").unwrap();
    let ch = Arc::new(ch);
    let stop = Arc::new(AtomicBool::new(false));
    let rd = reader.then(|| {
        let (ch, stop) = (ch.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut readers: Vec<_> = read
                .iter_mut()
                .zip(ch.buffers())
                .map(|(r, b)| r.reader(b))
                .collect();
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                n += drain(&mut readers, 8 + P);
                std::hint::spin_loop();
            }
            n
        })
    });
    let barrier = Arc::new(Barrier::new(writers));
    let hs: Vec<_> = (0..writers)
        .map(|_| {
            let (ch, barrier) = (ch.clone(), barrier.clone());
            std::thread::spawn(move || {
                let data = [0x5au8; P];
                record(&ch, &data); // first record of the thread (per-thread buffer lookup)
                barrier.wait();
                let t = Instant::now();
                for _ in 0..iters {
                    record(&ch, black_box(&data));
                }
                t.elapsed()
            })
        })
        .collect();
    let total: Duration = hs.into_iter().map(|h| h.join().unwrap()).sum();
    stop.store(true, Ordering::Relaxed);
    if let Some(r) = rd {
        r.join().unwrap();
    }
    total / writers as u32
}

fn records(c: &mut Criterion) {
    let mut g = c.benchmark_group("record");
    g.warm_up_time(Duration::from_millis(300));
    g.measurement_time(Duration::from_millis(1200));
    g.sample_size(15);
    macro_rules! case {
        ($cfg:ty, $name:expr) => {
            for payload in [8usize, 16, 64] {
                for (subbuf, sname) in [(4096, "4K"), (128 << 10, "128K"), (512 << 10, "512K")] {
                    for reader in [false, true] {
                        for writers in [1usize, 2] {
                            let id = format!(
                                "{}/{}B/{}/{}/{}w",
                                $name,
                                payload,
                                sname,
                                if reader { "reader" } else { "noreader" },
                                writers
                            );
                            g.bench_function(BenchmarkId::from_parameter(id), |b| {
                                b.iter_custom(|iters| {
                                    run::<$cfg>(subbuf, payload, writers, reader, iters)
                                })
                            });
                        }
                    }
                }
            }
        };
    }
    case!(Bench<false, CPU>, "percpu/discard");
    case!(Bench<true, CPU>, "percpu/overwrite");
    case!(Bench<false, THREAD>, "perthread/discard");
    case!(Bench<true, THREAD>, "perthread/overwrite");
    g.finish();
}

/// The speed targets, each configuration measured right after its floor and
/// the pair repeated, so that drift of this (virtual) machine's speed during
/// the run does not bias the ratio.
fn targets(c: &mut Criterion) {
    let mut g = c.benchmark_group("target");
    g.warm_up_time(Duration::from_millis(300));
    g.measurement_time(Duration::from_millis(1500));
    g.sample_size(20);
    let mut floor = Floor::new();
    for round in 0..3 {
        g.bench_function(format!("bare_event_locked/{round}"), |b| {
            b.iter(|| floor.locked())
        });
        g.bench_function(format!("percpu/{round}"), |b| {
            b.iter_custom(|iters| run::<Bench<true, CPU>>(4096, 8, 1, false, iters))
        });
        g.bench_function(format!("bare_event_local/{round}"), |b| {
            b.iter(|| floor.local())
        });
        g.bench_function(format!("perthread/{round}"), |b| {
            b.iter_custom(|iters| run::<Bench<true, THREAD>>(4096, 8, 1, false, iters))
        });
    }
    g.finish();
}

criterion_group!(benches, floors, targets, records);
criterion_main!(benches);
