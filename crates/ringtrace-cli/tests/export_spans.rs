//! `export` of what the `tracing` layer writes: a span's `.enter`/`.exit`
//! pair becomes a slice keyed by its `span_id`, and a target with `::`
//! (`app::db`) stays whole as the category, with the event name keeping
//! its own colons (`event src/db.rs:42`).

use ringtrace::{ChannelConfig, EventDesc, FieldDesc, FieldKind, Level, Mode, Session};

mod common;
use common::*;

/// A descriptor as the `tracing` layer makes one (provider, name, fields).
fn desc(
    provider: &'static str,
    name: &'static str,
    fields: &'static [FieldDesc],
) -> &'static EventDesc {
    let d: &'static EventDesc = Box::leak(Box::new(EventDesc::new(
        provider,
        name,
        Level::Info,
        fields,
        "tests/export_spans.rs",
        1,
    )));
    ringtrace::register(d);
    d
}

const SPAN: &[FieldDesc] = &[FieldDesc {
    name: "span_id",
    kind: FieldKind::Unsigned(64),
}];

const ROWS: &[FieldDesc] = &[FieldDesc {
    name: "rows",
    kind: FieldKind::Unsigned(64),
}];

/// `.new`: the span's id and its fields.
const NEW: &[FieldDesc] = &[
    FieldDesc {
        name: "span_id",
        kind: FieldKind::Unsigned(64),
    },
    FieldDesc {
        name: "rows",
        kind: FieldKind::Unsigned(64),
    },
];

#[test]
fn tracing_spans_export_as_slices_with_whole_targets() {
    let dir = tmp("spans");
    let s = Session::builder("spans")
        .output(&dir)
        .mode(Mode::Discard)
        .channel(ChannelConfig::new("c").per_thread())
        .enable("app::db:*")
        .create()
        .unwrap();
    s.start();
    let enter = desc("app::db", "query.enter", SPAN);
    let exit = desc("app::db", "query.exit", SPAN);
    let event = desc("app::db", "event src/db.rs:42", ROWS);
    let new = desc("app::db", "query.new", NEW);
    let close = desc("app::db", "query.close", SPAN);
    let u64_payload = |v: u64| move |b: &mut [u8]| b.copy_from_slice(&v.to_le_bytes());
    let new_payload = |id: u64, rows: u64| {
        move |b: &mut [u8]| {
            b[..8].copy_from_slice(&id.to_le_bytes());
            b[8..].copy_from_slice(&rows.to_le_bytes());
        }
    };
    // Two spans, the second nested in the first; the first has a field.
    new.emit(16, new_payload(1, 42));
    enter.emit(8, u64_payload(1));
    enter.emit(8, u64_payload(2));
    event.emit(8, u64_payload(7));
    exit.emit(8, u64_payload(2));
    exit.emit(8, u64_payload(1));
    close.emit(8, u64_payload(1));
    s.stop().unwrap();
    drop(s);

    let out = tmp("spans.json");
    let o = run(&[
        "export",
        dir.to_str().unwrap(),
        "--format",
        "chrome-json",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.ok, "{}", o.stderr);
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let evs: Vec<&serde_json::Value> = v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] != "M")
        .filter(|e| !["query.new", "query.close"].contains(&e["name"].as_str().unwrap()))
        .collect();
    // The slice of span 1 carries the span's field, given at `.new`.
    assert_eq!(evs[0]["args"]["rows"], 42, "{}", evs[0]);
    assert_eq!(evs[1]["args"].get("rows"), None, "{}", evs[1]);
    let row = |e: &serde_json::Value| {
        (
            e["ph"].as_str().unwrap().to_string(),
            e["cat"].as_str().unwrap().to_string(),
            e["name"].as_str().unwrap().to_string(),
            e.get("id").map(|i| i.as_str().unwrap().to_string()),
        )
    };
    let rows: Vec<_> = evs.iter().map(|e| row(e)).collect();
    let r = |ph: &str, name: &str, id: Option<&str>| {
        (
            ph.to_string(),
            "app::db".to_string(),
            name.to_string(),
            id.map(str::to_string),
        )
    };
    assert_eq!(
        rows,
        [
            r("b", "query", Some("1")),
            r("b", "query", Some("2")),
            r("i", "event src/db.rs:42", None),
            r("e", "query", Some("2")),
            r("e", "query", Some("1")),
        ]
    );
    let _ = std::fs::remove_file(&out);

    // Perfetto, read with Perfetto's own protos: the spans are slices on
    // the recording thread's track, the second nested in the first, the
    // first with its field; the event between them is an instant there.
    let out = tmp("spans.pftrace");
    let o = run(&[
        "export",
        dir.to_str().unwrap(),
        "--format",
        "perfetto",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.ok, "{}", o.stderr);
    let script = r#"
import sys
from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import Trace
t = Trace()
t.ParseFromString(open(sys.argv[1], "rb").read())
names, anns, threads, rows = {}, {}, {}, []
for p in t.packet:
    for i in p.interned_data.event_names:
        names[i.iid] = i.name
    for i in p.interned_data.debug_annotation_names:
        anns[i.iid] = i.name
    if p.track_descriptor.HasField("thread"):
        threads[p.track_descriptor.uuid] = p.track_descriptor.thread.tid
    if p.HasField("track_event"):
        e = p.track_event
        name = names.get(e.name_iid, "")
        if name in ("query.new", "query.close"):
            continue
        args = ",".join(f"{anns[a.name_iid]}={a.uint_value}" for a in e.debug_annotations)
        rows.append(f"{e.type}:{name}:{args}:{'thread' if e.track_uuid in threads else 'other'}")
print(" ".join(rows))
"#;
    let py = std::process::Command::new(perfetto_python())
        .arg("-c")
        .arg(script)
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        py.status.success(),
        "{}",
        String::from_utf8_lossy(&py.stderr)
    );
    // type 1 begin, 2 end (named by its begin), 3 instant.
    assert_eq!(
        String::from_utf8(py.stdout).unwrap().trim(),
        "1:query:span_id=1,rows=42:thread 1:query:span_id=2:thread \
         3:event src/db.rs:42:rows=7:thread 2::span_id=2:thread 2::span_id=1:thread"
    );
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&out);
}
