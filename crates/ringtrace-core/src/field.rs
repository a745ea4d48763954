//! Field types an event can carry, and how each Rust value is serialized
//! into the record: little-endian, byte-aligned, exactly as
//! [`FieldKind::ctf_type`] describes it in the metadata.

use ctf::types::{FieldType, IntType};

/// The type of a field, known at compile time (a `const` in the event's
/// static descriptor).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldKind {
    /// Unsigned integer of 8, 16, 32 or 64 bits.
    Unsigned(u8),
    /// Signed integer of 8, 16, 32 or 64 bits.
    Signed(u8),
    /// IEEE 754 binary32.
    F32,
    /// IEEE 754 binary64.
    F64,
    /// Boolean (one byte).
    Bool,
    /// UTF-8 string, NUL-terminated in the record (cut at an interior NUL).
    Str,
    /// Byte sequence: a 32-bit length, then the bytes.
    Bytes,
    /// A field another tracer's probe serializes (an LTTng-UST provider's):
    /// its CTF declaration, whole (alignment, length field), written as is.
    Ctf(&'static ctf::types::Field),
}

impl FieldKind {
    /// The field named `name` of this kind, as the metadata declares it.
    pub fn ctf_field(self, name: &str) -> ctf::types::Field {
        match self {
            FieldKind::Ctf(f) => ctf::types::Field {
                name: name.to_string(),
                ..f.clone()
            },
            _ => ctf::types::Field::new(name, self.ctf_type()),
        }
    }

    /// The CTF type of the field.
    pub fn ctf_type(self) -> FieldType {
        match self {
            FieldKind::Ctf(f) => f.ty.clone(),
            FieldKind::Unsigned(b) => FieldType::Int(IntType::unsigned(b)),
            FieldKind::Signed(b) => FieldType::Int(IntType::signed(b)),
            FieldKind::F32 => FieldType::F32,
            FieldKind::F64 => FieldType::F64,
            FieldKind::Bool => FieldType::Bool,
            FieldKind::Str => FieldType::String,
            FieldKind::Bytes => FieldType::Sequence(IntType {
                bits: 8,
                signed: false,
                base: 16,
                be: false,
            }),
        }
    }
}

/// A value that can be a field of an event.
pub trait FieldValue {
    /// Its type in the metadata.
    const KIND: FieldKind;
    /// Bytes it takes in the record.
    fn encoded_len(&self) -> usize;
    /// Writes it at the start of `out` (at least `encoded_len` bytes) and
    /// returns `encoded_len`.
    fn encode(&self, out: &mut [u8]) -> usize;
    /// Its value as a filter compares it ([`crate::filter`]); by default
    /// none, which every comparison finds false.
    #[inline(always)]
    fn filter_value(&self) -> Val<'_> {
        Val::Absent
    }
}

macro_rules! int_field {
    ($($t:ty => $kind:expr, $filter:expr);*) => {$(
        impl FieldValue for $t {
            const KIND: FieldKind = $kind;
            #[inline(always)]
            fn encoded_len(&self) -> usize {
                std::mem::size_of::<$t>()
            }
            #[inline(always)]
            fn encode(&self, out: &mut [u8]) -> usize {
                const N: usize = std::mem::size_of::<$t>();
                out[..N].copy_from_slice(&self.to_le_bytes());
                N
            }
            #[inline(always)]
            #[allow(clippy::unnecessary_cast)]
            fn filter_value(&self) -> Val<'_> {
                $filter(*self)
            }
        }
    )*};
}

int_field!(
    u8 => FieldKind::Unsigned(8), |v| Val::Int(v as i128);
    u16 => FieldKind::Unsigned(16), |v| Val::Int(v as i128);
    u32 => FieldKind::Unsigned(32), |v| Val::Int(v as i128);
    u64 => FieldKind::Unsigned(64), |v| Val::Int(v as i128);
    i8 => FieldKind::Signed(8), |v| Val::Int(v as i128);
    i16 => FieldKind::Signed(16), |v| Val::Int(v as i128);
    i32 => FieldKind::Signed(32), |v| Val::Int(v as i128);
    i64 => FieldKind::Signed(64), |v| Val::Int(v as i128);
    f32 => FieldKind::F32, |v| Val::Float(v as f64);
    f64 => FieldKind::F64, Val::Float
);

