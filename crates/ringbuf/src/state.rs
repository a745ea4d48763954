//! The writers' counters (the write count `W` first) and the counters of
//! each sub-buffer (commit count, commit seq, close record), in their own
//! module because two owners share them: the producer (`frontend.rs`,
//! `switch.rs`, `commit.rs`) updates them, and a buffer file (`file.rs`)
//! lays them out in its mapping so that they survive a crash.

use std::ptr::NonNull;

use std::sync::atomic::{compiler_fence, Ordering::SeqCst};

use crate::sync::Ordering::Relaxed;
use crate::sync::{AtomicPtr, AtomicU64, CacheAligned, Counter, Head};

/// The writers' hot counters, alone on their cache line.
#[derive(Debug)]
pub(crate) struct WriterSide {
    /// Write count `W` and the last reservation's timestamp: in a buffer
    /// file's header page for directory backing (`file.rs`, layout version
    /// 4), so that recovery knows where the last reservation of the
    /// sub-buffer being written ended.
    pub(crate) head: At<Head>,
    pub(crate) records: Counter,
    pub(crate) lost_full: Counter,
    pub(crate) lost_wrap: Counter,
    pub(crate) lost_big: Counter,
    /// Clock readings earlier than the buffer's last timestamp, raised to
    /// it (see `BufferStats::clock_clamps`).
    pub(crate) clamps: Counter,
    /// Rseq buffers: critical sections the kernel aborted, and tries made
    /// from another CPU (see `BufferStats::rseq_aborts`).
    pub(crate) rseq_aborts: Counter,
    pub(crate) rseq_moves: Counter,
    /// Rseq buffers: commits made from another CPU (see
    /// `BufferStats::rseq_shared_commits`).
    pub(crate) rseq_shared: Counter,
    /// Per-thread buffers: the sub-buffer being written (see [`Current`]).
    pub(crate) current: Current,
}

impl WriterSide {
    /// Counters of a new buffer whose `head` is already placed.
    pub(crate) fn new(head: At<Head>) -> WriterSide {
        WriterSide {
            head,
            records: Counter::new(0),
            lost_full: Counter::new(0),
            lost_wrap: Counter::new(0),
            lost_big: Counter::new(0),
            clamps: Counter::new(0),
            rseq_aborts: Counter::new(0),
            rseq_moves: Counter::new(0),
            rseq_shared: Counter::new(0),
            current: Current::new(),
        }
    }
}

/// A per-thread buffer's current sub-buffer, as the reservation's slow
/// path last held it: the ring position of its first byte, the address of
/// its first byte in the store, and its counters. The fast path (a record
/// that is not its sub-buffer's first, `Buffer::try_reserve_fast_unchecked`)
/// takes its record's address and commit count from here when its
/// reservation lies in that sub-buffer, instead of finding the physical
/// sub-buffer in the table and computing both from the ring index.
///
/// Only the buffer's writer reads and writes it: its thread and that
/// thread's signal handlers (a buffer handed to another thread is handed
/// with a synchronization), so plain loads and stores in program order
/// suffice, and a handler can run between any two of them. The rules that
/// make a hit right whatever a handler did in between:
///
/// * [`Current::set`] stores `NONE` (no multiple of `S`: matches no
///   sub-buffer) first and the new start last, so a handler that runs in
///   the middle sees a miss.
/// * [`Current::get`] loads the address and the counters before the
///   start, and answers only if the start is the caller's. A handler that
///   moved the buffer on between those loads changed the start.
/// * A handler that runs in the middle of a `set` and moves the buffer to
///   a later sub-buffer leaves, once the `set` resumes, the earlier start
///   beside the later sub-buffer's address. No record can ask for that
///   start again: the write count only grows (it comes back to a
///   position after 2^64 bytes), and it is past that sub-buffer already.
///
/// While `W` is inside the sub-buffer, the sub-buffer is held (overwrite
/// mode: the reader cannot swap it) and not delivered (its padding is
/// committed when `W` leaves it), so the address stays its own.
#[derive(Debug)]
pub(crate) struct Current {
    start: AtomicU64,
    data: AtomicPtr<u8>,
    state: AtomicPtr<SubbufState>,
}

