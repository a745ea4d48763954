//! Field values: decoding the payload bytes the metadata describes (and
//! encoding into them: `encode.rs`). Integers are whole bytes in either byte order (bit
//! fields: `bits.rs`), strings NUL-terminated, sequences preceded by their
//! length; structures, variants and arrays of other things than integers
//! in `compound.rs`.

mod bits;
mod compound;

pub use compound::has_variant;
use compound::{decode_elements, decode_in, decode_struct, decode_variant, Scope};

mod encode;

pub use encode::encode;

use bits::{bits_value, read_bit_array, read_bits, read_packed};

use crate::types::{FieldType, IntType};

/// A decoded field value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// Unsigned integer.
    Uint(u64),
    /// Signed integer.
    Int(i64),
    /// binary32.
    F32(f32),
    /// binary64.
    F64(f64),
    /// Boolean.
    Bool(bool),
    /// Enumeration: the integer value (labels are in the class).
    Enum(i64),
    /// String.
    Str(String),
    /// A string whose bytes are not valid UTF-8 (C programs record any
    /// bytes), kept exactly as recorded; shown escaped.
    RawStr(Vec<u8>),
    /// Array or sequence of unsigned integers.
    UintArray(Vec<u64>),
    /// Array or sequence of signed integers.
    IntArray(Vec<i64>),
    /// A structure's values, in the order of its fields.
    Struct(Vec<Value>),
    /// An array or sequence of elements other than integers.
    Array(Vec<Value>),
    /// A variant: the index of the option its tag chose, and its value.
    Variant(usize, Box<Value>),
}

/// Why a payload could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The payload ends before the field does.
    #[error("field ends past the end of the packet content")]
    Truncated,
    /// A sequence is longer than the rest of the packet could hold.
    #[error("sequence length {0} exceeds the packet content")]
    SequenceLength(u64),
    /// A variant's tag has a value that selects none of its options.
    #[error("variant tag `{0}` has a value ({1}) that names no option")]
    VariantTag(String, i64),
}

/// The bits of big-endian floats.
const BE32: IntType = IntType {
    be: true,
    ..IntType::unsigned(32)
};
const BE64: IntType = IntType {
    be: true,
    ..IntType::unsigned(64)
};

#[inline(always)]
fn read_int(t: &IntType, b: &[u8], off: &mut usize) -> Result<u64, DecodeError> {
    let n = t.bytes();
    let s = b.get(*off..*off + n).ok_or(DecodeError::Truncated)?;
    let mut v = match (n, t.be) {
        (8, false) => u64::from_le_bytes(s.try_into().expect("8 bytes")),
        (4, false) => u32::from_le_bytes(s.try_into().expect("4 bytes")) as u64,
        (2, false) => u16::from_le_bytes(s.try_into().expect("2 bytes")) as u64,
        (1, _) => s[0] as u64,
        (_, false) => s
            .iter()
            .enumerate()
            .fold(0, |v, (i, x)| v | (*x as u64) << (8 * i)),
        // Big-endian: the first byte is the most significant.
        (_, true) => s.iter().fold(0, |v, x| v << 8 | *x as u64),
    };
    *off += n;
    if t.bits < 64 {
        v &= (1u64 << t.bits) - 1;
    }
    Ok(v)
}

fn sign_extend(v: u64, bits: u8) -> i64 {
    if bits >= 64 {
        v as i64
    } else {
        let sh = 64 - bits as u32;
        ((v << sh) as i64) >> sh
    }
}

fn int_value(t: &IntType, v: u64) -> Value {
    if t.signed {
        Value::Int(sign_extend(v, t.bits))
    } else {
        Value::Uint(v)
    }
}

/// Decodes one field at `*off` onto the end of `out`, advancing `*off`.
/// Integers, the common case, are written straight into the vector.
#[inline]
pub fn decode_into(
    ty: &FieldType,
    b: &[u8],
    off: &mut usize,
    out: &mut Vec<Value>,
) -> Result<(), DecodeError> {
    if let FieldType::Int(t) = ty {
        let v = read_int(t, b, off)?;
        out.reserve(1);
        let slot = &mut out.spare_capacity_mut()[0];
        if t.signed {
            slot.write(Value::Int(sign_extend(v, t.bits)));
        } else {
            slot.write(Value::Uint(v));
        }
        // SAFETY: `reserve(1)` made room for one more element and the line
        // above initialized it.
        unsafe { out.set_len(out.len() + 1) };
        return Ok(());
    }
    if let FieldType::Variant(_) | FieldType::Struct(_) = ty {
        // Their tags may be among the values before.
        return decode_in(ty, b, off, out, None);
    }
    out.push(decode(ty, b, off)?);
    Ok(())
}

