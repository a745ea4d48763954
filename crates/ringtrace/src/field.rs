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

/// The bytes of `s` a record holds: up to its first NUL, if any.
#[inline(always)]
fn str_body(s: &str) -> &[u8] {
    let b = s.as_bytes();
    match s.find('\0') {
        Some(n) => &b[..n],
        None => b,
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
        out[..b.len()].copy_from_slice(b);
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
        out[4..4 + n].copy_from_slice(&self[..n]);
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
        assert_eq!(
            round_trip(&[1u8, 2, 255][..]),
            Value::UintArray(vec![1, 2, 255])
        );
    }
}
