//! The Parquet export: every event of every trace below a folder (one
//! trace, a whole-program trace's processes, a relay daemon's tree of
//! hosts and sessions) as one row of a Hive-partitioned dataset,
//! `OUT/host=HOST/date=YYYY-MM-DD/part-*.parquet`, that DuckDB, Spark or
//! any Parquet engine queries with plain SQL. The columns are in
//! `schema.rs`; rows are buffered column by column (`rows.rs`) and
//! written a million at a time, zstd-compressed, timestamps delta-encoded.

mod rows;
mod schema;
mod sink;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ctf::read::ItemRef;
use ctf::types::{EnvValue, FieldType, TraceDesc};
use ctf::value::Value;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::data_type::ByteArray;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::ColumnPath;

use self::rows::{Cell, Rows, ROW_GROUP};
use self::schema::{Kind, Schema, CPU, EVENT, PID, THREAD, TID, TIMESTAMP};
use self::sink::Sink;
use super::Args;
use crate::read::Show;

/// One file being written: a trace's events of one host and day (its
/// writer is the sink's, known by `id`).
struct Part {
    id: usize,
    rows: Rows,
    path: PathBuf,
    events: u64,
}

/// The civil date (UTC) of `ns` nanoseconds since the epoch, `YYYY-MM-DD`
/// (the days-to-date conversion of H. Hinnant's `civil_from_days`).
fn date(ns: i128) -> String {
    let z = ns.div_euclid(86_400 * 1_000_000_000) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// A partition value as a folder name: characters other than letters,
/// digits, `.`, `_` and `-` as `%XX` (Hive's escaping).
fn partition_value(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    if out.is_empty() || out == "." || out == ".." {
        out = format!("%{}", out.len());
    }
    out
}

fn env_str<'a>(desc: &'a TraceDesc, k: &str) -> Option<&'a str> {
    desc.env.iter().find(|e| e.0 == k).and_then(|e| match &e.1 {
        EnvValue::Str(s) => Some(s.as_str()),
        EnvValue::Int(_) => None,
    })
}

/// Creates the output folder: new, or an empty one; mode 0700.
fn create_dir(out: &Path) -> Result<(), String> {
    use std::os::unix::fs::DirBuilderExt;
    match std::fs::DirBuilder::new().mode(0o700).create(out) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let meta = std::fs::symlink_metadata(out).map_err(|e| e.to_string())?;
            let empty = meta.is_dir()
                && std::fs::read_dir(out)
                    .map_err(|e| e.to_string())?
                    .next()
                    .is_none();
            if empty {
                Ok(())
            } else {
                Err(format!(
                    "-o {}: exists and is not an empty folder; give a new folder for the dataset",
                    out.display()
                ))
            }
        }
        Err(e) => Err(format!("-o {}: {e}", out.display())),
    }
}

/// What every file of the dataset shares: its folder, schema, writer
/// properties and columns.
struct Dataset {
    out: PathBuf,
    schema: Arc<parquet::schema::types::Type>,
    props: Arc<WriterProperties>,
    columns: Vec<schema::Column>,
}

/// Opens file `id` of the partition of `host` and `day`, new (`O_EXCL`,
/// no link followed), 0600, and hands its writer to the sink.
fn open_part(
    d: &Dataset,
    host: &str,
    day: &str,
    id: usize,
    sink: &mut Sink,
) -> Result<Part, Box<dyn std::error::Error>> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let dir = d
        .out
        .join(format!("host={}", partition_value(host)))
        .join(format!("date={day}"));
    std::fs::DirBuilder::new()
        .mode(0o700)
        .recursive(true)
        .create(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    let path = dir.join(format!("part-{id:05}.parquet"));
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let w = SerializedFileWriter::new(file, d.schema.clone(), d.props.clone())?;
    sink.open(id, path.clone(), w)?;
    Ok(Part {
        id,
        rows: Rows::new(&d.columns),
        path,
        events: 0,
    })
}

/// A field's value in its column's kind.
fn cell(ty: &FieldType, kind: Kind, v: &Value) -> Cell {
    match (kind, v) {
        (Kind::I64 | Kind::U64, Value::Int(x)) => Cell::I64(*x),
        // Unsigned 64-bit values keep their bits (the column says unsigned).
        (Kind::I64 | Kind::U64, Value::Uint(x)) => Cell::I64(*x as i64),
        (Kind::F64, Value::F32(x)) => Cell::F64(*x as f64),
        (Kind::F64, Value::F64(x)) => Cell::F64(*x),
        (Kind::Bool, Value::Bool(b)) => Cell::Bool(*b),
        (_, Value::Str(s)) => Cell::Bytes(ByteArray::from(s.as_str())),
        (_, Value::RawStr(b)) => Cell::Bytes(ByteArray::from(super::escaped(b).as_str())),
        (_, Value::Enum(x)) => {
            let label = ty
                .enum_maps()
                .and_then(|m| m.iter().find(|m| m.start <= *x && *x <= m.end));
            Cell::Bytes(match label {
                Some(m) => ByteArray::from(m.label.as_str()),
                None => ByteArray::from(x.to_string().as_str()),
            })
        }
        // Structures, variants and arrays as JSON.
        (_, v) => Cell::Bytes(ByteArray::from(
            super::chrome::json_value(v).to_string().as_str(),
        )),
    }
}

