//! Bit fields in a structure: integers of any size aligned below a byte,
//! placed in runs (CTF 1.8 section 4.1.5; `resolve.rs` places the other
//! fields).

use super::grammar::Ty;
use crate::types::{BitField, EnumMapping, Field, FieldType, IntType};

/// An integer or enumeration as a bit field: its integer type, its
/// alignment in bits and an enumeration's mappings.
pub(super) fn bit_int(t: &Ty) -> Option<(IntType, u32, Option<Vec<EnumMapping>>)> {
    let (int, maps) = match t {
        Ty::Enum { container, maps } => (&**container, Some(maps)),
        t => (t, None),
    };
    let Ty::Int {
        size,
        signed,
        base,
        align,
        be,
        ..
    } = int
    else {
        return None;
    };
    let it = IntType {
        bits: *size as u8,
        signed: *signed,
        base: *base as u8,
        be: *be,
    };
    let maps = maps.map(|m| {
        m.iter()
            .map(|(l, a, b)| EnumMapping {
                label: l.clone(),
                start: *a as i64,
                end: *b as i64,
            })
            .collect()
    });
    Some((it, *align, maps))
}

/// Whether a field of `ty` may end inside a byte (a structure whose last
/// fields are bit fields of a size that is not whole bytes, a sequence of
/// such integers).
pub(super) fn ends_mid_byte(ty: &FieldType) -> bool {
    match ty {
        FieldType::Bits(f) => {
            let bits = f.int.bits as u32 * f.count.unwrap_or(1);
            f.last && !(f.at + bits).is_multiple_of(8)
        }
        FieldType::Sequence(t) | FieldType::SequenceOf { elem: t, .. } => t.is_packed(),
        FieldType::Struct(fields) => fields.last().is_some_and(|f| ends_mid_byte(&f.ty)),
        _ => false,
    }
}

/// Bits a run of bit fields may hold (its offsets are `u32` bits; a run
/// is one of an event's fields, far below this).
const MAX_RUN_BITS: u64 = 1 << 27;

/// The run of bit fields being placed: where it starts among the fields
/// and the bits it holds so far.
pub(super) struct Run {
    pub first: usize,
    pub bits: u32,
}

/// Ends the run of bit fields `out[run.first..]`: each learns the run's
/// size in bytes, and the last one that it is last.
pub(super) fn close_run(run: Option<Run>, out: &mut [Field]) {
    let Some(run) = run else { return };
    let bytes = run.bits.div_ceil(8);
    let n = out.len();
    for (i, f) in out[run.first..].iter_mut().enumerate() {
        if let FieldType::Bits(b) = &mut f.ty {
            b.run = bytes;
            b.last = run.first + i + 1 == n;
        }
    }
}

/// Places field `name` of type `ty` at the next bit of the run when it is
/// a bit field (an integer not of whole bytes, or one aligned below a byte
/// right after one, or an array of such integers): `false` when it is not
/// one. `first_align` is its byte alignment if it is the first field of
/// its structure.
pub(super) fn place_bit_field(
    run: &mut Option<Run>,
    out: &mut Vec<Field>,
    name: &str,
    ty: &Ty,
    first_align: u8,
) -> Result<bool, String> {
    // An array's elements follow one another bit after bit, from where
    // the array starts.
    let (one, count) = match ty {
        Ty::Array { elem, len } => (&**elem, Some(*len)),
        t => (t, None),
    };
    let Some((it, align, maps)) = bit_int(one) else {
        return Ok(false);
    };
    if (2..8).contains(&align) {
        return Err("integer aligned on 2 to 7 bits".into());
    }
    if it.bits.is_multiple_of(8) && (run.is_none() || align >= 8) {
        return Ok(false);
    }
    let count = match count {
        None => None,
        Some(_) if maps.is_some() => {
            return Err("an array of enumerations smaller than a byte".into())
        }
        Some(n) => Some(
            u32::try_from(n)
                .ok()
                .filter(|&n| u64::from(n) * u64::from(it.bits) <= MAX_RUN_BITS)
                .ok_or("an array of bit fields longer than a run may be")?,
        ),
    };
    let at = match run {
        Some(r) if align < 8 => r.bits,
        _ => {
            close_run(run.take(), out);
            0
        }
    };
    let r = run.get_or_insert(Run {
        first: out.len(),
        bits: 0,
    });
    r.bits = at + it.bits as u32 * count.unwrap_or(1);
    if u64::from(r.bits) > MAX_RUN_BITS {
        return Err("a run of bit fields longer than 16 MiB".into());
    }
    // A run starts at a byte, aligned as its first integer says.
    let align = match (at, out.is_empty()) {
        (0, true) => first_align,
        (0, false) => (align / 8).clamp(1, 64) as u8,
        _ => 1,
    };
    out.push(Field {
        name: name.to_owned(),
        ty: FieldType::Bits(Box::new(BitField {
            int: it,
            maps,
            at,
            run: 0,
            last: false,
            count,
        })),
        length: None,
        align,
    });
    Ok(true)
}
