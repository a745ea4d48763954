//! Encoding values into the payload bytes their field types describe
//! (what tests and fuzzers write to read back).

use super::bits::{put_bit_array, put_bits, put_packed};
use super::{TypeMismatch, Value};
use crate::types::{FieldType, IntType};

fn put_int(t: &IntType, v: u64, out: &mut Vec<u8>) {
    let n = t.bytes();
    if t.be {
        out.extend_from_slice(&v.to_be_bytes()[8 - n..]);
    } else {
        out.extend_from_slice(&v.to_le_bytes()[..n]);
    }
}

/// Appends the encoding of `v` as `ty`.
pub fn encode(ty: &FieldType, v: &Value, out: &mut Vec<u8>) -> Result<(), TypeMismatch> {
    let mismatch = || TypeMismatch(format!("{ty:?}"));
    match (ty, v) {
        (FieldType::Int(t), Value::Uint(x)) if !t.signed => put_int(t, *x, out),
        (FieldType::Int(t), Value::Int(x)) if t.signed => put_int(t, *x as u64, out),
        (FieldType::F32, Value::F32(x)) => out.extend_from_slice(&x.to_bits().to_le_bytes()),
        (FieldType::F64, Value::F64(x)) => out.extend_from_slice(&x.to_bits().to_le_bytes()),
        (FieldType::F32Be, Value::F32(x)) => out.extend_from_slice(&x.to_bits().to_be_bytes()),
        (FieldType::F64Be, Value::F64(x)) => out.extend_from_slice(&x.to_bits().to_be_bytes()),
        (FieldType::Bool, Value::Bool(x)) => out.push(u8::from(*x)),
        (FieldType::Enum(t, _), Value::Enum(x)) => put_int(t, *x as u64, out),
        (FieldType::Bits(f), Value::UintArray(xs)) if f.count.is_some() && !f.int.signed => {
            put_bit_array(f, xs, out)?
        }
        (FieldType::Bits(f), Value::IntArray(xs)) if f.count.is_some() && f.int.signed => {
            let xs: Vec<u64> = xs.iter().map(|&x| x as u64).collect();
            put_bit_array(f, &xs, out)?
        }
        (FieldType::Bits(f), _) if f.count.is_some() => return Err(mismatch()),
        (FieldType::Bits(f), Value::Enum(x)) if f.maps.is_some() => put_bits(f, *x as u64, out)?,
        (FieldType::Bits(f), Value::Uint(x)) if f.maps.is_none() && !f.int.signed => {
            put_bits(f, *x, out)?
        }
        (FieldType::Bits(f), Value::Int(x)) if f.maps.is_none() && f.int.signed => {
            put_bits(f, *x as u64, out)?
        }
        (FieldType::String, Value::Str(s)) => {
            if s.as_bytes().contains(&0) {
                return Err(mismatch());
            }
            out.extend_from_slice(s.as_bytes());
            out.push(0);
        }
        (FieldType::String, Value::RawStr(s)) => {
            if s.contains(&0) {
                return Err(mismatch());
            }
            out.extend_from_slice(s);
            out.push(0);
        }
        (FieldType::Text(n), Value::Str(_) | Value::RawStr(_)) => {
            let bytes = match v {
                Value::Str(s) => s.as_bytes(),
                Value::RawStr(r) => r,
                _ => unreachable!("matched above"),
            };
            // Up to `n` bytes of text, NUL-padded; a NUL inside would end
            // it early when read back.
            if bytes.len() > *n as usize || bytes.contains(&0) {
                return Err(mismatch());
            }
            out.extend_from_slice(bytes);
            out.resize(out.len() + (*n as usize - bytes.len()), 0);
        }
        (FieldType::Struct(fs), Value::Struct(vs)) if fs.len() == vs.len() => {
            for (f, v) in fs.iter().zip(vs) {
                // Byte-aligned fields only: the encoder knows no position.
                if f.align > 1 {
                    return Err(mismatch());
                }
                encode(&f.ty, v, out)?;
            }
        }
        (FieldType::ArrayOf(e, n), Value::Array(vs)) if vs.len() == *n as usize && e.align == 1 => {
            for v in vs {
                encode(&e.ty, v, out)?;
            }
        }
        (FieldType::SequenceOfAny { len, elem }, Value::Array(vs)) if elem.align == 1 => {
            put_int(len, vs.len() as u64, out);
            for v in vs {
                encode(&elem.ty, v, out)?;
            }
        }
        (FieldType::Variant(vt), Value::Variant(i, v)) if *i < vt.options.len() => {
            encode(&vt.options[*i].ty, v, out)?
        }
        (
            FieldType::Array(..) | FieldType::Sequence(_) | FieldType::SequenceOf { .. },
            Value::UintArray(_) | Value::IntArray(_),
        ) => encode_ints(ty, v, out)?,
        (FieldType::TextSequence { len }, Value::Str(_) | Value::RawStr(_)) => {
            let bytes = match v {
                Value::Str(s) => s.as_bytes(),
                Value::RawStr(r) => r,
                _ => unreachable!("matched above"),
            };
            put_int(len, bytes.len() as u64, out);
            out.extend_from_slice(bytes);
        }
        _ => return Err(mismatch()),
    }
    Ok(())
}

/// Appends the encoding of an array or sequence of integers.
fn encode_ints(ty: &FieldType, v: &Value, out: &mut Vec<u8>) -> Result<(), TypeMismatch> {
    let mismatch = || TypeMismatch(format!("{ty:?}"));
    match (ty, v) {
        (FieldType::Array(t, n), Value::UintArray(xs)) if !t.signed && xs.len() == *n as usize => {
            xs.iter().for_each(|x| put_int(t, *x, out))
        }
        (FieldType::Array(t, n), Value::IntArray(xs)) if t.signed && xs.len() == *n as usize => {
            xs.iter().for_each(|x| put_int(t, *x as u64, out))
        }
        (
            FieldType::Sequence(t) | FieldType::SequenceOf { elem: t, .. },
            Value::UintArray(_) | Value::IntArray(_),
        ) if t.is_packed() => {
            let len = match ty {
                FieldType::SequenceOf { len, .. } => *len,
                _ => IntType::unsigned(32),
            };
            let xs: Vec<u64> = match v {
                Value::UintArray(xs) if !t.signed => xs.clone(),
                Value::IntArray(xs) if t.signed => xs.iter().map(|&x| x as u64).collect(),
                _ => return Err(mismatch()),
            };
            put_int(&len, xs.len() as u64, out);
            put_packed(t, &xs, out)?
        }
        (FieldType::Sequence(t), Value::UintArray(xs)) if !t.signed => {
            out.extend_from_slice(&(xs.len() as u32).to_le_bytes());
            xs.iter().for_each(|x| put_int(t, *x, out))
        }
        (FieldType::Sequence(t), Value::IntArray(xs)) if t.signed => {
            out.extend_from_slice(&(xs.len() as u32).to_le_bytes());
            xs.iter().for_each(|x| put_int(t, *x as u64, out))
        }
        (FieldType::SequenceOf { len, elem }, Value::UintArray(xs)) if !elem.signed => {
            put_int(len, xs.len() as u64, out);
            xs.iter().for_each(|x| put_int(elem, *x, out))
        }
        (FieldType::SequenceOf { len, elem }, Value::IntArray(xs)) if elem.signed => {
            put_int(len, xs.len() as u64, out);
            xs.iter().for_each(|x| put_int(elem, *x as u64, out))
        }
        _ => return Err(mismatch()),
    }
    Ok(())
}
