//! `ringtrace view --follow`: the events of a trace folder while a
//! program writes it, merged by time, until interrupted (or until the
//! output is closed).
//!
//! Each stream file is read on from where it was (`StreamReader::following`:
//! whole packets only, a packet being written is read when it is whole),
//! at most [`BUDGET`] items per stream and round, and new stream files are
//! picked up; a round that left a stream unread goes again at once, so a
//! backlog (a trace followed minutes after it started) comes out at
//! `view`'s pace, its first lines at once, and then every [`POLL`].
//!
//! An event is printed once every stream that may still write something
//! older has reached its time (each stream's events come in time order),
//! and it is a second older than the program's present (the trace clock's
//! now, or the newest event read if that is later: a buffer's first
//! packet, which creates its file, may hold events that old), so the
//! lines are in time order, about a second behind the program. A stream
//! not read to its end yet always holds the others back. One read to its
//! end no longer does once its file has not grown for a second (the live
//! protocols' beacons play that role), so an event it writes after that
//! may come out of order: a session recorded for following should have a
//! switch timer (`RINGTRACE_SESSION=…,switch=100`) that flushes quiet
//! buffers. Growth is what a file gains while followed (before, its
//! modification time tells when it last grew); while a backlog is
//! read, no stream ages (the follower's reading time says nothing of the
//! program), unless a million items wait.
//!
//! When no stream has written anything for a second the program's consumer
//! (or the disk under it) may have stalled: a consumer blocked 1.5 s in one
//! write behind the page cache's writeback made one stream look quiet
//! while its events waited in its buffer (BENCHMARKS.md, "Late
//! packets with direct I/O"). So the events held back are printed only after 5 s of that, and
//! when the trace grows again after half a second or more of nothing,
//! every stream's quiet time starts over. Unless the program is known to
//! have ended: the trace's `env` names its process (`vpid`, `procname`,
//! `hostname`); on the same host, a process of that id and name that no
//! longer runs writes nothing more, and everything read is printed at
//! once. Either way, once everything is shown, stderr says so and that
//! the follower waits for more.

use std::collections::{HashSet, VecDeque};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use ctf::read::{Item, StreamReader, Trace};
use ctf::types::{ClockDesc, EnvValue, TraceDesc};

use crate::pretty;
use crate::select::Select;

/// How often the files are read again once they are read to their end.
const POLL: Duration = Duration::from_millis(100);
/// Items read from one stream in a round: a backlog is printed as it is
/// read, not after.
const BUDGET: usize = 20_000;
/// Items of streams not read to their end yet that may wait for the
/// streams that are (see [`run`]).
const PENDING_CAP: usize = 1_000_000;
/// How long a stream may write nothing before the others go on without it.
const QUIET: Duration = Duration::from_secs(1);
/// How long every stream may write nothing before what was held back is
/// printed.
const ALL_QUIET: Duration = Duration::from_secs(5);
/// A pause of the whole trace this long (no growth since, and a poll that
/// found nothing) restarts every stream's QUIET.
const STALL: Duration = Duration::from_millis(500);
/// How often the follower looks whether the trace's program still runs.
const WRITER_CHECK: Duration = Duration::from_secs(1);

/// One stream file being followed.
struct Followed {
    path: PathBuf,
    reader: StreamReader,
    /// Its items read and not printed yet, in time order.
    pending: VecDeque<Item>,
    /// The time of its last item: it will write nothing before.
    known: u64,
    /// Its file's size when last looked at.
    size: u64,
    /// When its file was last seen to grow (at first, its modification
    /// time; or when a stall of the whole trace ended).
    grew: Instant,
    /// Read to the end of what its file held (false: more is there now).
    caught_up: bool,
    /// False once it failed (its error was said).
    live: bool,
}

impl Followed {
    /// Whether its file grew since the last look (then it grew `now`).
    fn look(&mut self, now: Instant) -> bool {
        let size = std::fs::metadata(&self.path).map_or(self.size, |m| m.len());
        let grew = size > self.size;
        if grew {
            self.size = size;
            self.grew = now;
        }
        grew
    }

    /// Reads up to [`BUDGET`] items.
    fn read(&mut self) {
        self.reader.resume();
        let mut got = 0;
        self.caught_up = false;
        while got < BUDGET {
            match self.reader.next_item() {
                Ok(Some(item)) => {
                    self.known = self.known.max(item.ts());
                    self.pending.push_back(item);
                    got += 1;
                }
                Ok(None) => {
                    self.caught_up = true;
                    break;
                }
                Err(e) => {
                    eprintln!("ringtrace view: {e}");
                    self.live = false;
                    self.caught_up = true;
                    break;
                }
            }
        }
    }
}