impl Current {
    /// No sub-buffer starts here (sub-buffer starts are multiples of `S`,
    /// a power of two above 1).
    const NONE: u64 = u64::MAX;

    fn new() -> Current {
        Current {
            start: AtomicU64::new(Self::NONE),
            data: AtomicPtr::new(std::ptr::null_mut()),
            state: AtomicPtr::new(std::ptr::null_mut()),
        }
    }

    /// The writer holds the sub-buffer starting at ring position `start`,
    /// whose first byte is `data` and whose counters are `state`.
    #[inline(always)]
    pub(crate) fn set(&self, start: u64, data: *mut u8, state: &SubbufState) {
        self.start.store(Self::NONE, Relaxed);
        // Signal fences: the order above is the one a handler sees.
        compiler_fence(SeqCst);
        self.data.store(data, Relaxed);
        self.state
            .store(std::ptr::from_ref(state).cast_mut(), Relaxed);
        compiler_fence(SeqCst);
        self.start.store(start, Relaxed);
    }

    /// The address and counters of the sub-buffer starting at `start`, if
    /// it is the one last set.
    #[inline(always)]
    pub(crate) fn get(&self, start: u64) -> Option<(*mut u8, *const SubbufState)> {
        let data = self.data.load(Relaxed);
        let state = self.state.load(Relaxed);
        compiler_fence(SeqCst);
        (self.start.load(Relaxed) == start).then_some((data, state.cast_const()))
    }
}

/// A value alone on its cache line, in a heap allocation of its own or in
/// a buffer file's mapping: a pointer either way, so that reaching it is
/// one load and no branch.
pub(crate) struct At<T> {
    ptr: NonNull<CacheAligned<T>>,
    /// `ptr` came from `Box::into_raw` and is freed on drop.
    owned: bool,
}

impl<T> At<T> {
    /// `v` in a heap allocation of its own.
    pub(crate) fn heap(v: T) -> At<T> {
        let ptr = Box::into_raw(Box::new(CacheAligned(v)));
        At {
            // SAFETY: `Box::into_raw` never returns null.
            ptr: unsafe { NonNull::new_unchecked(ptr) },
            owned: true,
        }
    }

    /// `v` written at `at`, in a buffer file's mapping.
    ///
    /// # Safety
    /// `at` is aligned for and valid for reads and writes of a
    /// `CacheAligned<T>`, used by nothing else, and stays mapped for as
    /// long as the returned value lives.
    #[cfg_attr(any(loom, miri), allow(dead_code))]
    pub(crate) unsafe fn mapped(at: NonNull<CacheAligned<T>>, v: T) -> At<T> {
        // SAFETY: the caller's contract: aligned, writable, unshared.
        unsafe { at.as_ptr().write(CacheAligned(v)) };
        At {
            ptr: at,
            owned: false,
        }
    }
}

impl<T> std::ops::Deref for At<T> {
    type Target = T;
    #[inline(always)]
    fn deref(&self) -> &T {
        // SAFETY: `ptr` holds an initialized value (written by `heap` or
        // `mapped`) that lives as long as `self`, reached only through
        // shared references.
        unsafe { &self.ptr.as_ref().0 }
    }
}

