//! Which reader slot the calling thread owns, read at the start of every
//! event: its index in the process's slot array plus one (0 until the
//! thread's first read section), times the slot's size, in one initial-exec word
//! (`ringbuf::ie_words!`), so that `libringtrace.so` finds it with two
//! `%fs`-relative loads instead of a call to `__tls_get_addr` (C programs
//! linked with the shared library took 1.18-1.19x the Rust macro's time
//! per event with a `thread_local!` here, 1.02-1.12x since; BENCHMARKS.md,
//! "Front ends"). An index, not an address: the slot is found from the
//! array, whose provenance it keeps. No destructor: exited threads' slots
//! are found with `tgkill`.

ringbuf::ie_words! {
    /// The slot's index plus one.
    mod word = ("__ringtrace_rcu_my_slot", 1);
}

/// The word holds the index plus one times this (a slot's size): the
/// slot's byte offset in the process's RCU state (`global.rs`), so that
/// finding the slot is one add.
const UNIT: usize = 128;

/// The calling thread's slot index plus one (0: none yet).
#[inline(always)]
pub(crate) fn get() -> usize {
    let w = word::get_at::<0>() as usize;
    // SAFETY: `set` is the only writer, and stores multiples of `UNIT`
    // (the word starts at 0).
    unsafe { std::hint::assert_unchecked(w.is_multiple_of(UNIT)) };
    w / UNIT
}

/// Sets the calling thread's slot index plus one.
#[inline]
pub(crate) fn set(index_plus_one: usize) {
    word::set(0, (index_plus_one * UNIT) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_thread_has_its_own_slot_starting_with_none() {
        std::thread::spawn(|| {
            assert_eq!(get(), 0);
            set(1024);
            assert_eq!(get(), 1024);
            std::thread::spawn(|| assert_eq!(get(), 0)).join().unwrap();
            assert_eq!(get(), 1024);
        })
        .join()
        .unwrap();
        std::thread::spawn(|| assert_eq!(get(), 0)).join().unwrap();
    }
}
