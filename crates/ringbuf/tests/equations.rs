//! Equations (1)–(4) checked against a model that works with unbounded
//! integers (u128 positions), for counters anywhere around 2^64.

use proptest::prelude::*;
use ringbuf::Geometry;

fn geo() -> impl Strategy<Value = (Geometry, u32, u32)> {
    (6u32..20, 1u32..6).prop_map(|(s, n)| (Geometry::new(1 << s, 1 << n).unwrap(), s, n))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 8 } else { 2000 }))]

    /// Buffer full and writer-in-reader's-sub-buffer, across the wrap: the
    /// wrapping answer equals the answer on true (unwrapped) positions.
    #[test]
    fn full_and_same_subbuf((g, s, _n) in geo(), r_sb in any::<u64>(), ahead in 0u64..64, off in any::<u64>()) {
        let sz = 1u128 << s;
        let r_true = (r_sb as u128) << s;              // true position, may exceed 2^64
        let x_true = r_true + ahead as u128 * sz + (off as u128 % sz);
        let (r, x) = (r_true as u64, x_true as u64);    // what the counters hold
        let full_true = (x_true / sz * sz) - r_true >= g.buf_size() as u128;
        prop_assert_eq!(g.buffer_full(x, r), full_true);
        prop_assert_eq!(g.writer_in_reader_subbuf(x, r), ahead == 0);
    }

    /// Commit counts: drive one sub-buffer through laps from any start
    /// (a multiple of B), committing it in pieces; it is complete exactly when
    /// S bytes of the lap are in, and fully committed/ready exactly after.
    #[test]
    fn laps_of_one_subbuf((g, _s, _n) in geo(), w0_laps in any::<u64>(), i in 0u64..32, laps in 1u64..5, pieces in 1u64..6) {
        let s = g.subbuf_size();
        let b = g.buf_size();
        let w0 = w0_laps.wrapping_mul(b);
        let i = i % g.num_subbuf();
        let mut cc = g.initial_commit(w0);
        let mut cs = cc;
        for lap in 0..laps {
            let x = w0.wrapping_add(lap * b).wrapping_add(i * s); // start of sub-buffer i in this lap
            prop_assert!(g.fully_committed(cs, x), "lap {} must see the previous one delivered", lap);
            prop_assert!(!g.subbuf_ready(cs, x), "not ready before its commits");
            let piece = s / pieces;
            let mut committed = 0;
            while committed < s {
                let amount = if s - committed < 2 * piece { s - committed } else { piece };
                committed += amount;
                cc = cc.wrapping_add(amount);
                let p = x + committed - 1;
                prop_assert_eq!(g.subbuf_complete(cc, p), committed == s);
                prop_assert_eq!(g.sb_index(p), i as usize);
            }
            cs = cc;
            prop_assert!(g.subbuf_ready(cs, x));
            prop_assert!(!g.fully_committed(cs, x), "still delivered for this lap, not the next");
            prop_assert!(g.fully_committed(cs, x.wrapping_add(b)));
        }
    }
}

#[test]
fn rejects_non_powers_of_two() {
    assert!(Geometry::new(100, 4).is_err());
    assert!(Geometry::new(32, 4).is_err());
    assert!(Geometry::new(4096, 6).is_err());
    assert!(Geometry::new(4096, 1).is_err());
    let g = Geometry::new(4096, 4).unwrap();
    assert_eq!(
        (g.subbuf_size(), g.num_subbuf(), g.buf_size()),
        (4096, 4, 16384)
    );
}

#[test]
fn commit_counts_cross_2_64_with_the_write_count() {
    let g = Geometry::new(4096, 4).unwrap();
    let w0 = 0u64.wrapping_sub(g.buf_size());
    let c0 = g.initial_commit(w0);
    // One lap later W is 0 and every commit count has wrapped too.
    assert_eq!(c0.checked_add(g.subbuf_size()), None);
    assert!(g.fully_committed(c0.wrapping_add(g.subbuf_size()), 0));
}
