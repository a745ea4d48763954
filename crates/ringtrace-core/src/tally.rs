//! Records committed into per-CPU channels with atomics, counted by the
//! writing threads.
//!
//! A per-CPU buffer is shared by every thread that runs on its CPU, so a
//! record count kept in the buffer needs a lock-prefixed add on every record
//! (`ringbuf`'s `COUNT_RECORDS`), a third full barrier per record on x86
//! after the reserve CAS and the commit add.
//! Instead each thread counts in its own row — one word per channel, indexed
//! by the thread's RCU reader slot, which it owns while it lives — with one
//! non-locked `inc`. A channel's count is the sum of its column over every
//! row ever used, minus what the column held when the channel claimed it.
//!
//! # Invariant kept here
//!
//! Only the thread owning RCU slot `i` (and its signal handlers) writes row
//! `i`; a column belongs to one live channel, and is claimed again only once
//! every probe that counted into it is gone (the [`Tally`] is dropped with
//! the last `Arc`, which probes hold until a grace period after they were
//! unpublished). Counts are then exact once the writers are quiescent, and
//! never decrease.
//!
//! Per-thread channels keep their count in the buffer (`ringbuf`), whose
//! non-locked add already costs no more than this one, and so do rseq
//! channels, whose commit adds the record to its count in the same 16-byte
//! store as its bytes (counting here cost them 7 % of an event: the probe's
//! loads of the column and the row, and the increment).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};

use crate::rcu;

/// Channels counted per thread at once; a channel created while all are
/// taken counts in one shared atomic instead (correct, slower).
pub const COLUMNS: usize = 64;

/// One thread's counters, on cache lines of their own.
#[repr(align(128))]
struct Row([AtomicU64; COLUMNS]);

/// One row per RCU slot (512 KiB of zero pages; only rows of threads that
/// recorded are ever touched).
static ROWS: [Row; rcu::SLOTS] =
    [const { Row([const { AtomicU64::new(0) }; COLUMNS]) }; rcu::SLOTS];
static CLAIMED: [AtomicBool; COLUMNS] = [const { AtomicBool::new(false) }; COLUMNS];

/// The record count of one channel.
#[derive(Debug)]
pub struct Tally {
    column: Option<usize>,
    /// The column's sum when it was claimed.
    base: u64,
    /// Used when no column was free.
    shared: AtomicU64,
}

impl Tally {
    /// Claims a free column (or none: see [`COLUMNS`]).
    pub fn claim() -> Tally {
        let column = CLAIMED
            .iter()
            .position(|c| c.compare_exchange(false, true, AcqRel, Relaxed).is_ok());
        Tally {
            column,
            base: column.map_or(0, column_sum),
            shared: AtomicU64::new(0),
        }
    }

    /// Counts one record of the calling thread, inside its read section `g`.
    #[inline(always)]
    pub fn add(&self, g: &rcu::Guard) {
        self.add_at(g.index())
    }

    /// [`Tally::add`] for the thread whose read-section slot is number
    /// `row` (`rcu::Guard::index`), in a section the caller holds.
    #[inline(always)]
    pub(crate) fn add_at(&self, row: usize) {
        match self.column {
            Some(k) => {
                // SAFETY: `column` is set once, by `claim`, to a position
                // in `CLAIMED`, of `COLUMNS` entries: said so that the
                // write path has no bounds check (a panic's call, and the
                // unwinding that commits the reserved record, on it).
                unsafe { std::hint::assert_unchecked(k < COLUMNS) };
                increment(&ROWS[row].0[k])
            }
            None => {
                self.shared.fetch_add(1, Relaxed);
            }
        }
    }

    /// Records counted so far.
    pub fn total(&self) -> u64 {
        let own = self
            .column
            .map_or(0, |k| column_sum(k).wrapping_sub(self.base));
        own.wrapping_add(self.shared.load(Relaxed))
    }
}

impl Drop for Tally {
    fn drop(&mut self) {
        if let Some(k) = self.column {
            CLAIMED[k].store(false, Release);
        }
    }
}

fn column_sum(k: usize) -> u64 {
    ROWS[..rcu::slots_used()]
        .iter()
        .fold(0u64, |s, r| s.wrapping_add(r.0[k].load(Acquire)))
}

/// Adds one to a counter of the calling thread's row.
#[inline(always)]
fn increment(c: &AtomicU64) {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        // SAFETY: the pointer comes from a live, aligned `AtomicU64`. Only
        // this thread writes its row (module invariant); a signal handler of
        // this thread runs before or after the one instruction, never inside
        // it, so no increment is lost without the lock prefix. Other threads
        // only load the word; x86 makes an aligned 8-byte store visible whole.
        unsafe {
            core::arch::asm!("inc qword ptr [{p}]", p = in(reg) c.as_ptr(), options(nostack));
        }
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    c.fetch_add(1, Relaxed);
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn counts_per_thread_and_starts_at_zero() {
        let a = Tally::claim();
        let n = if cfg!(miri) { 20 } else { 1000 };
        std::thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| {
                    for _ in 0..n {
                        let g = rcu::read_lock().unwrap();
                        a.add(&g);
                    }
                });
            }
        });
        assert_eq!(a.total(), 3 * n);
        // A column used before starts from zero for its next channel.
        let k = a.column;
        drop(a);
        let b = Tally::claim();
        if b.column == k {
            assert_eq!(b.total(), 0);
        }
        let g = rcu::read_lock().unwrap();
        b.add(&g);
        drop(g);
        assert_eq!(b.total(), 1);
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "66 claims and 66 totals each sum a column over the RCU slots used: 106 s \
                  under Miri for logic without unsafe code (counting itself runs under Miri \
                  in counts_per_thread_and_starts_at_zero)"
    )]
    fn the_shared_count_takes_over_when_columns_run_out() {
        let all: Vec<Tally> = (0..COLUMNS + 2).map(|_| Tally::claim()).collect();
        let last = all.last().unwrap();
        assert_eq!(last.column, None);
        let g = rcu::read_lock().unwrap();
        for t in &all {
            t.add(&g);
            t.add(&g);
        }
        drop(g);
        assert!(all.iter().all(|t| t.total() == 2));
    }
}
