//! The Parquet export: every event of every trace below a folder (one
//! trace, a whole-program trace's processes, a relay daemon's tree of
//! hosts and sessions) as one row of a Hive-partitioned dataset,
//! `OUT/host=HOST/date=YYYY-MM-DD/part-*.parquet`, that DuckDB, Spark or
//! any Parquet engine queries with plain SQL. The columns are in
//! `schema.rs`; each trace's streams are split in as many groups as there
//! are processors, each read and written by two threads of its own
//! (`trace.rs`: read, `sink.rs`: encode and write) into files of its own;
//! rows are buffered by event class (`rows.rs`) and written 262,144 at a
//! time, zstd-compressed, integers delta-encoded; times are converted as
//! `view` prints them (`time.rs`).

mod rows;
mod schema;
mod sink;
mod time;
mod trace;

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;

use self::rows::ROW_GROUP;
use self::schema::{Kind, Schema};
use super::Args;
use crate::read::Show;

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
        if c.kind == Kind::Str {
            // Minimum and maximum of strings (paths, names) prune no query
            // worth their cost: a third of the writer's comparisons.
            props = props.set_column_statistics_enabled(
                ColumnPath::from(c.name.as_str()),
                EnabledStatistics::None,
            );
        }
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
    let next_file = AtomicUsize::new(0);
    let pb = crate::read::progress_of(
        traces
            .iter()
            .flat_map(|t| t.streams.iter().chain(t.continued.iter().flatten())),
        "exporting",
        Show::OnTerminal,
    );
    // Each trace's streams in as many groups as there are processors, each
    // decoded and written by threads of its own (its own files): rows are
    // grouped by event class anyway, so no group waits for another's time.
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (mut total, mut lost, mut files, mut errors) = (0u64, 0u64, Vec::new(), Vec::new());
    for (trace, cols) in traces.iter().zip(&columns) {
        let job = trace::Job::new(&dataset, trace, cols, &next_file, &pb);
        let outs = std::thread::scope(|sc| {
            let handles: Vec<_> = trace::groups(trace, threads)
                .into_iter()
                .map(|g| {
                    let job = &job;
                    sc.spawn(move || job.run(&g))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err("an export thread panicked".into()))
                })
                .collect::<Vec<_>>()
        });
        for o in outs {
            let o = o?;
            total += o.events;
            lost += o.lost;
            files.extend(o.files);
            errors.extend(o.errors);
        }
    }
    pb.finish_and_clear();
    files.sort();
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
    fn partition_values() {
        assert_eq!(partition_value("web-1.example"), "web-1.example");
        assert_eq!(partition_value("a/b c"), "a%2Fb%20c");
        assert_eq!(partition_value(".."), "%2");
    }
}
