//! What the type trees of the metadata mean to the reader: the packet
//! header and context it relies on, the event header's kind, and event
//! fields as [`Field`]s.

use super::bits::{bit_int, close_run, ends_mid_byte, place_bit_field, Run};
use super::grammar::{unescape, Pos, Ty};
use super::variant::{variant, Outer};
use crate::types::{
    EnumMapping, Field, FieldType, HeaderKind, IntType, PacketLayout, PlainHeader, Slot,
};

pub(super) use crate::types::is_identifier;

fn is_uint(t: &Ty, bits: u32) -> bool {
    matches!(t, Ty::Int { size, signed: false, .. } if *size == bits)
}

/// An 8-bit integer with a text encoding: arrays of them are text.
fn is_char(t: &Ty) -> bool {
    matches!(
        t,
        Ty::Int {
            size: 8,
            text: true,
            ..
        }
    )
}

fn names(fields: &[(String, Ty, Pos)]) -> Vec<&str> {
    fields.iter().map(|f| f.0.as_str()).collect()
}

fn align_up(bits: u64, align: u32) -> u64 {
    bits.next_multiple_of(align.max(1) as u64)
}

/// Size in bits of a type of fixed size (placed at an aligned offset);
/// `None` for strings, sequences and variants.
fn fixed_bits(t: &Ty) -> Option<u64> {
    match t {
        Ty::Int { size, .. } => Some(*size as u64),
        Ty::Float { exp, mant, .. } => Some((exp + mant) as u64),
        Ty::Enum { container, .. } => fixed_bits(container),
        Ty::Struct { fields, .. } => {
            let mut at = 0u64;
            for f in fields {
                at = align_up(at, f.1.align()).checked_add(fixed_bits(&f.1)?)?;
            }
            Some(at)
        }
        Ty::Array { elem, len } => {
            let one = align_up(fixed_bits(elem)?, elem.align());
            one.checked_mul(*len)
        }
        Ty::Str | Ty::Sequence { .. } | Ty::Variant { .. } => None,
    }
}

/// Fields with their offsets in bits.
type Placed<'a> = Vec<(&'a str, u64, &'a Ty)>;

/// The top-level fields of a fixed-size structure with their offsets in
/// bits from `start` (where the structure begins, aligned by the caller);
/// returns them and where the structure ends. `what` names it in errors.
fn placed<'a>(t: &'a Ty, start: u64, what: &str) -> Result<(Placed<'a>, u64), String> {
    let Ty::Struct { fields, .. } = t else {
        return Err(format!("{what} must be a structure"));
    };
    let mut at = start;
    let mut out = Vec::new();
    for (name, ty, _) in fields {
        at = align_up(at, ty.align());
        let Some(bits) = fixed_bits(ty) else {
            return Err(format!(
                "unsupported: {what} field `{name}` has no fixed size"
            ));
        };
        out.push((unescape(name), at, ty));
        at = at
            .checked_add(bits)
            .ok_or_else(|| format!("{what} too large"))?;
    }
    Ok((out, at))
}

/// A field the reader needs as a whole-byte unsigned integer of at most
/// 64 bits, at a byte offset.
fn slot(name: &str, bits_at: u64, t: &Ty, what: &str) -> Result<Slot, String> {
    let t = match t {
        Ty::Enum { container, .. } => container,
        t => t,
    };
    match t {
        Ty::Int { size, be, .. } if size.is_multiple_of(8) && bits_at.is_multiple_of(8) => {
            Ok(Slot {
                offset: u32::try_from(bits_at / 8).map_err(|_| format!("{what} too large"))?,
                ty: IntType {
                    bits: *size as u8,
                    signed: false,
                    base: 10,
                    be: *be,
                },
            })
        }
        _ => Err(format!(
            "unsupported: {what} field `{name}` is not a byte-aligned integer of whole bytes"
        )),
    }
}