impl FieldValue for usize {
    const KIND: FieldKind = FieldKind::Unsigned(64);
    #[inline(always)]
    fn encoded_len(&self) -> usize {
        8
    }
    #[inline(always)]
    fn encode(&self, out: &mut [u8]) -> usize {
        (*self as u64).encode(out)
    }
    #[inline(always)]
    fn filter_value(&self) -> Val<'_> {
        Val::Int(*self as i128)
    }
}

impl FieldValue for isize {
    const KIND: FieldKind = FieldKind::Signed(64);
    #[inline(always)]
    fn encoded_len(&self) -> usize {
        8
    }
    #[inline(always)]
    fn encode(&self, out: &mut [u8]) -> usize {
        (*self as i64).encode(out)
    }
    #[inline(always)]
    fn filter_value(&self) -> Val<'_> {
        Val::Int(*self as i128)
    }
}

impl FieldValue for bool {
    const KIND: FieldKind = FieldKind::Bool;
    #[inline(always)]
    fn encoded_len(&self) -> usize {
        1
    }
    #[inline(always)]
    fn encode(&self, out: &mut [u8]) -> usize {
        out[0] = *self as u8;
        1
    }
    #[inline(always)]
    fn filter_value(&self) -> Val<'_> {
        Val::Int(*self as i128)
    }
}

/// The bytes of `s` a record holds: up to its first NUL, if any. Short
/// strings (most field values) are scanned inline, a word at a time.
#[inline(always)]
fn str_body(s: &str) -> &[u8] {
    let b = s.as_bytes();
    let n = if b.len() <= 32 {
        first_nul_short(b)
    } else {
        s.find('\0').unwrap_or(b.len())
    };
    &b[..n]
}

/// Index of the first NUL byte of `b` (its length if none), eight bytes at
/// a time: in `(w - 0x01…01) & !w & 0x80…80` the lowest set bit is in the
/// first zero byte (bits above it may be false positives, never below).
#[inline(always)]
fn first_nul_short(b: &[u8]) -> usize {
    if b.len() < 8 {
        return b.iter().position(|&c| c == 0).unwrap_or(b.len());
    }
    let mut at = 0;
    while at + 8 <= b.len() {
        if let Some(i) = zero_in_word(b, at) {
            return i;
        }
        at += 8;
    }
    // The last, overlapping word: its bytes before `at` hold no NUL.
    if at < b.len() {
        if let Some(i) = zero_in_word(b, b.len() - 8) {
            return i;
        }
    }
    b.len()
}

/// The first NUL among `b[at..at + 8]`, if any (see [`first_nul_short`]).
#[inline(always)]
fn zero_in_word(b: &[u8], at: usize) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let w = u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let z = w.wrapping_sub(ONES) & !w & HIGHS;
    (z != 0).then(|| at + (z.trailing_zeros() / 8) as usize)
}

/// Copies `src` to the start of `out`; up to 32 bytes with two
/// overlapping fixed-size moves instead of a call to `memcpy`. The moves go
/// through integers: `copy_from_slice`s of different constant sizes in the
/// arms get merged by the optimizer into one `memcpy` of variable size.
#[inline(always)]
fn copy_short(out: &mut [u8], src: &[u8]) {
    macro_rules! two_moves {
        ($t:ty, $w:expr) => {{
            let n = src.len();
            let head = <$t>::from_ne_bytes(src[..$w].try_into().unwrap());
            let tail = <$t>::from_ne_bytes(src[n - $w..].try_into().unwrap());
            out[..$w].copy_from_slice(&head.to_ne_bytes());
            out[n - $w..n].copy_from_slice(&tail.to_ne_bytes());
        }};
    }
    match src.len() {
        4..=7 => two_moves!(u32, 4),
        8..=16 => two_moves!(u64, 8),
        17..=32 => two_moves!(u128, 16),
        n => out[..n].copy_from_slice(src),
    }
}

