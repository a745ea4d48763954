//! Parses TSDL metadata into a [`TraceDesc`]. It reads what ringtrace (and
//! the LTTng-UST layouts it shares) writes: type aliases, `trace`, `env`,
//! `clock`, named structs, `stream` and `event` blocks, integers, floats,
//! strings, enumerations, structures, variants, arrays and sequences.
//! Anything else is reported by name, with its line and column.
//!
//! `grammar.rs` turns tokens into type trees; this file resolves what they
//! mean: the trace, clock and environment, the packet header and context
//! the reader relies on, stream and event classes.

mod grammar;

use grammar::{Parser, Pos, Ty, Value};
pub use grammar::{MAX_NESTING, MAX_TYPE_NODES, TYPE_NODES_PER_TOKEN};

use std::collections::HashMap;

use crate::lex::{lex, Tok};
use crate::types::{
    parse_uuid, ClockDesc, EnumMapping, EnvValue, EventClass, Field, FieldType, HeaderKind,
    IntType, StreamClass, TraceDesc,
};

/// Metadata that could not be read: where and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, column {col}: {msg}")]
pub struct MetadataError {
    /// Line, from 1 (0: end of text).
    pub line: u32,
    /// Column, from 1.
    pub col: u32,
    /// What is wrong.
    pub msg: String,
}

/// Parses metadata text.
pub fn parse_metadata(src: &str) -> Result<TraceDesc, MetadataError> {
    let toks = lex(src).map_err(|e| MetadataError {
        line: e.line,
        col: e.col,
        msg: e.msg,
    })?;
    let mut p = Parser {
        toks,
        i: 0,
        aliases: HashMap::new(),
        structs: HashMap::new(),
        depth: 0,
        budget: MAX_TYPE_NODES,
    };
    p.budget += TYPE_NODES_PER_TOKEN * p.toks.len();
    let mut uuid = None;
    let mut trace_pos = Pos::default();
    let mut clock: Option<ClockDesc> = None;
    let mut env = Vec::new();
    let mut streams = Vec::new();
    let mut events = Vec::new();
    while p.peek().is_some() {
        let at = p.pos();
        let kw = p.ident()?;
        match kw.as_str() {
            "typealias" => {
                let ty = p.type_spec(false)?;
                p.expect(":=")?;
                let mut words = vec![p.ident()?];
                while let Some(Tok::Ident(_)) = p.peek() {
                    words.push(p.ident()?);
                }
                p.expect(";")?;
                p.aliases.insert(words.join(" "), ty);
            }
            "trace" => {
                trace_pos = at;
                p.expect("{")?;
                while !p.is_punct("}") {
                    let kp = p.pos();
                    let k = p.key()?;
                    if p.is_punct(":=") {
                        p.i += 1;
                        let ty = p.type_spec(false)?;
                        p.expect(";")?;
                        if k != "packet.header" {
                            return p.err_at(kp, format!("unsupported trace type `{k}`"));
                        }
                        check_packet_header(&ty).or_else(|m| p.err_at(kp, m))?;
                        continue;
                    }
                    p.expect("=")?;
                    let v = p.value()?;
                    p.expect(";")?;
                    match k.as_str() {
                        "major" if v == Value::Int(1) => {}
                        "minor" if v == Value::Int(8) => {}
                        "major" | "minor" => {
                            return p.err_at(kp, "unsupported CTF version (1.8 only)")
                        }
                        "uuid" => {
                            uuid = Some(
                                v.as_str()
                                    .and_then(parse_uuid)
                                    .ok_or(())
                                    .or_else(|_| p.err_at(kp, "bad trace uuid"))?,
                            )
                        }
                        "byte_order" if v == Value::Ident("le".into()) => {}
                        "byte_order" => return p.err_at(kp, "unsupported: big-endian traces"),
                        _ => return p.err_at(kp, format!("unsupported trace attribute `{k}`")),
                    }
                }
                p.expect("}")?;
                p.expect(";")?;
            }
            "env" => {
                for (k, v, _) in p.attrs()? {
                    env.push((
                        k,
                        match v {
                            Value::Int(i) => EnvValue::Int(i as i64),
                            Value::Str(s) | Value::Ident(s) => EnvValue::Str(s),
                        },
                    ));
                }
                p.expect(";")?;
            }
            "clock" => {
                let mut c = ClockDesc {
                    name: String::new(),
                    freq: 1_000_000_000,
                    offset_s: 0,
                    offset: 0,
                    precision: 0,
                    description: String::new(),
                };
                for (k, v, kp) in p.attrs()? {
                    let bad = || MetadataError {
                        line: kp.line,
                        col: kp.col,
                        msg: format!("bad clock `{k}`"),
                    };
                    match k.as_str() {
                        "name" => {
                            let n = v.as_str().ok_or_else(bad)?;
                            // Integers refer to it as `clock.NAME.value`.
                            if !is_identifier(n) {
                                return p.err_at(
                                    kp,
                                    format!(
                                        "clock name `{}` is not an identifier",
                                        n.escape_debug()
                                    ),
                                );
                            }
                            c.name = n.to_owned();
                        }
                        "description" => c.description = v.as_str().ok_or_else(bad)?.to_owned(),
                        "freq" => c.freq = v.as_i64().filter(|f| *f > 0).ok_or_else(bad)? as u64,
                        "offset_s" => c.offset_s = v.as_i64().ok_or_else(bad)?,
                        "offset" => c.offset = v.as_i64().ok_or_else(bad)?,
                        "precision" => c.precision = v.as_i64().ok_or_else(bad)? as u64,
                        "uuid" | "absolute" => {}
                        _ => return p.err_at(kp, format!("unsupported clock attribute `{k}`")),
                    }
                }
                p.expect(";")?;
                if clock.is_some() {
                    return p.err_at(at, "unsupported: more than one clock");
                }
                clock = Some(c);
            }
            "struct" => {
                p.i -= 1;
                p.type_spec(false)?;
                p.expect(";")?;
            }
            "stream" => {
                p.expect("{")?;
                let (mut id, mut header) = (0u32, None);
                while !p.is_punct("}") {
                    let kp = p.pos();
                    let k = p.key()?;
                    if p.is_punct(":=") {
                        p.i += 1;
                        let ty = p.type_spec(false)?;
                        p.expect(";")?;
                        match k.as_str() {
                            "event.header" => {
                                header = Some(event_header_kind(&ty).or_else(|m| p.err_at(kp, m))?)
                            }
                            "packet.context" => {
                                check_packet_context(&ty).or_else(|m| p.err_at(kp, m))?
                            }
                            _ => return p.err_at(kp, format!("unsupported stream type `{k}`")),
                        }
                        continue;
                    }
                    p.expect("=")?;
                    let v = p.value()?;
                    p.expect(";")?;
                    match k.as_str() {
                        "id" => {
                            id = v
                                .as_i64()
                                .and_then(|v| u32::try_from(v).ok())
                                .ok_or(())
                                .or_else(|_| p.err_at(kp, "bad stream id"))?
                        }
                        _ => return p.err_at(kp, format!("unsupported stream attribute `{k}`")),
                    }
                }
                p.expect("}")?;
                p.expect(";")?;
                let header = match header {
                    Some(h) => h,
                    None => return p.err_at(at, "stream without `event.header`"),
                };
                streams.push(StreamClass { id, header });
            }
            "event" => {
                p.expect("{")?;
                let mut e = EventClass {
                    id: 0,
                    name: String::new(),
                    loglevel: 13,
                    stream_id: 0,
                    fields: Vec::new(),
                };
                while !p.is_punct("}") {
                    let kp = p.pos();
                    let k = p.key()?;
                    if p.is_punct(":=") {
                        p.i += 1;
                        let ty = p.type_spec(false)?;
                        p.expect(";")?;
                        match k.as_str() {
                            "fields" => {
                                e.fields = event_fields(&ty).map_err(|(m, fp)| MetadataError {
                                    line: fp.line,
                                    col: fp.col,
                                    msg: m,
                                })?
                            }
                            _ => return p.err_at(kp, format!("unsupported event type `{k}`")),
                        }
                        continue;
                    }
                    p.expect("=")?;
                    let v = p.value()?;
                    p.expect(";")?;
                    let bad = || MetadataError {
                        line: kp.line,
                        col: kp.col,
                        msg: format!("bad event `{k}`"),
                    };
                    match k.as_str() {
                        "name" => e.name = v.as_str().ok_or_else(bad)?.to_owned(),
                        "id" => {
                            e.id = v
                                .as_i64()
                                .and_then(|v| u32::try_from(v).ok())
                                .ok_or_else(bad)?
                        }
                        "stream_id" => {
                            e.stream_id = v
                                .as_i64()
                                .and_then(|v| u32::try_from(v).ok())
                                .ok_or_else(bad)?
                        }
                        "loglevel" => {
                            e.loglevel = v
                                .as_i64()
                                .and_then(|v| u8::try_from(v).ok())
                                .ok_or_else(bad)?
                        }
                        "model.emf.uri" => {}
                        _ => return p.err_at(kp, format!("unsupported event attribute `{k}`")),
                    }
                }
                p.expect("}")?;
                p.expect(";")?;
                events.push(e);
            }
            other => return p.err_at(at, format!("unsupported metadata block `{other}`")),
        }
    }
    let uuid = match uuid {
        Some(u) => u,
        None => return p.err_at(trace_pos, "trace block without a uuid"),
    };
    let clock = clock.ok_or(MetadataError {
        line: 0,
        col: 0,
        msg: "no clock block".into(),
    })?;
    Ok(TraceDesc {
        uuid,
        clock,
        env,
        streams,
        events,
    })
}

