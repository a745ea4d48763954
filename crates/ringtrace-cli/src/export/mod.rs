//! `ringtrace export`: converts a trace for ui.perfetto.dev and
//! chrome://tracing. One track per CPU buffer, instant events with their
//! fields as arguments, and begin/end pairs (`*_begin`/`*_end`,
//! `*_entry`/`*_exit`, and the `tracing` layer's `<span>.enter`/`.exit`,
//! paired by `id` or `span_id`; a span's slice gets the span's fields,
//! `spans.rs`) as slices. The category is the provider
//! (a `tracing` target such as `app::db` kept whole). Two formats: Chrome trace-event JSON
//! (`chrome.rs`) and Perfetto's protobuf trace (`perfetto/`). And a
//! Parquet dataset of one row per event for SQL engines (`parquet/`).

mod chrome;
mod drive;
mod parquet;
mod perfetto;
mod spans;

use std::path::PathBuf;

use ctf::types::{EnvValue, TraceDesc};

/// Output formats.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Chrome trace-event JSON (opened by ui.perfetto.dev and chrome://tracing).
    ChromeJson,
    /// Perfetto protobuf trace (`.pftrace`, opened by ui.perfetto.dev and trace_processor).
    Perfetto,
    /// A Parquet dataset (`-o` a new folder): one row per event of every
    /// trace below DIR, partitioned `host=…/date=…`, for DuckDB, Spark or
    /// any Parquet engine.
    Parquet,
}

/// Arguments of `export`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  ringtrace export /tmp/t --format chrome-json -o trace.json\n  \
                        ringtrace export /tmp/t --format perfetto -o trace.pftrace\n\
                        Then open the file in ui.perfetto.dev.\n  \
                        ringtrace export /srv/traces --format parquet -o /tmp/dataset\n\
                        Then query it: duckdb -c \"SELECT event, count(*) FROM \
                        read_parquet('/tmp/dataset/**/*.parquet', hive_partitioning = true) GROUP BY 1\""
)]
pub struct Args {
    /// Trace directory.
    pub(crate) dir: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value = "chrome-json")]
    pub(crate) format: Format,
    /// Output file (created 0600; an existing file is refused unless
    /// --force); for parquet, a new or empty folder for the dataset.
    #[arg(short, long)]
    pub(crate) output: PathBuf,
    /// Replace the output file if it exists.
    #[arg(long)]
    pub(crate) force: bool,
    #[command(flatten)]
    pub(crate) symbols: crate::symbols::SymbolArgs,
}

/// Creates the output file: new (`O_EXCL`, never through a symbolic link),
/// mode 0600; an existing file is replaced only with `--force`, by removing
/// it first (a link is removed, not followed).
pub(crate) fn create_output(a: &Args) -> Result<std::fs::File, String> {
    use std::os::unix::fs::OpenOptionsExt;
    let path = &a.output;
    let open = || {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)
    };
    match open() {
        Ok(f) => Ok(f),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && a.force => {
            std::fs::remove_file(path)
                .map_err(|e| format!("-o {}: cannot replace it: {e}", path.display()))?;
            open().map_err(|e| format!("-o {}: {e}", path.display()))
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(format!(
            "-o {}: the file exists; give another name, or --force to replace it",
            path.display()
        )),
        Err(e) => Err(format!("-o {}: {e}", path.display())),
    }
}

/// How an event class is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Instant,
    Begin,
    End,
}

/// The kind of an event class by its name, and the name without the
/// begin/end suffix.
pub(crate) fn kind(name: &str) -> (Kind, &str) {
    for (suffix, k) in [
        ("_begin", Kind::Begin),
        ("_entry", Kind::Begin),
        (".enter", Kind::Begin),
        ("_end", Kind::End),
        ("_exit", Kind::End),
        (".exit", Kind::End),
    ] {
        if let Some(stem) = name.strip_suffix(suffix) {
            return (k, stem);
        }
    }
    (Kind::Instant, name)
}

/// A class name's provider and event name, split at the first `:` that is
/// not part of a `::` path separator: a `tracing` target `app::db` stays
/// whole, and the event name keeps its own colons (`event src/db.rs:42`).
/// No provider: `("", name)`.
pub(crate) fn split_name(name: &str) -> (&str, &str) {
    let b = name.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b':' {
            if b.get(i + 1) == Some(&b':') {
                i += 2;
                continue;
            }
            return (&name[..i], &name[i + 1..]);
        }
        i += 1;
    }
    ("", name)
}

/// How an event class is drawn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Drawn {
    pub kind: Kind,
    /// Its category: the provider.
    pub cat: String,
    /// Its name without the provider and without a begin/end suffix.
    pub name: String,
    /// The position of its `id` (or `span_id`) field, which keys
    /// begin/end pairs when present.
    pub id: Option<usize>,
    /// A begin event's `addr` field: the address of the function it
    /// enters (LTTng-UST's `cyg_profile` `func_entry`), whose name the
    /// slice takes.
    pub func_addr: Option<usize>,
}

/// How each event class of `desc` is drawn.
pub(crate) fn classes(desc: &TraceDesc) -> Vec<Drawn> {
    desc.events
        .iter()
        .map(|c| {
            let (kind, stem) = kind(&c.name);
            let (cat, name) = split_name(stem);
            let id = c
                .fields
                .iter()
                .position(|f| f.name == "id")
                .or_else(|| c.fields.iter().position(|f| f.name == "span_id"));
            let func_addr = (kind == Kind::Begin)
                .then(|| c.fields.iter().position(|f| f.name == "addr"))
                .flatten();
            Drawn {
                kind,
                cat: cat.to_owned(),
                name: name.to_owned(),
                id,
                func_addr,
            }
        })
        .collect()
}