/// Where a stream class's packets keep their header's and context's
/// fields (either may be absent); unknown fields of fixed size are
/// stepped over.
pub(super) fn packet_layout(
    header: Option<&Ty>,
    context: Option<&Ty>,
    big_endian: bool,
) -> Result<(PacketLayout, Vec<(Field, u32)>), String> {
    let mut shown = Vec::new();
    let mut l = PacketLayout {
        magic: None,
        uuid: None,
        stream_id: None,
        stream_instance_id: None,
        timestamp_begin: None,
        timestamp_end: None,
        content_size: None,
        packet_size: None,
        packet_seq_num: None,
        events_discarded: None,
        cpu_id: None,
        len: 0,
        big_endian,
    };
    let mut end = 0u64;
    for (t, what) in [(header, "packet header"), (context, "packet context")] {
        let Some(t) = t else { continue };
        let (fields, e) = placed(t, align_up(end, t.align()), what)?;
        end = e;
        for (name, at, ty) in fields {
            let s = |l: &mut Option<Slot>| -> Result<(), String> {
                *l = Some(slot(name, at, ty, what)?);
                Ok(())
            };
            match (what, name) {
                ("packet header", "magic") => s(&mut l.magic)?,
                ("packet header", "uuid") => {
                    let ok = matches!(ty, Ty::Array { elem, len: 16 }
                        if matches!(**elem, Ty::Int { size: 8, .. }))
                        && at.is_multiple_of(8);
                    if !ok {
                        return Err("unsupported: packet header `uuid` is not 16 bytes".into());
                    }
                    l.uuid = Some((at / 8) as u32);
                }
                ("packet header", "stream_id") => s(&mut l.stream_id)?,
                ("packet header", "stream_instance_id") => s(&mut l.stream_instance_id)?,
                ("packet context", "timestamp_begin") => s(&mut l.timestamp_begin)?,
                ("packet context", "timestamp_end") => s(&mut l.timestamp_end)?,
                ("packet context", "content_size") => s(&mut l.content_size)?,
                ("packet context", "packet_size") => s(&mut l.packet_size)?,
                ("packet context", "packet_seq_num") => s(&mut l.packet_seq_num)?,
                ("packet context", "events_discarded") => s(&mut l.events_discarded)?,
                ("packet context", "cpu_id") => s(&mut l.cpu_id)?,
                _ => {}
            }
            let defined = [
                "timestamp_begin",
                "timestamp_end",
                "content_size",
                "packet_size",
                "packet_seq_num",
                "events_discarded",
            ];
            if what == "packet context" && !defined.contains(&name) && at.is_multiple_of(8) {
                // Integers and enumerations are shown with the events
                // (others, rare in packet contexts, are stepped over).
                let ty = match ty {
                    Ty::Int { .. } => int_type(ty).map(FieldType::Int),
                    Ty::Enum { container, maps } => {
                        int_type(container).map(|it| enumeration(it, maps))
                    }
                    _ => None,
                };
                if let Some(ty) = ty {
                    shown.push((Field::new(name, ty), (at / 8) as u32));
                }
            }
        }
    }
    if !end.is_multiple_of(8) {
        return Err("unsupported: packet header and context end inside a byte".into());
    }
    l.len = u32::try_from(end / 8).map_err(|_| "packet context too large".to_owned())?;
    Ok((l, shown))
}

/// The clock that the first integer of `t` mapped to a clock counts
/// (`map = clock.NAME.value`), depth first.
pub(super) fn clock_of(t: &Ty) -> Option<&str> {
    match t {
        Ty::Int { clock, .. } => clock.as_deref(),
        Ty::Enum { container, .. } => clock_of(container),
        Ty::Struct { fields, .. } => fields.iter().find_map(|f| clock_of(&f.1)),
        Ty::Variant { options, .. } => options.iter().find_map(|f| clock_of(&f.1)),
        _ => None,
    }
}