fn is_identifier(s: &str) -> bool {
    let mut c = s.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
}

fn is_uint(t: &Ty, bits: u32) -> bool {
    matches!(t, Ty::Int { size, signed: false, .. } if *size == bits)
}

fn names(fields: &[(String, Ty, Pos)]) -> Vec<&str> {
    fields.iter().map(|f| f.0.as_str()).collect()
}

fn check_packet_header(t: &Ty) -> Result<(), String> {
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

fn check_packet_context(t: &Ty) -> Result<(), String> {
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

fn event_header_kind(t: &Ty) -> Result<HeaderKind, String> {
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
            ..
        } if size % 8 == 0 && *align % 8 == 0 => Some(IntType {
            bits: *size as u8,
            signed: *signed,
            base: *base as u8,
        }),
        _ => None,
    }
}

fn event_fields(t: &Ty) -> Result<Vec<Field>, (String, Pos)> {
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
            Ty::Array { elem, len } => FieldType::Array(
                int_type(elem).ok_or_else(|| unsupported("arrays hold integers only"))?,
                u32::try_from(*len).map_err(|_| unsupported("array too long"))?,
            ),
            Ty::Sequence { elem, len_field } => {
                let it =
                    int_type(elem).ok_or_else(|| unsupported("sequences hold integers only"))?;
                // The length must be the field just before, a 32-bit unsigned.
                let prev = k.checked_sub(1).map(|j| &fields[j]);
                match prev {
                    Some((pn, pt, _)) if pn == len_field && is_uint(pt, 32) => {
                        out.pop();
                    }
                    _ => {
                        return Err(unsupported(
                            "sequence length must be the 32-bit field just before",
                        ))
                    }
                }
                FieldType::Sequence(it)
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
