//! Values made of other values: structures, variants (their option
//! chosen by a tag decoded before them) and arrays of elements other than
//! integers.

use super::{decode, decode_into, DecodeError, Value};
use crate::types::{FieldType, VariantType};

/// Whether a field of `ty` holds a variant, whose size depends on a value
/// before it (stepping over it means decoding its tag).
pub fn has_variant(ty: &FieldType) -> bool {
    match ty {
        FieldType::Variant(_) => true,
        FieldType::Struct(fields) => fields.iter().any(|f| has_variant(&f.ty)),
        _ => false,
    }
}

/// Decodes `n` elements at `*off` (each at its alignment). Every element
/// takes a byte at least (`resolve.rs` refuses empty ones), so `n` beyond
/// the bytes left is an error before anything is allocated.
pub(super) fn decode_elements(
    e: &crate::types::Field,
    n: u64,
    b: &[u8],
    off: &mut usize,
) -> Result<Value, DecodeError> {
    if n > b.len().saturating_sub(*off) as u64 {
        return Err(DecodeError::SequenceLength(n));
    }
    let mut vals = Vec::with_capacity(n as usize);
    for _ in 0..n {
        *off = off.next_multiple_of(e.align as usize);
        vals.push(decode(&e.ty, b, off)?);
    }
    Ok(Value::Array(vals))
}

/// Decodes the fields of a structure at `*off` (each at its alignment).
pub(super) fn decode_struct(
    fields: &[crate::types::Field],
    b: &[u8],
    off: &mut usize,
) -> Result<Value, DecodeError> {
    let mut vals = Vec::with_capacity(fields.len());
    for f in fields {
        *off = off.next_multiple_of(f.align as usize);
        decode_into(&f.ty, b, off, &mut vals)?;
    }
    Ok(Value::Struct(vals))
}

/// Decodes a variant at `*off`, its tag among `before` (the values of
/// the fields before it in its structure).
pub(super) fn decode_variant(
    v: &VariantType,
    before: &[Value],
    b: &[u8],
    off: &mut usize,
) -> Result<Value, DecodeError> {
    let tag = match before.get(v.tag) {
        Some(Value::Enum(x)) => *x,
        _ => return Err(DecodeError::VariantTag(v.tag_name.clone(), i64::MIN)),
    };
    let Some(&(_, _, i)) = v.choices.iter().find(|c| c.0 <= tag && tag <= c.1) else {
        return Err(DecodeError::VariantTag(v.tag_name.clone(), tag));
    };
    let f = &v.options[i];
    *off = off.next_multiple_of(f.align as usize);
    let mut one = Vec::with_capacity(1);
    decode_into(&f.ty, b, off, &mut one)?;
    Ok(Value::Variant(
        i,
        Box::new(one.pop().expect("one value decoded")),
    ))
}
