//! The columns of the Parquet export: who and when for every event
//! (`timestamp`, `pid`, `tid`, `thread`, `cpu`, `event`), then one typed
//! column per field name and kind over every event class of every trace
//! exported, so that all the dataset's files share one schema and SQL
//! sees `status`, `path`, ... as columns. A field name that another column
//! already holds with another kind (or a fixed column's name) gets a
//! suffix: `cpu_u64`, `status_str`.

use std::collections::HashMap;

use ctf::types::{FieldType, TraceDesc};

/// A column's kind: its physical type and logical annotation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Kind {
    /// Signed integers (`INT64`).
    I64,
    /// Unsigned integers (`INT64` annotated `INTEGER(64,false)`).
    U64,
    /// Reals (`DOUBLE`).
    F64,
    /// Text (`BYTE_ARRAY` annotated `STRING`): strings, enumeration
    /// labels, and structures, variants and arrays as JSON.
    Str,
    /// Booleans.
    Bool,
    /// Nanoseconds since the epoch (`INT64` annotated `TIMESTAMP(NANOS,true)`).
    Time,
}

impl Kind {
    fn suffix(self) -> &'static str {
        match self {
            Kind::I64 => "i64",
            Kind::U64 => "u64",
            Kind::F64 => "f64",
            Kind::Str => "str",
            Kind::Bool => "bool",
            Kind::Time => "time",
        }
    }

    /// Its physical type and annotation in a Parquet message type.
    fn decl(self) -> (&'static str, &'static str) {
        match self {
            Kind::I64 => ("int64", ""),
            Kind::U64 => ("int64", " (INTEGER(64,false))"),
            Kind::F64 => ("double", ""),
            Kind::Str => ("binary", " (STRING)"),
            Kind::Bool => ("boolean", ""),
            Kind::Time => ("int64", " (TIMESTAMP(NANOS,true))"),
        }
    }
}

/// The column a field of `ty` goes to.
pub(super) fn kind_of(ty: &FieldType) -> Kind {
    match ty {
        FieldType::Int(t) if t.signed => Kind::I64,
        FieldType::Int(_) => Kind::U64,
        FieldType::Bits(b) if b.count.is_some() => Kind::Str,
        FieldType::Bits(b) if b.maps.is_none() && b.int.signed => Kind::I64,
        FieldType::Bits(b) if b.maps.is_none() => Kind::U64,
        FieldType::F32 | FieldType::F64 | FieldType::F32Be | FieldType::F64Be => Kind::F64,
        FieldType::Bool => Kind::Bool,
        _ => Kind::Str,
    }
}

/// Positions of the fixed columns.
pub(super) const TIMESTAMP: usize = 0;
pub(super) const PID: usize = 1;
pub(super) const TID: usize = 2;
pub(super) const THREAD: usize = 3;
pub(super) const CPU: usize = 4;
pub(super) const EVENT: usize = 5;

const FIXED: [(&str, Kind); 6] = [
    ("timestamp", Kind::Time),
    ("pid", Kind::I64),
    ("tid", Kind::I64),
    ("thread", Kind::Str),
    ("cpu", Kind::I64),
    ("event", Kind::Str),
];

/// A column: its name and kind; `required` ones are never null.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Column {
    pub name: String,
    pub kind: Kind,
    pub required: bool,
}

/// The dataset's columns.
#[derive(Debug)]
pub(super) struct Schema {
    pub columns: Vec<Column>,
    by_field: HashMap<(String, Kind), usize>,
}

impl Schema {
    /// The fixed columns.
    pub fn new() -> Schema {
        Schema {
            columns: FIXED
                .iter()
                .map(|(n, k)| Column {
                    name: n.to_string(),
                    kind: *k,
                    required: matches!(*n, "timestamp" | "event"),
                })
                .collect(),
            by_field: HashMap::new(),
        }
    }

    /// The column of each field of each event class of `desc` (indices
    /// into `columns`), adding the columns it needs.
    pub fn add(&mut self, desc: &TraceDesc) -> Vec<Vec<usize>> {
        desc.events
            .iter()
            .map(|c| {
                c.fields
                    .iter()
                    .map(|f| self.column(&f.name, kind_of(&f.ty)))
                    .collect()
            })
            .collect()
    }

    fn column(&mut self, name: &str, kind: Kind) -> usize {
        if let Some(&i) = self.by_field.get(&(name.to_owned(), kind)) {
            return i;
        }
        let taken = |n: &str| self.columns.iter().any(|c| c.name == n);
        let mut col = name.to_owned();
        if taken(&col) {
            col = format!("{name}_{}", kind.suffix());
        }
        let mut k = 2;
        while taken(&col) {
            col = format!("{name}_{}{k}", kind.suffix());
            k += 1;
        }
        self.columns.push(Column {
            name: col,
            kind,
            required: false,
        });
        let i = self.columns.len() - 1;
        self.by_field.insert((name.to_owned(), kind), i);
        i
    }

    /// The Parquet message type (field names are CTF identifiers, which
    /// the message syntax takes as they are).
    pub fn message(&self) -> String {
        let mut s = String::from("message ringtrace_event {\n");
        for c in &self.columns {
            let rep = if c.required { "required" } else { "optional" };
            let (ty, note) = c.kind.decl();
            s.push_str(&format!("  {rep} {ty} {}{note};\n", c.name));
        }
        s.push('}');
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctf::types::{EventClass, Field, IntType};

    #[test]
    fn one_column_per_name_and_kind() {
        let class = |name: &str, fields: Vec<Field>| EventClass {
            id: 0,
            name: name.into(),
            loglevel: 13,
            stream_id: 0,
            context: Vec::new(),
            fields,
        };
        let desc = TraceDesc {
            uuid: [0; 16],
            clock: ctf::types::ClockDesc {
                name: "c".into(),
                freq: 1_000_000_000,
                offset_s: 0,
                offset: 0,
                precision: 0,
                description: String::new(),
            },
            env: Vec::new(),
            streams: Vec::new(),
            events: vec![
                class(
                    "a:x",
                    vec![
                        Field::new("status", FieldType::Int(IntType::unsigned(16))),
                        Field::new("cpu", FieldType::Int(IntType::unsigned(32))),
                    ],
                ),
                class(
                    "a:y",
                    vec![
                        Field::new("status", FieldType::Int(IntType::unsigned(64))),
                        Field::new("status2", FieldType::String),
                        Field::new("status", FieldType::String),
                    ],
                ),
            ],
        };
        let mut s = Schema::new();
        let cols = s.add(&desc);
        let names: Vec<&str> = s.columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "timestamp",
                "pid",
                "tid",
                "thread",
                "cpu",
                "event",
                "status",
                "cpu_u64",
                "status2",
                "status_str"
            ]
        );
        assert_eq!(cols, [vec![6, 7], vec![6, 8, 9]]);
        assert!(s
            .message()
            .contains("optional int64 status (INTEGER(64,false));"));
        assert!(parquet::schema::parser::parse_message_type(&s.message()).is_ok());
    }
}
