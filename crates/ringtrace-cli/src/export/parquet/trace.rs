//! One trace's share of the Parquet export: a group of its streams, read
//! one after the other (no merge by time: rows are grouped by event class
//! in each row group anyway), each event one row of the file of its day,
//! written by a thread of the group's own (`sink.rs`).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use ctf::read::{ItemRef, Trace};
use ctf::types::{EnvValue, FieldType, TraceDesc};
use ctf::value::Value;
use indicatif::ProgressBar;
use parquet::data_type::ByteArray;
use parquet::file::writer::SerializedFileWriter;

use super::rows::{Cell, Rows, ROW_GROUP};
use super::schema::{Kind, CPU, EVENT, PID, THREAD, TID, TIMESTAMP};
use super::sink::Sink;
use super::time::{date, EpochNs};
use super::Dataset;

/// One file being written: a trace's events of one host and day (its
/// writer is the sink's, known by `id`).
struct Part {
    id: usize,
    rows: Rows,
    path: PathBuf,
    events: u64,
}

/// Opens file `id` of the partition of `host` and `day`, new (`O_EXCL`,
/// no link followed), 0600, and hands its writer to the sink.
fn open_part(
    d: &Dataset,
    plans: &[Vec<usize>],
    host: &str,
    day: &str,
    id: usize,
    sink: &mut Sink,
) -> Result<Part, String> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let dir = d
        .out
        .join(format!("host={}", super::partition_value(host)))
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
    let w = SerializedFileWriter::new(file, d.schema.clone(), d.props.clone())
        .map_err(|e| format!("{}: {e}", path.display()))?;
    sink.open(id, path.clone(), w)?;
    Ok(Part {
        id,
        rows: Rows::new(&d.columns, plans),
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
        (_, Value::RawStr(b)) => Cell::Bytes(ByteArray::from(crate::export::escaped(b).as_str())),
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
            crate::export::chrome::json_value(v).to_string().as_str(),
        )),
    }
}

/// A hasher for thread ids (integers of no adversary's choosing that
/// matter: a collision costs a comparison, not a wrong result).
#[derive(Default, Clone, Copy)]
struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ b as u64).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }
    fn write_i64(&mut self, v: i64) {
        self.0 = (v as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

type IdHash = std::hash::BuildHasherDefault<IdHasher>;

/// What one group exported.
pub(super) struct Out {
    pub events: u64,
    /// Events the tracer discarded (not in the dataset).
    pub lost: u64,
    /// Each file and its events.
    pub files: Vec<(PathBuf, u64)>,
    /// Damaged streams, each named.
    pub errors: Vec<String>,
}

/// What every group of a trace shares.
pub(super) struct Job<'a> {
    dataset: &'a Dataset,
    trace: &'a Trace,
    /// Per event class, the column of each field.
    cols: &'a [Vec<usize>],
    /// Per event class, the columns its rows fill, in the order they are
    /// pushed: time, CPU, who (what its context carries), its fields.
    plans: Vec<Vec<usize>>,
    /// Per event class, whether each field is pushed (not a second field
    /// of a column already filled).
    pushed: Vec<Vec<bool>>,
    names: Vec<ByteArray>,
    host: String,
    env_pid: Option<i64>,
    who: crate::who::Contexts,
    next_file: &'a AtomicUsize,
    pb: &'a ProgressBar,
}

fn env_str<'a>(desc: &'a TraceDesc, k: &str) -> Option<&'a str> {
    desc.env.iter().find(|e| e.0 == k).and_then(|e| match &e.1 {
        EnvValue::Str(s) => Some(s.as_str()),
        EnvValue::Int(_) => None,
    })
}

/// `trace`'s streams in at most `n` groups of about equal bytes.
pub(super) fn groups(trace: &Trace, n: usize) -> Vec<Vec<usize>> {
    let size = |k: usize| -> u64 {
        std::iter::once(&trace.streams[k])
            .chain(&trace.continued[k])
            .filter_map(|p| std::fs::metadata(p).ok())
            .map(|m| m.len())
            .sum()
    };
    let mut ks: Vec<(u64, usize)> = (0..trace.streams.len()).map(|k| (size(k), k)).collect();
    ks.sort_by(|a, b| b.cmp(a));
    let mut groups: Vec<(u64, Vec<usize>)> = vec![(0, Vec::new()); n.clamp(1, ks.len().max(1))];
    for (bytes, k) in ks {
        // The lightest group so far takes the heaviest stream left.
        let g = groups.iter_mut().min_by_key(|g| g.0).expect("at least one");
        g.0 += bytes;
        g.1.push(k);
    }
    groups
        .into_iter()
        .filter(|g| !g.1.is_empty())
        .map(|mut g| {
            g.1.sort_unstable();
            g.1
        })
        .collect()
}

