//! The Chrome trace-event JSON export (opened by ui.perfetto.dev and
//! chrome://tracing): async slices keyed by the event's `id` field when it
//! has one (a request that moves between CPUs), otherwise nested slices on
//! the recording thread's track (its CPU buffer's when the trace records
//! no thread ids).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufWriter, Write};

use ctf::read::ItemRef;
use ctf::value::Value;
use serde_json::{json, Map};

use super::{classes, process, Args, Kind, Lane};
use crate::read::Show;

pub(crate) fn json_value(v: &Value) -> serde_json::Value {
    match v {
        Value::Uint(x) => json!(x),
        Value::Int(x) => json!(x),
        Value::F32(x) => serde_json::Number::from_f64(*x as f64)
            .map_or(json!(x.to_string()), serde_json::Value::Number),
        Value::F64(x) => {
            serde_json::Number::from_f64(*x).map_or(json!(x.to_string()), serde_json::Value::Number)
        }
        Value::Bool(b) => json!(b),
        Value::Enum(x) => json!(x),
        Value::Str(s) => json!(s),
        Value::RawStr(b) => json!(super::escaped(b)),
        Value::UintArray(xs) => json!(xs),
        Value::IntArray(xs) => json!(xs),
        // Structures as arrays of their values (their field names are in
        // the metadata), variants as the value of their option.
        Value::Struct(vs) | Value::Array(vs) => {
            serde_json::Value::Array(vs.iter().map(json_value).collect())
        }
        Value::Variant(_, v) => json_value(v),
    }
}

/// Writes the chrome-json export.
pub fn write(a: &Args) -> Result<(), Box<dyn std::error::Error>> {
    let trace = crate::read::open(&a.dir)?;
    let desc = trace.desc.clone();
    let (pid, procname) = process(&desc);
    let classes = classes(&desc);
    let file = super::create_output(a)?;
    let mut out = BufWriter::with_capacity(1 << 16, file);
    write!(out, "{{\"displayTimeUnit\":\"ns\",\"traceEvents\":[")?;
    let mut sep = "";
    let mut emit =
        |out: &mut BufWriter<std::fs::File>, v: serde_json::Value| -> std::io::Result<()> {
            out.write_all(sep.as_bytes())?;
            serde_json::to_writer(&mut *out, &v)?;
            out.write_all(b"\n")?;
            sep = ",";
            Ok(())
        };
    emit(
        &mut out,
        json!({"ph": "M", "name": "process_name", "pid": pid, "args": {"name": procname}}),
    )?;
    let who = crate::who::Contexts::of(&desc);
    let mut spans = super::spans::SpanFields::default();
    // Each lane's name as last announced, and the processes announced.
    let mut lanes: BTreeMap<Lane, String> = BTreeMap::new();
    let mut pids = BTreeSet::from([pid]);
    let mut first = None;
    let mut count = 0u64;
    let errors = crate::read::walk(
        &trace,
        "exporting",
        Show::OnTerminal,
        |item| -> Result<bool, Box<dyn std::error::Error>> {
            let ns = crate::pretty::epoch_ns(&desc.clock, item.ts());
            let f = *first.get_or_insert(ns);
            let ts = (ns - f) as f64 / 1000.0;
            let (lane, thread_name) = Lane::of_item(&item, &who, pid);
            let (p, tid) = lane.ids(pid);
            if pids.insert(p) {
                emit(
                    &mut out,
                    json!({"ph": "M", "name": "process_name", "pid": p, "args": {"name": format!("process {p}")}}),
                )?;
            }
            // Announced again when the thread's name changes.
            let name = lane.name(thread_name);
            if lanes.get(&lane) != Some(&name) {
                emit(
                    &mut out,
                    json!({"ph": "M", "name": "thread_name", "pid": p, "tid": tid, "args": {"name": name}}),
                )?;
                lanes.insert(lane, name);
            }
            let v = match item {
                ItemRef::Discarded {
                    events, packets, ..
                } => json!({
                    "ph": "i", "s": "t", "name": "events lost", "cat": "ringtrace", "pid": p, "tid": tid, "ts": ts,
                    "args": {"discarded events": events, "missing packets": packets}
                }),
                ItemRef::Event(e) => {
                    let (k, cat, name, id) = &classes[e.class];
                    let class = &desc.events[e.class];
                    let mut args = Map::new();
                    for (fd, v) in class.fields.iter().zip(e.values) {
                        args.insert(fd.name.clone(), json_value(v));
                    }
                    spans.observe(class, e.values);
                    for (n, v) in spans.entered(class, e.values) {
                        args.insert(n.clone(), json_value(v));
                    }
                    let mut ev = json!({"name": name, "cat": cat, "pid": p, "tid": tid, "ts": ts, "args": args});
                    let o = ev.as_object_mut().expect("an object");
                    match (k, id.map(|i| &e.values[i])) {
                        (Kind::Instant, _) => {
                            o.insert("ph".into(), json!("i"));
                            o.insert("s".into(), json!("t"));
                            o.insert("name".into(), json!(super::instant_name(&class.name)));
                        }
                        (Kind::Begin | Kind::End, Some(idv)) => {
                            o.insert(
                                "ph".into(),
                                json!(if *k == Kind::Begin { "b" } else { "e" }),
                            );
                            o.insert("id".into(), json!(format!("{}", json_value(idv))));
                        }
                        (Kind::Begin, None) => {
                            o.insert("ph".into(), json!("B"));
                        }
                        (Kind::End, None) => {
                            o.insert("ph".into(), json!("E"));
                        }
                    }
                    ev
                }
            };
            emit(&mut out, v)?;
            count += 1;
            Ok(true)
        },
    )?;
    write!(out, "]}}")?;
    out.flush()?;
    super::finish(count, a, errors)
}