/// The event header: LTTng's compact or large one (an enumeration `id`
/// and a variant `v`), or any other structure of fixed size with an `id`
/// and a `timestamp` (either may be missing), or none.
pub(super) fn event_header_kind(t: Option<&Ty>) -> Result<HeaderKind, String> {
    let Some(t) = t else {
        return Ok(HeaderKind::Plain(PlainHeader {
            id: None,
            ts: None,
            len: 0,
            align: 1,
        }));
    };
    if let Ty::Struct { fields, .. } = t {
        if names(fields) == ["id", "v"] {
            if let (Ty::Enum { container, .. }, Ty::Variant { options, .. }) =
                (&fields[0].1, &fields[1].1)
            {
                if names(options) == ["compact", "extended"] {
                    if is_uint(container, 5) {
                        return Ok(HeaderKind::Compact);
                    }
                    if is_uint(container, 16) {
                        return Ok(HeaderKind::Large);
                    }
                }
            }
        }
    }
    let what = "event header";
    let (fields, end) = placed(t, 0, what)?;
    let mut h = PlainHeader {
        id: None,
        ts: None,
        len: 0,
        align: (t.align() / 8).clamp(1, 128) as u8,
    };
    for (name, at, ty) in fields {
        match name {
            "id" => h.id = Some(slot(name, at, ty, what)?),
            "timestamp" => h.ts = Some(slot(name, at, ty, what)?),
            _ => {}
        }
    }
    if !end.is_multiple_of(8) {
        return Err("unsupported: event header ends inside a byte".into());
    }
    h.len = u16::try_from(end / 8).map_err(|_| "event header too large".to_owned())?;
    Ok(HeaderKind::Plain(h))
}

/// Alignment of a type in bytes (1 for bit alignments: the reader's
/// fields are whole bytes, always at byte boundaries).
fn bytes_align(t: &Ty) -> u8 {
    (t.align() / 8).clamp(1, 64) as u8
}

fn int_type(t: &Ty) -> Option<IntType> {
    match t {
        Ty::Int {
            size,
            signed,
            base,
            align,
            be,
            ..
        } if size.is_multiple_of(8) && *align <= 64 * 8 => Some(IntType {
            bits: *size as u8,
            signed: *signed,
            base: *base as u8,
            be: *be,
        }),
        _ => None,
    }
}

/// An enumeration over `it`, or a boolean (CTF 1.8 has none: ringtrace
/// writes `{ false = 0, true = 1 }` on 8 bits).
fn enumeration(it: IntType, maps: &[(String, i128, i128)]) -> FieldType {
    let is_bool = it.bits == 8
        && !it.signed
        && maps.len() == 2
        && maps[0] == ("false".into(), 0, 0)
        && maps[1] == ("true".into(), 1, 1);
    if is_bool {
        FieldType::Bool
    } else {
        FieldType::Enum(
            it,
            maps.iter()
                .map(|(l, a, b)| EnumMapping {
                    label: l.clone(),
                    start: *a as i64,
                    end: *b as i64,
                })
                .collect(),
        )
    }
}

fn holds_variant(t: &Ty) -> bool {
    match t {
        Ty::Variant { .. } => true,
        Ty::Struct { fields, .. } => fields.iter().any(|f| holds_variant(&f.1)),
        Ty::Array { elem, .. } | Ty::Sequence { elem, .. } => holds_variant(elem),
        _ => false,
    }
}

/// The element of an array or sequence of other things than integers:
/// neither a variant (its tag would be among the elements) nor empty
/// (each element takes a byte at least, which bounds a count by the bytes
/// left).
fn element(elem: &Ty, pos: Pos) -> Result<Field, String> {
    if matches!(elem, Ty::Variant { .. }) {
        return Err("arrays of variants".into());
    }
    let bitty = |t: &Ty| bit_int(t).is_some_and(|(it, align, _)| it.is_packed() || align < 8);
    if bitty(elem) {
        return Err("arrays of integers that are not whole bytes at byte boundaries".into());
    }
    // Each element starts at a byte here: arrays of bit-field arrays would
    // lose their packing.
    if matches!(elem, Ty::Array { elem: e, .. } if bitty(e)) {
        return Err("arrays of arrays of integers smaller than a byte".into());
    }
    if fixed_bits(elem) == Some(0) {
        return Err("arrays of empty elements".into());
    }
    let one = Ty::Struct {
        fields: vec![("element".to_owned(), elem.clone(), pos)],
        align: 8,
    };
    let mut f = event_fields(&one).map_err(|e| e.0)?;
    let mut e = f.pop().expect("one field in, one out");
    if holds_variant(elem) {
        return Err("arrays of structures holding variants".into());
    }
    e.align = bytes_align(elem);
    Ok(e)
}