/// Decodes one field into `out[i]` (pushing if `out` is shorter), reusing
/// the memory of a string already there: decoding event after event into
/// the same vector then allocates nothing.
#[inline]
pub fn decode_at(
    ty: &FieldType,
    b: &[u8],
    off: &mut usize,
    out: &mut Vec<Value>,
    i: usize,
) -> Result<(), DecodeError> {
    if i >= out.len() {
        out.truncate(i);
        return decode_into(ty, b, off, out);
    }
    if let FieldType::Variant(_) | FieldType::Struct(_) = ty {
        // Their tags may be among the values before.
        let (before, rest) = out.split_at_mut(i);
        rest[0] = match ty {
            FieldType::Variant(v) => decode_variant(v, before, None, b, off)?,
            FieldType::Struct(fields) => decode_struct(
                fields,
                b,
                off,
                Some(&Scope {
                    vals: before,
                    up: None,
                }),
            )?,
            _ => unreachable!("matched above"),
        };
        return Ok(());
    }
    match (ty, &mut out[i]) {
        (FieldType::String | FieldType::Text(_), slot) => {
            let bytes = match ty {
                FieldType::Text(n) => text(b, off, *n)?,
                _ => c_string(b, off)?,
            };
            // ASCII (the common case) is valid UTF-8; the full check only
            // runs on the rest.
            let text = if bytes.is_ascii() {
                // SAFETY: ASCII bytes are valid UTF-8.
                Some(unsafe { std::str::from_utf8_unchecked(bytes) })
            } else {
                std::str::from_utf8(bytes).ok()
            };
            match (text, slot) {
                (Some(t), Value::Str(s)) => {
                    s.clear();
                    s.push_str(t);
                }
                (Some(t), slot) => *slot = Value::Str(t.to_owned()),
                (None, Value::RawStr(r)) => {
                    r.clear();
                    r.extend_from_slice(bytes);
                }
                (None, slot) => *slot = Value::RawStr(bytes.to_vec()),
            }
        }
        (FieldType::Int(t), slot) => {
            let v = read_int(t, b, off)?;
            *slot = if t.signed {
                Value::Int(sign_extend(v, t.bits))
            } else {
                Value::Uint(v)
            };
        }
        (_, slot) => *slot = decode(ty, b, off)?,
    }
    Ok(())
}

/// The bytes of the NUL-terminated string at `*off` (without the NUL);
/// advances `*off` past the NUL.
#[inline]
fn c_string<'a>(b: &'a [u8], off: &mut usize) -> Result<&'a [u8], DecodeError> {
    let rest = b.get(*off..).ok_or(DecodeError::Truncated)?;
    let n = rest
        .iter()
        .position(|&c| c == 0)
        .ok_or(DecodeError::Truncated)?;
    *off += n + 1;
    Ok(&rest[..n])
}

/// The text of the `n`-byte text field at `*off`: its bytes up to the
/// first NUL (all `n` when there is none); advances `*off` by `n`.
#[inline]
fn text<'a>(b: &'a [u8], off: &mut usize, n: u32) -> Result<&'a [u8], DecodeError> {
    let end = off.checked_add(n as usize).ok_or(DecodeError::Truncated)?;
    let all = b.get(*off..end).ok_or(DecodeError::Truncated)?;
    *off = end;
    Ok(&all[..all.iter().position(|&c| c == 0).unwrap_or(all.len())])
}

/// Bytes a field of `ty` always takes, if it does not depend on its value.
pub fn fixed_size(ty: &FieldType) -> Option<usize> {
    match ty {
        FieldType::Int(t) | FieldType::Enum(t, _) => Some(t.bytes()),
        FieldType::F32 | FieldType::F32Be => Some(4),
        FieldType::F64 | FieldType::F64Be => Some(8),
        FieldType::Bool => Some(1),
        // A run's bytes are passed after its last field.
        FieldType::Bits(f) => Some(if f.last { f.run as usize } else { 0 }),
        FieldType::Array(t, n) => t.bytes().checked_mul(*n as usize),
        FieldType::Text(n) => Some(*n as usize),
        FieldType::Struct(fields) => fields.iter().try_fold(0usize, |n, f| {
            (f.align == 1).then_some(())?;
            n.checked_add(fixed_size(&f.ty)?)
        }),
        FieldType::ArrayOf(e, n) if e.align == 1 => fixed_size(&e.ty)?.checked_mul(*n as usize),
        FieldType::ArrayOf(..) | FieldType::SequenceOfAny { .. } => None,
        FieldType::String
        | FieldType::Sequence(_)
        | FieldType::SequenceOf { .. }
        | FieldType::TextSequence { .. }
        | FieldType::Variant(_) => None,
    }
}

