//! A provider's descriptions, read into owned values: each event's name,
//! level and fields, the fields as the CTF declarations of what its probe
//! writes (LTTng-UST 2.13's layout on x86-64: packed, byte-aligned,
//! little-endian unless a field says otherwise).
//!
//! A sequence is written by the probe as two fields, its length (an
//! integer field named `_NAME_length`) then its elements; the CTF type of
//! a sequence here holds both (`ctf::types::FieldType::SequenceOf` and its
//! kin declare the length just before the elements), so the length field
//! is folded into the sequence that names it.

use std::ffi::{c_char, CStr};

use ctf::types::{EnumMapping, Field, FieldType, IntType};

use crate::abi::{self, encoding, size, ty, TypeCommon};

/// What could not be read, and where.
pub type Refusal = String;

/// One event of a provider.
#[derive(Debug, Clone)]
pub struct Event {
    /// The event's name within its provider.
    pub name: String,
    /// Its LTTng level (0 emergency to 14 debug), if it declares one.
    pub level: Option<u8>,
    /// Its `model.emf.uri`, if it declares one.
    pub emf_uri: Option<String>,
    /// The fields its probe writes, in order.
    pub fields: Vec<Field>,
    /// Where each of `fields` is in the probe's interpreter stack (what
    /// its filter reads: `filter.rs`).
    pub stack: Vec<crate::filter::StackSlot>,
    /// Its probe (what the call sites call, with the event as data).
    pub probe: Option<unsafe extern "C" fn()>,
    /// The probe's signature (its arguments' types and names), which the
    /// tracepoint registry checks against the call sites'.
    pub signature: *const c_char,
}

/// A C string of the provider (its static data), as UTF-8.
///
/// # Safety
/// `p` is null or a NUL-terminated string that lives as long as the call.
pub unsafe fn text(p: *const c_char, what: &str) -> Result<String, Refusal> {
    if p.is_null() {
        return Err(format!("{what}: no name"));
    }
    // SAFETY: NUL-terminated (caller's contract).
    let s = unsafe { CStr::from_ptr(p) };
    s.to_str()
        .map(str::to_owned)
        .map_err(|_| format!("{what}: not UTF-8 ({:?})", s.to_string_lossy()))
}

/// Fails unless a structure declares at least the base ABI's size.
fn sized(struct_size: u32, base: usize, what: &str) -> Result<(), Refusal> {
    if (struct_size as usize) < base {
        return Err(format!(
            "{what}: structure of {struct_size} bytes, the ABI's is {base} (built against another LTTng-UST)"
        ));
    }
    Ok(())
}

/// The event `d` of a provider.
///
/// # Safety
/// `d` points to a provider's event description, whose pointers are null
/// or valid for the process's lifetime (a provider's static data).
pub unsafe fn event(d: *const abi::EventDesc) -> Result<Event, Refusal> {
    // SAFETY: a provider's static description (caller's contract).
    let d = unsafe { d.as_ref() }.ok_or("a null event description")?;
    sized(d.struct_size, size::EVENT_DESC, "event description")?;
    // SAFETY: as above, each pointer.
    let name = unsafe { text(d.event_name, "event")? };
    let err = |e: Refusal| format!("event {name}: {e}");
    // SAFETY: as above.
    let level = unsafe { d.loglevel.as_ref().and_then(|p| p.as_ref()) }.copied();
    let level = match level {
        Some(l @ 0..=14) => Some(l as u8),
        Some(l) => return Err(err(format!("level {l} (LTTng's are 0 to 14)"))),
        None => None,
    };
    // SAFETY: as above.
    let emf_uri = match unsafe { d.model_emf_uri.as_ref() } {
        // SAFETY: as above.
        Some(p) if !p.is_null() => Some(unsafe { text(*p, "model.emf.uri") }.map_err(err)?),
        _ => None,
    };
    // SAFETY: as above.
    let class = unsafe { d.tp_class.as_ref() }.ok_or_else(|| err("no class".into()))?;
    sized(class.struct_size, size::TRACEPOINT_CLASS, "class").map_err(err)?;
    if class.nr_fields > 0 && class.fields.is_null() {
        return Err(err("no fields array".into()));
    }
    let mut fields: Vec<Field> = Vec::new();
    let mut stack = crate::filter::StackLayout::default();
    for k in 0..class.nr_fields {
        // SAFETY: `nr_fields` pointers (the provider's static array).
        let f = unsafe { *class.fields.add(k) };
        // SAFETY: as above.
        let f = unsafe { f.as_ref() }.ok_or_else(|| err(format!("field {k} is null")))?;
        sized(f.struct_size, size::EVENT_FIELD, "field").map_err(err)?;
        // SAFETY: as above.
        let fname = unsafe { text(f.name, "field") }.map_err(err)?;
        // SAFETY: as above.
        let lttng_ty = unsafe { f.ty.as_ref() }.map_or(u32::MAX, |t| t.ty);
        if f.nowrite() {
            stack.skip(lttng_ty);
            continue;
        }
        // SAFETY: as above.
        let field = unsafe { field(&fname, f.ty, &mut fields) }
            .map_err(|e| err(format!("field {fname}: {e}")))?;
        stack.push(lttng_ty, &field.ty);
        fields.push(field);
    }
    Ok(Event {
        name,
        level,
        emf_uri,
        fields,
        stack: stack.slots,
        probe: class.probe_callback,
        signature: class.signature,
    })
}

