//! One event's field values, gathered from a `tracing` visitor into slots
//! on the stack (no allocation: strings and `Debug` output go into a fixed
//! scratch area, cut at a character boundary when full), then serialized in
//! the callsite's field order with the kinds of its event class.

use std::fmt::{self, Write as _};
use std::mem::MaybeUninit;

use ringtrace::filter::Val;
use ringtrace::FieldKind;
use tracing_core::field::{Field, Visit};

/// Most fields a `tracing` callsite has.
pub(crate) const MAX_FIELDS: usize = 32;
/// Bytes of string and `Debug` text one event keeps (the rest is cut).
pub(crate) const SCRATCH: usize = 1024;

/// One value as `tracing` gave it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Slot {
    /// Not recorded (`tracing::field::Empty`, or not given).
    Missing,
    /// `record_u64`.
    U(u64),
    /// `record_i64`.
    I(i64),
    /// `record_f64`.
    F(f64),
    /// `record_bool`.
    B(bool),
    /// Text at `scratch[start..start + len]`.
    S(u16, u16),
}

impl Slot {
    /// The field kind an event class gets when this is a field's first value.
    pub(crate) fn kind(self) -> FieldKind {
        match self {
            Slot::U(_) => FieldKind::Unsigned(64),
            Slot::I(_) => FieldKind::Signed(64),
            Slot::F(_) => FieldKind::F64,
            Slot::B(_) => FieldKind::Bool,
            Slot::S(..) | Slot::Missing => FieldKind::Str,
        }
    }
}

/// The values of one event or span.
pub(crate) struct Values {
    pub(crate) slots: [Slot; MAX_FIELDS],
    /// Text; the first `used` bytes are written (the rest is never read:
    /// left uninitialized, an event does not clear a kilobyte it does not
    /// use).
    scratch: [MaybeUninit<u8>; SCRATCH],
    used: usize,
}

impl fmt::Debug for Values {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Values").field("used", &self.used).finish()
    }
}

impl Values {
    pub(crate) fn new() -> Values {
        Values {
            slots: [Slot::Missing; MAX_FIELDS],
            scratch: [MaybeUninit::uninit(); SCRATCH],
            used: 0,
        }
    }

