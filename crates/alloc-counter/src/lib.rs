//! A global allocator that forwards to the system allocator and counts the
//! allocations (and reallocations) the calling thread makes while counting
//! is on: the tests that prove a write path never allocates install it in
//! their test binary and run the path inside [`counted`].
//!
//! ```ignore
//! #[global_allocator]
//! static A: alloc_counter::Counting = alloc_counter::Counting;
//! let (_, n) = alloc_counter::counted(|| write_many());
//! assert_eq!(n, 0);
//! ```

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// The counting allocator (install with `#[global_allocator]`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    /// This thread's allocations while counting: per thread, so that tests
    /// counting on several threads at once do not see each other's.
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

fn count() {
    if COUNTING.with(|c| c.get()) {
        ALLOCS.with(|a| a.set(a.get() + 1));
    }
}

// SAFETY: forwards every call to the system allocator, only counting.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        count();
        // SAFETY: same contract as ours.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        count();
        // SAFETY: same contract as ours.
        unsafe { System.realloc(p, l, n) }
    }
}

/// Runs `f` with counting on for the calling thread; returns its result
/// and how many allocations it made (on this thread).
pub fn counted<R>(f: impl FnOnce() -> R) -> (R, u64) {
    let before = ALLOCS.with(Cell::get);
    COUNTING.with(|c| c.set(true));
    let r = f();
    COUNTING.with(|c| c.set(false));
    (r, ALLOCS.with(Cell::get) - before)
}
