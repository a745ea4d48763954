//! The entry points of the fuzz targets (`fuzz/`), shared with the tests
//! that replay the committed corpus, so both run the very same code.

use std::io::Cursor;
use std::path::Path;
use std::sync::Arc;

use crate::read::StreamReader;
use crate::types::{EventClass, Field, FieldType, HeaderKind, IntType, StreamClass, TraceDesc};

/// Parses arbitrary bytes as metadata text; must never panic.
pub fn metadata(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(desc) = crate::parse::parse_metadata(text) {
            // What parses must print back to metadata that parses the same.
            let again = crate::parse::parse_metadata(&crate::tsdl::metadata(&desc));
            assert_eq!(again.as_ref(), Ok(&desc), "metadata round trip");
        }
    }
}

/// The trace description the packet target decodes with: both header
/// kinds, every field type.
pub fn packet_desc() -> TraceDesc {
    let u = |b| FieldType::Int(IntType::unsigned(b));
    let ev = |id, stream_id, fields| EventClass {
        id,
        name: format!("fuzz:e{id}"),
        loglevel: 13,
        stream_id,
        context: Vec::new(),
        fields,
    };
    let all = vec![
        Field::new("a", u(8)),
        Field::new("b", FieldType::Int(IntType::signed(16))),
        Field::new("c", u(32)),
        Field::new("d", u(64)),
        Field::new("e", FieldType::F32),
        Field::new("f", FieldType::F64),
        Field::new("g", FieldType::Bool),
        Field::new("h", FieldType::String),
        Field::new("i", FieldType::Array(IntType::unsigned(16), 3)),
        Field::new("j", FieldType::Sequence(IntType::signed(32))),
    ];
    TraceDesc {
        uuid: *b"fuzz-fuzz-fuzz!!",
        clock: crate::types::ClockDesc {
            name: "monotonic".into(),
            freq: 1_000_000_000,
            offset_s: 0,
            offset: 0,
            precision: 0,
            description: String::new(),
        },
        env: vec![],
        streams: vec![
            StreamClass::new(0, HeaderKind::Compact, vec![]),
            StreamClass::new(1, HeaderKind::Large, vec![]),
        ],
        events: vec![
            ev(0, 0, vec![Field::new("v", u(64))]),
            ev(1, 0, all.clone()),
            ev(40, 0, vec![]),
            ev(0, 1, all),
            ev(70000, 1, vec![Field::new("v", u(32))]),
        ],
    }
}

/// Decodes arbitrary bytes as a stream file; must never panic or loop.
pub fn packets(data: &[u8]) {
    let desc = Arc::new(packet_desc());
    let mut s = StreamReader::from_reader(
        desc,
        Path::new("fuzz"),
        Box::new(Cursor::new(data.to_vec())),
    );
    // Every item consumes input, so this ends; the bound is a safety net.
    for _ in 0..1_000_000 {
        match s.advance() {
            Ok(true) => {}
            Ok(false) | Err(_) => break,
        }
    }
}