    /// Appends text to the scratch area, cut at a character boundary when it
    /// is full; returns the slot naming it.
    fn text(&mut self, f: impl FnOnce(&mut Cursor<'_>) -> fmt::Result) -> Slot {
        let start = self.used;
        let mut c = Cursor {
            buf: &mut self.scratch,
            at: start,
        };
        let _ = f(&mut c);
        self.used = c.at;
        Slot::S(start as u16, (self.used - start) as u16)
    }

    fn set(&mut self, field: &Field, slot: Slot) {
        if let Some(s) = self.slots.get_mut(field.index()) {
            *s = slot;
        }
    }

    fn str_of(&self, start: u16, len: u16) -> &[u8] {
        let text = &self.scratch[..self.used][start as usize..start as usize + len as usize];
        // SAFETY: the first `used` bytes of `scratch` were written
        // (`Cursor` writes bytes at `at` and only then advances it, and
        // `used` is a cursor's final `at`); `text` lies within them (the
        // indexing above checks it).
        unsafe { &*(text as *const [MaybeUninit<u8>] as *const [u8]) }
    }

    /// Whether every value keeps its exact value as `kinds` (a number of its
    /// own kind, anything as text; a field not recorded fits anything).
    pub(crate) fn fits(&self, kinds: &[FieldKind]) -> bool {
        kinds.iter().zip(&self.slots).all(|(&k, &s)| fits(s, k))
    }

    /// `kinds` with every field whose value does not fit turned into text:
    /// the kinds of a class that keeps these values too.
    pub(crate) fn widened(&self, kinds: &[FieldKind]) -> Vec<FieldKind> {
        kinds
            .iter()
            .zip(&self.slots)
            .map(|(&k, &s)| if fits(s, k) { k } else { FieldKind::Str })
            .collect()
    }

    /// Turns every slot whose class kind is a string but whose value is not
    /// text into its text, so that [`len`](Self::len) and
    /// [`write`](Self::write) see only text there.
    pub(crate) fn normalize(&mut self, kinds: &[FieldKind]) {
        for (i, &k) in kinds.iter().enumerate() {
            if k != FieldKind::Str {
                continue;
            }
            let s = self.slots[i];
            self.slots[i] = match s {
                Slot::U(v) => self.text(|c| write!(c, "{v}")),
                Slot::I(v) => self.text(|c| write!(c, "{v}")),
                Slot::F(v) => self.text(|c| write!(c, "{v}")),
                Slot::B(v) => self.text(|c| write!(c, "{v}")),
                Slot::Missing => Slot::S(0, 0),
                s @ Slot::S(..) => s,
            };
        }
    }

    /// Payload bytes of the first `kinds.len()` slots (after `normalize`).
    pub(crate) fn len(&self, kinds: &[FieldKind]) -> usize {
        kinds
            .iter()
            .zip(&self.slots)
            .map(|(k, s)| match (k, s) {
                (FieldKind::Str, Slot::S(_, n)) => *n as usize + 1,
                (FieldKind::Str, _) => 1,
                (FieldKind::Unsigned(b) | FieldKind::Signed(b), _) => *b as usize / 8,
                (FieldKind::F32, _) => 4,
                (FieldKind::F64, _) => 8,
                (FieldKind::Bool, _) => 1,
                (FieldKind::Bytes, _) => 4,
                // Never a `tracing` field (the layer's classes have none).
                (FieldKind::Ctf(_), _) => 0,
            })
            .sum()
    }

    /// Slot `i`'s value as [`write`](Self::write) records it as `kinds`
    /// (after `normalize`), as a filter compares it.
    pub(crate) fn value(&self, kinds: &[FieldKind], i: usize) -> Val<'_> {
        let (Some(k), Some(s)) = (kinds.get(i), self.slots.get(i)) else {
            return Val::Absent;
        };
        match (*k, *s) {
            (FieldKind::Str, Slot::S(st, n)) => Val::Text(self.str_of(st, n)),
            (FieldKind::Str, _) => Val::Text(b""),
            (FieldKind::F32 | FieldKind::F64, Slot::F(v)) => Val::Float(v),
            (_, Slot::U(v)) => Val::Int(v as i128),
            (_, Slot::I(v)) => Val::Int(v as i128),
            (_, Slot::B(v)) => Val::Int(v as i128),
            (_, Slot::F(v)) => Val::Float(v),
            _ => Val::Int(0),
        }
    }

    /// Serializes the slots as `kinds`, exactly `len(kinds)` bytes. The
    /// caller makes the values fit first (`fits`, or a widened class);
    /// a field not recorded is written as 0, false or empty text.
    pub(crate) fn write(&self, kinds: &[FieldKind], out: &mut [u8]) -> usize {
        let mut o = 0;
        for (k, s) in kinds.iter().zip(&self.slots) {
            let (u, i, f) = match *s {
                Slot::U(v) => (v, v as i64, v as f64),
                Slot::I(v) => (v as u64, v, v as f64),
                Slot::F(v) => (v as u64, v as i64, v),
                Slot::B(v) => (v as u64, v as i64, v as u8 as f64),
                Slot::S(..) | Slot::Missing => (0, 0, 0.0),
            };
            match k {
                FieldKind::Str => {
                    let b = match *s {
                        Slot::S(st, n) => self.str_of(st, n),
                        _ => &[],
                    };
                    out[o..o + b.len()].copy_from_slice(b);
                    out[o + b.len()] = 0;
                    o += b.len() + 1;
                }
                FieldKind::Unsigned(b) => {
                    let w = *b as usize / 8;
                    out[o..o + w].copy_from_slice(&u.to_le_bytes()[..w]);
                    o += w;
                }
                FieldKind::Signed(b) => {
                    let w = *b as usize / 8;
                    out[o..o + w].copy_from_slice(&i.to_le_bytes()[..w]);
                    o += w;
                }
                FieldKind::F32 => {
                    out[o..o + 4].copy_from_slice(&(f as f32).to_le_bytes());
                    o += 4;
                }
                FieldKind::F64 => {
                    out[o..o + 8].copy_from_slice(&f.to_le_bytes());
                    o += 8;
                }
                FieldKind::Bool => {
                    out[o] = (u != 0) as u8;
                    o += 1;
                }
                FieldKind::Bytes => {
                    out[o..o + 4].copy_from_slice(&0u32.to_le_bytes());
                    o += 4;
                }
                FieldKind::Ctf(_) => {}
            }
        }
        o
    }
}