/// Moves `*off` past one field of `ty` without decoding its value (what a
/// reader that only counts events needs): the same bounds checks as
/// [`decode`].
pub fn skip(ty: &FieldType, b: &[u8], off: &mut usize) -> Result<(), DecodeError> {
    let n = match ty {
        FieldType::String => {
            let rest = b.get(*off..).ok_or(DecodeError::Truncated)?;
            rest.iter()
                .position(|&c| c == 0)
                .ok_or(DecodeError::Truncated)?
                + 1
        }
        FieldType::Sequence(t) | FieldType::SequenceOf { elem: t, .. } => {
            let len = match ty {
                FieldType::SequenceOf { len, .. } => *len,
                _ => IntType::unsigned(32),
            };
            let count = read_int(&len, b, off)?;
            let bits = if t.is_packed() {
                t.bits as u64
            } else {
                8 * t.bytes() as u64
            };
            count
                .checked_mul(bits)
                .map(|n| n.div_ceil(8))
                .and_then(|n| usize::try_from(n).ok())
                .ok_or(DecodeError::SequenceLength(count))?
        }
        FieldType::TextSequence { len } => {
            let count = read_int(len, b, off)?;
            usize::try_from(count).map_err(|_| DecodeError::SequenceLength(count))?
        }
        FieldType::ArrayOf(e, _) | FieldType::SequenceOfAny { elem: e, .. } => {
            let n = match ty {
                FieldType::SequenceOfAny { len, .. } => read_int(len, b, off)?,
                FieldType::ArrayOf(_, n) => *n as u64,
                _ => 0,
            };
            if n > b.len().saturating_sub(*off) as u64 {
                return Err(DecodeError::SequenceLength(n));
            }
            for _ in 0..n {
                *off = off.next_multiple_of(e.align as usize);
                skip(&e.ty, b, off)?;
            }
            return Ok(());
        }
        FieldType::Struct(fields) => {
            if has_variant(ty) {
                decode_struct(fields, b, off, None)?;
            } else {
                for f in fields {
                    *off = off.next_multiple_of(f.align as usize);
                    skip(&f.ty, b, off)?;
                }
            }
            return Ok(());
        }
        // Its tag is a value before it: `StreamReader` decodes such a
        // payload instead of stepping over it.
        FieldType::Variant(v) => return Err(DecodeError::VariantTag(v.tag_name.clone(), i64::MIN)),
        other => fixed_size(other).ok_or(DecodeError::Truncated)?,
    };
    let end = off.checked_add(n).ok_or(DecodeError::Truncated)?;
    if end > b.len() {
        return Err(DecodeError::Truncated);
    }
    *off = end;
    Ok(())
}

/// The text of a text sequence's bytes: up to the first NUL.
pub fn text_before_nul(bytes: &[u8]) -> &[u8] {
    &bytes[..bytes.iter().position(|&c| c == 0).unwrap_or(bytes.len())]
}

