//! Generates the plain-text TSDL metadata (`/* CTF 1.8 */`) of a trace from
//! its description. The text declares the packet header, packet context and
//! both event header layouts once; event classes are separate blocks so that
//! metadata can grow while tracing (append [`event_block`]s).

use std::fmt::Write;

use crate::types::{
    EnumMapping, EnvValue, EventClass, Field, FieldType, HeaderKind, IntType, PlainHeader, Slot,
    StreamClass, TraceDesc,
};

/// The preamble: type aliases, trace, env, clock, packet context, event
/// headers and the stream classes. Event blocks follow it.
pub fn preamble(t: &TraceDesc) -> String {
    let mut s = String::new();
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
    // Every stream class with ringtrace's (LTTng's) packets: the packet
    // header and context are the named ones declared here.
    let standard = t.streams.iter().all(|st| st.has_ringtrace_packets());
    trace_block(&mut s, t, standard);
    env_block(&mut s, t);
    clock_blocks(&mut s, t);
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
    let _ = write!(
        s,
        "struct event_header_compact {};\n\n",
        lttng_header(false, "_clock_t")
    );
    let _ = write!(
        s,
        "struct event_header_large {};\n\n",
        lttng_header(true, "_clock_t")
    );
    for st in &t.streams {
        stream_block(&mut s, st, &t.clock.name, standard);
    }
    s
}

/// `trace { … };`: version, UUID, byte order and the packet header.
fn trace_block(s: &mut String, t: &TraceDesc, standard: bool) {
    let big_endian = t.streams.first().is_some_and(|st| st.packet.big_endian);
    let header = match t.streams.first() {
        _ if standard => {
            "\tpacket.header := struct {\n\t\tuint32_t magic;\n\t\tuint8_t  uuid[16];\n\
             \t\tuint32_t stream_id;\n\t\tuint64_t stream_instance_id;\n\t};\n"
                .to_owned()
        }
        Some(st) => match packet_structs(st, &t.clock.name).0 {
            Some(h) => format!("\tpacket.header := {h};\n"),
            None => String::new(),
        },
        None => String::new(),
    };
    let _ = write!(
        s,
        "trace {{\n\tmajor = 1;\n\tminor = 8;\n\tuuid = \"{}\";\n\tbyte_order = {};\n{header}}};\n\n",
        crate::types::uuid_string(&t.uuid),
        if big_endian { "be" } else { "le" },
    );
}

/// `env { … };`, when the trace has an environment.
fn env_block(s: &mut String, t: &TraceDesc) {
    if t.env.is_empty() {
        return;
    }
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

/// The trace's clock, then those of stream classes that count another, each
/// with the integer types mapped to it (`uint64_clock_t`, …). Each is
/// `absolute`: its offset places tick 0 on the Unix epoch (ringtrace's
/// clock is calibrated against the system's), which lets babeltrace2 merge
/// its traces with LTTng's, whose clocks it takes for such.
fn clock_blocks(s: &mut String, t: &TraceDesc) {
    let mut clocks = vec![(&t.clock, "_clock_t".to_owned())];
    for c in t.streams.iter().filter_map(|st| st.clock.as_ref()) {
        if clocks.iter().all(|(o, _)| o.name != c.name) {
            clocks.push((c, format!("_clock_{}_t", c.name)));
        }
    }
    for (c, sfx) in &clocks {
        if c.is_absent() {
            // No clock: the types times would have, counting nothing.
            for (bits, align) in [(27, 1), (32, 8), (64, 8)] {
                let _ = write!(
                    s,
                    "typealias integer {{ size = {bits}; align = {align}; signed = false; }} \
                     := uint{bits}{sfx};\n\n"
                );
            }
            continue;
        }
        let _ = write!(
            s,
            "clock {{\n\tname = \"{}\";\n\tdescription = \"{}\";\n\tfreq = {};\n\tprecision = {};\n\
             \toffset_s = {};\n\toffset = {};\n\tabsolute = TRUE;\n}};\n\n",
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
                 \tmap = clock.{}.value;\n}} := uint{bits}{sfx};\n\n",
                c.name
            );
        }
    }
}