/// Writes the Parquet dataset.
pub fn write(a: &Args) -> Result<(), Box<dyn std::error::Error>> {
    crate::read::open(&a.dir)?;
    let dirs = if a.dir.join("metadata").exists() {
        vec![a.dir.clone()]
    } else {
        ctf::read::find_traces(&a.dir)?
    };
    // Every trace's classes first: one schema for the whole dataset.
    let traces = dirs
        .iter()
        .map(|d| crate::read::open(d))
        .collect::<Result<Vec<_>, _>>()?;
    let mut schema = Schema::new();
    let columns: Vec<Vec<Vec<usize>>> = traces.iter().map(|t| schema.add(&t.desc)).collect();
    let ptype = Arc::new(parquet::schema::parser::parse_message_type(
        &schema.message(),
    )?);
    // Integers: a dictionary while their values repeat (status codes,
    // thread ids), deltas when they do not fit one (request ids, which
    // grow); times always as deltas.
    let mut props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(3)?))
        .set_column_dictionary_enabled(ColumnPath::from("timestamp"), false)
        // A column of more distinct values than 4,096 eight-byte ones
        // (request ids, latencies) leaves its dictionary for deltas early.
        .set_dictionary_page_size_limit(32 * 1024)
        // Minimum and maximum per column chunk, not per page.
        .set_statistics_enabled(EnabledStatistics::Chunk)
        .set_max_row_group_row_count(Some(ROW_GROUP))
        .set_created_by(format!("ringtrace {}", env!("CARGO_PKG_VERSION")));
    for c in &schema.columns {
        if matches!(c.kind, Kind::I64 | Kind::U64 | Kind::Time) {
            props = props.set_column_encoding(
                ColumnPath::from(c.name.as_str()),
                Encoding::DELTA_BINARY_PACKED,
            );
        }
    }
    let dataset = Dataset {
        out: a.output.clone(),
        schema: ptype,
        props: Arc::new(props.build()),
        columns: schema.columns.clone(),
    };
    create_dir(&a.output)?;
    let mut sink = Sink::start(&schema.columns);
    let (mut total, mut lost, mut files) = (0u64, 0u64, Vec::new());
    let mut errors = Vec::new();
    let mut next_file = 0usize;
    for (trace, cols) in traces.iter().zip(&columns) {
        let desc = trace.desc.clone();
        let host = env_str(&desc, "hostname").unwrap_or("unknown").to_owned();
        let env_pid = desc.env.iter().find_map(|e| match (&e.0[..], &e.1) {
            ("vpid", EnvValue::Int(p)) => Some(*p),
            _ => None,
        });
        let who = crate::who::Contexts::of(&desc);
        // Per event class, the field columns it leaves null.
        let fields_from = EVENT + 1;
        let nulls: Vec<Vec<usize>> = cols
            .iter()
            .map(|c| {
                (fields_from..schema.columns.len())
                    .filter(|i| !c.contains(i))
                    .collect()
            })
            .collect();
        let names: Vec<ByteArray> = desc
            .events
            .iter()
            .map(|c| ByteArray::from(c.name.as_str()))
            .collect();
        // Each thread's name as a value, kept while the thread keeps it.
        let mut threads: HashMap<i64, (String, ByteArray)> = HashMap::new();
        // The trace's files, one per day; the current day's bounds and file.
        let mut parts: Vec<(String, Part)> = Vec::new();
        let mut day_of = (i128::MAX, i128::MIN, 0usize);
        let errs = crate::read::walk(
            trace,
            "exporting",
            Show::OnTerminal,
            |item| -> Result<bool, Box<dyn std::error::Error>> {
                let e = match item {
                    ItemRef::Event(e) => e,
                    ItemRef::Discarded { events, .. } => {
                        lost += events;
                        return Ok(true);
                    }
                };
                // Times a damaged or hostile clock puts beyond 1677-2262
                // are clamped to what the column holds.
                let ns = crate::pretty::epoch_ns(&desc.clock, e.ts)
                    .clamp(i64::MIN as i128, i64::MAX as i128);
                if ns < day_of.0 || ns >= day_of.1 {
                    let day_ns = 86_400 * 1_000_000_000;
                    let start = ns.div_euclid(day_ns) * day_ns;
                    let day = date(ns);
                    let i = match parts.iter().position(|p| p.0 == day) {
                        Some(i) => i,
                        None => {
                            next_file += 1;
                            let p = open_part(&dataset, &host, &day, next_file, &mut sink)?;
                            parts.push((day, p));
                            parts.len() - 1
                        }
                    };
                    day_of = (start, start + day_ns, i);
                }
                let p = &mut parts[day_of.2].1;
                let r = &mut p.rows;
                r.begin();
                r.set(TIMESTAMP, Cell::I64(ns as i64));
                r.set(EVENT, Cell::Bytes(names[e.class].clone()));
                r.set(CPU, Cell::I64(e.cpu as i64));
                let w = who.who(e.class, e.context);
                match w.pid.or(env_pid) {
                    Some(pid) => r.set(PID, Cell::I64(pid)),
                    None => r.null(PID),
                }
                match w.tid {
                    Some(tid) => r.set(TID, Cell::I64(tid)),
                    None => r.null(TID),
                }
                if let Some(name) = w.name {
                    let key = w.tid.unwrap_or(i64::MIN);
                    let b = match threads.get(&key) {
                        Some((n, b)) if n == name => b.clone(),
                        _ => {
                            let b = ByteArray::from(name);
                            threads.insert(key, (name.to_owned(), b.clone()));
                            b
                        }
                    };
                    r.set(THREAD, Cell::Bytes(b));
                } else {
                    r.null(THREAD);
                }
                let class = &desc.events[e.class];
                for ((f, v), &c) in class.fields.iter().zip(e.values).zip(&cols[e.class]) {
                    r.set(c, cell(&f.ty, schema.columns[c].kind, v));
                }
                for &c in &nulls[e.class] {
                    r.null(c);
                }
                p.events += 1;
                total += 1;
                if r.len == ROW_GROUP {
                    sink.write(p.id, r)?;
                }
                Ok(true)
            },
        )?;
        errors.extend(errs);
        for (_, p) in parts {
            sink.close(p.id, p.rows)?;
            files.push((p.path, p.events));
        }
    }
    sink.finish()?;
    report(a, total, lost, &files)?;
    crate::read::damage(&errors, "events before the damage were exported")
}