/// The size of `path`, and when it was last written as an instant of
/// this clock (`now` if unknown or in the future).
fn size_and_modified(path: &Path, now: Instant) -> (u64, Instant) {
    let md = std::fs::metadata(path).ok();
    let age = md
        .as_ref()
        .and_then(|m| m.modified().ok())
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .unwrap_or_default();
    (
        md.map_or(0, |m| m.len()),
        now.checked_sub(age).unwrap_or(now),
    )
}

/// The trace clock's value now (its offset maps it to the epoch).
fn clock_now(clock: &ClockDesc) -> u64 {
    let Ok(since) = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH) else {
        return 0;
    };
    let secs = since.as_secs_f64() - clock.offset_s as f64;
    let ticks = secs * clock.freq as f64 - clock.offset as f64;
    if ticks > 0.0 {
        ticks as u64
    } else {
        0
    }
}

/// Whether the program that wrote `desc` has ended: its `env` names a
/// process of this host (`hostname`, `vpid`, `procname`) and no process of
/// that id and command name runs. `false` when that cannot be told.
fn writer_ended(desc: &TraceDesc) -> bool {
    let env = |k: &str| desc.env.iter().find(|(n, _)| n == k).map(|(_, v)| v);
    let (Some(EnvValue::Str(host)), Some(EnvValue::Int(pid)), Some(EnvValue::Str(name))) =
        (env("hostname"), env("vpid"), env("procname"))
    else {
        return false;
    };
    let here = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    if here.trim_end() != host {
        return false;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/comm")) {
        // The kernel keeps 15 bytes of a command name.
        Ok(comm) => !name
            .as_bytes()
            .starts_with(comm.trim_end_matches('\n').as_bytes()),
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
    }
}

/// Says on stderr that everything read was printed, and why.
fn say_waiting(shown: u64, why: &str) {
    eprintln!(
        "ringtrace view: all {shown} events so far shown ({why}); waiting for more (Ctrl-C to stop)"
    );
}

/// Follows `trace` until interrupted or the output is closed.
pub fn run(trace: &Trace, select: &Select<'_>) -> Result<(), Box<dyn std::error::Error>> {
    let desc = trace.desc.clone();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut f = Follower {
        streams: Vec::new(),
        seen: HashSet::new(),
        last_growth: Instant::now(),
        idle_seen: false,
        ended: false,
        checked: None,
        shown: 0,
        said: false,
        lines: pretty::LineWriter::default(),
        prev: None,
    };
    loop {
        let now = Instant::now();
        if f.checked
            .is_none_or(|c| now.duration_since(c) >= WRITER_CHECK)
        {
            f.ended = trace.parts.iter().all(|p| writer_ended(&p.desc));
            f.checked = Some(now);
        }
        f.discover(trace, now)?;
        let behind = f.read_round(now);
        let mark = f.mark(now, &desc.clock);
        for item in f.ready(mark) {
            let Some(text) = render(&item, select, &desc, &mut f.lines, &mut f.prev) else {
                continue;
            };
            f.shown += u64::from(matches!(item, Item::Event(_)));
            if let Err(e) = writeln!(out, "{text}") {
                return gone(e);
            }
        }
        if let Err(e) = out.flush() {
            return gone(e);
        }
        if behind {
            continue;
        }
        f.say_when_all_shown(now);
        std::thread::sleep(POLL);
    }
}

/// What the follower knows of the trace between rounds.
struct Follower {
    streams: Vec<Followed>,
    /// Stream files already followed.
    seen: HashSet<PathBuf>,
    /// When a poll last found something new, and whether one found nothing
    /// since: a stall is both (the time alone could be one long poll on a
    /// slow machine, the empty poll alone a trace that trickles).
    last_growth: Instant,
    idle_seen: bool,
    /// Whether the program that writes the trace is known to have ended,
    /// and when that was last looked at.
    ended: bool,
    checked: Option<Instant>,
    /// Events shown, and whether stderr said all of them were.
    shown: u64,
    said: bool,
    lines: pretty::LineWriter,
    /// The time of the event printed last.
    prev: Option<u64>,
}

impl Follower {
    /// Follows the stream files that appeared (a CPU used for the first
    /// time).
    fn discover(&mut self, trace: &Trace, now: Instant) -> Result<(), Box<dyn std::error::Error>> {
        for part in &trace.parts {
            for path in ctf::read::stream_files(&part.dir)? {
                if self.seen.insert(path.clone()) {
                    let reader = StreamReader::open(part.desc.clone(), &path)?
                        .mapped(part.class_offset, &trace.desc.clock)
                        .following();
                    let (size, grew) = size_and_modified(&path, now);
                    self.streams.push(Followed {
                        size,
                        grew,
                        path,
                        reader,
                        pending: VecDeque::new(),
                        known: 0,
                        caught_up: false,
                        live: true,
                    });
                }
            }
        }
        Ok(())
    }

