//! Which per-thread channels exist, so that a thread can give back the
//! slots (`thread_slots.rs`) it holds for channels that are gone.
//!
//! A thread keeps a (channel id, buffer) slot for each per-thread channel
//! it recorded into until it exits. In a long-lived thread that records
//! into the channels of one session after another, the slots of dropped
//! channels filled the two inline ones first (every later channel's
//! buffer was looked up out of line: 36 ns per event became 48-60 ns, one
//! thread, `event_loop` with successive sessions) and then all
//! [`SLOTS`](crate::thread_slots) of them (every record of a new channel
//! was lost). A thread taking its first buffer in a channel now first
//! frees the slots of channels this table does not hold.
//!
//! The table is a fixed array of ids, entered when a per-thread channel is
//! created and cleared when it is dropped: plain atomic loads to read, no
//! lock, no allocation, so the lookup stays safe in a signal handler. A
//! channel's entry does not move while the channel lives, so a scan that
//! misses an id proves it gone. More live channels than the table holds
//! turn pruning off for the rest of the process (an id missing from the
//! table then proves nothing).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};

/// Per-thread channels tracked at once.
const TABLE: usize = 256;

static LIVE: [AtomicU64; TABLE] = [const { AtomicU64::new(0) }; TABLE];

/// Set for good when a channel found the table full.
static UNTRACKED: AtomicBool = AtomicBool::new(false);

/// Notes that channel `id` (never 0) exists, before any thread can
/// record into it.
pub(crate) fn enter(id: u64) {
    for e in &LIVE {
        if e.compare_exchange(0, id, Release, Relaxed).is_ok() {
            return;
        }
    }
    UNTRACKED.store(true, Release);
}

/// Notes that channel `id` is gone (no thread records into it any more).
pub(crate) fn leave(id: u64) {
    if let Some(e) = LIVE.iter().find(|e| e.load(Relaxed) == id) {
        e.store(0, Release);
    }
}

/// Whether channel `id` is known to be gone; `false` when unsure.
pub(crate) fn is_gone(id: u64) -> bool {
    !UNTRACKED.load(Acquire) && LIVE.iter().all(|e| e.load(Acquire) != id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_gone_only_after_it_left() {
        // Ids far above the channels' (which count from 1 in this process).
        let (a, b) = (u64::MAX - 1, u64::MAX - 2);
        enter(a);
        enter(b);
        assert!(!is_gone(a) && !is_gone(b));
        leave(a);
        assert!(is_gone(a));
        assert!(!is_gone(b));
        leave(b);
        assert!(is_gone(b));
    }
}
