//! Generates the plain-text TSDL metadata (`/* CTF 1.8 */`) of a trace from
//! its description. The text declares the packet header, packet context and
//! both event header layouts once; event classes are separate blocks so that
//! metadata can grow while tracing (append [`event_block`]s).

use std::fmt::Write;

use crate::types::{EnvValue, EventClass, Field, FieldType, HeaderKind, IntType, TraceDesc};

/// The preamble: type aliases, trace, env, clock, packet context, event
/// headers and the stream classes. Event blocks follow it.
pub fn preamble(t: &TraceDesc) -> String {
    let mut s = String::new();
    let clock = &t.clock.name;
    s.push_str("/* CTF 1.8 */\n\n");
    for (bits, name) in [
        (8, "uint8_t"),
        (16, "uint16_t"),
        (32, "uint32_t"),
        (64, "uint64_t"),
    ] {
        let _ = writeln!(
            s,
            "typealias integer {{ size = {bits}; align = 8; signed = false; }} := {name};"
        );
    }
    s.push_str("typealias integer { size = 64; align = 8; signed = false; } := unsigned long;\n");
    s.push_str("typealias integer { size = 5; align = 1; signed = false; } := uint5_t;\n");
    s.push_str("typealias integer { size = 27; align = 1; signed = false; } := uint27_t;\n\n");
    let _ = write!(
        s,
        "trace {{\n\tmajor = 1;\n\tminor = 8;\n\tuuid = \"{}\";\n\tbyte_order = le;\n\
         \tpacket.header := struct {{\n\t\tuint32_t magic;\n\t\tuint8_t  uuid[16];\n\
         \t\tuint32_t stream_id;\n\t\tuint64_t stream_instance_id;\n\t}};\n}};\n\n",
        crate::types::uuid_string(&t.uuid)
    );
    if !t.env.is_empty() {
        s.push_str("env {\n");
        for (k, v) in &t.env {
            match v {
                EnvValue::Str(v) => {
                    let _ = writeln!(s, "\t{k} = \"{}\";", escape(v));
                }
                EnvValue::Int(v) => {
                    let _ = writeln!(s, "\t{k} = {v};");
                }
            }
        }
        s.push_str("};\n\n");
    }
    let c = &t.clock;
    let _ = write!(
        s,
        "clock {{\n\tname = \"{}\";\n\tdescription = \"{}\";\n\tfreq = {};\n\tprecision = {};\n\
         \toffset_s = {};\n\toffset = {};\n\tabsolute = FALSE;\n}};\n\n",
        c.name,
        escape(&c.description),
        c.freq,
        c.precision,
        c.offset_s,
        c.offset
    );
    for (bits, align) in [(27, 1), (32, 8), (64, 8)] {
        let _ = write!(
            s,
            "typealias integer {{\n\tsize = {bits}; align = {align}; signed = false;\n\
             \tmap = clock.{clock}.value;\n}} := uint{bits}_clock_t;\n\n"
        );
    }
    s.push_str(
        "struct packet_context {\n\
         \tuint64_clock_t timestamp_begin;\n\
         \tuint64_clock_t timestamp_end;\n\
         \tuint64_t content_size;\n\
         \tuint64_t packet_size;\n\
         \tuint64_t packet_seq_num;\n\
         \tunsigned long events_discarded;\n\
         \tuint32_t cpu_id;\n};\n\n",
    );
    s.push_str(
        "struct event_header_compact {\n\
         \tenum : uint5_t { compact = 0 ... 30, extended = 31 } id;\n\
         \tvariant <id> {\n\
         \t\tstruct {\n\t\t\tuint27_clock_t timestamp;\n\t\t} compact;\n\
         \t\tstruct {\n\t\t\tuint32_t id;\n\t\t\tuint64_clock_t timestamp;\n\t\t} extended;\n\
         \t} v;\n} align(8);\n\n",
    );
    s.push_str(
        "struct event_header_large {\n\
         \tenum : uint16_t { compact = 0 ... 65534, extended = 65535 } id;\n\
         \tvariant <id> {\n\
         \t\tstruct {\n\t\t\tuint32_clock_t timestamp;\n\t\t} compact;\n\
         \t\tstruct {\n\t\t\tuint32_t id;\n\t\t\tuint64_clock_t timestamp;\n\t\t} extended;\n\
         \t} v;\n} align(8);\n\n",
    );
    for st in &t.streams {
        let header = match st.header {
            HeaderKind::Compact => "event_header_compact",
            HeaderKind::Large => "event_header_large",
        };
        let _ = write!(
            s,
            "stream {{\n\tid = {};\n\tevent.header := struct {header};\n\
             \tpacket.context := struct packet_context;\n",
            st.id
        );
        if !st.context.is_empty() {
            s.push_str("\tevent.context := struct {\n");
            for f in &st.context {
                field_decl(&mut s, f);
            }
            s.push_str("\t};\n");
        }
        s.push_str("};\n\n");
    }
    s
}

