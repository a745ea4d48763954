//! `ringtrace view`: events merged by time, one per line — wall-clock time,
//! delta since the previous line, CPU, process/thread id and thread name
//! (when the trace records them), provider:event, fields — and a line
//! for each gap of discarded events. Streams the trace: memory does not
//! grow with its size. On damage it prints everything before it, then the
//! error, and fails.

use std::borrow::Cow;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use crate::pretty;
use crate::select::Select;
use ctf::read::{ItemRef, Trace};
use ctf::types::TraceDesc;

/// Arguments of `view`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Times: +SECONDS (from the first event, e.g. +1.5) or HH:MM:SS[.fraction] (UTC).\n\
                        Examples:\n  ringtrace view /tmp/t --events 'myapp:request_*' --cpu 1\n  \
                        ringtrace view /tmp/t --begin +0.5 --end +0.6 --limit 100\n  \
                        ringtrace view /tmp/t --pid 4242 --proc 'worker-*'\n  \
                        ringtrace view /tmp/t --filter 'status >= 500 && path == \"/api/*\"'\n  \
                        ringtrace view /tmp/t --follow --events 'myapp:*'   (while the program runs)"
)]
pub struct Args {
    /// Trace directory.
    dir: PathBuf,
    /// Only events matching this pattern (`provider:event`, `*` wildcards); repeatable.
    #[arg(long = "events", short = 'e')]
    events: Vec<String>,
    /// Only this CPU (buffer) number.
    #[arg(long)]
    cpu: Option<u32>,
    /// Start at this time.
    #[arg(long)]
    begin: Option<String>,
    /// Stop after this time.
    #[arg(long)]
    end: Option<String>,
    /// Print at most this many events.
    #[arg(long)]
    limit: Option<u64>,
    #[command(flatten)]
    who: crate::who::Filter,
    /// Only events for which this expression holds, as LTTng's filters:
    /// `status >= 500 && path == "/api/*"`, `$ctx.procname == "worker-*"`
    /// (`==`, `!=`, `<`, `<=`, `>`, `>=`, `&&`, `||`, `!`, parentheses).
    #[arg(long, value_parser = crate::filter::check_size)]
    filter: Option<crate::filter::Expr>,
    /// `text` (this command's columns) or `babeltrace` (the lines
    /// `babeltrace2 DIR` prints, local time; discarded events are said on
    /// stderr, as babeltrace2 does).
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
    /// Keep reading the trace as the program writes it, until interrupted
    /// (Ctrl-C): events merged by time as they come.
    #[arg(long, short = 'f')]
    follow: bool,
    #[command(flatten)]
    symbols: crate::symbols::SymbolArgs,
}

/// How `view` prints events.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    /// Aligned columns: time, delta, CPU, process/thread, event, fields.
    Text,
    /// As babeltrace2's text output.
    Babeltrace,
}

/// A time bound, resolved against the first event once it is known.
#[derive(Debug, Clone, Copy)]
enum TimeSpec {
    /// Nanoseconds after the first event.
    Relative(i128),
    /// Nanoseconds since midnight UTC.
    WallClock(i128),
}

fn parse_time(s: &str) -> Result<TimeSpec, String> {
    let bad = || format!("bad time '{s}': use +SECONDS (e.g. +1.5) or HH:MM:SS[.fraction]");
    let secs = |t: &str| -> Result<i128, String> {
        let (i, f) = t.split_once('.').unwrap_or((t, ""));
        if i.is_empty() && f.is_empty() || f.len() > 9 || !f.bytes().all(|c| c.is_ascii_digit()) {
            return Err(bad());
        }
        let i: i128 = if i.is_empty() {
            0
        } else {
            i.parse().map_err(|_| bad())?
        };
        let f: i128 = if f.is_empty() {
            0
        } else {
            format!("{f:0<9}").parse().map_err(|_| bad())?
        };
        Ok(i * 1_000_000_000 + f)
    };
    if let Some(r) = s.strip_prefix('+') {
        return Ok(TimeSpec::Relative(secs(r)?));
    }
    let parts: Vec<&str> = s.split(':').collect();
    match parts.as_slice() {
        [h, m, sec] => {
            let h: i128 = h.parse().map_err(|_| bad())?;
            let m: i128 = m.parse().map_err(|_| bad())?;
            if h > 23 || m > 59 {
                return Err(bad());
            }
            Ok(TimeSpec::WallClock(
                (h * 3600 + m * 60) * 1_000_000_000 + secs(sec)?,
            ))
        }
        [r] => Ok(TimeSpec::Relative(secs(r)?)),
        _ => Err(bad()),
    }
}