impl FieldValue for &str {
    const KIND: FieldKind = FieldKind::Str;
    #[inline(always)]
    fn encoded_len(&self) -> usize {
        str_body(self).len() + 1
    }
    #[inline(always)]
    fn encode(&self, out: &mut [u8]) -> usize {
        let b = str_body(self);
        copy_short(out, b);
        out[b.len()] = 0;
        b.len() + 1
    }
    /// The text as the record holds it: up to its first NUL.
    #[inline(always)]
    fn filter_value(&self) -> Val<'_> {
        Val::Text(str_body(self))
    }
}

/// Longest byte sequence a record holds; longer ones are cut (a record never
/// exceeds a sub-buffer anyway).
pub const MAX_BYTES: usize = u32::MAX as usize;

impl FieldValue for &[u8] {
    const KIND: FieldKind = FieldKind::Bytes;
    #[inline(always)]
    fn encoded_len(&self) -> usize {
        4 + self.len().min(MAX_BYTES)
    }
    #[inline(always)]
    fn encode(&self, out: &mut [u8]) -> usize {
        let n = self.len().min(MAX_BYTES);
        out[..4].copy_from_slice(&(n as u32).to_le_bytes());
        copy_short(&mut out[4..], &self[..n]);
        4 + n
    }
    /// Byte sequences are not compared by filters.
    #[inline(always)]
    fn filter_value(&self) -> Val<'_> {
        Val::Absent
    }
}

/// The fields of one event as `event!` passes them: a tuple of up to 32
/// field values, serialized in order. Its methods are inlined into the
/// record path (a closure there may be left out of line by the compiler).
pub trait Fields {
    /// Bytes the fields take in the record.
    fn encoded_len(&self) -> usize;
    /// Writes them at the start of `out` (at least `encoded_len` bytes).
    fn encode(&self, out: &mut [u8]);
    /// Field `i`'s value as a filter compares it ([`Val::Absent`] past
    /// the last).
    fn value(&self, i: usize) -> Val<'_>;
    /// How many fields there are, where known (`usize::MAX`: not known).
    const COUNT: usize = usize::MAX;
}

macro_rules! tuple_fields {
    ($(($($n:tt $T:ident),*);)*) => {$(
        impl<$($T: FieldValue),*> Fields for ($($T,)*) {
            const COUNT: usize = 0 $(+ { let _ = $n; 1 })*;
            #[inline(always)]
            fn encoded_len(&self) -> usize {
                0 $(+ self.$n.encoded_len())*
            }
            #[inline(always)]
            #[allow(unused_variables, unused_mut, unused_assignments)]
            fn encode(&self, out: &mut [u8]) {
                let mut at = 0;
                $(at += self.$n.encode(&mut out[at..]);)*
            }
            #[inline]
            #[allow(unused_variables)]
            fn value(&self, i: usize) -> Val<'_> {
                match i {
                    $($n => self.$n.filter_value(),)*
                    _ => Val::Absent,
                }
            }
        }
    )*};
}

