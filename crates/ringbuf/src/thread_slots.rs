//! The calling thread's per-thread buffers: (channel id, pool index) for
//! each per-thread channel it records into, up to [`SLOTS`]; id 0 marks a
//! free slot (channel ids start at 1).
//!
//! The first [`INLINE`] slots are initial-exec thread-locals (`tls.rs`),
//! checked inline on every event: a thread writing one or two per-thread
//! channels finds its buffer with two `%fs`-relative loads per slot, in an
//! executable as in `libringtrace.so`. The others are a `thread_local!`
//! array, found out of line. Plain loads and stores of the thread's own
//! memory: a signal handler may look its buffer up while the thread is in
//! the middle of a record.

use std::cell::Cell;

/// Channels a thread can hold per-thread buffers in at once.
pub(crate) const SLOTS: usize = 16;

/// Slots checked inline (their words are initial-exec).
const INLINE: usize = 2;

crate::ie_words! {
    /// Slots 0 and 1: (id, index) as words 2k and 2k + 1.
    mod first = ("__ringbuf_thread_slots", 4);
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
        (first::get(2 * k), first::get(2 * k + 1) as usize)
    } else {
        MORE.try_with(|m| m[k - INLINE].get()).unwrap_or((0, 0))
    }
}

/// Sets slot `k` of the calling thread. An inline slot's two words are
/// stored so that a signal handler running between the two stores never
/// pairs an id with another buffer's index: the index before a new id, the
/// id (0, free) before the index when the slot is emptied.
pub(crate) fn set(k: usize, v: (u64, usize)) {
    if k < INLINE {
        if v.0 == 0 {
            first::set(2 * k, 0);
            first::set(2 * k + 1, v.1 as u64);
        } else {
            first::set(2 * k + 1, v.1 as u64);
            first::set(2 * k, v.0);
        }
    } else {
        let _ = MORE.try_with(|m| m[k - INLINE].set(v));
    }
}

/// The pool index of channel `id`'s buffer, if the calling thread holds
/// one in the inline slots.
#[inline(always)]
pub(crate) fn find_inline(id: u64) -> Option<usize> {
    // Unrolled with constant word offsets (`get_at`): one load per word.
    const { assert!(INLINE == 2) };
    if first::get_at::<0>() == id {
        Some(first::get_at::<1>() as usize)
    } else if first::get_at::<2>() == id {
        Some(first::get_at::<3>() as usize)
    } else {
        None
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
                    set(k, (0, 0));
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
                set(k, (100 + k as u64, k * 3));
            }
            assert_eq!(free(), None);
            assert_eq!(find_inline(100), Some(0));
            assert_eq!(find_inline(101), Some(3));
            assert_eq!(find_inline(102), None, "slot 2 is out of line");
            assert_eq!(find(102), Some(6));
            assert_eq!(find(115), Some(45));
            assert_eq!(find(116), None);
            std::thread::spawn(|| assert_eq!((free(), find(100)), (Some(0), None)))
                .join()
                .unwrap();
            set(1, (0, 0));
            assert_eq!(free(), Some(1));
        })
        .join()
        .unwrap();
    }
}