/// The field `name` of type `t`; a sequence takes its length field out of
/// `before` (the fields read so far).
///
/// # Safety
/// As [`event`], for `t`.
unsafe fn field(
    name: &str,
    t: *const TypeCommon,
    before: &mut Vec<Field>,
) -> Result<Field, Refusal> {
    // SAFETY: as above.
    let common = unsafe { t.as_ref() }.ok_or("no type")?;
    if common.ty != ty::SEQUENCE {
        // SAFETY: as above.
        return unsafe { plain(name, t) };
    }
    // SAFETY: the type says it is a sequence.
    let s = unsafe { &*(t as *const abi::TypeSequence) };
    sized(s.struct_size, size::TYPE_SEQUENCE, "sequence type")?;
    let len_name = match s.length_name.is_null() {
        true => before
            .last()
            .map(|f| f.name.clone())
            .ok_or("no length field before it")?,
        // SAFETY: as above.
        false => unsafe { text(s.length_name, "length field")? },
    };
    // The length field must be the one just before: the CTF declaration
    // of a sequence here puts it there.
    let len = match before.last() {
        Some(Field {
            name: n,
            ty: FieldType::Int(l),
            ..
        }) if *n == len_name && !l.signed => *l,
        _ => {
            return Err(format!(
                "its length {len_name} is not the unsigned integer just before it"
            ))
        }
    };
    let len_field = before.pop().expect("matched above");
    // SAFETY: as above.
    let elem = unsafe { plain("elem", s.elem_type)? };
    let text = s.encoding != encoding::NONE;
    let ty = match elem.ty {
        FieldType::Int(IntType { bits: 8, .. }) if text => FieldType::TextSequence { len },
        FieldType::Int(e) if elem.align <= 1 => FieldType::SequenceOf { len, elem: e },
        _ => FieldType::SequenceOfAny {
            len,
            elem: Box::new(elem),
        },
    };
    let mut f = Field::new(name, ty);
    f.align = len_field.align;
    if len_name != f.length_name() {
        f.length = Some(len_name);
    }
    Ok(f)
}

/// A field of a type other than a sequence.
///
/// # Safety
/// As [`event`], for `t`.
unsafe fn plain(name: &str, t: *const TypeCommon) -> Result<Field, Refusal> {
    // SAFETY: as above.
    let common = unsafe { t.as_ref() }.ok_or("no type")?;
    match common.ty {
        ty::INTEGER => {
            // SAFETY: the type says what it is.
            let (i, align) = unsafe { integer(t)? };
            Ok(aligned(Field::new(name, FieldType::Int(i)), align))
        }
        ty::FLOAT => {
            // SAFETY: as above.
            let f = unsafe { &*(t as *const abi::TypeFloat) };
            sized(f.struct_size, size::TYPE_FLOAT, "float type")?;
            let be = f.flags & 1 != 0;
            let ty = match (f.exp_dig, f.mant_dig, be) {
                (8, 24, false) => FieldType::F32,
                (8, 24, true) => FieldType::F32Be,
                (11, 53, false) => FieldType::F64,
                (11, 53, true) => FieldType::F64Be,
                (e, m, _) => {
                    return Err(format!("a float of {e} exponent and {m} mantissa digits"))
                }
            };
            Ok(aligned(Field::new(name, ty), f.alignment as u32))
        }
        ty::STRING => {
            // SAFETY: as above.
            let s = unsafe { &*(t as *const abi::TypeString) };
            sized(s.struct_size, size::TYPE_STRING, "string type")?;
            Ok(Field::new(name, FieldType::String))
        }
        ty::ENUM => {
            // SAFETY: as above.
            let e = unsafe { &*(t as *const abi::TypeEnum) };
            sized(e.struct_size, size::TYPE_ENUM, "enum type")?;
            // SAFETY: as above.
            let (i, align) = unsafe { integer(e.container_type)? };
            // SAFETY: as above.
            let maps = unsafe { mappings(e.desc)? };
            Ok(aligned(Field::new(name, FieldType::Enum(i, maps)), align))
        }
        ty::ARRAY => {
            // SAFETY: as above.
            let a = unsafe { &*(t as *const abi::TypeArray) };
            sized(a.struct_size, size::TYPE_ARRAY, "array type")?;
            // SAFETY: as above.
            let elem = unsafe { plain("elem", a.elem_type)? };
            let text = a.encoding != encoding::NONE;
            let ty = match elem.ty {
                FieldType::Int(IntType { bits: 8, .. }) if text => FieldType::Text(a.length),
                FieldType::Int(e) if elem.align <= 1 => FieldType::Array(e, a.length),
                _ => FieldType::ArrayOf(Box::new(elem), a.length),
            };
            Ok(aligned(Field::new(name, ty), a.alignment))
        }
        ty::DYNAMIC => Err("a dynamic type (only filters and notifiers take one)".into()),
        ty::STRUCT => Err("a structure (LTTng-UST 2.13 probes declare none)".into()),
        other => Err(format!(
            "type {other}, which LTTng-UST 2.13 does not define"
        )),
    }
}