    /// Reads a round of every stream and ages them; whether a stream is
    /// still behind its file (a backlog: the next round goes at once).
    fn read_round(&mut self, now: Instant) -> bool {
        // Growth is what the files gained, not what was read of them (a
        // backlog read over several rounds is no growth).
        let mut grown = false;
        for s in self.streams.iter_mut().filter(|s| s.live) {
            grown |= s.look(now);
            s.read();
        }
        if grown {
            if self.idle_seen && now.duration_since(self.last_growth) >= STALL {
                // The trace grows again after a stall: the streams not read
                // yet are as late as the one that came first.
                self.streams
                    .iter_mut()
                    .for_each(|s| s.grew = s.grew.max(now));
            }
            self.last_growth = now;
            self.idle_seen = false;
            self.said = false;
        } else {
            self.idle_seen = true;
        }
        let behind = self.streams.iter().any(|s| s.live && !s.caught_up);
        // While a backlog is read, no stream ages (the one being read
        // neither: once read to its end it is as fresh as the others): the
        // time the follower takes says nothing of the program. Unless the
        // backlog held back grows past PENDING_CAP: then they age as the
        // files say, and memory stays bounded.
        let held: usize = self
            .streams
            .iter()
            .filter(|s| !s.caught_up)
            .map(|s| s.pending.len())
            .sum();
        if behind && held < PENDING_CAP {
            for s in self.streams.iter_mut() {
                s.grew = s.grew.max(now);
            }
        }
        behind
    }

    /// The time up to which items may be printed: where every stream that
    /// may still write something older has come (one not read to its end
    /// always may), and a second behind the program's present.
    fn mark(&self, now: Instant, clock: &ClockDesc) -> u64 {
        let all_quiet = self
            .streams
            .iter()
            .filter(|s| s.live)
            .all(|s| now.duration_since(s.grew) >= QUIET);
        let quiet = if all_quiet { ALL_QUIET } else { QUIET };
        let present = self
            .streams
            .iter()
            .map(|s| s.known)
            .max()
            .unwrap_or(0)
            .max(clock_now(clock));
        // QUIET in the trace clock's ticks.
        let lag = (clock.freq as u128 * QUIET.as_nanos() / 1_000_000_000) as u64;
        let ended = self.ended;
        self.streams
            .iter()
            .filter(|s| s.live && (!s.caught_up || (!ended && now.duration_since(s.grew) < quiet)))
            .map(|s| s.known)
            .min()
            .map_or(u64::MAX, |m| {
                if ended {
                    m
                } else {
                    m.min(present.saturating_sub(lag))
                }
            })
    }

    /// The items up to `mark`, taken from every stream, in time order.
    fn ready(&mut self, mark: u64) -> Vec<Item> {
        let mut ready = Vec::new();
        for s in &mut self.streams {
            while s.pending.front().is_some_and(|i| i.ts() <= mark) {
                ready.extend(s.pending.pop_front());
            }
        }
        ready.sort_by_key(Item::ts);
        ready
    }

    /// Says once on stderr that everything read was shown, when the
    /// program ended or the trace has not grown for [`ALL_QUIET`].
    fn say_when_all_shown(&mut self, now: Instant) {
        if self.said || !self.streams.iter().all(|s| s.pending.is_empty()) {
            return;
        }
        let still = self
            .streams
            .iter()
            .map(|s| now.duration_since(s.grew))
            .min();
        if self.ended {
            say_waiting(self.shown, "the program that wrote the trace has ended");
            self.said = true;
        } else if let Some(still) = still.filter(|&d| d >= ALL_QUIET) {
            let why = format!("the trace has not grown for {} s", still.as_secs());
            say_waiting(self.shown, &why);
            self.said = true;
        }
    }
}

/// The line of `item`, or `None` if it is not to be shown.
fn render(
    item: &Item,
    select: &Select<'_>,
    desc: &TraceDesc,
    lines: &mut pretty::LineWriter,
    prev: &mut Option<u64>,
) -> Option<String> {
    let clock = &desc.clock;
    match item {
        Item::Event(e) => {
            let w = select.event(e.class, e.cpu, &e.values, &e.context)?;
            let class = &desc.events[e.class];
            let line = lines.line(
                clock,
                class,
                e.ts,
                prev.replace(e.ts),
                e.cpu,
                &w,
                &e.values,
                &e.own_context,
            );
            Some(line.to_owned())
        }
        Item::Discarded {
            events,
            packets,
            ts,
            cpu,
        } => select
            .gap(*cpu)
            .then(|| pretty::lost_line(clock, *ts, *cpu, *events, *packets)),
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
