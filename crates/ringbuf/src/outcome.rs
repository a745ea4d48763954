//! What a reservation answers when it gives no slot ([`Lost`],
//! [`Refused`]: every lost record is counted) and a buffer's counters
//! ([`BufferStats`]).

use crate::config::LostCounts;

/// A record that was not recorded, by cause. Every one is counted: in the
/// buffer's [`LostCounts`], or ([`Lost::NoBuffer`]) in the channel's;
/// nothing is lost silently.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Lost {
    /// Discard mode: the buffer is full.
    #[error("buffer full")]
    Full,
    /// The sub-buffer to enter is still not fully committed from its
    /// previous lap (a writer stalled between reserve and commit).
    #[error("next sub-buffer not fully committed")]
    Wrap,
    /// The record (with the header it needs) does not fit one sub-buffer.
    #[error("record larger than a sub-buffer")]
    TooBig,
    /// Per-thread channel: no buffer left in the pool for this thread.
    #[error("no per-thread buffer available")]
    NoBuffer,
}

/// Why a reservation gave no slot: a record lost (and counted), or one of
/// two outcomes that lose nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// The record is lost, and counted.
    #[error(transparent)]
    Lost(#[from] Lost),
    /// A zero-length record was asked for: nothing is reserved, and nothing
    /// is counted (no record was lost).
    #[error("zero-length record")]
    Empty,
    /// [`crate::Sync::Rseq`] buffers: the thread was not on the buffer's
    /// CPU, or the kernel aborted the reservation's critical section.
    /// Nothing is reserved and nothing lost: [`crate::Channel`] chooses the
    /// buffer again and retries, so only a caller of a buffer's own writer
    /// sees this.
    #[error("moved to another CPU during the reservation")]
    Migrated,
}

/// Counters of one buffer, read without stopping the writers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BufferStats {
    /// Bytes reserved since creation (records, headers and padding).
    pub bytes_written: u64,
    /// Records reserved and committed (when `Config::COUNT_RECORDS`).
    pub records: u64,
    /// Records lost, by cause.
    pub lost: LostCounts,
    /// Sub-buffers delivered to the reader.
    pub produced: u64,
    /// Sub-buffers the reader consumed (`put_subbuf`).
    pub consumed: u64,
    /// Sub-buffers overwritten before the reader got them (overwrite mode).
    pub overruns: u64,
    /// Clock readings that were earlier than the buffer's last timestamp
    /// and were raised to it, so that timestamps never go back within a
    /// buffer: a clock that stepped back, or (SMP buffers, whose clock is
    /// read unordered) a reading taken before another writer's reservation.
    pub clock_clamps: u64,
    /// [`crate::Sync::Rseq`] buffers: reservations whose restartable
    /// sequence the kernel aborted (the thread was preempted, migrated or
    /// signalled inside it) and that were tried again.
    pub rseq_aborts: u64,
    /// [`crate::Sync::Rseq`] buffers: reservations tried on this buffer from
    /// another CPU (the thread migrated after choosing it), tried again on
    /// the right one.
    pub rseq_moves: u64,
    /// [`crate::Sync::Rseq`] buffers: commits that could not add to the
    /// sub-buffer's local count on the buffer's CPU (the thread migrated
    /// between reserve and commit, or was aborted three times in a row) and
    /// took the lock-prefixed add instead.
    pub rseq_shared_commits: u64,
}
