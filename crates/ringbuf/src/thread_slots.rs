//! The calling thread's per-thread buffers: (channel id, pool index) for
//! each per-thread channel it records into, up to [`SLOTS`]; id 0 marks a
//! free slot (channel ids start at 1).
//!
//! The first [`INLINE`] slots are initial-exec thread-locals (`tls.rs`),
//! checked inline on every event: a thread writing one or two per-thread
//! channels finds its buffer with two `%fs`-relative loads per slot, in an
//! executable as in `libringtrace.so`. Those slots hold the buffer's
//! address beside its index, so that the event reaches the buffer without
//! the channel's array (a load, a shift and a spill fewer). The others are
//! a `thread_local!` array, found out of line. Plain loads and stores of
//! the thread's own memory: a signal handler may look its buffer up while
//! the thread is in the middle of a record.

use std::cell::Cell;

/// Channels a thread can hold per-thread buffers in at once.
pub(crate) const SLOTS: usize = 16;

/// Slots checked inline (their words are initial-exec).
const INLINE: usize = 2;

crate::ie_words! {
    /// Slots 0 and 1: (id, index, address) as words 3k, 3k + 1, 3k + 2.
    mod first = ("__ringbuf_thread_slots", 6);
}

thread_local! {
    /// Slots `INLINE..SLOTS`. Const-initialized and without a destructor,
    /// so the first access of a thread registers nothing and allocates
    /// nothing.
    static MORE: [Cell<(u64, usize)>; SLOTS - INLINE] =
        const { [const { Cell::new((0, 0)) }; SLOTS - INLINE] };
}

/// Slot `k` of the calling thread.
#[inline]
pub(crate) fn get(k: usize) -> (u64, usize) {
    if k < INLINE {
        (first::get(3 * k), first::get(3 * k + 1) as usize)
    } else {
        MORE.try_with(|m| m[k - INLINE].get()).unwrap_or((0, 0))
    }
}

/// Sets slot `k` of the calling thread to channel `v.0`'s buffer `v.1`,
/// whose address is `addr` (exposed: the channel makes it a pointer
/// again). An inline slot's words are stored so that a signal handler
/// running between the stores never pairs an id with another buffer: the
/// index and address before a new id, the id (0, free) before the others
/// when the slot is emptied.
pub(crate) fn set(k: usize, v: (u64, usize), addr: usize) {
    if k < INLINE {
        if v.0 == 0 {
            first::set(3 * k, 0);
            first::set(3 * k + 1, v.1 as u64);
            first::set(3 * k + 2, addr as u64);
        } else {
            first::set(3 * k + 1, v.1 as u64);
            first::set(3 * k + 2, addr as u64);
            first::set(3 * k, v.0);
        }
    } else {
        let _ = MORE.try_with(|m| m[k - INLINE].set(v));
    }
}

/// The address of channel `id`'s buffer, if the calling thread holds one
/// in the inline slots.
#[inline(always)]
pub(crate) fn find_inline(id: u64) -> Option<usize> {
    // Unrolled with constant word offsets (`get_at`): one load per word.
    const { assert!(INLINE == 2) };
    if first::get_at::<0>() == id {
        Some(first::get_at::<2>() as usize)
    } else {
        // The second slot's channel out of the first's way: its path falls
        // through to the reservation without a jump.
        std::hint::cold_path();
        if first::get_at::<3>() == id {
            Some(first::get_at::<5>() as usize)
        } else {
            None
        }
    }
}

/// The pool index of channel `id`'s buffer, if the calling thread holds
/// one in any slot.
pub(crate) fn find(id: u64) -> Option<usize> {
    (0..SLOTS)
        .map(get)
        .find(|&(i, _)| i == id)
        .map(|(_, index)| index)
}

/// The calling thread's first free slot.
pub(crate) fn free() -> Option<usize> {
    (0..SLOTS).find(|&k| get(k).0 == 0)
}

/// A free slot for a new buffer: an inline one if there is one, after
/// giving back the slots of channels that are gone (`live.rs`) when there
/// is not.
pub(crate) fn free_after_pruning(gone: impl Fn(u64) -> bool) -> Option<usize> {
    match free() {
        Some(k) if k < INLINE => Some(k),
        _ => {
            for k in 0..SLOTS {
                let (id, _) = get(k);
                if id != 0 && gone(id) {
                    set(k, (0, 0), 0);
                }
            }
            free()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_inline_and_out_of_line_are_the_threads_own() {
        std::thread::spawn(|| {
            assert_eq!(free(), Some(0));
            for k in 0..SLOTS {
                set(k, (100 + k as u64, k * 3), 1000 + k);
            }
            assert_eq!(free(), None);
            assert_eq!(find_inline(100), Some(1000));
            assert_eq!(find_inline(101), Some(1001));
            assert_eq!(find_inline(102), None, "slot 2 is out of line");
            assert_eq!(find(102), Some(6));
            assert_eq!(find(115), Some(45));
            assert_eq!(find(116), None);
            std::thread::spawn(|| assert_eq!((free(), find(100)), (Some(0), None)))
                .join()
                .unwrap();
            set(1, (0, 0), 0);
            assert_eq!(free(), Some(1));
        })
        .join()
        .unwrap();
    }
}
