//! The order in which a record's bytes are stored, so that a record whose
//! writer died (or stalls) before its commit can be told from a finished
//! one by reading the buffer alone.
//!
//! A buffer file (`ringbuf::file`) keeps, per sub-buffer, how many bytes
//! were committed, not which records: when a writer is killed between its
//! reservation and its commit while another thread of the same per-CPU
//! buffer commits records after it, recovery must find the unfinished
//! record among finished ones. Written header first, such a record had a
//! real header and a payload of whatever the sub-buffer held (zeros in a
//! new file): it decoded as an event that was never recorded. So a record
//! is stored in three steps:
//!
//! 1. **the mark**: right after the reservation, one 4-byte store at the
//!    header's place of `len << 5` (the record's length, id bits zero);
//! 2. the payload (contexts and fields);
//! 3. **the header's first word, last**: the rest of an extended header,
//!    then one 4-byte store of the first word (the id bits, never zero:
//!    the collector numbers event classes from 1, and 31 marks the
//!    extended header).
//!
//! Each marked step is one store instruction that the compiler keeps in
//! program order (inline assembly on x86-64, volatile stores between
//! compiler fences elsewhere); a process is killed between instructions,
//! and every store it executed reaches the (shared, file-backed) page. So
//! a record whose first word has zero id bits is unfinished, and its mark
//! says how long it is: recovery steps over it and keeps the records
//! committed after it (`ringtrace::recover`). A first word of zeros is a
//! reservation killed before its mark (a sub-buffer's first lap): recovery
//! takes the one length that leaves it all zeros and fits the records
//! after it to the commit count, if exactly one does. After a lap, that
//! same window leaves the previous lap's bytes, which nothing can tell
//! from a record; it is a few instructions long. A record killed after its
//! header and before its commit is whole: only the commit count misses it.
//!
//! The cost: the mark's store, and its length's shift where the length is
//! not a constant of the call site; 2 instructions for a u64 event, whose
//! fast path writes one header form chosen before the reservation
//! (BENCHMARKS.md, "Instructions per event").

#[cfg(not(all(target_arch = "x86_64", not(miri))))]
use std::sync::atomic::{compiler_fence, Ordering::SeqCst};

/// The name under which the collector declares event class 0 of each
/// stream class: never recorded (id bits of zero are this mark), declared
/// only so that class ids run 0..N without a hole, as babeltrace2's
/// debug-info filter (2.0) requires. Recovery still trusts the marks of a
/// stream whose class 0 is this one.
pub const CLASS_NAME: &str = "ringtrace:unfinished_record";

/// Sub-buffers up to this size hold only records whose length fits the
/// mark's 27 bits.
pub const MAX_MARKED: usize = 1 << 27;

/// The id bits of a compact event header's first word.
const ID_BITS: u32 = 31;

/// Step 1: marks the record `b` (header and payload, just reserved) as
/// unfinished, with its length.
#[inline(always)]
pub fn mark(b: &mut [u8]) {
    // 27 bits: a record of 128 MiB or more (sub-buffers go to 1 GiB) has
    // its length modulo 128 MiB here; recovery trusts marks only in
    // sub-buffers of at most `MAX_MARKED` bytes.
    store_first_word(b, (b.len() as u32) << 5);
}

/// Step 3: writes event header `h` bytes long (`ctf::layout::event_header_len`)
/// over the mark, its first word last. Call after the payload is written.
#[inline(always)]
pub fn finish(b: &mut [u8], h: usize, id: u32, ts: u64) {
    debug_assert!(id != 0, "event id 0 would read as an unfinished record");
    // The compact header of `ctf::layout`: one word of 5-bit id and 27-bit
    // timestamp, or 31, the 32-bit id and the 64-bit timestamp (13 bytes).
    let word = if h == 4 {
        id | ((ts as u32) << 5)
    } else {
        b[4] = (id >> 24) as u8;
        b[5..13].copy_from_slice(&ts.to_le_bytes());
        ID_BITS | (id << 8)
    };
    store_first_word(b, word);
}

/// One 4-byte store at `b[0..4]`, which the compiler neither drops,
/// splits nor moves past the stores around it.
#[inline(always)]
fn store_first_word(b: &mut [u8], word: u32) {
    debug_assert!(b.len() >= 4, "a record is at least its 4-byte header");
    let p = b.as_mut_ptr();
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    // SAFETY: `b` holds a record, at least its 4-byte header, so `p` is
    // valid for a 4-byte write (x86 stores need no alignment). Without
    // `nomem`, the compiler takes the asm for a read and write of any
    // memory: every store before it is emitted before it, every store
    // after it after, and none is dropped as overwritten.
    unsafe {
        std::arch::asm!("mov dword ptr [{p}], {w:e}", p = in(reg) p, w = in(reg) word,
            options(nostack, preserves_flags));
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    {
        compiler_fence(SeqCst);
        // SAFETY: as above, `p` is valid for 4 bytes; `[u8; 4]` has
        // alignment 1. Volatile: not dropped, split or merged.
        unsafe { std::ptr::write_volatile(p.cast::<[u8; 4]>(), word.to_le_bytes()) };
        compiler_fence(SeqCst);
    }
}

/// What the first word of a record says, read back by recovery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FirstWord {
    /// A finished record's header (or bytes that are not this scheme's).
    Header,
    /// An unfinished record of this many bytes.
    Unfinished(usize),
    /// A reservation killed before its mark: zeros, length unknown.
    Unmarked,
}

/// Reads the first word of the record at `b` (compact headers).
pub fn first_word(b: &[u8]) -> Option<FirstWord> {
    let w = u32::from_le_bytes(b.get(..4)?.try_into().ok()?);
    Some(match (w & ID_BITS, w >> 5) {
        (0, 0) => FirstWord::Unmarked,
        (0, len) => FirstWord::Unfinished(len as usize),
        _ => FirstWord::Header,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_marked_record_reads_as_unfinished_until_finished() {
        for (h, id, ts) in [
            (4, 1, 0),
            (4, 30, (1 << 27) - 1),
            (13, 31, 7),
            (13, 1, 1 << 40),
        ] {
            let mut b = [0u8; 29];
            assert_eq!(first_word(&b), Some(FirstWord::Unmarked));
            mark(&mut b);
            assert_eq!(first_word(&b), Some(FirstWord::Unfinished(29)));
            b[h..].fill(0xab);
            assert_eq!(first_word(&b), Some(FirstWord::Unfinished(29)));
            finish(&mut b, h, id, ts);
            assert_eq!(first_word(&b), Some(FirstWord::Header));
            let e = ctf::layout::read_event_header(&b, ctf::types::HeaderKind::Compact).unwrap();
            assert_eq!((e.id, e.len), (id, h));
            assert_eq!(e.ts, if h == 4 { ts & ((1 << 27) - 1) } else { ts });
            assert!(b[h..].iter().all(|&x| x == 0xab), "payload untouched");
        }
    }
}