/// The name an instant event is shown with: its class name without the
/// provider.
pub(crate) fn instant_name(class: &str) -> &str {
    split_name(class).1
}

/// The traced process's pid and name, from the trace's env block.
pub(crate) fn process(desc: &TraceDesc) -> (i64, String) {
    let env = |k: &str| desc.env.iter().find(|e| e.0 == k).map(|e| &e.1);
    let pid = match env("vpid") {
        Some(EnvValue::Int(p)) => *p,
        _ => 1,
    };
    let name = match env("procname") {
        Some(EnvValue::Str(s)) => s.clone(),
        _ => "traced process".into(),
    };
    (pid, name)
}

/// The thread an exported item is shown on: the process and thread its
/// event's context names, or, for an event without one and for a gap of
/// lost events (which no thread owns), the CPU buffer it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Lane {
    /// A thread of a process.
    Thread { pid: i64, tid: i64 },
    /// A buffer.
    Cpu(u32),
}

/// Thread ids are below the kernel's `pid_max` (at most 2^22): a CPU's
/// lane gets an id above every thread's.
pub(crate) const CPU_LANE_TID: i64 = 1 << 30;

impl Lane {
    /// The lane of an event recorded by `who` on `cpu`; `pid` is the
    /// trace's process, for events that give a thread id but no process id.
    pub(crate) fn of(who: &crate::who::Who<'_>, cpu: u32, pid: i64) -> Lane {
        match who.tid {
            Some(tid) => Lane::Thread {
                pid: who.pid.unwrap_or(pid),
                tid,
            },
            None => Lane::Cpu(cpu),
        }
    }

    /// The lane of an exported item, and the thread's name if its event
    /// gives one.
    pub(crate) fn of_item<'a>(
        item: &ctf::read::ItemRef<'a>,
        who: &crate::who::Contexts,
        pid: i64,
    ) -> (Lane, Option<&'a str>) {
        match *item {
            ctf::read::ItemRef::Event(e) => {
                let w = who.who(e.class, e.context);
                (Lane::of(&w, e.cpu, pid), w.name)
            }
            ctf::read::ItemRef::Discarded { cpu, .. } => (Lane::Cpu(cpu), None),
        }
    }

    /// (pid, tid) in the export, `pid` being the trace's process.
    pub(crate) fn ids(&self, pid: i64) -> (i64, i64) {
        match *self {
            Lane::Thread { pid, tid } => (pid, tid),
            Lane::Cpu(c) => (pid, CPU_LANE_TID + c as i64),
        }
    }

    /// The lane's name: the thread's name (or `thread <tid>`), `cpu <n>`.
    pub(crate) fn name(&self, thread_name: Option<&str>) -> String {
        match (self, thread_name) {
            (Lane::Thread { .. }, Some(n)) if !n.is_empty() => n.to_string(),
            (Lane::Thread { tid, .. }, _) => format!("thread {tid}"),
            (Lane::Cpu(c), _) => format!("cpu {c}"),
        }
    }
}

/// A recorded string that is not valid UTF-8, as text: each byte that is
/// not part of valid UTF-8 becomes `\xNN` (as `view` shows it); the format
/// escapes the rest.
pub(crate) fn escaped(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() + 8);
    crate::pretty::lossless_into(bytes, &mut s);
    s
}

/// Reports what an export wrote; fails if the trace was damaged (the events
/// before the damage are in the file).
pub(crate) fn finish(
    count: u64,
    a: &Args,
    errors: Vec<String>,
) -> Result<(), Box<dyn std::error::Error>> {
    eprintln!("{count} events written to {}", a.output.display());
    crate::read::damage(&errors, "events before the damage were exported")
}

/// Runs `export`.
pub fn run(a: Args) -> Result<(), Box<dyn std::error::Error>> {
    match a.format {
        Format::ChromeJson => chrome::write(&a),
        Format::Perfetto => perfetto::write(&a),
        Format::Parquet => parquet::write(&a),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_by_suffix() {
        assert_eq!(kind("a:req_begin"), (Kind::Begin, "a:req"));
        assert_eq!(kind("a:sys_exit"), (Kind::End, "a:sys"));
        assert_eq!(kind("a:tick"), (Kind::Instant, "a:tick"));
        assert_eq!(kind("app::db:query.enter"), (Kind::Begin, "app::db:query"));
        assert_eq!(kind("app::db:query.exit"), (Kind::End, "app::db:query"));
        assert_eq!(
            kind("app::db:query.new"),
            (Kind::Instant, "app::db:query.new")
        );
    }

    #[test]
    fn provider_paths_stay_whole() {
        assert_eq!(split_name("demo:request_begin"), ("demo", "request_begin"));
        assert_eq!(split_name("app::db:query"), ("app::db", "query"));
        assert_eq!(
            split_name("app::db::pool:event src/db.rs:42"),
            ("app::db::pool", "event src/db.rs:42")
        );
        assert_eq!(split_name("noprovider"), ("", "noprovider"));
        assert_eq!(split_name("a::b"), ("", "a::b"));
        assert_eq!(split_name(":x"), ("", "x"));
    }
}