/// Whether `kind` keeps the value of `s` exactly.
fn fits(s: Slot, kind: FieldKind) -> bool {
    matches!(
        (s, kind),
        (Slot::Missing, _)
            | (_, FieldKind::Str)
            | (Slot::U(_), FieldKind::Unsigned(64))
            | (Slot::I(_), FieldKind::Signed(64))
            | (Slot::F(_), FieldKind::F64)
            | (Slot::B(_), FieldKind::Bool)
    )
}

/// A `fmt::Write` into the scratch area that stops at its end, on a
/// character boundary.
struct Cursor<'a> {
    buf: &'a mut [MaybeUninit<u8>; SCRATCH],
    at: usize,
}

impl fmt::Write for Cursor<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let room = SCRATCH - self.at;
        let mut n = s.len().min(room);
        while !s.is_char_boundary(n) {
            n -= 1;
        }
        self.buf[self.at..self.at + n].write_copy_of_slice(&s.as_bytes()[..n]);
        self.at += n;
        if n < s.len() {
            Err(fmt::Error)
        } else {
            Ok(())
        }
    }
}

impl Visit for Values {
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.set(field, Slot::U(value));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.set(field, Slot::I(value));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.set(field, Slot::F(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.set(field, Slot::B(value));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        let s = self.text(|c| c.write_str(value));
        self.set(field, s);
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        let s = self.text(|c| write!(c, "{value:?}"));
        self.set(field, s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_cut_at_a_character_boundary_when_scratch_is_full() {
        let mut v = Values::new();
        let long = "é".repeat(SCRATCH); // 2 bytes each
        let s = v.text(|c| c.write_str(&long));
        assert_eq!(s, Slot::S(0, SCRATCH as u16));
        let s2 = v.text(|c| c.write_str("more"));
        assert_eq!(s2, Slot::S(SCRATCH as u16, 0), "nothing left, empty text");
        let mut w = Values::new();
        let _ = w.text(|c| c.write_str("x"));
        let s3 = w.text(|c| c.write_str(&long));
        assert_eq!(
            s3,
            Slot::S(1, (SCRATCH - 2) as u16),
            "odd room: the half character is dropped"
        );
    }

    #[test]
    fn values_convert_to_the_class_kinds() {
        let mut v = Values::new();
        v.slots[0] = Slot::I(-1);
        v.slots[1] = Slot::U(42);
        v.slots[2] = Slot::F(2.5);
        v.slots[3] = Slot::Missing;
        v.slots[4] = Slot::B(true);
        let kinds = [
            FieldKind::Unsigned(64),
            FieldKind::Str,
            FieldKind::Signed(64),
            FieldKind::F64,
            FieldKind::Bool,
        ];
        v.normalize(&kinds);
        let n = v.len(&kinds);
        assert_eq!(n, 8 + 3 + 8 + 8 + 1);
        let mut out = vec![0xaa; n];
        assert_eq!(v.write(&kinds, &mut out), n);
        assert_eq!(&out[..8], &u64::MAX.to_le_bytes());
        assert_eq!(&out[8..11], b"42\0");
        assert_eq!(&out[11..19], &2i64.to_le_bytes());
        assert_eq!(&out[19..27], &0f64.to_le_bytes());
        assert_eq!(out[27], 1);
    }
}
