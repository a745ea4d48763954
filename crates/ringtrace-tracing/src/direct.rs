//! The payload of a class whose fields are all numbers or booleans (at
//! most [`FIELDS`] of them, after the span id for span classes): a length
//! known when the class is made, values taken from `tracing`'s visitor
//! into a few words on the stack and written at their places. No text
//! area, no kinds to compare at each event: a `tracing` event of numbers
//! costs little more than an `event!`. A value of another kind than its
//! field's (text, a negative number where the field is unsigned) makes
//! [`Direct::fits`] false, and the caller records the event through the
//! general path (`values.rs`), which widens the class.

use ringtrace::client::Payload;
use ringtrace::filter::Val;
use ringtrace::FieldKind;
use tracing_core::field::{Field, Visit};

/// Most fields a class written directly has.
pub(crate) const FIELDS: usize = 8;

/// The kind of a field written directly, as `tracing` gives its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Num {
    /// `record_u64`, 8 bytes.
    U64,
    /// `record_i64`, 8 bytes.
    I64,
    /// `record_f64`, 8 bytes.
    F64,
    /// `record_bool`, 1 byte.
    Bool,
}

/// The layout of a class's payload whose fields are all numbers.
#[derive(Debug)]
pub(crate) struct Plan {
    nums: [Num; FIELDS],
    n: usize,
    /// Whether the payload starts with the span id.
    span: bool,
    /// Whether every field is 8 bytes (no boolean).
    words_only: bool,
    len: usize,
}

impl Plan {
    /// The plan of a class whose fields after the span id (if `span`) have
    /// `kinds`; `None` when one is text or there are more than [`FIELDS`].
    pub(crate) fn new(kinds: &[FieldKind], span: bool) -> Option<Plan> {
        if kinds.len() > FIELDS {
            return None;
        }
        let mut nums = [Num::Bool; FIELDS];
        let mut len = if span { 8 } else { 0 };
        for (n, k) in nums.iter_mut().zip(kinds) {
            (*n, len) = match k {
                FieldKind::Unsigned(64) => (Num::U64, len + 8),
                FieldKind::Signed(64) => (Num::I64, len + 8),
                FieldKind::F64 => (Num::F64, len + 8),
                FieldKind::Bool => (Num::Bool, len + 1),
                _ => return None,
            };
        }
        Some(Plan {
            nums,
            n: kinds.len(),
            span,
            words_only: !nums[..kinds.len()].contains(&Num::Bool),
            len,
        })
    }

    /// Payload bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

/// One event's values for a [`Plan`]: a visitor.
pub(crate) struct Direct<'p> {
    plan: &'p Plan,
    /// Each field's value as a word (a float's bits); 0 for a field not
    /// recorded, as the general path writes it.
    words: [u64; FIELDS],
    fits: bool,
}

impl<'p> Direct<'p> {
    pub(crate) fn new(plan: &'p Plan) -> Direct<'p> {
        Direct {
            plan,
            words: [0; FIELDS],
            fits: true,
        }
    }

    /// Whether every value had its field's kind.
    pub(crate) fn fits(&self) -> bool {
        self.fits
    }

    #[inline(always)]
    fn put(&mut self, field: &Field, num: Num, word: u64) {
        let i = field.index();
        if i < self.plan.n && self.plan.nums[i] == num {
            self.words[i] = word;
        } else {
            self.fits = false;
        }
    }

    /// Field `i` of the class (the span id first, for span classes) as a
    /// filter compares it.
    fn value(&self, span_id: u64, i: usize) -> Val<'static> {
        let i = match (self.plan.span, i) {
            (true, 0) => return Val::Int(span_id as i128),
            (true, i) => i - 1,
            (false, i) => i,
        };
        if i >= self.plan.n {
            return Val::Absent;
        }
        let w = self.words[i];
        match self.plan.nums[i] {
            Num::U64 => Val::Int(w as i128),
            Num::I64 => Val::Int(w as i64 as i128),
            Num::F64 => Val::Float(f64::from_bits(w)),
            Num::Bool => Val::Int((w != 0) as i128),
        }
    }

    /// Writes the payload, exactly [`Plan::len`] bytes: the span id
    /// (`span_id`, for span classes), then each field.
    #[inline(always)]
    pub(crate) fn write(&self, span_id: u64, out: &mut [u8]) {
        let mut o = 0;
        if self.plan.span {
            out[..8].copy_from_slice(&span_id.to_le_bytes());
            o = 8;
        }
        let words = &self.words[..self.plan.n];
        if self.plan.words_only {
            // The common case (numbers only): word after word.
            for (at, w) in out[o..].as_chunks_mut::<8>().0.iter_mut().zip(words) {
                at.copy_from_slice(&w.to_le_bytes());
            }
            return;
        }
        for (num, &w) in self.plan.nums[..self.plan.n].iter().zip(words) {
            if *num == Num::Bool {
                out[o] = (w != 0) as u8;
                o += 1;
            } else {
                out[o..o + 8].copy_from_slice(&w.to_le_bytes());
                o += 8;
            }
        }
    }
}

impl Visit for Direct<'_> {
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(field, Num::U64, value);
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, Num::I64, value as u64);
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.put(field, Num::F64, value.to_bits());
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, Num::Bool, value as u64);
    }
    fn record_debug(&mut self, _field: &Field, _value: &dyn std::fmt::Debug) {
        // Text (and everything `tracing` gives as text: `str`, errors,
        // 128-bit numbers, bytes) has no place here.
        self.fits = false;
    }
}

/// A [`Direct`]'s record: its payload, and its values for filters.
pub(crate) struct DirectPayload<'a, 'p> {
    pub(crate) d: &'a Direct<'p>,
    pub(crate) span_id: u64,
}

impl Payload for DirectPayload<'_, '_> {
    #[inline(always)]
    fn write(&self, out: &mut [u8]) {
        self.d.write(self.span_id, out)
    }

    fn field(&self, i: usize) -> Val<'_> {
        self.d.value(self.span_id, i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_exist_for_numbers_only() {
        let u = FieldKind::Unsigned(64);
        let p = Plan::new(&[u, FieldKind::Bool, FieldKind::F64], true).unwrap();
        assert_eq!(p.len(), 8 + 8 + 1 + 8);
        assert!(Plan::new(&[u, FieldKind::Str], false).is_none());
        assert!(Plan::new(&[u; FIELDS + 1], false).is_none());
        assert_eq!(Plan::new(&[], true).unwrap().len(), 8);
    }
}