pub(super) fn event_fields(t: &Ty) -> Result<Vec<Field>, (String, Pos)> {
    fields_in(t, None)
}

/// The fields of structure `t`, inside the structures `outer` (where
/// variant tags are looked up after `t`'s own fields).
pub(super) fn fields_in(t: &Ty, outer: Option<&Outer>) -> Result<Vec<Field>, (String, Pos)> {
    let Ty::Struct { fields, .. } = t else {
        return Err(("event fields must be a structure".into(), Pos::default()));
    };
    let mut out: Vec<Field> = Vec::new();
    // Whether each of `out` was declared with a leading `_` (variant tags
    // name fields as declared).
    let mut escaped: Vec<bool> = Vec::new();
    let mut run: Option<Run> = None;
    for (k, (name, ty, pos)) in fields.iter().enumerate() {
        // One leading underscore is an escape, as in LTTng's metadata.
        let clean = unescape(name).to_owned();
        let unsupported = |what: &str| (format!("unsupported field `{name}`: {what}"), *pos);
        if ty.align() < 8 && run.is_none() && out.last().is_some_and(|f| ends_mid_byte(&f.ty)) {
            return Err(unsupported(
                "a field aligned below a byte after one that may end inside a byte \
                 (a structure ending with bit fields, a sequence of them)",
            ));
        }
        // Bit fields: an integer not of whole bytes, or one aligned below
        // a byte right after one, is placed at a bit of a run.
        if place_bit_field(
            &mut run,
            &mut out,
            &clean,
            ty,
            bytes_align(ty).max(bytes_align(t)),
        )
        .map_err(|m| unsupported(&m))?
        {
            escaped.push(name.starts_with('_'));
            continue;
        }
        if ty.align() < 8 && run.is_some() {
            return Err(unsupported(
                "a field aligned below a byte that is not an integer, after bit fields",
            ));
        }
        close_run(run.take(), &mut out);
        let (fty, length, seq_align) = match ty {
            Ty::Sequence { elem, len_field } => {
                let prev = k.checked_sub(1).map(|j| &fields[j]);
                let (fty, length, align) =
                    sequence(prev, elem, len_field, &clean, *pos).map_err(|m| unsupported(&m))?;
                // The length field becomes part of the sequence.
                out.pop();
                escaped.pop();
                (fty, length, Some(align))
            }
            Ty::Struct { .. } => {
                let up = Outer {
                    fields: &out,
                    escaped: &escaped,
                    up: outer,
                };
                (FieldType::Struct(fields_in(ty, Some(&up))?), None, None)
            }
            Ty::Variant { tag, options } => {
                let v = variant(tag.as_deref(), options, (&out, &escaped), outer, fields_in)
                    .map_err(|m| unsupported(&m))?;
                (FieldType::Variant(Box::new(v)), None, None)
            }
            _ => (
                plain_type(ty, *pos).map_err(|m| unsupported(&m))?,
                None,
                None,
            ),
        };
        let align = field_align(ty, seq_align).map_err(|m| unsupported(&m))?;
        // A structure aligned beyond its first field starts its first field there.
        let align = if out.is_empty() {
            align.max(bytes_align(t))
        } else {
            align
        };
        escaped.push(name.starts_with('_'));
        out.push(Field {
            name: clean,
            ty: fty,
            length,
            align,
        });
    }
    close_run(run, &mut out);
    Ok(out)
}

