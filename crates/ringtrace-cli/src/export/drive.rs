//! What the Chrome and Perfetto exports share: the trace opened and the
//! output file created, then one walk over every item in time order, each
//! on its lane (the thread its event's context names, or a CPU buffer),
//! each process announced when first seen and each lane when first seen
//! or when its thread's name changes, a `tracing` span's fields attached to
//! the `.enter` that begins its slice. Each format writes what it is given
//! through [`Sink`].

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use ctf::read::{ItemRef, Trace};
use ctf::types::EventClass;
use ctf::value::Value;

use super::{classes, process, Args, Drawn, Lane};
use crate::read::Show;

/// An export's input and output, opened.
pub(crate) struct Opened {
    pub trace: Trace,
    /// The traced process (from the trace's `env`).
    pub pid: i64,
    pub procname: String,
    pub file: std::fs::File,
}

/// Opens the trace and creates the output (see [`super::create_output`]).
pub(crate) fn open(a: &Args) -> Result<Opened, Box<dyn std::error::Error>> {
    let trace = crate::read::open(&a.dir)?;
    let (pid, procname) = process(&trace.desc);
    let file = super::create_output(a)?;
    Ok(Opened {
        trace,
        pid,
        procname,
        file,
    })
}

/// One item to write.
pub(crate) struct Item<'a> {
    /// Nanoseconds since the epoch.
    pub ns: i128,
    pub lane: Lane,
    /// The lane's process and thread ids in the export.
    pub pid: i64,
    pub tid: i64,
    pub what: What<'a>,
}

/// What an item is.
pub(crate) enum What<'a> {
    /// Events lost before this time.
    Lost { events: u64, packets: u64 },
    /// An event of `class`, drawn as `drawn` says; `span` holds the fields
    /// of the `tracing` span a `.enter` enters (none otherwise).
    Event {
        class: &'a EventClass,
        drawn: &'a Drawn,
        values: &'a [Value],
        span: &'a [(String, Value)],
        /// The function a `func_entry` enters: the slice's name, in place
        /// of the class's.
        func: Option<Rc<str>>,
        /// Where the event was recorded (its `ip`): `function+0xoff
        /// (file:line)` or the address, shown as an argument `at`.
        at: Option<Rc<str>>,
    },
}

/// A format's writer.
pub(crate) trait Sink {
    /// A process seen for the first time (the trace's own is the
    /// format's to announce before the walk).
    fn process(&mut self, pid: i64) -> std::io::Result<()>;
    /// A lane seen for the first time, or whose thread's name changed.
    fn lane(&mut self, lane: Lane, pid: i64, tid: i64, name: &str) -> std::io::Result<()>;
    /// One item, in time order.
    fn item(&mut self, item: Item<'_>) -> std::io::Result<()>;
    /// After the last item.
    fn end(&mut self) -> std::io::Result<()>;
}

/// Walks every item of `trace` (of process `pid`) into `sink`, then
/// reports what was written (see [`super::finish`]).
pub(crate) fn drive(
    a: &Args,
    trace: &Trace,
    pid: i64,
    sink: &mut impl Sink,
) -> Result<(), Box<dyn std::error::Error>> {
    let desc = &trace.desc;
    let drawn = classes(desc);
    let who = crate::who::Contexts::of(desc);
    let mut spans = super::spans::SpanFields::default();
    let mut symbols = a.symbols.resolver(trace);
    // Each lane's name as last announced, and the processes announced.
    let mut lanes: HashMap<Lane, String> = HashMap::new();
    let mut pids = HashSet::from([pid]);
    let mut count = 0u64;
    let errors = crate::read::walk(trace, "exporting", Show::OnTerminal, |item| {
        let ns = crate::pretty::epoch_ns(&desc.clock, item.ts());
        let (lane, thread_name) = Lane::of_item(&item, &who, pid);
        let (p, tid) = lane.ids(pid);
        if pids.insert(p) {
            sink.process(p)?;
        }
        let name = lane.name(thread_name);
        if lanes.get(&lane) != Some(&name) {
            sink.lane(lane, p, tid, &name)?;
            lanes.insert(lane, name);
        }
        let what = match item {
            ItemRef::Discarded {
                events, packets, ..
            } => What::Lost { events, packets },
            ItemRef::Event(e) => {
                let class = &desc.events[e.class];
                spans.observe(class, e.values);
                let d = &drawn[e.class];
                let (mut func, mut at) = (None, None);
                if let Some(sym) = &mut symbols {
                    if let Some(Value::Uint(addr)) = d.func_addr.map(|i| &e.values[i]) {
                        func = Some(sym.function_at(e.class, e.context, *addr));
                    }
                    at = sym.resolve(e.class, e.context).map(|(ip, at)| {
                        at.unwrap_or_else(|| Rc::from(format!("{ip:#x}").as_str()))
                    });
                }
                What::Event {
                    class,
                    drawn: d,
                    values: e.values,
                    span: spans.entered(class, e.values),
                    func,
                    at,
                }
            }
        };
        sink.item(Item {
            ns,
            lane,
            pid: p,
            tid,
            what,
        })?;
        count += 1;
        Ok::<_, std::io::Error>(true)
    })?;
    sink.end()?;
    super::finish(count, a, errors)
}
