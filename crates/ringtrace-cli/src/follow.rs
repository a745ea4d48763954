//! `ringtrace view --follow`: the events of a trace folder while a
//! program writes it, merged by time, until interrupted (or until the
//! output is closed). Every 100 ms each stream file is read on from where
//! it was (`StreamReader::following`: whole packets only, a packet being
//! written is read when it is whole), and new stream files are picked up.
//! An event is printed once every stream that is still being written has
//! reached its time (each stream's events come in time order) and it is a
//! second older than the newest event read (a buffer's first packet, which
//! creates its file, may hold events that old), so the lines are in time
//! order, about a second behind the program. A stream that has written
//! nothing for a second no longer holds the others back (the live
//! protocols' beacons play that role), so an event it writes after that
//! may come out of order: a session recorded for following should have a
//! switch timer (`RINGTRACE_SESSION=…,switch=100`) that flushes quiet
//! buffers. When no stream has written anything for a second, the program
//! may have ended or its consumer (or the disk under it) stalled: the
//! events held back are printed only after 5 s of that, and when the
//! trace grows again after half a second or more of nothing, every
//! stream's quiet time starts over (the streams the consumer has not
//! reached yet come a moment after the first). A consumer blocked 1.5 s
//! in one write behind the page cache's writeback made one stream look
//! quiet while its events waited in its buffer (BENCHMARKS.md, session 17).

use std::collections::{HashSet, VecDeque};
use std::io::Write;
use std::time::{Duration, Instant};

use ctf::read::{Item, StreamReader, Trace};

use crate::pretty;

/// How often the files are read again.
const POLL: Duration = Duration::from_millis(100);
/// How long a stream may write nothing before the others go on without it.
const QUIET: Duration = Duration::from_secs(1);
/// How long every stream may write nothing before what was held back is
/// printed.
const ALL_QUIET: Duration = Duration::from_secs(5);
/// A pause of the whole trace this long (no growth since, and a poll that
/// found nothing) restarts every stream's QUIET.
const STALL: Duration = Duration::from_millis(500);

/// What `view` passes on: which events and threads to show.
pub struct Show<'a> {
    /// Per event class, whether it is shown.
    pub wanted: &'a [bool],
    /// Only this CPU.
    pub cpu: Option<u32>,
    /// Only these processes and threads.
    pub who: &'a crate::who::Filter,
    /// Only events for which this holds.
    pub filter: Option<&'a crate::filter::Expr>,
}

/// One stream file being followed.
struct Followed {
    reader: StreamReader,
    /// Its items read and not printed yet, in time order.
    pending: VecDeque<Item>,
    /// The time of its last item: it will write nothing before.
    known: u64,
    /// When it last gave an item.
    grew: Instant,
    /// False once it failed (its error was said).
    live: bool,
}

/// Follows `trace` until interrupted or the output is closed.
pub fn run(trace: &Trace, show: &Show<'_>) -> Result<(), Box<dyn std::error::Error>> {
    let desc = trace.desc.clone();
    let clock = &desc.clock;
    let who = crate::who::Contexts::of(&desc);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut lines = pretty::LineWriter::default();
    let mut prev: Option<u64> = None;
    let mut seen = HashSet::new();
    let mut streams: Vec<Followed> = Vec::new();
    // QUIET in the trace clock's ticks.
    let lag = (clock.freq as u128 * QUIET.as_nanos() / 1_000_000_000) as u64;
    // When a poll last found something new, and whether one found nothing
    // since: a stall is both (the time alone could be one long poll on a
    // slow machine, the empty poll alone a trace that trickles).
    let mut last_growth = Instant::now();
    let mut idle_seen = false;
    loop {
        let now = Instant::now();
        // Stream files that appeared (a CPU used for the first time).
        for part in &trace.parts {
            for path in ctf::read::stream_files(&part.dir)? {
                if seen.insert(path.clone()) {
                    let reader = StreamReader::open(part.desc.clone(), &path)?
                        .mapped(part.class_offset, clock)
                        .following();
                    streams.push(Followed {
                        reader,
                        pending: VecDeque::new(),
                        known: 0,
                        grew: now,
                        live: true,
                    });
                }
            }
        }
        for s in streams.iter_mut().filter(|s| s.live) {
            s.reader.resume();
            loop {
                match s.reader.next_item() {
                    Ok(Some(item)) => {
                        s.known = s.known.max(item.ts());
                        s.pending.push_back(item);
                        s.grew = now;
                    }
                    Ok(None) => break,
                    Err(e) => {
                        eprintln!("ringtrace view: {e}");
                        s.live = false;
                        break;
                    }
                }
            }
        }
        if streams.iter().any(|s| s.grew == now) {
            if idle_seen && now.duration_since(last_growth) >= STALL {
                // The trace grows again after a stall: the streams not read
                // yet are as late as the one that came first.
                streams.iter_mut().for_each(|s| s.grew = now);
            }
            last_growth = now;
            idle_seen = false;
        } else {
            idle_seen = true;
        }
        // Up to where every stream still being written has come, and a
        // second behind the newest event: a buffer's first packet (its
        // file appears with it) may hold events that old.
        let newest = streams.iter().map(|s| s.known).max().unwrap_or(0);
        let all_quiet = streams
            .iter()
            .filter(|s| s.live)
            .all(|s| now.duration_since(s.grew) >= QUIET);
        let quiet = if all_quiet { ALL_QUIET } else { QUIET };
        let mark = streams
            .iter()
            .filter(|s| s.live && now.duration_since(s.grew) < quiet)
            .map(|s| s.known)
            .min()
            .map_or(u64::MAX, |m| m.min(newest.saturating_sub(lag)));
        let mut ready = Vec::new();
        for s in &mut streams {
            while s.pending.front().is_some_and(|i| i.ts() <= mark) {
                ready.extend(s.pending.pop_front());
            }
        }
        ready.sort_by_key(Item::ts);
        for item in &ready {
            let text = match item {
                Item::Event(e) => {
                    if !show.wanted[e.class] || show.cpu.is_some_and(|c| c != e.cpu) {
                        continue;
                    }
                    let w = who.who(e.class, &e.context);
                    if !show.who.matches(&w) {
                        continue;
                    }
                    let class = &desc.events[e.class];
                    if let Some(f) = show.filter {
                        let ctx = desc
                            .stream(class.stream_id)
                            .map_or(&[][..], |s| &s.context[..]);
                        let ev = crate::filter::Event {
                            class,
                            values: &e.values,
                            context: (ctx, &e.context),
                        };
                        if !f.matches(&ev) {
                            continue;
                        }
                    }
                    let line = lines.line(clock, class, e.ts, prev, e.cpu, &w, &e.values);
                    prev = Some(e.ts);
                    line.to_owned()
                }
                Item::Discarded {
                    events,
                    packets,
                    ts,
                    cpu,
                } => {
                    if show.cpu.is_some_and(|c| c != *cpu) {
                        continue;
                    }
                    pretty::lost_line(clock, *ts, *cpu, *events, *packets)
                }
            };
            if let Err(e) = writeln!(out, "{text}") {
                return gone(e);
            }
        }
        if let Err(e) = out.flush() {
            return gone(e);
        }
        std::thread::sleep(POLL);
    }
}

/// A closed output (`| head`) ends following quietly.
fn gone(e: std::io::Error) -> Result<(), Box<dyn std::error::Error>> {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        Ok(())
    } else {
        Err(e.into())
    }
}