tuple_fields! {
    ();
    (0 T0);
    (0 T0, 1 T1);
    (0 T0, 1 T1, 2 T2);
    (0 T0, 1 T1, 2 T2, 3 T3);
    (0 T0, 1 T1, 2 T2, 3 T3, 4 T4);
    (0 T0, 1 T1, 2 T2, 3 T3, 4 T4, 5 T5);
    (0 T0, 1 T1, 2 T2, 3 T3, 4 T4, 5 T5, 6 T6);
    (0 T0, 1 T1, 2 T2, 3 T3, 4 T4, 5 T5, 6 T6, 7 T7);
    (0 T0, 1 T1, 2 T2, 3 T3, 4 T4, 5 T5, 6 T6, 7 T7, 8 T8);
    (0 T0, 1 T1, 2 T2, 3 T3, 4 T4, 5 T5, 6 T6, 7 T7, 8 T8, 9 T9);
    (0 T0, 1 T1, 2 T2, 3 T3, 4 T4, 5 T5, 6 T6, 7 T7, 8 T8, 9 T9, 10 T10);
    (0 T0, 1 T1, 2 T2, 3 T3, 4 T4, 5 T5, 6 T6, 7 T7, 8 T8, 9 T9, 10 T10, 11 T11);
    (0 T0, 1 T1, 2 T2, 3 T3, 4 T4, 5 T5, 6 T6, 7 T7, 8 T8, 9 T9, 10 T10, 11 T11, 12 T12);
    (0 T0, 1 T1, 2 T2, 3 T3, 4 T4, 5 T5, 6 T6, 7 T7, 8 T8, 9 T9, 10 T10, 11 T11, 12 T12, 13 T13);
    (0 T0, 1 T1, 2 T2, 3 T3, 4 T4, 5 T5, 6 T6, 7 T7, 8 T8, 9 T9, 10 T10, 11 T11, 12 T12, 13 T13, 14 T14);
    (0 T0, 1 T1, 2 T2, 3 T3, 4 T4, 5 T5, 6 T6, 7 T7, 8 T8, 9 T9, 10 T10, 11 T11, 12 T12, 13 T13, 14 T14, 15 T15);
    (0 T0, 1 T1, 2 T2, 3 T3, 4 T4, 5 T5, 6 T6, 7 T7, 8 T8, 9 T9, 10 T10, 11 T11, 12 T12, 13 T13, 14 T14, 15 T15, 16 T16);
    (0 T0, 1 T1, 2 T2, 3 T3, 4 T4, 5 T5, 6 T6, 7 T7, 8 T8, 9 T9, 10 T10, 11 T11, 12 T12, 13 T13, 14 T14, 15 T15, 16 T16, 17 T17);
    (0 T0, 1 T1, 2 T2, 3 T3, 4 T4, 5 T5, 6 T6, 7 T7, 8 T8, 9 T9, 10 T10, 11 T11, 12 T12, 13 T13, 14 T14, 15 T15, 16 T16, 17 T17, 18 T18);
    (0 T0, 1 T1, 2 T2, 3 T3, 4 T4, 5 T5, 6 T6, 7 T7, 8 T8, 9 T9, 10 T10, 11 T11, 12 T12, 13 T13, 14 T14, 15 T15, 16 T16, 17 T17, 18 T18, 19 T19);
    (0 T0, 1 T1, 2 T2, 3 T3, 4 T4, 5 T5, 6 T6, 7 T7, 8 T8, 9 T9, 10 T10, 11 T11, 12 T12, 13 T13, 14 T14, 15 T15, 16 T16, 17 T17, 18 T18, 19 T19, 20 T20);
    (0 T0, 1 T1, 2 T2, 3 T3, 4 T4, 5 T5, 6 T6, 7 T7, 8 T8, 9 T9, 10 T10, 11 T11, 12 T12, 13 T13, 14 T14, 15 T15, 16 T16, 17 T17, 18 T18, 19 T19, 20 T20, 21 T21);
    (0 T0, 1 T1, 2 T2, 3 T3, 4 T4, 5 T5, 6 T6, 7 T7, 8 T8, 9 T9, 10 T10, 11 T11, 12 T12, 13 T13, 14 T14, 15 T15, 16 T16, 17 T17, 18 T18, 19 T19, 20 T20, 21 T21, 22 T22);
    (0 T0, 1 T1, 2 T2, 3 T3, 4 T4, 5 T5, 6 T6, 7 T7, 8 T8, 9 T9, 10 T10, 11 T11, 12 T12, 13 T13, 14 T14, 15 T15, 16 T16, 17 T17, 18 T18, 19 T19, 20 T20, 21 T21, 22 T22, 23 T23);
    (0 T0, 1 T1, 2 T2, 3 T3, 4 T4, 5 T5, 6 T6, 7 T7, 8 T8, 9 T9, 10 T10, 11 T11, 12 T12, 13 T13, 14 T14, 15 T15, 16 T16, 17 T17, 18 T18, 19 T19, 20 T20, 21 T21, 22 T22, 23 T23, 24 T24);
    (0 T0, 1 T1, 2 T2, 3 T3, 4 T4, 5 T5, 6 T6, 7 T7, 8 T8, 9 T9, 10 T10, 11 T11, 12 T12, 13 T13, 14 T14, 15 T15, 16 T16, 17 T17, 18 T18, 19 T19, 20 T20, 21 T21, 22 T22, 23 T23, 24 T24, 25 T25);
    (0 T0, 1 T1, 2 T2, 3 T3, 4 T4, 5 T5, 6 T6, 7 T7, 8 T8, 9 T9, 10 T10, 11 T11, 12 T12, 13 T13, 14 T14, 15 T15, 16 T16, 17 T17, 18 T18, 19 T19, 20 T20, 21 T21, 22 T22, 23 T23, 24 T24, 25 T25, 26 T26);
    (0 T0, 1 T1, 2 T2, 3 T3, 4 T4, 5 T5, 6 T6, 7 T7, 8 T8, 9 T9, 10 T10, 11 T11, 12 T12, 13 T13, 14 T14, 15 T15, 16 T16, 17 T17, 18 T18, 19 T19, 20 T20, 21 T21, 22 T22, 23 T23, 24 T24, 25 T25, 26 T26, 27 T27);
    (0 T0, 1 T1, 2 T2, 3 T3, 4 T4, 5 T5, 6 T6, 7 T7, 8 T8, 9 T9, 10 T10, 11 T11, 12 T12, 13 T13, 14 T14, 15 T15, 16 T16, 17 T17, 18 T18, 19 T19, 20 T20, 21 T21, 22 T22, 23 T23, 24 T24, 25 T25, 26 T26, 27 T27, 28 T28);
    (0 T0, 1 T1, 2 T2, 3 T3, 4 T4, 5 T5, 6 T6, 7 T7, 8 T8, 9 T9, 10 T10, 11 T11, 12 T12, 13 T13, 14 T14, 15 T15, 16 T16, 17 T17, 18 T18, 19 T19, 20 T20, 21 T21, 22 T22, 23 T23, 24 T24, 25 T25, 26 T26, 27 T27, 28 T28, 29 T29);
    (0 T0, 1 T1, 2 T2, 3 T3, 4 T4, 5 T5, 6 T6, 7 T7, 8 T8, 9 T9, 10 T10, 11 T11, 12 T12, 13 T13, 14 T14, 15 T15, 16 T16, 17 T17, 18 T18, 19 T19, 20 T20, 21 T21, 22 T22, 23 T23, 24 T24, 25 T25, 26 T26, 27 T27, 28 T28, 29 T29, 30 T30);
    (0 T0, 1 T1, 2 T2, 3 T3, 4 T4, 5 T5, 6 T6, 7 T7, 8 T8, 9 T9, 10 T10, 11 T11, 12 T12, 13 T13, 14 T14, 15 T15, 16 T16, 17 T17, 18 T18, 19 T19, 20 T20, 21 T21, 22 T22, 23 T23, 24 T24, 25 T25, 26 T26, 27 T27, 28 T28, 29 T29, 30 T30, 31 T31);
}