impl<'a> Job<'a> {
    pub fn new(
        dataset: &'a Dataset,
        trace: &'a Trace,
        cols: &'a [Vec<usize>],
        next_file: &'a AtomicUsize,
        pb: &'a ProgressBar,
    ) -> Job<'a> {
        let desc = &trace.desc;
        let env_pid = desc.env.iter().find_map(|e| match (&e.0[..], &e.1) {
            ("vpid", EnvValue::Int(p)) => Some(*p),
            _ => None,
        });
        let who = crate::who::Contexts::of(desc);
        let plans = (0..desc.events.len())
            .map(|k| {
                let (pid, tid, name) = who.carried(k);
                let mut p = vec![TIMESTAMP, CPU];
                if pid || env_pid.is_some() {
                    p.push(PID);
                }
                if tid {
                    p.push(TID);
                }
                if name {
                    p.push(THREAD);
                }
                for &c in &cols[k] {
                    if !p.contains(&c) {
                        p.push(c);
                    }
                }
                p
            })
            .collect();
        let pushed = cols
            .iter()
            .map(|c| {
                c.iter()
                    .enumerate()
                    .map(|(i, x)| !c[..i].contains(x))
                    .collect()
            })
            .collect();
        Job {
            dataset,
            trace,
            cols,
            plans,
            pushed,
            names: desc
                .events
                .iter()
                .map(|c| ByteArray::from(c.name.as_str()))
                .collect(),
            host: env_str(desc, "hostname").unwrap_or("unknown").to_owned(),
            env_pid,
            who,
            next_file,
            pb,
        }
    }

    /// Exports the events of streams `group`.
    pub fn run(&self, group: &[usize]) -> Result<Out, String> {
        let mut sink = Sink::start();
        let r = self.rows(group, &mut sink);
        // The thread's own error, if it stopped, says more.
        let finished = sink.finish();
        let out = r?;
        finished?;
        Ok(out)
    }

    fn rows(&self, group: &[usize], sink: &mut Sink) -> Result<Out, String> {
        let mut out = Out {
            events: 0,
            lost: 0,
            files: Vec::new(),
            errors: Vec::new(),
        };
        let mut names = ThreadNames::default();
        let to_ns = EpochNs::new(&self.trace.desc.clock);
        // The files, one per day; the current day's bounds and file.
        let mut days = Days {
            parts: Vec::new(),
            current: (i128::MAX, i128::MIN, 0),
        };
        for &k in group {
            let mut s = match self.trace.stream(k) {
                Ok(s) => s,
                Err(e) => {
                    out.errors.push(e.to_string());
                    continue;
                }
            };
            let (mut n, mut shown) = (0u32, 0u64);
            loop {
                match s.advance() {
                    Ok(true) => {}
                    Ok(false) => break,
                    Err(e) => {
                        out.errors.push(e.to_string());
                        // A file that continues the stream is read on.
                        if s.has_next_file() {
                            continue;
                        }
                        break;
                    }
                }
                n = n.wrapping_add(1);
                if n.is_multiple_of(1 << 16) {
                    let at = s.bytes_read();
                    self.pb.inc(at.saturating_sub(shown));
                    shown = at;
                }
                let e = match s.head() {
                    ItemRef::Event(e) => e,
                    ItemRef::Discarded { events, .. } => {
                        out.lost += events;
                        continue;
                    }
                };
                // Times a damaged or hostile clock puts beyond 1677-2262
                // are clamped to what the column holds.
                let ns = to_ns.get(e.ts).clamp(i64::MIN as i128, i64::MAX as i128);
                let p = self.part_of_day(ns, &mut days, sink)?;
                self.push_row(p, &e, ns, &mut names);
                out.events += 1;
                if p.rows.len == ROW_GROUP {
                    self.dicts(&mut p.rows, &names);
                    sink.write(p.id, &mut p.rows)?;
                }
            }
            self.pb.inc(s.bytes_read().saturating_sub(shown));
        }
        for (_, mut p) in days.parts {
            self.dicts(&mut p.rows, &names);
            sink.close(p.id, p.rows)?;
            out.files.push((p.path, p.events));
        }
        Ok(out)
    }

    /// Gives a row group its dictionaries: the event names, the threads'.
    fn dicts(&self, r: &mut Rows, names: &ThreadNames) {
        r.dicts[EVENT] = self.names.clone();
        r.dicts[THREAD] = names.dict.clone();
    }

    /// The file of the day of `ns`, opened when the day is new.
    fn part_of_day<'d>(
        &self,
        ns: i128,
        days: &'d mut Days,
        sink: &mut Sink,
    ) -> Result<&'d mut Part, String> {
        let (start, end, _) = days.current;
        if ns < start || ns >= end {
            let day_ns = 86_400 * 1_000_000_000;
            let start = ns.div_euclid(day_ns) * day_ns;
            let day = date(ns);
            let i = match days.parts.iter().position(|p| p.0 == day) {
                Some(i) => i,
                None => {
                    let id = self.next_file.fetch_add(1, Relaxed) + 1;
                    let p = open_part(self.dataset, &self.plans, &self.host, &day, id, sink)?;
                    days.parts.push((day, p));
                    days.parts.len() - 1
                }
            };
            days.current = (start, start + day_ns, i);
        }
        Ok(&mut days.parts[days.current.2].1)
    }

    /// Appends event `e` at `ns` to its class's rows of part `p`.
    fn push_row(
        &self,
        p: &mut Part,
        e: &ctf::read::EventRef<'_>,
        ns: i128,
        names: &mut ThreadNames,
    ) {
        let columns = &self.dataset.columns;
        let c = e.class;
        let (has_pid, has_tid, has_name) = self.who.carried(c);
        let w = self.who.who(c, e.context);
        let row = p.rows.row(c);
        row.push_i64(ns as i64);
        row.push_i64(e.cpu as i64);
        if has_pid || self.env_pid.is_some() {
            row.push(w.pid.or(self.env_pid).map_or(Cell::Null, Cell::I64));
        }
        if has_tid {
            row.push(w.tid.map_or(Cell::Null, Cell::I64));
        }
        if has_name {
            row.push(match w.name {
                Some(name) => Cell::Dict(names.entry(w.tid, name)),
                None => Cell::Null,
            });
        }
        let class = &self.trace.desc.events[c];
        for (((f, v), &col), &first) in class
            .fields
            .iter()
            .zip(e.values)
            .zip(&self.cols[c])
            .zip(&self.pushed[c])
        {
            if first {
                match (columns[col].kind, v) {
                    (Kind::I64 | Kind::U64, Value::Int(x)) => row.push_i64(*x),
                    // Unsigned 64-bit values keep their bits (the
                    // column says unsigned).
                    (Kind::I64 | Kind::U64, Value::Uint(x)) => row.push_i64(*x as i64),
                    (kind, v) => row.push(cell(&f.ty, kind, v)),
                }
            }
        }
        p.rows.end_row(c);
        p.events += 1;
    }
}

/// The files of a group, one per day, and the current day's bounds (ns)
/// and file.
struct Days {
    parts: Vec<(String, Part)>,
    current: (i128, i128, usize),
}

/// Each thread's name as an entry of the thread column's dictionary, kept
/// while the thread keeps it.
#[derive(Default)]
struct ThreadNames {
    by_tid: HashMap<i64, (String, u32), IdHash>,
    dict: Vec<ByteArray>,
}

impl ThreadNames {
    /// The dictionary entry of thread `tid` named `name`.
    fn entry(&mut self, tid: Option<i64>, name: &str) -> u32 {
        let key = tid.unwrap_or(i64::MIN);
        match self.by_tid.get(&key) {
            Some((n, x)) if n == name => *x,
            _ => {
                let x = self.dict.len() as u32;
                self.dict.push(ByteArray::from(name));
                self.by_tid.insert(key, (name.to_owned(), x));
                x
            }
        }
    }
}