/// Decodes one field at `*off`, advancing it.
pub fn decode(ty: &FieldType, b: &[u8], off: &mut usize) -> Result<Value, DecodeError> {
    Ok(match ty {
        FieldType::Int(t) => int_value(t, read_int(t, b, off)?),
        FieldType::F32 => Value::F32(f32::from_bits(
            read_int(&IntType::unsigned(32), b, off)? as u32
        )),
        FieldType::F64 => Value::F64(f64::from_bits(read_int(&IntType::unsigned(64), b, off)?)),
        FieldType::F32Be => Value::F32(f32::from_bits(read_int(&BE32, b, off)? as u32)),
        FieldType::F64Be => Value::F64(f64::from_bits(read_int(&BE64, b, off)?)),
        FieldType::Bool => Value::Bool(read_int(&IntType::unsigned(8), b, off)? != 0),
        FieldType::Bits(f) => match f.count {
            None => bits_value(f, read_bits(f, b, off)?),
            Some(n) => read_bit_array(f, n, b, off)?,
        },
        FieldType::Enum(t, _) => Value::Enum(if t.signed {
            sign_extend(read_int(t, b, off)?, t.bits)
        } else {
            read_int(t, b, off)? as i64
        }),
        FieldType::String | FieldType::Text(_) => {
            let bytes = match ty {
                FieldType::Text(n) => text(b, off, *n)?,
                _ => c_string(b, off)?,
            };
            match std::str::from_utf8(bytes) {
                Ok(s) => Value::Str(s.to_owned()),
                Err(_) => Value::RawStr(bytes.to_vec()),
            }
        }
        FieldType::Array(t, n) => int_array(t, *n as u64, b, off)?,
        FieldType::Struct(fields) => decode_struct(fields, b, off, None)?,
        FieldType::ArrayOf(e, n) => decode_elements(e, *n as u64, b, off)?,
        FieldType::SequenceOfAny { len, elem } => {
            let n = read_int(len, b, off)?;
            decode_elements(elem, n, b, off)?
        }
        // A variant alone has no tag to read (see `decode_into`).
        FieldType::Variant(v) => return Err(DecodeError::VariantTag(v.tag_name.clone(), i64::MIN)),
        FieldType::Sequence(t) => {
            let n = read_int(&IntType::unsigned(32), b, off)?;
            int_array(t, n, b, off)?
        }
        FieldType::SequenceOf { len, elem } => {
            let n = read_int(len, b, off)?;
            int_array(elem, n, b, off)?
        }
        FieldType::TextSequence { len } => {
            let n = read_int(len, b, off)?;
            let end = usize::try_from(n)
                .ok()
                .and_then(|n| off.checked_add(n))
                .ok_or(DecodeError::SequenceLength(n))?;
            let bytes = b.get(*off..end).ok_or(DecodeError::SequenceLength(n))?;
            *off = end;
            match std::str::from_utf8(bytes) {
                Ok(s) => Value::Str(s.to_owned()),
                Err(_) => Value::RawStr(bytes.to_vec()),
            }
        }
    })
}

fn int_array(t: &IntType, n: u64, b: &[u8], off: &mut usize) -> Result<Value, DecodeError> {
    let raw = if t.is_packed() {
        read_packed(t, n, b, off)?
    } else {
        let left = b.len().saturating_sub(*off) as u64;
        if n.saturating_mul(t.bytes() as u64) > left {
            return Err(DecodeError::SequenceLength(n));
        }
        (0..n)
            .map(|_| read_int(t, b, off))
            .collect::<Result<Vec<u64>, _>>()?
    };
    Ok(if t.signed {
        Value::IntArray(raw.into_iter().map(|v| sign_extend(v, t.bits)).collect())
    } else {
        Value::UintArray(raw)
    })
}

/// Why a value cannot be encoded as a field type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("value does not match field type {0}")]
pub struct TypeMismatch(pub String);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_that_are_not_utf8_keep_their_bytes() {
        // "caf\xe9" (Latin-1, not UTF-8), then "ok", then a NUL-less tail.
        let b = b"caf\xe9\0ok\0tail";
        let mut off = 0;
        assert_eq!(
            decode(&FieldType::String, b, &mut off),
            Ok(Value::RawStr(b"caf\xe9".to_vec()))
        );
        assert_eq!(off, 5);
        assert_eq!(
            decode(&FieldType::String, b, &mut off),
            Ok(Value::Str("ok".into()))
        );
        assert_eq!(
            decode(&FieldType::String, b, &mut off),
            Err(DecodeError::Truncated)
        );
        // In place, event after event: a slot goes from text to raw bytes
        // and back.
        let mut out = vec![Value::Str("old".into())];
        for (bytes, want) in [
            (&b"\xff\0"[..], Value::RawStr(vec![0xff])),
            (b"\xfe\xfd\0", Value::RawStr(vec![0xfe, 0xfd])),
            (b"text\0", Value::Str("text".into())),
        ] {
            let mut off = 0;
            decode_at(&FieldType::String, bytes, &mut off, &mut out, 0).unwrap();
            assert_eq!(out[0], want);
            assert_eq!(off, bytes.len());
        }
        // Raw strings encode back to the same bytes.
        let mut enc = Vec::new();
        encode(
            &FieldType::String,
            &Value::RawStr(b"caf\xe9".to_vec()),
            &mut enc,
        )
        .unwrap();
        assert_eq!(enc, b"caf\xe9\0");
    }
}
