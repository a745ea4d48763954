//! Read-side cost of the RCU candidates for the probes' control data: one
//! read section that loads the published pointer and reads a word through
//! it. Candidates: ours (`ringtrace-core`'s `rcu/`: membarrier-paired, a
//! load and a store on the thread's slot), arc-swap (`load`), crossbeam-epoch (`pin` + load),
//! Debian's liburcu "memb" flavour through FFI (`urcu_memb_read_lock`),
//! plus references: a bare Acquire load (no protection at all) and a
//! reader that pays a SeqCst fence (what membarrier saves).
//!
//! `cargo bench -p ringtrace --bench rcu` (needs `liburcu-dev`).

use std::hint::black_box;
use std::sync::atomic::{fence, AtomicPtr, AtomicU64, Ordering::*};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};

#[link(name = "urcu-memb")]
extern "C" {
    fn urcu_memb_register_thread();
    fn urcu_memb_unregister_thread();
    fn urcu_memb_read_lock();
    fn urcu_memb_read_unlock();
    static urcu_memb_has_sys_membarrier: std::ffi::c_int;
}

struct Data {
    word: u64,
}

fn candidates(c: &mut Criterion) {
    let mut g = c.benchmark_group("rcu_read");
    g.warm_up_time(Duration::from_millis(300));
    g.measurement_time(Duration::from_millis(1500));
    g.sample_size(20);

    let raw = AtomicPtr::new(Box::into_raw(Box::new(Data { word: 1 })));
    g.bench_function("bare_acquire_load", |b| {
        b.iter(|| {
            // SAFETY: never freed during the benchmark (no protection: the
            // floor every scheme is compared with).
            black_box(unsafe { (*raw.load(Acquire)).word })
        })
    });

    let slot = AtomicU64::new(0);
    g.bench_function("seqcst_fence_reader", |b| {
        b.iter(|| {
            slot.store(1, Relaxed);
            fence(SeqCst);
            // SAFETY: as above.
            let w = unsafe { (*raw.load(Acquire)).word };
            slot.store(0, Release);
            black_box(w)
        })
    });

    ringtrace::rcu::init();
    assert!(
        ringtrace::rcu::uses_membarrier(),
        "membarrier unavailable: ours would fence"
    );
    g.bench_function("ringtrace_membarrier", |b| {
        b.iter(|| {
            let guard = ringtrace::rcu::read_lock().unwrap();
            // SAFETY: as above; the guard is what a reclaimer waits for.
            let w = unsafe { (*raw.load(Acquire)).word };
            drop(guard);
            black_box(w)
        })
    });

    let swap = arc_swap::ArcSwap::from_pointee(Data { word: 1 });
    g.bench_function("arc_swap_load", |b| b.iter(|| black_box(swap.load().word)));

    let epoch_ptr = crossbeam_epoch::Atomic::new(Data { word: 1 });
    g.bench_function("crossbeam_epoch_pin", |b| {
        b.iter(|| {
            let guard = crossbeam_epoch::pin();
            let p = epoch_ptr.load(Acquire, &guard);
            // SAFETY: never retired during the benchmark.
            black_box(unsafe { p.deref() }.word)
        })
    });

    // SAFETY: registers this thread with liburcu before its read sections.
    unsafe { urcu_memb_register_thread() };
    // SAFETY: an int the library sets once at initialization.
    let has = unsafe { urcu_memb_has_sys_membarrier };
    eprintln!("liburcu memb: has_sys_membarrier = {has} (0: its readers execute mfence)");
    g.bench_function("liburcu_memb_ffi", |b| {
        b.iter(|| {
            // SAFETY: the thread is registered; lock/unlock are paired.
            unsafe { urcu_memb_read_lock() };
            // SAFETY: as above.
            let w = unsafe { (*raw.load(Acquire)).word };
            // SAFETY: paired with the lock above.
            unsafe { urcu_memb_read_unlock() };
            black_box(w)
        })
    });
    // SAFETY: registered above.
    unsafe { urcu_memb_unregister_thread() };
    g.finish();

    // SAFETY: the benchmarks are over; the pointer came from Box::into_raw.
    drop(unsafe { Box::from_raw(raw.load(Acquire)) });
}

criterion_group!(benches, candidates);
criterion_main!(benches);
