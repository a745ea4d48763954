//! `ringtrace stats`: per stream (events, discarded, packets, time span,
//! rate), per event class counts, per process and per thread counts (when
//! the events carry their ids), total size and bytes per event. A
//! directory of traces (a program's processes) is counted as one.

use std::collections::BTreeMap;
use std::path::PathBuf;

use ctf::read::ItemRef;
use ctf::types::EnvValue;

/// Arguments of `stats`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  ringtrace stats /tmp/t\n  ringtrace stats /tmp/t --by function   (events recorded with --context ip)"
)]
pub struct Args {
    /// Trace directory.
    dir: PathBuf,
    /// Also count the events per function that recorded them (from
    /// their `ip` context and the trace's state dump).
    #[arg(long, value_enum)]
    by: Option<By>,
    #[command(flatten)]
    symbols: crate::symbols::SymbolArgs,
}

/// What else `stats` counts by.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum By {
    /// The function of each event's `ip`.
    Function,
}

#[derive(Default)]
struct StreamStats {
    events: u64,
    discarded: u64,
    packets: u64,
    /// Packets missing (their sequence numbers skipped).
    packets_lost: u64,
    first: Option<u64>,
    last: u64,
    bytes: u64,
}

/// The per-process and per-thread tables, most events first.
fn who_tables(
    per_thread: &BTreeMap<(i64, i64), (u64, String)>,
    names: &BTreeMap<i64, String>,
    events: u64,
) {
    let pct = |n: u64| 100.0 * n as f64 / events.max(1) as f64;
    let mut per_process: BTreeMap<i64, (u64, usize, &str)> = BTreeMap::new();
    for ((p, t), (n, name)) in per_thread {
        let row = per_process.entry(*p).or_default();
        row.0 += n;
        row.1 += 1;
        // Named as its trace says, else as its main thread (tid = pid).
        if let Some(n) = names.get(p) {
            row.2 = n;
        } else if t == p {
            row.2 = name;
        }
    }
    let mut procs: Vec<_> = per_process.into_iter().collect();
    procs.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.0.cmp(&b.0)));
    outln!();
    outln!(
        "{:>8} {:<16} {:>8} {:>12} {:>8}",
        "pid",
        "process",
        "threads",
        "events",
        "%"
    );
    for (p, (n, threads, name)) in procs {
        outln!(
            "{:>8} {:<16} {:>8} {:>12} {:>7.2}%",
            p,
            name,
            threads,
            n,
            pct(n)
        );
    }
    let mut threads: Vec<_> = per_thread.iter().collect();
    threads.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.0.cmp(b.0)));
    outln!();
    outln!(
        "{:>8} {:>8} {:<16} {:>12} {:>8}",
        "pid",
        "tid",
        "thread",
        "events",
        "%"
    );
    for ((p, t), (n, name)) in threads {
        outln!("{:>8} {:>8} {:<16} {:>12} {:>7.2}%", p, t, name, n, pct(*n));
    }
}

/// What reading the trace counted.
struct Counts {
    /// Per stream, named from the directory given (`chan_0`, or
    /// `app-4242-…/chan_0` in a directory of traces).
    rows: Vec<(String, StreamStats)>,
    /// Events per event class.
    per_class: Vec<u64>,
    /// (pid, tid) → (events, the thread's last name).
    per_thread: BTreeMap<(i64, i64), (u64, String)>,
    /// Function (or unresolved address) → events.
    per_function: std::collections::HashMap<std::rc::Rc<str>, u64>,
    /// What could not be read.
    errors: Vec<String>,
}

