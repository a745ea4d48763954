//! A fused integer comparison (`steps.rs`) in 64 bits, for an operand
//! from 0 to 2^64 - 1: every unsigned field's value and every
//! non-negative signed one's. The compiled form compares in `i128`, the
//! integers' common type (a u64 and an i64 field compare by their
//! values), where each value takes two registers and a remainder is a
//! call; the write path instead tests the operand's upper half once
//! (nothing to test for an unsigned field: the compiler sees it is zero)
//! and runs this form: a mask, a remainder where one is left, a
//! subtraction and a comparison.
//!
//! The form is derived from the fused step's range when the filter is
//! compiled: the range intersected with the operand's (after its mask or
//! remainder), a remainder by a power of two made a mask (the operand is
//! not negative, so `x % 2^k` is `x & (2^k - 1)`), a range that must not
//! hold (`!=`) made the rest of the circle of 64-bit values, a remainder
//! by 0 (never true) or an empty range made a constant.

use super::steps::Pre;

/// [`Word::test`] of the comparison: `x & mask`, then `% rem` unless it
/// is 0, passes if it is within `lo..=lo + span` on the circle of 64-bit
/// values (wrapping: a range that does not pass, `x != k` or `x` outside
/// `a..=b`, is the range from the end of the other round to its start).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Word {
    mask: u64,
    rem: u64,
    lo: u64,
    span: u64,
}

impl Word {
    /// The form that answers `answer` for every operand: the range of
    /// every value, or the value 1 of an operand masked to 0.
    const fn always(answer: bool) -> Word {
        Word {
            mask: if answer { u64::MAX } else { 0 },
            rem: 0,
            lo: !answer as u64,
            span: if answer { u64::MAX } else { 0 },
        }
    }

    /// The 64-bit form of the fused step `pre`, `lo..=hi`, `out`
    /// (`steps::int_in`) for operands in `0..=u64::MAX`.
    pub(super) fn of(pre: Pre, lo: i128, hi: i128, out: bool) -> Word {
        let (mask, rem) = match pre {
            Pre::None => (u64::MAX, 0),
            // The operand's upper half is zero: only `m`'s lower half
            // can keep a bit.
            Pre::And(m) => (m as u64, 0),
            // `x % 0` has no value, and a comparison with none is false.
            Pre::Rem(0) => return Word::always(false),
            // Truncated remainder of a non-negative `x`: `x % |m|`.
            Pre::Rem(m) => match u64::try_from(m.unsigned_abs()) {
                Err(_) => (u64::MAX, 0),
                Ok(a) if a.is_power_of_two() => (a - 1, 0),
                Ok(a) => (u64::MAX, a),
            },
        };
        let (a, b) = (lo.max(0), hi.min(u64::MAX as i128));
        if a > b {
            // No operand is within the range: the answer is `out`.
            return Word::always(out);
        }
        let (a, span) = (a as u64, (b - a) as u64);
        let (lo, span) = match (out, span) {
            (false, _) => (a, span),
            // Outside every value: never.
            (true, u64::MAX) => return Word::always(false),
            // Outside `a..=a + span`: from `a + span + 1` round to `a - 1`.
            (true, _) => (a.wrapping_add(span).wrapping_add(1), u64::MAX - span - 1),
        };
        Word {
            mask,
            rem,
            lo,
            span,
        }
    }

    /// Its words without a remainder (mask, range start, span): how the
    /// call site's screen holds it (`crate::screen`); `None` for a form
    /// with a remainder (a division: the screen leaves it to the probe).
    pub fn masked(&self) -> Option<[u64; 3]> {
        (self.rem == 0).then_some([self.mask, self.lo, self.span])
    }

    /// The form whose [`Word::masked`] words are `w`.
    #[inline(always)]
    pub fn from_masked(w: [u64; 3]) -> Word {
        let [mask, lo, span] = w;
        Word {
            mask,
            rem: 0,
            lo,
            span,
        }
    }

    /// Whether the operand `x` passes, for a form without a remainder.
    #[inline(always)]
    pub fn test_masked(&self, x: u64) -> bool {
        (x & self.mask).wrapping_sub(self.lo) <= self.span
    }

    /// Whether the operand `x` passes.
    #[inline(always)]
    pub fn test(&self, x: u64) -> bool {
        let mut k = x & self.mask;
        if self.rem != 0 {
            k %= self.rem;
        }
        k.wrapping_sub(self.lo) <= self.span
    }
}

#[cfg(test)]
mod tests {
    use super::super::steps::int_in;
    use super::*;

    /// The form agrees with the `i128` step on operands and bounds at
    /// every edge.
    #[test]
    #[cfg_attr(
        miri,
        ignore = "a million comparisons, no unsafe code: the ordinary tests run it"
    )]
    fn agrees_with_the_wide_step() {
        let edges: Vec<i128> = [
            0,
            1,
            2,
            3,
            7,
            8,
            9,
            500,
            i64::MAX as i128,
            i64::MAX as i128 + 1,
            u64::MAX as i128 - 1,
            u64::MAX as i128,
            u64::MAX as i128 + 1,
        ]
        .into_iter()
        .flat_map(|v| [v, -v])
        .chain([i128::MIN, i128::MAX])
        .collect();
        let mut pres = vec![Pre::None];
        for m in &edges {
            pres.push(Pre::And(*m));
            pres.push(Pre::Rem(*m));
        }
        let xs: Vec<u64> = edges
            .iter()
            .filter_map(|v| u64::try_from(*v).ok())
            .chain([4, 5, 6, 1000, 1 << 40, (1 << 40) + 3])
            .collect();
        let mut checked = 0u64;
        for &pre in &pres {
            for &lo in &edges {
                for &hi in &edges {
                    if lo > hi {
                        continue;
                    }
                    for out in [false, true] {
                        let w = Word::of(pre, lo, hi, out);
                        for &x in &xs {
                            assert_eq!(
                                w.test(x),
                                int_in(x as i128, pre, lo, hi, out),
                                "{x} with {pre:?} in {lo}..={hi} out {out}"
                            );
                            if let Some(m) = w.masked() {
                                assert_eq!(Word::from_masked(m).test_masked(x), w.test(x));
                            }
                            checked += 1;
                        }
                    }
                }
            }
        }
        assert!(checked > 500_000, "{checked}");
    }
}
