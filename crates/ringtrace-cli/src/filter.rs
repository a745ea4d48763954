//! `view --filter`: the filter language of record-time filters
//! (`ringtrace::filter`: `status >= 500 && path == "/api/*"`,
//! `(i & 1) == 0`, `$ctx.procname == "worker-*"`), compiled for each event
//! class of the trace being read and evaluated on decoded values.
//!
//! Read leniently: a field or context an event class lacks, or a
//! comparison of a text with a number, is false for that class (a trace
//! mixes classes), where enabling the same filter on a session is an
//! error.

use ctf::types::{EventClass, Field};
use ctf::value::Value;
use ringtrace::filter::{compile, kind_of, Name, Program, Slot, Source, Val};

pub use ringtrace::filter::Expr;

/// Parses a filter; the error names the position and what was expected.
pub fn parse(src: &str) -> Result<Expr, String> {
    ringtrace::filter::parse(src)
}

/// `e` for events of `class` whose stream's context fields are `context`.
pub fn compile_for(e: &Expr, class: &EventClass, context: &[Field]) -> Program {
    let slot = |fields: &[Field], n: &str, field: bool| {
        fields
            .iter()
            .position(|f| f.name == n)
            .map_or(Slot::Absent, |i| {
                let k = kind_of(&fields[i].ty);
                if field {
                    Slot::Field(i, k)
                } else {
                    Slot::Context(i, k)
                }
            })
    };
    compile(e, false, &mut |n| {
        Ok(match n {
            Name::Field(f) => slot(&class.fields, f, true),
            Name::Context(c) => slot(context, c, false),
        })
    })
    .expect("a lenient compilation refuses nothing but size, checked by `check_size`")
}

/// Whether `e` is small enough to compile (checked once, when parsed).
pub fn check_size(src: &str) -> Result<Expr, String> {
    let e = parse(src)?;
    compile(&e, false, &mut |_| Ok(Slot::Absent))?;
    Ok(e)
}

/// An event's decoded values.
pub struct Values<'a> {
    /// Its fields' values.
    pub fields: &'a [Value],
    /// Its stream context's values.
    pub context: &'a [Value],
}

fn value(v: &Value) -> Val<'_> {
    match v {
        Value::Uint(x) => Val::Int(*x as i128),
        Value::Int(x) | Value::Enum(x) => Val::Int(*x as i128),
        Value::Bool(b) => Val::Int(*b as i128),
        Value::F32(x) => Val::Float(*x as f64),
        Value::F64(x) => Val::Float(*x),
        Value::Str(s) => Val::Text(s.as_bytes()),
        Value::RawStr(s) => Val::Text(ctf::value::text_before_nul(s)),
        Value::Variant(_, v) => value(v),
        Value::UintArray(_) | Value::IntArray(_) | Value::Struct(_) | Value::Array(_) => {
            Val::Absent
        }
    }
}

impl Source for Values<'_> {
    fn field(&self, i: usize) -> Val<'_> {
        self.fields.get(i).map_or(Val::Absent, value)
    }

    fn context(&self, i: usize) -> Val<'_> {
        self.context.get(i).map_or(Val::Absent, value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctf::types::{FieldType, IntType};

    fn check(src: &str, values: &[Value]) -> bool {
        let class = EventClass {
            id: 0,
            name: "app:req".into(),
            loglevel: 13,
            stream_id: 0,
            context: Vec::new(),
            fields: vec![
                Field::new("status", FieldType::Int(IntType::unsigned(32))),
                Field::new("path", FieldType::String),
                Field::new("ratio", FieldType::F64),
                Field::new("delta", FieldType::Int(IntType::signed(32))),
            ],
        };
        let ctx_fields = [Field::new("procname", FieldType::Text(16))];
        let ctx = [Value::Str("worker-3".into())];
        let p = compile_for(&check_size(src).unwrap(), &class, &ctx_fields);
        p.accepts(&Values {
            fields: values,
            context: &ctx,
        })
    }

    /// The language's own tests are `ringtrace::filter`'s; these
    /// check the names and values of decoded events.
    #[test]
    fn evaluates_decoded_events() {
        let v = [
            Value::Uint(503),
            Value::Str("/api/v1/users".into()),
            Value::F64(0.25),
            Value::Int(-7),
        ];
        for (src, want) in [
            ("status == 503 && path == \"/api/*\"", true),
            ("(status & 1) == 1 && delta == -7", true),
            ("ratio > 0.2 && ratio < 0.3", true),
            ("$ctx.procname == \"worker-*\"", true),
            ("$ctx.vtid == 1", false),
            ("path == 1", false),
            ("nosuch == 1", false),
            ("!(nosuch == 1)", true),
        ] {
            assert_eq!(check(src, &v), want, "{src}");
        }
    }
}