impl<T> Drop for At<T> {
    fn drop(&mut self) {
        if self.owned {
            // SAFETY: `ptr` came from `Box::into_raw` in `heap`, and this
            // is its only owner; no reference to it outlives `self`.
            drop(unsafe { Box::from_raw(self.ptr.as_ptr()) });
        }
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for At<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

// SAFETY: `At<T>` owns or borrows its `T` as a `Box<T>` or a `&T` would;
// the values placed in it (counters of atomics) are shared between
// threads exactly as they would be inline.
unsafe impl<T: Send + std::marker::Sync> Send for At<T> {}
// SAFETY: as above.
unsafe impl<T: Send + std::marker::Sync> std::marker::Sync for At<T> {}

/// Written by the reservation that closes a sub-buffer, read by the
/// committer that delivers it. The delivering commit is ordered after the
/// closing reservation's padding (or record) commit by the commit count's
/// AcqRel add, so Relaxed fields suffice.
#[derive(Debug, Default)]
#[repr(C)]
pub(crate) struct CloseRecord {
    pub(crate) end_ts: AtomicU64,
    pub(crate) data_size: AtomicU64,
    pub(crate) lost_full: AtomicU64,
    pub(crate) lost_wrap: AtomicU64,
    pub(crate) lost_big: AtomicU64,
}

/// The commit count `CC[i]` of one sub-buffer, in two words whose sum it
/// is, and the records committed through the second. `shared` takes
/// lock-prefixed adds (SMP buffers; per-thread buffers' own adds); `local`
/// is written only by the restartable sequence of an rseq buffer's CPU
/// (`rseq::add_local`: a record committed by the thread that reserved it,
/// still on that CPU), so the common commit of an rseq buffer has no lock
/// prefix. That sequence adds to `local` and `local_records` with one
/// 16-byte store, its commit instruction: a record is counted exactly
/// when its bytes are (an abort before the store did neither), with no
/// count of its own on the write path. `local` and `local_records` stay 0
/// for other buffers.
///
/// `repr(C)`, the pair first and 16-byte aligned (the store's operand):
/// a buffer file holds this at the start of each state (`file.rs`,
/// layout version 3).
#[derive(Debug)]
#[repr(C, align(16))]
pub(crate) struct CommitCount {
    pub(crate) local: AtomicU64,
    pub(crate) local_records: AtomicU64,
    pub(crate) shared: Counter,
}

impl CommitCount {
    pub(crate) fn new(c0: u64) -> CommitCount {
        CommitCount {
            local: AtomicU64::new(0),
            local_records: AtomicU64::new(0),
            shared: Counter::new(c0),
        }
    }

    /// The (`local`, `local_records`) pair, for the restartable sequence
    /// that adds to both.
    #[cfg(not(loom))]
    pub(crate) fn local_ptr(&self) -> *mut u64 {
        self.local.as_ptr()
    }

    /// Loom has no rseq (`rseq::area` is `None`): never used.
    #[cfg(loom)]
    pub(crate) fn local_ptr(&self) -> *mut u64 {
        std::ptr::null_mut()
    }
}

/// Counters of one sub-buffer. The commit count, written on every commit,
/// has a cache line of its own: the reader polls the commit seq, and must not
/// pull the writers' line away on each poll.
///
/// `repr(C)` with the commit count first: recovery reads `CC[i]` at the
/// start of each state in a buffer file (`file.rs`).
#[derive(Debug)]
#[repr(C)]
pub(crate) struct SubbufState {
    /// Commit count `CC[i]`.
    pub(crate) cc: CacheAligned<CommitCount>,
    /// Commit seq `CS[i]`.
    pub(crate) cs: AtomicU64,
    pub(crate) close: CloseRecord,
}

/// The `N` sub-buffer states: on the heap, or inside the mapping of a
/// buffer file so that the commit counts survive a crash (`file.rs`).
#[derive(Debug)]
pub(crate) enum States {
    Heap(Box<[CacheAligned<SubbufState>]>),
    /// `n` states at `ptr`, in the buffer's own mapping (which the buffer
    /// keeps alive in its `store`, dropped after this field).
    #[cfg_attr(any(loom, miri), allow(dead_code))]
    Mapped {
        ptr: *const CacheAligned<SubbufState>,
        n: usize,
    },
}

// SAFETY: the mapped states are atomics shared exactly like the heap ones.
unsafe impl Send for States {}
// SAFETY: as above.
unsafe impl std::marker::Sync for States {}

impl std::ops::Deref for States {
    type Target = [CacheAligned<SubbufState>];
    #[inline(always)]
    fn deref(&self) -> &Self::Target {
        match self {
            States::Heap(b) => b,
            // SAFETY: `ptr` points to `n` initialized states inside the
            // buffer's mapping (written in `Buffer::with_id` before any
            // use), which outlives this value.
            States::Mapped { ptr, n } => unsafe { std::slice::from_raw_parts(*ptr, *n) },
        }
    }
}
