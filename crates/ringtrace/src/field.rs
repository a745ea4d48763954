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
}

impl FieldKind {
    /// The CTF type of the field.
    pub fn ctf_type(self) -> FieldType {
        match self {
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
}

macro_rules! int_field {
    ($($t:ty => $kind:expr),*) => {$(
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
        }
    )*};
}

int_field!(
    u8 => FieldKind::Unsigned(8), u16 => FieldKind::Unsigned(16),
    u32 => FieldKind::Unsigned(32), u64 => FieldKind::Unsigned(64),
    i8 => FieldKind::Signed(8), i16 => FieldKind::Signed(16),
    i32 => FieldKind::Signed(32), i64 => FieldKind::Signed(64),
    f32 => FieldKind::F32, f64 => FieldKind::F64
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
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let zero_at = |at: usize| {
        let w = u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
        let z = w.wrapping_sub(ONES) & !w & HIGHS;
        (z != 0).then(|| at + (z.trailing_zeros() / 8) as usize)
    };
    if b.len() < 8 {
        return b.iter().position(|&c| c == 0).unwrap_or(b.len());
    }
    let mut at = 0;
    while at + 8 <= b.len() {
        if let Some(i) = zero_at(at) {
            return i;
        }
        at += 8;
    }
    // The last, overlapping word: its bytes before `at` hold no NUL.
    if at < b.len() {
        if let Some(i) = zero_at(b.len() - 8) {
            return i;
        }
    }
    b.len()
}

/// Copies `src` to the start of `out`; up to 32 bytes with two
/// overlapping fixed-size moves instead of a call to `memcpy`.
#[inline(always)]
fn copy_short(out: &mut [u8], src: &[u8]) {
    let n = src.len();
    match n {
        4..=7 => {
            out[..4].copy_from_slice(&src[..4]);
            out[n - 4..n].copy_from_slice(&src[n - 4..]);
        }
        8..=16 => {
            out[..8].copy_from_slice(&src[..8]);
            out[n - 8..n].copy_from_slice(&src[n - 8..]);
        }
        17..=32 => {
            out[..16].copy_from_slice(&src[..16]);
            out[n - 16..n].copy_from_slice(&src[n - 16..]);
        }
        _ => out[..n].copy_from_slice(src),
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
