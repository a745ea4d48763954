//! The screen: an event's filter, when it is one comparison of a payload
//! field with an integer (masked or not, but not divided: `% 3` is left
//! to the probe), copied into the event's descriptor so that
//! `event!` tests it at the call site, before the read section, the
//! probe list and the call into the record path. A record the filter
//! rejects then costs the dormant check and a dozen loads and compares,
//! where the record path would first enter its read section and save
//! the registers its function uses (about 45 instructions before any
//! filter is looked at).
//!
//! The screen's words are read without a read section, so they cannot be
//! freed or replaced as a probe list is; they are written in place, under
//! a sequence number (a sequence lock whose reader never retries: a
//! torn read only sends the record to the probe, which tests the
//! filter itself):
//!
//! - the writer (the collector, under its control lock) makes the
//!   number even ([`Screen::begin`]), publishes the event's new probe
//!   list, writes the words and makes the number odd with the value the
//!   new list carries ([`Screen::finish`]; an event whose list has no
//!   such filter keeps an even number: no screen);
//! - the reader ([`Screen::check`]) loads the number; if it is odd, the
//!   words and the field's value; then the number again. If both loads
//!   saw the same odd number, the words are the whole screen of that
//!   number (the standard sequence-lock argument: Acquire on the first
//!   load, an Acquire fence before the second), and the answer holds:
//!   rejected, or accepted *by the screen of number s*. The probe, which
//!   loads the list in its read section afterwards, skips the filter if
//!   the list is the one published with `s` (the number was made odd
//!   after that list was published, so the list loaded after it is that
//!   one or a later one, which carries another number).
//!
//! No read-modify-write, no fence instruction on x86 (Acquire loads are
//! plain loads there), no loop: safe in a signal handler, and a handler
//! that interrupts the writer in the same thread sees an even or changed
//! number and takes the probe's path. Model-checked with loom
//! (`ringtrace`'s `tests/loom.rs`: a reader never acts on a torn screen).

use std::sync::atomic::Ordering::{self, *};

use crate::filter::{Quick, Word};

/// What a record that passed the screen tells the probe when the screen
/// did not test it (no screen, a field value outside `0..2^64`, or a
/// screen being written): the probe tests the filter itself. Never a
/// screen's number (those are odd and far below it).
pub const UNSCREENED: u64 = u64::MAX;

/// The atomics a screen is made of: `std`'s in a descriptor, loom's in
/// the model.
pub trait Atom {
    /// The word's value.
    fn get(&self, o: Ordering) -> u64;
    /// Sets the word.
    fn set(&self, v: u64, o: Ordering);
    /// A fence of the same memory model.
    fn fence(o: Ordering);
}

impl Atom for std::sync::atomic::AtomicU64 {
    #[inline(always)]
    fn get(&self, o: Ordering) -> u64 {
        self.load(o)
    }
    #[inline(always)]
    fn set(&self, v: u64, o: Ordering) {
        self.store(v, o)
    }
    #[inline(always)]
    fn fence(o: Ordering) {
        std::sync::atomic::fence(o)
    }
}

#[cfg(loom)]
impl Atom for loom::sync::atomic::AtomicU64 {
    fn get(&self, o: Ordering) -> u64 {
        self.load(o)
    }
    fn set(&self, v: u64, o: Ordering) {
        self.store(v, o)
    }
    fn fence(o: Ordering) {
        loom::sync::atomic::fence(o)
    }
}

/// An event's screen (see the module's documentation).
#[derive(Debug)]
pub struct Screen<A: Atom = std::sync::atomic::AtomicU64> {
    /// Even: no screen (or one being written); odd: the screen of that
    /// number.
    seq: A,
    /// The field's index; the mask, the range's start and span
    /// ([`Word::masked`]).
    words: [A; 4],
}

impl Screen {
    /// No screen.
    pub const fn new() -> Screen {
        use std::sync::atomic::AtomicU64;
        Screen {
            seq: AtomicU64::new(0),
            words: [const { AtomicU64::new(0) }; 4],
        }
    }

    /// Whether a screen can hold `q`: one without a remainder by a
    /// number that is not a power of two (a division, which the probe
    /// does).
    pub fn can_hold(q: &Quick) -> bool {
        q.word.masked().is_some()
    }
}

impl Default for Screen {
    fn default() -> Screen {
        Screen::new()
    }
}

impl<A: Atom> Screen<A> {
    /// A screen of the given atomics (the model's).
    pub fn with(seq: A, words: [A; 4]) -> Screen<A> {
        Screen { seq, words }
    }

    /// Takes the screen down before the event's probe list changes;
    /// returns the number the new screen will have (odd). The writer's
    /// first step: callers are serialized (the collector's control lock).
    pub fn begin(&self) -> u64 {
        let even = (self.seq.get(Relaxed) | 1) + 1;
        self.seq.set(even, Relaxed);
        // The words' stores below are not seen before the even number.
        A::fence(Release);
        even + 1
    }

    /// Puts up `q` as screen number `s` (from [`Screen::begin`]), after
    /// the list that carries `s` was published; with `None` (or a `q` it
    /// cannot hold) the event stays without a screen.
    pub fn finish(&self, s: u64, q: Option<Quick>) {
        let Some((field, words)) = q.and_then(|q| Some((q.field, q.word.masked()?))) else {
            return;
        };
        self.words[0].set(field as u64, Relaxed);
        for (a, v) in self.words[1..].iter().zip(words) {
            a.set(v, Relaxed);
        }
        self.seq.set(s, Release);
    }

    /// The call site's test: `None` if the screen rejects the record
    /// whose field `i` is `value(i)` (`None` from `value`: a value
    /// outside `0..2^64`), else what to tell the probe: the screen's
    /// number if it accepted the record, [`UNSCREENED`] if it did not
    /// test it.
    #[inline(always)]
    pub fn check(&self, value: impl FnOnce(usize) -> Option<u64>) -> Option<u64> {
        let s = self.seq.get(Acquire);
        if s & 1 == 0 {
            return Some(UNSCREENED);
        }
        let [field, mask, lo, span] = &self.words;
        let field = field.get(Relaxed);
        let words = [mask.get(Relaxed), lo.get(Relaxed), span.get(Relaxed)];
        let x = value(field as usize);
        // The words' loads above are not seen after the number's below.
        A::fence(Acquire);
        if self.seq.get(Relaxed) != s {
            return Some(UNSCREENED);
        }
        let Some(x) = x else {
            return Some(UNSCREENED);
        };
        Word::from_masked(words).test_masked(x).then_some(s)
    }
}
