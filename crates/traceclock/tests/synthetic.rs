//! The synthetic clock driven through thousands of overflows of a simulated
//! 16- and 32-bit counter: every read exact and monotonic.
#![cfg(not(loom))]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use proptest::prelude::*;
use traceclock::synthetic::{extend, HwCounter, SyntheticClock};

/// A simulated narrow counter over a true 64-bit time.
struct Sim {
    t: Arc<AtomicU64>,
    bits: u32,
}

impl HwCounter for Sim {
    fn read(&self) -> u64 {
        self.t.load(Ordering::Acquire) & ((1u64 << self.bits) - 1)
    }
}

fn run(bits: u32, start: u64, steps: &[(u64, bool)]) -> u64 {
    let t = Arc::new(AtomicU64::new(start));
    let c = SyntheticClock::new(Sim { t: t.clone(), bits }, bits);
    // The clock starts at the counter's value: its high bits are ours to add.
    let base = start & !((1u64 << bits) - 1);
    let period = 1u64 << bits;
    let (mut since_update, mut overflows, mut last) = (0u64, 0u64, 0u64);
    for &(step, update) in steps {
        let step = step % (period / 2);
        // Invariant (3): an update at least once per overflow period.
        if since_update + step >= period {
            c.update();
            since_update = 0;
        }
        let before = t.fetch_add(step, Ordering::AcqRel);
        since_update += step;
        if (before ^ (before + step)) >> bits != 0 {
            overflows += 1;
        }
        if update {
            c.update();
            since_update = 0;
        }
        let v = c.read();
        assert_eq!(v + base, t.load(Ordering::Acquire), "exact");
        assert!(v >= last, "monotonic");
        last = v;
    }
    overflows
}

#[test]
fn sixteen_bit_counter_through_thousands_of_overflows() {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let steps: Vec<(u64, bool)> = (0..200_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % 40_000, x.is_multiple_of(3))
        })
        .collect();
    let overflows = run(16, 123, &steps);
    assert!(overflows > 30_000, "{overflows} overflows");
}

#[test]
fn thirty_two_bit_counter_through_thousands_of_overflows() {
    let steps: Vec<(u64, bool)> = (0..20_000u64)
        .map(|k| ((k * 2_654_435_761) % (1 << 31), k % 2 == 0))
        .collect();
    let overflows = run(32, (1 << 32) - 5, &steps);
    assert!(overflows > 2_000, "{overflows} overflows");
}

#[test]
fn extend_examples() {
    assert_eq!(extend(0x1_fff0, 0x0010, 16), 0x2_0010);
    assert_eq!(extend(0x1_0010, 0x0020, 16), 0x1_0020);
    assert_eq!(extend(0x1_0010, 0x0010, 16), 0x1_0010);
    assert_eq!(
        extend(u64::MAX - 5, 3, 16),
        3,
        "the 64-bit value itself wraps"
    );
}

/// Real threads: one updater advancing a 16-bit counter (one overflow per
/// ~50 ms of real time, far longer than any reader is descheduled between
/// two loads) and two readers checking monotonic, bounded reads.
#[test]
fn readers_racing_with_the_updater() {
    let t = Arc::new(AtomicU64::new(0));
    let c = Arc::new(SyntheticClock::new(
        Sim {
            t: t.clone(),
            bits: 16,
        },
        16,
    ));
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (t, c, stop) = (t.clone(), c.clone(), stop.clone());
            std::thread::spawn(move || {
                let (mut last, mut n) = (0, 0u64);
                while !stop.load(Ordering::Relaxed) {
                    let lo = t.load(Ordering::Acquire);
                    let v = c.read();
                    let hi = t.load(Ordering::Acquire);
                    assert!(lo <= v && v <= hi, "{lo} <= {v} <= {hi}");
                    assert!(v >= last);
                    last = v;
                    n += 1;
                }
                n
            })
        })
        .collect();
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_millis(600) {
        // 2^16 ticks per ~50 ms.
        let target = (start.elapsed().as_micros() as u64) * 65_536 / 50_000;
        let now = t.load(Ordering::Acquire);
        if target > now {
            t.store(now + (target - now).min(1 << 14), Ordering::Release);
        }
        c.update();
        std::thread::yield_now();
    }
    stop.store(true, Ordering::Relaxed);
    let reads: u64 = readers.into_iter().map(|r| r.join().unwrap()).sum();
    assert!(
        t.load(Ordering::Relaxed) > 10 << 16,
        "at least ten overflows"
    );
    assert!(reads > 1000);
}

proptest! {
    #[test]
    fn any_schedule_respecting_the_invariants_is_exact(
        bits in prop_oneof![Just(16u32), Just(32), 4u32..24],
        start in any::<u32>(),
        steps in proptest::collection::vec((any::<u64>(), any::<bool>()), 1..2000),
    ) {
        run(bits, start as u64, &steps);
    }
}