/// A field's value as a filter compares it (`crate::filter`): what an
/// operand takes for one event.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Val<'a> {
    /// An integer (every integer, enumeration and boolean field).
    Int(i128),
    /// A floating-point number.
    Float(f64),
    /// A text: its bytes, without a terminating NUL.
    Text(&'a [u8]),
    /// No value: a field the event lacks, or one no filter compares (a
    /// byte sequence, a structure). Every comparison with it is false.
    Absent,
}

impl Val<'_> {
    /// C's truth: a number other than 0; never a text or nothing.
    pub fn truth(self) -> bool {
        match self {
            Val::Int(x) => x != 0,
            Val::Float(x) => x != 0.0,
            Val::Text(_) | Val::Absent => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctf::value::{decode, Value};

    fn round_trip<T: FieldValue>(v: T) -> Value {
        let mut buf = vec![0u8; v.encoded_len()];
        assert_eq!(v.encode(&mut buf), buf.len());
        let mut off = 0;
        let d = decode(&T::KIND.ctf_type(), &buf, &mut off).unwrap();
        assert_eq!(off, buf.len(), "decoder consumed exactly the record");
        d
    }

    #[test]
    fn strings_are_cut_at_their_first_nul_wherever_it_is() {
        for n in 0..=40usize {
            for nul in 0..n {
                let mut b: Vec<u8> = (0..n).map(|i| b'a' + (i % 26) as u8).collect();
                b[nul] = 0;
                // A second NUL later must not matter.
                if nul + 3 < n {
                    b[nul + 3] = 0;
                }
                let s = std::str::from_utf8(&b).unwrap();
                assert_eq!(first_nul_short(&b), nul, "length {n}");
                assert_eq!(str_body(s), &b[..nul], "length {n}, NUL at {nul}");
            }
            let clean = "x".repeat(n);
            assert_eq!(first_nul_short(clean.as_bytes()), n);
            assert_eq!(str_body(&clean).len(), n);
        }
        // Bytes with the high bit set (UTF-8) next to a NUL: no false match.
        let s = "é\0é";
        assert_eq!(str_body(s), "é".as_bytes());
        let s = "ééééé\0";
        assert_eq!(str_body(s), "ééééé".as_bytes());
    }

    #[test]
    fn a_tuple_of_fields_encodes_each_in_order() {
        let f = (7u8, "ab", -1i32, &[9u8][..], true);
        assert_eq!(f.encoded_len(), 1 + 3 + 4 + 5 + 1);
        let mut out = vec![0xaa; f.encoded_len()];
        f.encode(&mut out);
        assert_eq!(
            out,
            [7, b'a', b'b', 0, 255, 255, 255, 255, 1, 0, 0, 0, 9, 1]
        );
        assert_eq!(().encoded_len(), 0);
        ().encode(&mut []);
    }

    #[test]
    fn every_kind_decodes_as_its_ctf_type() {
        assert_eq!(round_trip(0xfeu8), Value::Uint(0xfe));
        assert_eq!(round_trip(u64::MAX), Value::Uint(u64::MAX));
        assert_eq!(round_trip(-5i16), Value::Int(-5));
        assert_eq!(round_trip(i64::MIN), Value::Int(i64::MIN));
        assert_eq!(round_trip(usize::MAX), Value::Uint(u64::MAX));
        assert_eq!(round_trip(1.5f32), Value::F32(1.5));
        assert_eq!(round_trip(-2.25f64), Value::F64(-2.25));
        assert_eq!(round_trip(true), Value::Bool(true));
        assert_eq!(round_trip("héllo"), Value::Str("héllo".into()));
        assert_eq!(round_trip("cut\0here"), Value::Str("cut".into()));
        for n in 0..=40 {
            let long: String = (0..n).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
            assert_eq!(
                round_trip(long.as_str()),
                Value::Str(long.clone()),
                "length {n}"
            );
            let bytes: Vec<u8> = (0..n as u8).collect();
            assert_eq!(
                round_trip(&bytes[..]),
                Value::UintArray(bytes.iter().map(|&b| b as u64).collect()),
                "length {n}"
            );
        }
        assert_eq!(
            round_trip(&[1u8, 2, 255][..]),
            Value::UintArray(vec![1, 2, 255])
        );
    }
}