/// Resolves a bound to nanoseconds since the epoch, `first` being the first
/// event's epoch time.
fn resolve(t: TimeSpec, first: i128) -> i128 {
    const DAY: i128 = 86_400 * 1_000_000_000;
    match t {
        TimeSpec::Relative(ns) => first + ns,
        TimeSpec::WallClock(ns) => first - first.rem_euclid(DAY) + ns,
    }
}

/// What to say when no event was printed: which filters, if any, left
/// nothing.
fn nothing_matched(a: &Args, any: bool) -> String {
    if !any {
        return format!("ringtrace view: {} holds no event", a.dir.display());
    }
    let mut filters = Vec::new();
    for p in &a.events {
        filters.push(format!("--events {p}"));
    }
    if let Some(c) = a.cpu {
        filters.push(format!("--cpu {c}"));
    }
    filters.extend(a.who.describe());
    if a.filter.is_some() {
        filters.push("--filter".into());
    }
    if let Some(b) = &a.begin {
        filters.push(format!("--begin {b}"));
    }
    if let Some(e) = &a.end {
        filters.push(format!("--end {e}"));
    }
    format!(
        "ringtrace view: no event matched {} (see 'ringtrace stats {}' for what the trace holds)",
        filters.join(" "),
        a.dir.display()
    )
}

/// Runs `view`.
pub fn run(a: Args) -> Result<(), Box<dyn std::error::Error>> {
    let trace = crate::read::open(&a.dir)?;
    let desc = trace.desc.clone();
    let select = Select::new(&desc, &a.dir, &a.events, a.cpu, &a.who, a.filter.as_ref())?;
    warn(&a, &desc, &select)?;
    if a.follow {
        let not_with = [
            (a.begin.is_some(), "--begin"),
            (a.end.is_some(), "--end"),
            (a.limit.is_some(), "--limit"),
            (a.format == Format::Babeltrace, "--format babeltrace"),
        ];
        if let Some((_, o)) = not_with.iter().find(|o| o.0) {
            return Err(format!("{o} does not go with --follow: drop one of them").into());
        }
        return crate::follow::run(&trace, &select);
    }
    if a.limit == Some(0) {
        return Ok(());
    }
    print(&a, &trace, &select)
}

/// Warnings on what the trace and the arguments say together: processes
/// the trace lacks, a field no event has; an error for process filters on
/// a trace that records no process.
fn warn(a: &Args, desc: &TraceDesc, select: &Select<'_>) -> Result<(), String> {
    for (_, line) in crate::read::untraced(&a.dir) {
        eprintln!("ringtrace view: warning: {line}");
    }
    if !a.who.is_empty() && !select.knows_who() {
        return Err(format!(
            "{} records no process or thread ids (no vpid, vtid or procname context), \
             so {} cannot match: record with --context vpid,vtid,procname",
            a.dir.display(),
            a.who.describe().join(" ")
        ));
    }
    if let Some(f) = &a.filter {
        // A field no event has is a typing mistake more often than not.
        for n in f.fields() {
            if !desc
                .events
                .iter()
                .any(|c| c.fields.iter().any(|f| f.name == n))
            {
                eprintln!(
                    "ringtrace view: warning: no event of {} has a field '{n}' (comparisons with it are false)",
                    a.dir.display()
                );
            }
        }
    }
    Ok(())
}

