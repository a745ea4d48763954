//! The Chrome trace-event JSON export (opened by ui.perfetto.dev and
//! chrome://tracing): async slices keyed by the event's `id` field when it
//! has one (a request that moves between CPUs), otherwise nested slices on
//! the recording thread's track (its CPU buffer's when the trace records
//! no thread ids).

use std::io::{BufWriter, Write};

use ctf::value::Value;
use serde_json::{json, Map};

use super::{drive, Args, Kind, Lane};

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
    let o = drive::open(a)?;
    let mut w = Chrome {
        out: BufWriter::with_capacity(1 << 16, o.file),
        sep: "",
        first: None,
    };
    write!(w.out, "{{\"displayTimeUnit\":\"ns\",\"traceEvents\":[")?;
    w.emit(
        &json!({"ph": "M", "name": "process_name", "pid": o.pid, "args": {"name": o.procname}}),
    )?;
    drive::drive(a, &o.trace, o.pid, &mut w)
}

/// The JSON array being written.
struct Chrome {
    out: BufWriter<std::fs::File>,
    /// What goes before the next element.
    sep: &'static str,
    /// The first item's time: times are microseconds from it.
    first: Option<i128>,
}

impl Chrome {
    fn emit(&mut self, v: &serde_json::Value) -> std::io::Result<()> {
        self.out.write_all(self.sep.as_bytes())?;
        serde_json::to_writer(&mut self.out, v)?;
        self.out.write_all(b"\n")?;
        self.sep = ",";
        Ok(())
    }
}

impl drive::Sink for Chrome {
    fn process(&mut self, pid: i64) -> std::io::Result<()> {
        self.emit(&json!({"ph": "M", "name": "process_name", "pid": pid, "args": {"name": format!("process {pid}")}}))
    }

    fn lane(&mut self, _: Lane, pid: i64, tid: i64, name: &str) -> std::io::Result<()> {
        self.emit(&json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}}))
    }

    fn item(&mut self, it: drive::Item<'_>) -> std::io::Result<()> {
        let f = *self.first.get_or_insert(it.ns);
        let ts = (it.ns - f) as f64 / 1000.0;
        let (p, tid) = (it.pid, it.tid);
        let v = match it.what {
            drive::What::Lost { events, packets } => json!({
                "ph": "i", "s": "t", "name": "events lost", "cat": "ringtrace", "pid": p, "tid": tid, "ts": ts,
                "args": {"discarded events": events, "missing packets": packets}
            }),
            drive::What::Event {
                class,
                drawn,
                values,
                span,
                func,
                at,
            } => {
                let mut args = Map::new();
                for (fd, v) in class.fields.iter().zip(values) {
                    args.insert(fd.name.clone(), json_value(v));
                }
                for (n, v) in span {
                    args.insert(n.clone(), json_value(v));
                }
                if let Some(at) = at {
                    args.insert("at".into(), json!(&*at));
                }
                let name = func.as_deref().unwrap_or(&drawn.name);
                let mut ev = json!({"name": name, "cat": drawn.cat, "pid": p, "tid": tid, "ts": ts, "args": args});
                let o = ev.as_object_mut().expect("an object");
                let k = drawn.kind;
                match (k, drawn.id.map(|i| &values[i])) {
                    (Kind::Instant, _) => {
                        o.insert("ph".into(), json!("i"));
                        o.insert("s".into(), json!("t"));
                        o.insert("name".into(), json!(super::instant_name(&class.name)));
                    }
                    (Kind::Begin | Kind::End, Some(idv)) => {
                        o.insert("ph".into(), json!(if k == Kind::Begin { "b" } else { "e" }));
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
        self.emit(&v)
    }

    fn end(&mut self) -> std::io::Result<()> {
        write!(self.out, "]}}")?;
        self.out.flush()
    }
}
