//! An enabled event never allocates: a counting global allocator sees zero
//! allocations over many events through the whole tracer (dormant check,
//! RCU read section, probe list, reserve, serialize, commit), including the
//! first event of a fresh thread in a per-CPU channel, sub-buffer switches
//! and drops.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use common::*;
use ringtrace::{event, ChannelConfig, Session};

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

fn counted<R>(f: impl FnOnce() -> R) -> (R, u64) {
    let before = ALLOCS.load(Ordering::Relaxed);
    COUNTING.with(|c| c.set(true));
    let r = f();
    COUNTING.with(|c| c.set(false));
    (r, ALLOCS.load(Ordering::Relaxed) - before)
}

fn emit_many(n: u64) {
    let name = "a string field of some length";
    for i in 0..n {
        event!(noalloc, ev, seq: u64 = i, name: &str = name, flag: bool = true);
        event!(noalloc, other, x: f64 = i as f64);
        event!(noalloc_dormant, never, x: u64 = i);
    }
}

#[test]
fn enabled_events_never_allocate() {
    let dir = tmpdir("noalloc");
    let s = Session::builder("noalloc")
        .output(&dir)
        // Small sub-buffers, rarely read: many switches and many drops.
        .channel(
            ChannelConfig::new("cpu")
                .subbufs(4096, 2)
                .read_timer(Duration::from_millis(1)),
        )
        .channel(ChannelConfig::new("thread").subbufs(4096, 4).per_thread())
        .enable("noalloc:*")
        .create()
        .unwrap();
    s.start();
    // Per-thread buffers allocate once per thread to register their hand-back
    // at thread exit: warm that up, then count.
    emit_many(1);
    let ((), n) = counted(|| emit_many(100_000));
    assert_eq!(n, 0, "allocations on the write path");
    // A fresh thread's first events in a per-CPU channel: no allocation
    // either (its RCU reader slot comes from a static array).
    s.disable(Some("thread"), "*").unwrap();
    let n = std::thread::spawn(|| counted(|| emit_many(10_000)).1)
        .join()
        .unwrap();
    assert_eq!(n, 0, "allocations on a new thread's first events");
    s.stop().unwrap();
    let st = s.stats();
    assert!(st.records() > 0);
    assert!(
        st.lost() > 0,
        "the test must have exercised drops:\n{}",
        st.table()
    );
}