/// Prints the files written, aligned, and the bytes per event.
fn report(
    a: &Args,
    total: u64,
    lost: u64,
    files: &[(PathBuf, u64)],
) -> Result<(), Box<dyn std::error::Error>> {
    let mut bytes = 0u64;
    let rows: Vec<(String, u64, u64)> = files
        .iter()
        .map(|(p, n)| {
            let size = std::fs::metadata(p).map_or(0, |m| m.len());
            bytes += size;
            let rel = p.strip_prefix(&a.output).unwrap_or(p);
            (rel.display().to_string(), *n, size)
        })
        .collect();
    let w = rows.iter().map(|r| r.0.len()).max().unwrap_or(4).max(4);
    eprintln!("{:<w$}  {:>12}  {:>12}", "file", "events", "bytes");
    for (f, n, s) in &rows {
        eprintln!("{f:<w$}  {n:>12}  {s:>12}");
    }
    eprintln!(
        "{total} events written to {} ({} files, {bytes} bytes, {:.2} bytes per event)",
        a.output.display(),
        files.len(),
        bytes as f64 / total.max(1) as f64
    );
    if lost > 0 {
        eprintln!("{lost} events the tracer discarded are not in the dataset (`ringtrace stats` counts them)");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_partition_values() {
        assert_eq!(date(0), "1970-01-01");
        assert_eq!(date(-1), "1969-12-31");
        // 2026-11-24 00:00:00 UTC and the nanosecond before.
        let d = 1_795_478_400i128 * 1_000_000_000;
        assert_eq!(date(d), "2026-11-24");
        assert_eq!(date(d - 1), "2026-11-23");
        assert_eq!(date(951_782_400 * 1_000_000_000), "2000-02-29");
        // The column's whole range (what clamped times are) has a date.
        assert_eq!(date(i64::MIN as i128), "1677-09-21");
        assert_eq!(date(i64::MAX as i128), "2262-04-11");
        assert_eq!(partition_value("web-1.example"), "web-1.example");
        assert_eq!(partition_value("a/b c"), "a%2Fb%20c");
        assert_eq!(partition_value(".."), "%2");
    }
}
