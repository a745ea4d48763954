//! The counters of each sub-buffer (commit count, commit seq, close
//! record), in their own module because two owners share them: the
//! producer (`frontend.rs`, `switch.rs`) updates them, and a buffer file
//! (`file.rs`) lays them out in its mapping so that they survive a crash.

use crate::sync::{AtomicU64, CacheAligned, Counter};

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
