//! loom model of the synthetic clock: the update (flip of the parity after
//! writing the other slot) racing with reads across a 16-bit overflow.
//! `RUSTFLAGS="--cfg loom" cargo test -p traceclock --test loom --release`
#![cfg(loom)]

use loom::sync::atomic::{AtomicU64, Ordering};
use loom::sync::Arc;
use loom::thread;
use traceclock::synthetic::{HwCounter, SyntheticClock};

struct Sim(Arc<AtomicU64>);

impl HwCounter for Sim {
    fn read(&self) -> u64 {
        self.0.load(Ordering::Acquire) & 0xffff
    }
}

#[test]
fn update_races_with_reads() {
    let runs = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let r = runs.clone();
    loom::model(move || {
        r.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // Just below an overflow of the 16-bit counter.
        let t = Arc::new(AtomicU64::new(0xfff0));
        let c = Arc::new(SyntheticClock::new(Sim(t.clone()), 16));
        let updater = {
            let (t, c) = (t.clone(), c.clone());
            thread::spawn(move || {
                for _ in 0..2 {
                    t.fetch_add(0x10, Ordering::AcqRel);
                    c.update();
                }
            })
        };
        let reader = {
            let (t, c) = (t.clone(), c.clone());
            thread::spawn(move || {
                let mut last = 0;
                for _ in 0..2 {
                    let lo = t.load(Ordering::Acquire);
                    let v = c.read();
                    let hi = t.load(Ordering::Acquire);
                    assert!(lo <= v && v <= hi, "{lo:#x} <= {v:#x} <= {hi:#x}");
                    assert!(v >= last);
                    last = v;
                }
            })
        };
        updater.join().unwrap();
        reader.join().unwrap();
        assert_eq!(c.read(), 0x1_0010);
    });
    eprintln!(
        "loom synthetic clock: {} interleavings",
        runs.load(std::sync::atomic::Ordering::Relaxed)
    );
}
