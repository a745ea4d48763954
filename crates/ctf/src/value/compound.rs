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

/// The values of the structures around the one being decoded, innermost
/// first: where a variant's tag may be (see [`VariantType::up`]).
pub(super) struct Scope<'a> {
    /// The values decoded so far in that structure.
    pub vals: &'a [Value],
    /// The structure around it.
    pub up: Option<&'a Scope<'a>>,
}

/// Decodes one field onto the end of `out`, the values of its structure
/// so far, inside the structures `scope`.
pub(super) fn decode_in(
    ty: &FieldType,
    b: &[u8],
    off: &mut usize,
    out: &mut Vec<Value>,
    scope: Option<&Scope>,
) -> Result<(), DecodeError> {
    let v = match ty {
        FieldType::Variant(v) => decode_variant(v, out, scope, b, off)?,
        FieldType::Struct(fields) => decode_struct(
            fields,
            b,
            off,
            Some(&Scope {
                vals: out,
                up: scope,
            }),
        )?,
        _ => return decode_into(ty, b, off, out),
    };
    out.push(v);
    Ok(())
}

/// Decodes the fields of a structure at `*off` (each at its alignment),
/// inside the structures `scope`.
pub(super) fn decode_struct(
    fields: &[crate::types::Field],
    b: &[u8],
    off: &mut usize,
    scope: Option<&Scope>,
) -> Result<Value, DecodeError> {
    let mut vals = Vec::with_capacity(fields.len());
    for f in fields {
        *off = off.next_multiple_of(f.align as usize);
        decode_in(&f.ty, b, off, &mut vals, scope)?;
    }
    Ok(Value::Struct(vals))
}

/// Decodes a variant at `*off`, `before` the values of the fields before
/// it in its structure, `scope` the structures around.
pub(super) fn decode_variant(
    v: &VariantType,
    before: &[Value],
    scope: Option<&Scope>,
    b: &[u8],
    off: &mut usize,
) -> Result<Value, DecodeError> {
    let unset = || DecodeError::VariantTag(v.tag_name.clone(), i64::MIN);
    let mut level = before;
    let mut s = scope;
    for _ in 0..v.up {
        let x = s.ok_or_else(unset)?;
        level = x.vals;
        s = x.up;
    }
    let mut val = v.tag.first().and_then(|&k| level.get(k));
    for &j in v.tag.iter().skip(1) {
        val = match val {
            Some(Value::Struct(vs)) => vs.get(j),
            _ => None,
        };
    }
    let Some(Value::Enum(tag)) = val else {
        return Err(unset());
    };
    let tag = *tag;
    let Some(&(_, _, i)) = v.choices.iter().find(|c| c.0 <= tag && tag <= c.1) else {
        return Err(DecodeError::VariantTag(v.tag_name.clone(), tag));
    };
    let f = &v.options[i];
    *off = off.next_multiple_of(f.align as usize);
    // The option is a structure of its own inside the variant's (as
    // `parse/variant.rs` resolves it).
    let mut one = Vec::with_capacity(1);
    let here = Scope {
        vals: before,
        up: scope,
    };
    decode_in(&f.ty, b, off, &mut one, Some(&here))?;
    Ok(Value::Variant(
        i,
        Box::new(one.pop().expect("one value decoded")),
    ))
}