/// `stream { … };`: one stream class's event header, packet context and
/// event context.
fn stream_block(s: &mut String, st: &StreamClass, trace_clock: &str, standard: bool) {
    let (clock, sfx) = match &st.clock {
        Some(c) => (c.name.as_str(), format!("_clock_{}_t", c.name)),
        None => (trace_clock, String::new()),
    };
    let header = match st.header {
        HeaderKind::Compact | HeaderKind::Large if !sfx.is_empty() => format!(
            "\tevent.header := struct {};\n",
            lttng_header(st.header == HeaderKind::Large, &sfx)
        ),
        HeaderKind::Compact => "\tevent.header := struct event_header_compact;\n".to_owned(),
        HeaderKind::Large => "\tevent.header := struct event_header_large;\n".to_owned(),
        HeaderKind::Plain(p) => plain_header(&p, clock)
            .map(|h| format!("\tevent.header := {h};\n"))
            .unwrap_or_default(),
    };
    let context = if standard {
        "\tpacket.context := struct packet_context;\n".to_owned()
    } else {
        packet_structs(st, clock)
            .1
            .map(|c| format!("\tpacket.context := {c};\n"))
            .unwrap_or_default()
    };
    let _ = write!(s, "stream {{\n\tid = {};\n{header}{context}", st.id);
    if !st.context.is_empty() {
        s.push_str("\tevent.context := struct {\n");
        struct_fields(s, &st.context);
        let _ = writeln!(s, "\t}}{};", struct_align(&st.context));
    }
    s.push_str("};\n\n");
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
        "event {{\n\tname = \"{}\";\n\tid = {};\n\tstream_id = {};\n\tloglevel = {};\n",
        escape(&e.name),
        e.id,
        e.stream_id,
        e.loglevel
    );
    if !e.context.is_empty() {
        s.push_str("\tcontext := struct {\n");
        struct_fields(&mut s, &e.context);
        let _ = writeln!(s, "\t}}{};", struct_align(&e.context));
    }
    s.push_str("\tfields := struct {\n");
    struct_fields(&mut s, &e.fields);
    let _ = write!(s, "\t}}{};\n}};\n\n", struct_align(&e.fields));
    s
}

/// A sequence's element: one not of whole bytes is packed, aligned on a
/// bit.
fn elem_decl(t: &IntType) -> String {
    let d = int_decl(t);
    if t.is_packed() {
        d.replacen("align = 8;", "align = 1;", 1)
    } else {
        d
    }
}

/// An integer, its byte order always said (a big-endian trace's
/// `native` is big-endian).
fn int_decl(t: &IntType) -> String {
    format!(
        "integer {{ size = {}; align = 8; signed = {}; encoding = none; base = {}; byte_order = {}; }}",
        t.bits,
        u8::from(t.signed),
        t.base,
        if t.be { "be" } else { "le" }
    )
}

/// LTTng's compact (5-bit id, 27-bit time) or large (16-bit id, 32-bit
/// time) event header, its times of the clock whose aliases end in `sfx`.
fn lttng_header(large: bool, sfx: &str) -> String {
    let (id, max, ts) = if large {
        ("uint16_t", 65534, 32)
    } else {
        ("uint5_t", 30, 27)
    };
    format!(
        "{{\n\tenum : {id} {{ compact = 0 ... {max}, extended = {} }} id;\n\
         \tvariant <id> {{\n\
         \t\tstruct {{\n\t\t\tuint{ts}{sfx} timestamp;\n\t\t}} compact;\n\
         \t\tstruct {{\n\t\t\tuint32_t id;\n\t\t\tuint64{sfx} timestamp;\n\t\t}} extended;\n\
         \t}} v;\n}} align(8)",
        max + 1
    )
}

/// A slot's integer, mapped to the clock when it is a time.
fn slot_decl(sl: &Slot, name: &str, clock: Option<&str>) -> String {
    let map = clock.map_or(String::new(), |c| format!(" map = clock.{c}.value;"));
    format!(
        "integer {{ size = {}; align = 8; signed = false; byte_order = {};{map} }} {name};",
        sl.ty.bits,
        if sl.ty.be { "be" } else { "le" }
    )
}

/// A structure of fixed size from byte `start` to byte `end` with these
/// fields (offset, declaration, bytes), padded where they leave gaps.
fn fixed_struct(mut fields: Vec<(u32, String, u32)>, start: u32, end: u32) -> String {
    fields.sort_by_key(|f| f.0);
    let mut s = String::from("struct {\n");
    let mut at = start;
    let mut pad = 0;
    let mut gap = |s: &mut String, from: u32, to: u32| {
        if to > from {
            let _ = writeln!(
                s,
                "\t\tinteger {{ size = 8; align = 8; signed = false; }} _padding{pad}[{}];",
                to - from
            );
            pad += 1;
        }
    };
    for (off, decl, bytes) in fields {
        gap(&mut s, at, off);
        let _ = writeln!(s, "\t\t{decl}");
        at = off + bytes;
    }
    gap(&mut s, at, end);
    s.push_str("\t}");
    s
}

