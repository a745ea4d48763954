//! Variants: the enumeration that selects an option (its tag), found by
//! its path from the variant's structure outwards (CTF 1.8 section 7.3.2),
//! and the options.

use super::grammar::{unescape, Pos, Ty};
use crate::types::{EnumMapping, Field, FieldType, VariantType};

/// The structures around a field being resolved, innermost first: the
/// fields resolved so far in each (those before the structure inside).
pub(super) struct Outer<'a> {
    /// The fields before.
    pub fields: &'a [Field],
    /// Whether each was declared with a leading `_` (which its name, as
    /// printed, does not keep).
    pub escaped: &'a [bool],
    /// The structure around that one.
    pub up: Option<&'a Outer<'a>>,
}

/// Prefixes of absolute paths in other scopes than the event's fields.
const OTHER_SCOPES: [&str; 5] = [
    "trace.packet.header.",
    "stream.packet.context.",
    "stream.event.header.",
    "stream.event.context.",
    "event.context.",
];

/// Where the tag `path` is: structures out, the indices down, and its
/// mappings.
fn find_tag<'a>(
    path: &str,
    before: (&'a [Field], &'a [bool]),
    outer: Option<&'a Outer<'a>>,
) -> Result<(u8, Vec<usize>, &'a [EnumMapping]), String> {
    if OTHER_SCOPES.iter().any(|p| path.starts_with(p)) {
        return Err(format!(
            "variant tag `{path}` is in another scope than the event's fields"
        ));
    }
    let mut levels = vec![before];
    let mut o = outer;
    while let Some(x) = o {
        levels.push((x.fields, x.escaped));
        o = x.up;
    }
    // `event.fields.a` starts from the payload, the outermost structure.
    let (rel, first_level) = match path.strip_prefix("event.fields.") {
        Some(rel) => (rel, levels.len() - 1),
        None => (path, 0),
    };
    let names: Vec<&str> = rel.split('.').map(unescape).collect();
    let missing = || {
        format!("variant tag `{path}` is not a field before it in its structure or those around it")
    };
    // The first name as it is written, a leading `_` included: `_tag`
    // does not name a field declared `tag`, nor `tag` one declared `_tag`
    // (babeltrace2 refuses both).
    let escaped = rel.starts_with('_');
    let find = |same: bool| {
        levels
            .iter()
            .enumerate()
            .skip(first_level)
            .find_map(|(up, (fields, esc))| {
                let k = fields.iter().enumerate().rposition(|(k, f)| {
                    f.name == names[0] && (!same || esc.get(k) == Some(&escaped))
                })?;
                Some((up, k))
            })
    };
    let Some((up, k)) = find(true) else {
        return Err(match find(false) {
            Some(_) => format!(
                "variant tag `{path}` names a field declared {} a leading `_`: \
                 a tag names its field as it is declared",
                if escaped { "without" } else { "with" }
            ),
            None => missing(),
        });
    };
    let mut idx = vec![k];
    let mut field = &levels[up].0[k];
    for n in &names[1..] {
        let FieldType::Struct(inner) = &field.ty else {
            return Err(missing());
        };
        let j = inner
            .iter()
            .position(|f| f.name == *n)
            .ok_or_else(missing)?;
        idx.push(j);
        field = &inner[j];
    }
    let maps = field
        .ty
        .enum_maps()
        .ok_or_else(|| format!("variant tag `{path}` is not an enumeration"))?;
    let up = u8::try_from(up).map_err(|_| "variant nested too deep".to_owned())?;
    Ok((up, idx, maps))
}

/// How the fields of a structure inside others are resolved
/// (`resolve::fields_in`, which resolves variants with this file).
pub(super) type FieldsIn = fn(&Ty, Option<&Outer>) -> Result<Vec<Field>, (String, Pos)>;

/// A variant whose tag is the enumeration at path `tag`, looked up among
/// the fields `before` it in its structure, then in the structures around
/// (`outer`); its options resolved by `fields_in`.
pub(super) fn variant(
    tag: Option<&str>,
    options: &[(String, Ty, Pos)],
    before: (&[Field], &[bool]),
    outer: Option<&Outer>,
    fields_in: FieldsIn,
) -> Result<VariantType, String> {
    let Some(tag_name) = tag else {
        return Err("variant without a tag".into());
    };
    let (up, idx, maps) = find_tag(tag_name, before, outer)?;
    let mut fields = Vec::with_capacity(options.len());
    let here = Outer {
        fields: before.0,
        escaped: before.1,
        up: outer,
    };
    for o in options {
        // Each option alone, as a structure of one field would be, inside
        // the variant's structure.
        let one = Ty::Struct {
            fields: vec![o.clone()],
            align: 8,
        };
        let mut f = fields_in(&one, Some(&here)).map_err(|e| e.0)?;
        fields.push(f.pop().expect("one field in, one out"));
    }
    let mut choices = Vec::new();
    for m in maps {
        let label = unescape(&m.label);
        if let Some(i) = fields
            .iter()
            .position(|f| f.name == label || f.name == m.label)
        {
            choices.push((m.start, m.end, i));
        }
    }
    Ok(VariantType {
        up,
        tag: idx,
        tag_name: tag_name
            .split('.')
            .map(unescape)
            .collect::<Vec<_>>()
            .join("."),
        choices,
        options: fields,
    })
}
