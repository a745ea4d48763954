//! The wait-free synthetic clock (see the crate doc for its source): extends a counter
//! of `bits` bits (a 16- or 32-bit hardware timer) to 64 bits.
//!
//! Two 64-bit values and a parity index. A periodic update, run at least once
//! per overflow period of the narrow counter, extends the counter from the
//! current value into the *other* slot and then flips the parity (Release).
//! A read loads the parity (Acquire), the slot it names, and then the
//! hardware counter, and extends: the high bits of the slot, the low bits of
//! the counter, plus one overflow if the counter's bits are below the slot's.
//! Readers never wait and never write.
//!
//! Invariants: (1) there is one updater at a time (the timer; callers
//! serialize it); (2) between a reader's load of its slot and its read of
//! the counter, less than one overflow period passes (in the kernel,
//! preemption is disabled there; here the reader must not be descheduled for
//! that long, which bounds how narrow a counter this is safe for); (3) the
//! updater runs at least once per overflow period. Under these, every read
//! is exact and reads never go backwards.

#[cfg(loom)]
use loom::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
#[cfg(not(loom))]
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// A narrow hardware counter.
pub trait HwCounter {
    /// The current count, in its low `bits` bits.
    fn read(&self) -> u64;
}

/// The synthetic 64-bit clock over a [`HwCounter`] of `bits` bits.
#[derive(Debug)]
pub struct SyntheticClock<H> {
    hw: H,
    bits: u32,
    tsc: [AtomicU64; 2],
    index: AtomicUsize,
}

/// Extends `hw` (the low bits of a later count) from `old`, a full 64-bit
/// count read less than one overflow period earlier.
#[inline(always)]
pub fn extend(old: u64, hw: u64, bits: u32) -> u64 {
    let mask = if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    let hw = hw & mask;
    let mut new = (old & !mask) | hw;
    if hw < old & mask {
        new = new.wrapping_add(mask.wrapping_add(1));
    }
    new
}

impl<H: HwCounter> SyntheticClock<H> {
    /// A clock whose first value is the counter's current one.
    pub fn new(hw: H, bits: u32) -> Self {
        assert!(
            (1..=63).contains(&bits),
            "counter width {bits} must be 1..=63 bits"
        );
        let first = hw.read() & ((1u64 << bits) - 1);
        SyntheticClock {
            hw,
            bits,
            tsc: [AtomicU64::new(first), AtomicU64::new(first)],
            index: AtomicUsize::new(0),
        }
    }

    /// The current 64-bit count. Wait-free.
    #[inline]
    pub fn read(&self) -> u64 {
        let i = self.index.load(Ordering::Acquire);
        let old = self.tsc[i & 1].load(Ordering::Acquire);
        extend(old, self.hw.read(), self.bits)
    }

    /// The periodic update: run at least once per overflow period, by one
    /// updater at a time.
    pub fn update(&self) {
        let i = self.index.load(Ordering::Relaxed);
        let cur = self.tsc[i & 1].load(Ordering::Relaxed);
        let new = extend(cur, self.hw.read(), self.bits);
        // Release: a reader that loads this slot without having seen the new
        // parity (it loaded the parity two updates ago) still reads a
        // counter at least as new as the one extended here. loom found the
        // Relaxed version reading a new slot with an old counter.
        self.tsc[(i + 1) & 1].store(new, Ordering::Release);
        // Publishes the new slot: a reader that sees the new parity sees it.
        self.index.store(i.wrapping_add(1), Ordering::Release);
    }

    /// The counter's width in bits.
    pub fn bits(&self) -> u32 {
        self.bits
    }
}