/// Runs `stats`.
pub fn run(a: Args) -> Result<(), Box<dyn std::error::Error>> {
    let dir = a.dir.as_path();
    let trace = crate::read::open(dir)?;
    let mut symbols = match a.by {
        Some(By::Function) => Some(a.symbols.resolver(&trace).ok_or_else(|| {
            format!(
                "{}: no event carries its address (the ip context): record with --context ip \
                 to count events by function",
                dir.display()
            )
        })?),
        None => None,
    };
    let c = count(&trace, dir, symbols.as_mut());
    if trace.desc.clock.is_absent() {
        outln!("trace {}  (no clock: events carry no time)", dir.display());
    } else {
        outln!(
            "trace {}  (clock {} Hz)",
            dir.display(),
            trace.desc.clock.freq
        );
    }
    outln!();
    let (events, bytes) = stream_table(&c.rows, trace.desc.clock.freq.max(1) as f64);
    class_table(&trace.desc, &c.per_class, events);
    if !c.per_thread.is_empty() {
        who_tables(&c.per_thread, &process_names(&trace), events);
    }
    if symbols.is_some() {
        function_table(&c.per_function, events);
    }
    let untraced = crate::read::untraced(dir);
    if !untraced.is_empty() {
        outln!();
        outln!("processes not traced: {}", untraced.len());
        for (_, line) in &untraced {
            outln!("  {line}");
        }
    }
    let meta: u64 = trace
        .parts
        .iter()
        .filter_map(|p| std::fs::metadata(p.dir.join("metadata")).ok())
        .map(|m| m.len())
        .sum();
    outln!();
    outln!("{:<24} {:>12}", "stream bytes", bytes);
    outln!("{:<24} {:>12}", "metadata bytes", meta);
    outln!(
        "{:<24} {:>12.1}",
        "bytes per event",
        (bytes + meta) as f64 / events.max(1) as f64
    );
    crate::read::damage(&c.errors, "counts above stop at the damage")
}

/// Reads every stream of `trace` (in `dir`), payloads stepped over; with
/// `symbols`, counts the events per function too.
fn count(
    trace: &ctf::read::Trace,
    dir: &std::path::Path,
    mut symbols: Option<&mut crate::symbols::Symbols>,
) -> Counts {
    let mut c = Counts {
        rows: Vec::new(),
        per_class: vec![0u64; trace.desc.events.len()],
        per_thread: BTreeMap::new(),
        per_function: std::collections::HashMap::new(),
        errors: Vec::new(),
    };
    let who = crate::who::Contexts::of(&trace.desc);
    let pb = crate::read::progress(trace, "reading", crate::read::Show::OnTerminal);
    let mut done_before = 0u64;
    for k in 0..trace.streams.len() {
        let path = &trace.streams[k];
        let mut st = StreamStats {
            bytes: std::iter::once(path)
                .chain(&trace.continued[k])
                .filter_map(|p| std::fs::metadata(p).ok())
                .map(|m| m.len())
                .sum(),
            ..Default::default()
        };
        // Counts need no field value: payloads are stepped over.
        let mut s = match trace.stream(k) {
            Ok(s) => s.skip_payloads(),
            Err(e) => {
                c.errors.push(e.to_string());
                continue;
            }
        };
        loop {
            match s.advance() {
                Ok(true) => {}
                Ok(false) => break,
                Err(e) => {
                    c.errors.push(e.to_string());
                    // A file that continues the stream is read on.
                    if s.has_next_file() {
                        continue;
                    }
                    break;
                }
            }
            let item = s.head();
            if let (Some(sym), ItemRef::Event(e)) = (symbols.as_deref_mut(), &item) {
                if let Some(f) = sym.function(e.class, e.context) {
                    *c.per_function.entry(f).or_default() += 1;
                }
            }
            c.add(&mut st, &who, item);
            if st.events.is_multiple_of(65536) {
                pb.set_position(done_before + s.bytes_read());
            }
        }
        st.packets = s.packets_read();
        done_before += s.bytes_read();
        pb.set_position(done_before);
        let name = path.strip_prefix(dir).unwrap_or(path);
        c.rows.push((name.to_string_lossy().into_owned(), st));
    }
    pb.finish_and_clear();
    c
}

impl Counts {
    /// Counts one item of a stream whose counts are `st`.
    fn add(&mut self, st: &mut StreamStats, who: &crate::who::Contexts, item: ItemRef<'_>) {
        match item {
            ItemRef::Event(e) => {
                st.events += 1;
                self.per_class[e.class] += 1;
                let w = who.who(e.class, e.context);
                if let (Some(p), Some(t)) = (w.pid, w.tid) {
                    let row = self.per_thread.entry((p, t)).or_default();
                    row.0 += 1;
                    if let Some(n) = w.name {
                        if row.1 != n {
                            row.1 = n.to_string();
                        }
                    }
                }
                st.first.get_or_insert(e.ts);
                st.last = e.ts;
            }
            ItemRef::Discarded {
                events, packets, ..
            } => {
                st.discarded += events;
                st.packets_lost += packets;
            }
        }
    }
}