/// The whole metadata text.
pub fn metadata(t: &TraceDesc) -> String {
    let mut s = preamble(t);
    for e in &t.events {
        s.push_str(&event_block(e));
    }
    s
}

/// One `event { … };` block, appended when an event class is first used.
pub fn event_block(e: &EventClass) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "event {{\n\tname = \"{}\";\n\tid = {};\n\tstream_id = {};\n\tloglevel = {};\n\tfields := struct {{\n",
        escape(&e.name),
        e.id,
        e.stream_id,
        e.loglevel
    );
    for f in &e.fields {
        field_decl(&mut s, f);
    }
    s.push_str("\t};\n};\n\n");
    s
}

fn int_decl(t: &IntType) -> String {
    format!(
        "integer {{ size = {}; align = 8; signed = {}; encoding = none; base = {}; {}}}",
        t.bits,
        u8::from(t.signed),
        t.base,
        if t.be { "byte_order = be; " } else { "" }
    )
}

/// Field names get one leading underscore, as LTTng writes them: readers
/// strip it, and it keeps names clear of TSDL keywords.
fn field_decl(s: &mut String, f: &Field) {
    let name = format!("_{}", f.name);
    let _ = match &f.ty {
        FieldType::Int(t) => writeln!(s, "\t\t{} {name};", int_decl(t)),
        FieldType::F32 => writeln!(
            s,
            "\t\tfloating_point {{ exp_dig = 8; mant_dig = 24; align = 8; }} {name};"
        ),
        FieldType::F64 => writeln!(
            s,
            "\t\tfloating_point {{ exp_dig = 11; mant_dig = 53; align = 8; }} {name};"
        ),
        FieldType::Bool => writeln!(
            s,
            "\t\tenum : {} {{ \"false\" = 0, \"true\" = 1 }} {name};",
            int_decl(&IntType::unsigned(8))
        ),
        FieldType::Enum(t, maps) => {
            let m: Vec<String> = maps
                .iter()
                .map(|m| {
                    if m.start == m.end {
                        format!("\"{}\" = {}", escape(&m.label), m.start)
                    } else {
                        format!("\"{}\" = {} ... {}", escape(&m.label), m.start, m.end)
                    }
                })
                .collect();
            writeln!(
                s,
                "\t\tenum : {} {{ {} }} {name};",
                int_decl(t),
                m.join(", ")
            )
        }
        FieldType::String => writeln!(s, "\t\tstring {{ encoding = UTF8; }} {name};"),
        FieldType::Array(t, n) => writeln!(s, "\t\t{} {name}[{n}];", int_decl(t)),
        FieldType::Text(n) => writeln!(
            s,
            "\t\tinteger {{ size = 8; align = 8; signed = 0; encoding = UTF8; base = 10; }} {name}[{n}];"
        ),
        FieldType::Sequence(t) => {
            let len = format!("_{name}_length");
            writeln!(s, "\t\t{} {len};", int_decl(&IntType::unsigned(32)))
                .and_then(|_| writeln!(s, "\t\t{} {name}[ {len} ];", int_decl(t)))
        }
        FieldType::SequenceOf { len: lt, elem } => {
            let len = format!("_{name}_length");
            writeln!(s, "\t\t{} {len};", int_decl(lt))
                .and_then(|_| writeln!(s, "\t\t{} {name}[ {len} ];", int_decl(elem)))
        }
        FieldType::TextSequence { len: lt } => {
            let len = format!("_{name}_length");
            writeln!(s, "\t\t{} {len};", int_decl(lt)).and_then(|_| {
                writeln!(
                    s,
                    "\t\tinteger {{ size = 8; align = 8; signed = 0; encoding = UTF8; base = 10; }} {name}[ {len} ];"
                )
            })
        }
    };
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}