/// The events of the finished trace between `--begin` and `--end`, up to
/// `--limit`, on stdout.
fn print(a: &Args, trace: &Trace, select: &Select<'_>) -> Result<(), Box<dyn std::error::Error>> {
    let begin = a.begin.as_deref().map(parse_time).transpose()?;
    let end = a.end.as_deref().map(parse_time).transpose()?;
    let out = std::io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, out.lock());
    let desc = &trace.desc;
    let mut p = Printer {
        desc,
        select,
        lines: pretty::LineWriter::default(),
        bt2: (a.format == Format::Babeltrace).then(|| crate::babeltrace::Writer::new(trace)),
        // babeltrace2's lines are its own: no addresses added.
        symbols: match a.format {
            Format::Text => a.symbols.resolver(trace),
            Format::Babeltrace => None,
        },
        prev: None,
        shown: 0,
    };
    let mut first = None::<i128>;
    // A reader that went away (`| head`) ends the output quietly.
    let mut reader_gone = false;
    let mut bad_window = false;
    let show = crate::read::Show::WhenStdoutIsAFile;
    let errors = crate::read::walk(
        trace,
        "reading",
        show,
        |item| -> Result<bool, std::io::Error> {
            let t = pretty::epoch_ns(&desc.clock, item.ts());
            let f = *first.get_or_insert(t);
            if let (Some(b), Some(e)) = (begin, end) {
                if resolve(b, f) > resolve(e, f) {
                    bad_window = true;
                    return Ok(false);
                }
            }
            if begin.is_some_and(|b| t < resolve(b, f)) {
                return Ok(true);
            }
            if end.is_some_and(|e| t > resolve(e, f)) {
                return Ok(false);
            }
            let Some(text) = p.text(&item) else {
                return Ok(true);
            };
            match writeln!(out, "{text}") {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                    reader_gone = true;
                    return Ok(false);
                }
                Err(e) => return Err(e),
            }
            Ok(a.limit.is_none_or(|l| p.shown < l))
        },
    )?;
    match out.flush() {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => return Err(e.into()),
        _ => {}
    }
    if reader_gone {
        return Ok(());
    }
    if bad_window {
        return Err(format!(
            "--begin {} is after --end {}",
            a.begin.as_deref().unwrap_or(""),
            a.end.as_deref().unwrap_or("")
        )
        .into());
    }
    if p.shown == 0 && errors.is_empty() {
        eprintln!("{}", nothing_matched(a, first.is_some()));
    }
    crate::read::damage(&errors, "everything before the damage was printed")
}

/// The lines of a finished trace's items, in this command's columns or as
/// babeltrace2 prints them.
struct Printer<'a> {
    desc: &'a TraceDesc,
    select: &'a Select<'a>,
    lines: pretty::LineWriter,
    bt2: Option<crate::babeltrace::Writer>,
    /// The resolver of the events' `ip`, if they carry one and it is on.
    symbols: Option<crate::symbols::Symbols>,
    /// The time of the event printed last.
    prev: Option<u64>,
    /// Events printed.
    shown: u64,
}

impl Printer<'_> {
    /// The line of `item`, or `None` when it is not shown (or, with
    /// babeltrace2's format, a gap: said on stderr, out of the events, as
    /// babeltrace2 does).
    fn text(&mut self, item: &ItemRef<'_>) -> Option<Cow<'_, str>> {
        let clock = &self.desc.clock;
        match *item {
            ItemRef::Event(e) => {
                let w = self.select.event(e.class, e.cpu, e.values, e.context)?;
                let class = &self.desc.events[e.class];
                let prev = self.prev.replace(e.ts);
                self.shown += 1;
                Some(Cow::Borrowed(match &mut self.bt2 {
                    Some(b) => {
                        let stream = self.desc.stream(class.stream_id);
                        let ctx = stream.map_or(&[][..], |s| &s.context[..]);
                        let packet = stream.map_or(&[][..], |s| &s.packet_fields[..]);
                        b.line(
                            e.own_ts,
                            e.class,
                            &class.name,
                            [
                                (packet, e.packet),
                                (ctx, e.context),
                                (&class.context, e.own_context),
                            ],
                            &class.fields,
                            e.values,
                        )
                    }
                    None => {
                        self.lines.line(
                            clock,
                            class,
                            e.ts,
                            prev,
                            e.cpu,
                            &w,
                            e.values,
                            e.own_context,
                        );
                        if let Some(sym) = &mut self.symbols {
                            if let Some((ip, at)) = sym.resolve(e.class, e.context) {
                                self.lines.push_at(ip, at.as_deref());
                            }
                        }
                        self.lines.text()
                    }
                }))
            }
            ItemRef::Discarded {
                events,
                packets,
                ts,
                cpu,
            } => {
                if !self.select.gap(cpu) {
                    return None;
                }
                let line = pretty::lost_line(clock, ts, cpu, events, packets);
                if self.bt2.is_some() {
                    eprintln!("WARNING: {line}");
                    return None;
                }
                Some(Cow::Owned(line))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times() {
        assert!(matches!(
            parse_time("+1.5"),
            Ok(TimeSpec::Relative(1_500_000_000))
        ));
        assert!(matches!(
            parse_time("0.000000001"),
            Ok(TimeSpec::Relative(1))
        ));
        assert!(matches!(
            parse_time("01:02:03.5"),
            Ok(TimeSpec::WallClock(3_723_500_000_000))
        ));
        assert!(parse_time("25:00:00").is_err());
        assert!(parse_time("+").is_err());
        assert!(parse_time("1.2.3").is_err());
        assert!(parse_time("+1.0000000001").is_err());
        let first = 86_400 * 1_000_000_000 * 3 + 5;
        assert_eq!(
            resolve(TimeSpec::WallClock(7), first),
            86_400 * 1_000_000_000 * 3 + 7
        );
    }
}