/// An integer type and its alignment in bits.
///
/// # Safety
/// As [`event`], for `t`, an integer type.
unsafe fn integer(t: *const TypeCommon) -> Result<(IntType, u32), Refusal> {
    // SAFETY: as above.
    let common = unsafe { t.as_ref() }.ok_or("no integer type")?;
    if common.ty != ty::INTEGER {
        return Err(format!("type {} where an integer is needed", common.ty));
    }
    // SAFETY: as above.
    let i = unsafe { &*(t as *const abi::TypeInteger) };
    sized(i.struct_size, size::TYPE_INTEGER, "integer type")?;
    if !matches!(i.size, 8 | 16 | 32 | 64) {
        return Err(format!("an integer of {} bits", i.size));
    }
    let base = match i.base {
        2 | 8 | 10 | 16 => i.base as u8,
        b => return Err(format!("an integer printed in base {b}")),
    };
    Ok((
        IntType {
            bits: i.size as u8,
            signed: i.flags & 1 != 0,
            base,
            be: i.flags & 2 != 0,
        },
        i.alignment as u32,
    ))
}

/// `f` with its first byte aligned to `bits` (a probe on x86-64 packs its
/// fields: 8 bits, none).
fn aligned(mut f: Field, bits: u32) -> Field {
    f.align = (bits / 8).clamp(1, 64) as u8;
    f
}

/// An enumeration's labels and ranges.
///
/// # Safety
/// As [`event`], for `d`.
unsafe fn mappings(d: *const abi::EnumDesc) -> Result<Vec<EnumMapping>, Refusal> {
    // SAFETY: as above.
    let d = unsafe { d.as_ref() }.ok_or("an enumeration without a description")?;
    sized(d.struct_size, size::ENUM_DESC, "enumeration")?;
    if d.nr_entries > 0 && d.entries.is_null() {
        return Err("an enumeration without entries".into());
    }
    let mut maps: Vec<EnumMapping> = Vec::with_capacity(d.nr_entries as usize);
    for k in 0..d.nr_entries as usize {
        // SAFETY: `nr_entries` pointers.
        let e = unsafe { (*d.entries.add(k)).as_ref() }.ok_or("a null enumeration entry")?;
        sized(e.struct_size, size::ENUM_ENTRY, "enumeration entry")?;
        let value = |v: abi::EnumValue| match v.flags & 1 {
            0 => i64::try_from(v.value).map_err(|_| format!("value {} out of range", v.value)),
            _ => Ok(v.value as i64),
        };
        // SAFETY: as above.
        let label = unsafe { text(e.string, "enumeration label")? };
        // An automatic value (`ctf_enum_auto`): one past the previous
        // entry's end, or 0 for the first.
        let (start, end) = match e.options & ENUM_ENTRY_AUTO {
            0 => (value(e.start)?, value(e.end)?),
            _ => {
                let v = maps.last().map_or(0, |m| m.end.saturating_add(1));
                (v, v)
            }
        };
        maps.push(EnumMapping { label, start, end });
    }
    Ok(maps)
}

/// `LTTNG_UST_ENUM_ENTRY_OPTION_IS_AUTO`.
const ENUM_ENTRY_AUTO: u32 = 1;