/// The type of a field that is an integer, a float, a string, an
/// enumeration or an array.
fn plain_type(ty: &Ty, pos: Pos) -> Result<FieldType, String> {
    Ok(match ty {
        Ty::Int { .. } => FieldType::Int(int_type(ty).ok_or("integer not byte-sized or aligned")?),
        Ty::Float { exp: 8, be, .. } => {
            if *be {
                FieldType::F32Be
            } else {
                FieldType::F32
            }
        }
        Ty::Float { be, .. } => {
            if *be {
                FieldType::F64Be
            } else {
                FieldType::F64
            }
        }
        Ty::Str => FieldType::String,
        Ty::Enum { container, maps } => enumeration(
            int_type(container).ok_or("enumeration container not byte-sized or aligned")?,
            maps,
        ),
        Ty::Array { elem, len } if is_char(elem) => {
            FieldType::Text(u32::try_from(*len).map_err(|_| "array too long")?)
        }
        Ty::Array { elem, len } => {
            let n = u32::try_from(*len).map_err(|_| "array too long")?;
            match int_type(elem) {
                Some(it) => FieldType::Array(it, n),
                None => FieldType::ArrayOf(Box::new(element(elem, pos)?), n),
            }
        }
        Ty::Sequence { .. } | Ty::Struct { .. } | Ty::Variant { .. } => {
            return Err("a compound type where a plain one was expected".into())
        }
    })
}

/// A sequence of `elem` whose length is `len_field`, the field `prev`
/// just before it (where ringtrace and LTTng put it): its type, the
/// length's name when it is not the default `_<name>_length`, and its
/// alignment (the length's: the elements follow it unpadded).
fn sequence(
    prev: Option<&(String, Ty, Pos)>,
    elem: &Ty,
    len_field: &str,
    name: &str,
    pos: Pos,
) -> Result<(FieldType, Option<String>, u8), String> {
    let len = match prev {
        Some((pn, pt, _)) if pn == len_field => int_type(pt).filter(|t| !t.signed),
        _ => None,
    };
    let shown = unescape(len_field);
    let length = (shown != format!("_{name}_length")).then(|| shown.to_owned());
    let (Some(len), Some((_, len_ty, _))) = (len, prev) else {
        return Err("sequence length must be the unsigned integer field just before".into());
    };
    // The elements follow the length unpadded, so they may need no more
    // alignment than it gives.
    let la = bytes_align(len_ty);
    let ea = bytes_align(elem);
    if ea > 1 && !(la.is_multiple_of(ea) && len.bytes().is_multiple_of(ea as usize)) {
        return Err("sequence elements aligned beyond their length field".into());
    }
    // Integers smaller than a byte are packed bit after bit from the byte
    // after the length.
    let packed = bit_int(elem)
        .filter(|(it, _, maps)| it.is_packed() && maps.is_none())
        .map(|(it, _, _)| it);
    let fty = match int_type(elem).or(packed) {
        _ if is_char(elem) => FieldType::TextSequence { len },
        Some(it) if len == IntType::unsigned(32) => FieldType::Sequence(it),
        Some(it) => FieldType::SequenceOf { len, elem: it },
        None => FieldType::SequenceOfAny {
            len,
            elem: Box::new(element(elem, pos)?),
        },
    };
    Ok((fty, length, la))
}

/// The alignment (bytes) a field of type `ty` starts at; a sequence's is
/// its length's (`seq_align`).
fn field_align(ty: &Ty, seq_align: Option<u8>) -> Result<u8, String> {
    Ok(match ty {
        Ty::Array { elem, .. } => {
            // Integer elements are read one after the other, unpadded;
            // other elements each at their alignment.
            let ea = bytes_align(elem);
            let size = fixed_bits(elem).unwrap_or(0);
            if int_type(elem).is_some() && !size.is_multiple_of(u64::from(ea) * 8) {
                return Err("array elements smaller than their alignment".into());
            }
            ea
        }
        // A variant is aligned as the option it holds.
        Ty::Variant { .. } => 1,
        _ => seq_align.unwrap_or_else(|| bytes_align(ty)),
    })
}
