//! The write path never allocates: a counting global allocator sees zero
//! allocations over many reserve/commit calls, sub-buffer switches, drops
//! and flushes, after the first record of the thread.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use common::*;
use ringbuf::{Channel, ChannelAttr, Config};

struct Counting;
static ALLOCS: AtomicU64 = AtomicU64::new(0);
thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}

// SAFETY: forwards to the system allocator, only counting.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if COUNTING.with(|c| c.get()) {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same contract as ours.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        if COUNTING.with(|c| c.get()) {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same contract as ours.
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static A: Counting = Counting;

fn no_alloc<C: Config + Default>() {
    let attr = ChannelAttr {
        subbuf_size: 4096,
        num_subbuf: 4,
        thread_pool: 2,
        ..Default::default()
    };
    let ch = Channel::new(C::default(), &attr, "na").unwrap();
    // The first record of a thread may allocate (per-thread registration).
    drop(ch.reserve(64));
    COUNTING.with(|c| c.set(true));
    let before = ALLOCS.load(Ordering::Relaxed);
    let mut ok = 0;
    for seq in 0..100_000u64 {
        if let Ok(mut s) = ch.reserve(32 + (seq % 64) as usize) {
            let ts = s.ts();
            fill_record(s.bytes(), 1, seq, ts);
            s.commit();
            ok += 1;
        }
        if seq % 1000 == 0 {
            ch.flush();
        }
    }
    let after = ALLOCS.load(Ordering::Relaxed);
    COUNTING.with(|c| c.set(false));
    assert!(ok > 0);
    assert_eq!(after - before, 0, "allocations on the write path");
}

#[test]
fn write_path_never_allocates() {
    no_alloc::<Client<false, A_CPU>>();
    no_alloc::<Client<true, A_CPU>>();
    no_alloc::<Client<true, A_GLOBAL>>();
    no_alloc::<Client<false, A_THREAD, true>>();
    no_alloc::<Client<true, A_THREAD, true>>();
}