/// The table of streams and their total; the events and bytes in all.
fn stream_table(rows: &[(String, StreamStats)], freq: f64) -> (u64, u64) {
    let line = |name: &str,
                events: u64,
                discarded: u64,
                packets: u64,
                span: f64,
                bytes: u64,
                lost: u64| {
        let rate = if span > 0.0 {
            events as f64 / span
        } else {
            0.0
        };
        outln!(
            "{:<24} {:>12} {:>10} {:>8} {:>12.6} {:>14.0} {:>12} {:>12}",
            name,
            events,
            discarded,
            packets,
            span,
            rate,
            bytes,
            lost
        );
    };
    outln!(
        "{:<24} {:>12} {:>10} {:>8} {:>12} {:>14} {:>12} {:>12}",
        "stream",
        "events",
        "discarded",
        "packets",
        "span (s)",
        "events/s",
        "bytes",
        "lost packets"
    );
    for (name, s) in rows {
        let span = s.first.map_or(0.0, |f| (s.last - f) as f64 / freq);
        line(
            name,
            s.events,
            s.discarded,
            s.packets,
            span,
            s.bytes,
            s.packets_lost,
        );
    }
    let sum = |f: fn(&StreamStats) -> u64| rows.iter().map(|r| f(&r.1)).sum::<u64>();
    let first = rows.iter().filter_map(|r| r.1.first).min();
    let last = rows.iter().map(|r| r.1.last).max().unwrap_or(0);
    let span = first.map_or(0.0, |f| (last.saturating_sub(f)) as f64 / freq);
    let (events, bytes) = (sum(|s| s.events), sum(|s| s.bytes));
    line(
        "total",
        events,
        sum(|s| s.discarded),
        sum(|s| s.packets),
        span,
        bytes,
        sum(|s| s.packets_lost),
    );
    (events, bytes)
}

/// Events per name, most first (the same event of several processes is
/// one row).
fn class_table(desc: &ctf::types::TraceDesc, per_class: &[u64], events: u64) {
    outln!();
    outln!("{:<40} {:>12} {:>8}", "event", "count", "%");
    let mut by_name: BTreeMap<&str, u64> = BTreeMap::new();
    for (c, n) in per_class.iter().enumerate().filter(|c| *c.1 > 0) {
        *by_name.entry(desc.events[c].name.as_str()).or_default() += n;
    }
    let mut classes: Vec<(&str, u64)> = by_name.into_iter().collect();
    classes.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    for (name, n) in classes {
        outln!(
            "{:<40} {:>12} {:>7.2}%",
            name,
            n,
            100.0 * n as f64 / events.max(1) as f64
        );
    }
}

/// Events per function, most first (an address no object or symbol
/// names stands for itself).
fn function_table(per_function: &std::collections::HashMap<std::rc::Rc<str>, u64>, events: u64) {
    outln!();
    outln!("{:<40} {:>12} {:>8}", "function", "count", "%");
    let mut rows: Vec<(&std::rc::Rc<str>, &u64)> = per_function.iter().collect();
    rows.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    for (f, n) in rows {
        outln!(
            "{:<40} {:>12} {:>7.2}%",
            f,
            n,
            100.0 * *n as f64 / events.max(1) as f64
        );
    }
}

/// Each process's name as its trace's environment gives it (its main
/// thread's name at the start).
fn process_names(trace: &ctf::read::Trace) -> BTreeMap<i64, String> {
    trace
        .parts
        .iter()
        .filter_map(|p| {
            let env = |k: &str| p.desc.env.iter().find(|e| e.0 == k).map(|e| &e.1);
            match (env("vpid"), env("procname")) {
                (Some(EnvValue::Int(pid)), Some(EnvValue::Str(n))) => Some((*pid, n.clone())),
                _ => None,
            }
        })
        .collect()
}
