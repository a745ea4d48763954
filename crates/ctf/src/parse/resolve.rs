//! What the type trees of the metadata mean to the reader: the packet
//! header and context it relies on, the event header's kind, and event
//! fields as [`Field`]s.

use super::grammar::{Pos, Ty};
use crate::types::{EnumMapping, Field, FieldType, HeaderKind, IntType};

pub(super) fn is_identifier(s: &str) -> bool {
    let mut c = s.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
}

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

pub(super) fn check_packet_header(t: &Ty) -> Result<(), String> {
    let ok = match t {
        Ty::Struct { fields } => {
            names(fields) == ["magic", "uuid", "stream_id", "stream_instance_id"]
                && is_uint(&fields[0].1, 32)
                && matches!(&fields[1].1, Ty::Array { elem, len: 16 } if is_uint(elem, 8))
                && is_uint(&fields[2].1, 32)
                && is_uint(&fields[3].1, 64)
        }
        _ => false,
    };
    ok.then_some(()).ok_or_else(|| {
        "unsupported packet header layout (expected magic, uuid[16], stream_id, stream_instance_id)".into()
    })
}

pub(super) fn check_packet_context(t: &Ty) -> Result<(), String> {
    let want = [
        ("timestamp_begin", 64),
        ("timestamp_end", 64),
        ("content_size", 64),
        ("packet_size", 64),
        ("packet_seq_num", 64),
        ("events_discarded", 64),
        ("cpu_id", 32),
    ];
    let ok = match t {
        Ty::Struct { fields } => {
            fields.len() == want.len()
                && fields
                    .iter()
                    .zip(want)
                    .all(|((n, ty, _), (wn, wb))| n == wn && is_uint(ty, wb))
        }
        _ => false,
    };
    ok.then_some(())
        .ok_or_else(|| "unsupported packet context layout".into())
}

pub(super) fn event_header_kind(t: &Ty) -> Result<HeaderKind, String> {
    if let Ty::Struct { fields } = t {
        if names(fields) == ["id", "v"] {
            if let (Ty::Enum { container, .. }, Ty::Variant { options }) =
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
    Err(
        "unsupported event header layout (expected event_header_compact or event_header_large)"
            .into(),
    )
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
        } if size % 8 == 0 && *align % 8 == 0 => Some(IntType {
            bits: *size as u8,
            signed: *signed,
            base: *base as u8,
            be: *be,
        }),
        _ => None,
    }
}

pub(super) fn event_fields(t: &Ty) -> Result<Vec<Field>, (String, Pos)> {
    let Ty::Struct { fields } = t else {
        return Err(("event fields must be a structure".into(), Pos::default()));
    };
    let mut out: Vec<Field> = Vec::new();
    for (k, (name, ty, pos)) in fields.iter().enumerate() {
        // One leading underscore is an escape, as in LTTng's metadata.
        let clean = name.strip_prefix('_').unwrap_or(name).to_owned();
        let unsupported = |what: &str| (format!("unsupported field `{name}`: {what}"), *pos);
        let fty = match ty {
            Ty::Int { .. } => {
                FieldType::Int(int_type(ty).ok_or_else(|| unsupported("integer not byte-sized"))?)
            }
            Ty::Float { exp: 8, .. } => FieldType::F32,
            Ty::Float { .. } => FieldType::F64,
            Ty::Str => FieldType::String,
            Ty::Enum { container, maps } => {
                let it = int_type(container)
                    .ok_or_else(|| unsupported("enumeration container not byte-sized"))?;
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
            Ty::Array { elem, len } if is_char(elem) => {
                FieldType::Text(u32::try_from(*len).map_err(|_| unsupported("array too long"))?)
            }
            Ty::Array { elem, len } => FieldType::Array(
                int_type(elem).ok_or_else(|| unsupported("arrays hold integers only"))?,
                u32::try_from(*len).map_err(|_| unsupported("array too long"))?,
            ),
            Ty::Sequence { elem, len_field } => {
                let it =
                    int_type(elem).ok_or_else(|| unsupported("sequences hold integers only"))?;
                // The length must be the unsigned integer field just before
                // (where ringtrace and LTTng put it); it becomes part of the
                // sequence, as `_<name>_length` is in ringtrace's own.
                let prev = k.checked_sub(1).map(|j| &fields[j]);
                let len = match prev {
                    Some((pn, pt, _)) if pn == len_field => int_type(pt).filter(|t| !t.signed),
                    _ => None,
                };
                let Some(len) = len else {
                    return Err(unsupported(
                        "sequence length must be the unsigned integer field just before",
                    ));
                };
                out.pop();
                if is_char(elem) {
                    FieldType::TextSequence { len }
                } else if len == IntType::unsigned(32) {
                    FieldType::Sequence(it)
                } else {
                    FieldType::SequenceOf { len, elem: it }
                }
            }
            Ty::Struct { .. } => return Err(unsupported("nested structures")),
            Ty::Variant { .. } => return Err(unsupported("variants in payloads")),
        };
        out.push(Field {
            name: clean,
            ty: fty,
        });
    }
    Ok(out)
}