/// The packet header and packet context structures of a layout other
/// than ringtrace's (`None` where there is none).
fn packet_structs(st: &StreamClass, clock: &str) -> (Option<String>, Option<String>) {
    let l = &st.packet;
    let decl = |sl: &Option<Slot>, name: &str, time: bool| {
        sl.map(|x| {
            (
                x.offset,
                slot_decl(&x, name, time.then_some(clock)),
                x.ty.bytes() as u32,
            )
        })
    };
    let mut header: Vec<_> = [
        decl(&l.magic, "magic", false),
        decl(&l.stream_id, "stream_id", false),
        decl(&l.stream_instance_id, "stream_instance_id", false),
    ]
    .into_iter()
    .flatten()
    .collect();
    if let Some(u) = l.uuid {
        let d = "integer { size = 8; align = 8; signed = false; } uuid[16];".to_owned();
        header.push((u, d, 16));
    }
    let mut context: Vec<_> = [
        decl(&l.timestamp_begin, "timestamp_begin", true),
        decl(&l.timestamp_end, "timestamp_end", true),
        decl(&l.content_size, "content_size", false),
        decl(&l.packet_size, "packet_size", false),
        decl(&l.packet_seq_num, "packet_seq_num", false),
        decl(&l.events_discarded, "events_discarded", false),
    ]
    .into_iter()
    .flatten()
    .collect();
    // `cpu_id` and the producer's own fields (integers or enumerations).
    for (f, &at) in st.packet_fields.iter().zip(&st.packet_field_offsets) {
        let mut d = String::new();
        field_decl(&mut d, f);
        let bytes = crate::value::fixed_size(&f.ty).unwrap_or(0) as u32;
        context.push((at, d.trim().to_owned(), bytes));
    }
    let header_end = header.iter().map(|f| f.0 + f.2).max().unwrap_or(0);
    let h = (!header.is_empty()).then(|| fixed_struct(header, 0, header_end));
    let c = (l.len > header_end).then(|| fixed_struct(context, header_end, l.len));
    (h, c)
}

/// A plain event header's structure (`None`: the empty one, no header).
fn plain_header(p: &PlainHeader, clock: &str) -> Option<String> {
    if p.len == 0 && p.align == 1 {
        return None;
    }
    let fields = [
        p.id.map(|x| (x.offset, slot_decl(&x, "id", None), x.ty.bytes() as u32)),
        p.ts.map(|x| {
            (
                x.offset,
                slot_decl(&x, "timestamp", Some(clock)),
                x.ty.bytes() as u32,
            )
        }),
    ];
    let body = fixed_struct(fields.into_iter().flatten().collect(), 0, p.len as u32);
    Some(format!("{body} align({})", p.align as u32 * 8))
}

/// Field names get one leading underscore, as LTTng writes them: readers
/// strip it, and it keeps names clear of TSDL keywords.
fn field_decl(s: &mut String, f: &Field) {
    let mut d = String::new();
    field_decl_unaligned(&mut d, f);
    if f.align > 1 {
        // Its first declaration (a sequence's length) carries the alignment.
        d = d.replacen("align = 8;", &format!("align = {};", f.align as u32 * 8), 1);
    }
    s.push_str(&d);
}

/// A structure's field declarations: the first one's alignment is the
/// structure's (`struct_align`: a string cannot say it itself, and an
/// array's would be its elements'), the others' their own.
fn struct_fields(s: &mut String, fields: &[Field]) {
    for (k, f) in fields.iter().enumerate() {
        if k == 0 {
            field_decl_unaligned(s, f);
        } else {
            field_decl(s, f);
        }
    }
}

/// The declaration of an array or sequence `f` of elements `e`: the
/// element's, its name followed by `[count]`.
fn element_decl(f: &Field, e: &Field, count: &str) -> String {
    let mut one = Field::new(f.name.clone(), e.ty.clone());
    one.align = e.align;
    let mut d = String::new();
    field_decl(&mut d, &one);
    let end = format!(" _{};\n", f.name);
    match d.strip_suffix(&end) {
        Some(head) => format!("{head} _{}[{count}];\n", f.name),
        None => d,
    }
}

/// The `align(n)` of a structure whose first field is aligned.
fn struct_align(fields: &[Field]) -> String {
    match fields.first() {
        Some(f) if f.align > 1 => format!(" align({})", f.align as u32 * 8),
        _ => String::new(),
    }
}

fn field_decl_unaligned(s: &mut String, f: &Field) {
    let name = format!("_{}", f.name);
    let _ = match &f.ty {
        FieldType::ArrayOf(e, n) => {
            s.push_str(&element_decl(f, e, &n.to_string()));
            Ok(())
        }
        FieldType::SequenceOfAny { len: lt, elem } => {
            let len = format!("_{}", f.length_name());
            let _ = writeln!(s, "\t\t{} {len};", int_decl(lt));
            s.push_str(&element_decl(f, elem, &format!(" {len} ")));
            Ok(())
        }
        FieldType::Struct(fields) => {
            s.push_str("\t\tstruct {\n");
            struct_fields(s, fields);
            writeln!(s, "\t\t}}{} {name};", struct_align(fields))
        }
        FieldType::Variant(v) => {
            // Each name of the path escaped, an absolute prefix kept.
            let (abs, rel) = match v.tag_name.strip_prefix("event.fields.") {
                Some(rel) => ("event.fields.", rel),
                None => ("", v.tag_name.as_str()),
            };
            let path: Vec<String> = rel.split('.').map(|n| format!("_{n}")).collect();
            let _ = writeln!(s, "\t\tvariant <{abs}{}> {{", path.join("."));
            for o in &v.options {
                field_decl(s, o);
            }
            writeln!(s, "\t\t}} {name};")
        }
        FieldType::Int(t) => writeln!(s, "\t\t{} {name};", int_decl(t)),
        FieldType::Bits(b) => {
            // A run's first field starts at a byte; the others follow bit
            // after bit.
            // An array's elements follow one another bit after bit.
            let mut d = int_decl(&b.int);
            if b.at > 0 || b.count.is_some() {
                d = d.replacen("align = 8;", "align = 1;", 1);
            }
            match (&b.maps, b.count) {
                (Some(maps), _) => writeln!(s, "\t\tenum : {d} {{ {} }} {name};", mappings(maps)),
                (None, Some(n)) => writeln!(s, "\t\t{d} {name}[{n}];"),
                (None, None) => writeln!(s, "\t\t{d} {name};"),
            }
        }
        FieldType::F32Be => writeln!(
            s,
            "\t\tfloating_point {{ exp_dig = 8; mant_dig = 24; align = 8; byte_order = be; }} {name};"
        ),
        FieldType::F64Be => writeln!(
            s,
            "\t\tfloating_point {{ exp_dig = 11; mant_dig = 53; align = 8; byte_order = be; }} {name};"
        ),
        FieldType::F32 => writeln!(
            s,
            "\t\tfloating_point {{ exp_dig = 8; mant_dig = 24; align = 8; byte_order = le; }} {name};"
        ),
        FieldType::F64 => writeln!(
            s,
            "\t\tfloating_point {{ exp_dig = 11; mant_dig = 53; align = 8; byte_order = le; }} {name};"
        ),
        FieldType::Bool => writeln!(
            s,
            "\t\tenum : {} {{ \"false\" = 0, \"true\" = 1 }} {name};",
            int_decl(&IntType::unsigned(8))
        ),
        FieldType::Enum(t, maps) => writeln!(
            s,
            "\t\tenum : {} {{ {} }} {name};",
            int_decl(t),
            mappings(maps)
        ),
        FieldType::String => writeln!(s, "\t\tstring {{ encoding = UTF8; }} {name};"),
        FieldType::Array(t, n) => writeln!(s, "\t\t{} {name}[{n}];", int_decl(t)),
        FieldType::Text(n) => writeln!(
            s,
            "\t\tinteger {{ size = 8; align = 8; signed = 0; encoding = UTF8; base = 10; }} {name}[{n}];"
        ),
        FieldType::Sequence(t) => {
            let len = format!("_{}", f.length_name());
            writeln!(s, "\t\t{} {len};", int_decl(&IntType::unsigned(32)))
                .and_then(|_| writeln!(s, "\t\t{} {name}[ {len} ];", elem_decl(t)))
        }
        FieldType::SequenceOf { len: lt, elem } => {
            let len = format!("_{}", f.length_name());
            writeln!(s, "\t\t{} {len};", int_decl(lt))
                .and_then(|_| writeln!(s, "\t\t{} {name}[ {len} ];", elem_decl(elem)))
        }
        FieldType::TextSequence { len: lt } => {
            let len = format!("_{}", f.length_name());
            writeln!(s, "\t\t{} {len};", int_decl(lt)).and_then(|_| {
                writeln!(
                    s,
                    "\t\tinteger {{ size = 8; align = 8; signed = 0; encoding = UTF8; base = 10; }} {name}[ {len} ];"
                )
            })
        }
    };
}

/// An enumeration's mappings, `"label" = a ... b` each.
fn mappings(maps: &[EnumMapping]) -> String {
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
    m.join(", ")
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}
