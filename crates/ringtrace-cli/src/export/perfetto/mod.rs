//! The Perfetto protobuf export: a `Trace` whose packets are track
//! descriptors (the processes, one track per thread the events' contexts
//! name — per CPU buffer for events without one and for lost events —,
//! and "lanes" for begin/end pairs keyed by an `id` field, so that
//! overlapping requests never mis-nest; a `tracing` span's pairs, keyed by
//! `span_id`, nest on its thread's track) and track events (instants with
//! their fields as debug annotations, slice begin/end). Everything that
//! repeats is incremental state of the one packet sequence: event names,
//! categories, annotation names and short string values are interned
//! (written once, then referred to by number), and timestamps are deltas
//! on a clock of the sequence anchored by a clock snapshot. On the demo an
//! event costs about 18 bytes beyond its fields (56 with absolute times
//! and names in full).
//!
//! Why `prost` with the few messages declared here, rather than a Perfetto
//! crate: `perfetto-sdk` links Perfetto's C library (a large vendored build)
//! and targets live in-process tracing; `tracing-perfetto` is a
//! `tracing` layer, not a writer; the small generated-proto crates are
//! unmaintained. prost is the maintained protobuf crate, and the field
//! numbers below are those of `protos/perfetto/trace/` (trace_packet.proto,
//! track_event/*.proto), which Perfetto keeps stable.

use std::collections::HashMap;
use std::io::{BufWriter, Write};

use ctf::read::ItemRef;
use ctf::value::Value;
use prost::Message;

use super::{classes, process, Args, Kind, Lane};
use crate::read::Show;

mod proto;

use proto::*;

/// Our only packet sequence.
const SEQUENCE: u32 = 1;

/// The trace's process. Every other track (processes, threads, CPU
/// buffers, lanes) is numbered in the order it first appears, from 2:
/// every event names its track, and a uuid below 2^14 is two bytes.
const PROCESS_TRACK: u64 = 1;

/// Names already given on the sequence, by kind, and those to give with
/// the next packet.
#[derive(Default)]
struct Interner {
    categories: HashMap<String, u64>,
    names: HashMap<String, u64>,
    annotations: HashMap<String, u64>,
    strings: HashMap<String, u64>,
    pending: InternedData,
}

/// String values interned: those that repeat (paths, states, names) take
/// two bytes after their first time. A long string, or any once the table
/// is this full, is written in place: a trace of unique messages must not
/// grow a table as large as itself.
const INTERNED_STRING_MAX: usize = 128;
const INTERNED_STRINGS_MAX: usize = 1 << 16;

/// The iid of `s` in `table`, given a new one (added to `pending`) the
/// first time.
fn intern(table: &mut HashMap<String, u64>, pending: &mut Vec<Interned>, s: String) -> u64 {
    if let Some(iid) = table.get(&s) {
        return *iid;
    }
    let iid = table.len() as u64 + 1;
    pending.push(Interned {
        iid: Some(iid),
        name: Some(s.clone()),
    });
    table.insert(s, iid);
    iid
}

struct Out {
    w: BufWriter<std::fs::File>,
    buf: Vec<u8>,
    first: bool,
    interner: Interner,
    /// The timestamp of the sequence's previous event, which the next
    /// one's delta starts from (None before the clock snapshot).
    last_ts: Option<u64>,
}

impl Out {
    /// Appends one `Trace.packet` (field 1, length-delimited).
    fn packet(&mut self, mut p: TracePacket) -> std::io::Result<()> {
        p.trusted_packet_sequence_id = Some(SEQUENCE);
        if self.first {
            p.sequence_flags = Some(p.sequence_flags.unwrap_or(0) | STATE_CLEARED);
            self.first = false;
        }
        self.buf.clear();
        self.buf.push(0x0a);
        p.encode_length_delimited(&mut self.buf)
            .map_err(std::io::Error::other)?;
        self.w.write_all(&self.buf)
    }

    /// Appends a track event at `ts`, its category, name and annotation
    /// names interned: each string is written once, with the first packet
    /// that uses it, and referred to by its iid after. A slice's end names
    /// nothing (Perfetto takes it from the begin).
    fn event(&mut self, ts: u64, mut ev: TrackEvent) -> std::io::Result<()> {
        let (timestamp, timestamp_clock_id) = self.timestamp(ts)?;
        let t = &mut self.interner;
        let pending = &mut t.pending;
        if ev.r#type == Some(SLICE_END) {
            ev.categories.clear();
            ev.name = None;
        }
        ev.category_iids = std::mem::take(&mut ev.categories)
            .into_iter()
            .map(|c| intern(&mut t.categories, &mut pending.event_categories, c))
            .collect();
        ev.name_iid = ev
            .name
            .take()
            .map(|n| intern(&mut t.names, &mut pending.event_names, n));
        for a in &mut ev.debug_annotations {
            if let Some(n) = a.name.take() {
                a.name_iid = Some(intern(
                    &mut t.annotations,
                    &mut pending.debug_annotation_names,
                    n,
                ));
            }
            if let Some(v) = a.string_value.take_if(|v| {
                v.len() <= INTERNED_STRING_MAX
                    && (t.strings.len() < INTERNED_STRINGS_MAX || t.strings.contains_key(v))
            }) {
                a.string_value_iid = Some(intern(
                    &mut t.strings,
                    &mut pending.debug_annotation_string_values,
                    v,
                ));
            }
        }
        let fresh = std::mem::take(pending);
        let given = fresh != InternedData::default();
        self.packet(TracePacket {
            timestamp: Some(timestamp),
            timestamp_clock_id,
            track_event: Some(ev),
            interned_data: given.then_some(fresh),
            sequence_flags: Some(NEEDS_STATE),
            ..Default::default()
        })
    }

    /// The timestamp to write for an event at `ts` and its clock: the
    /// time since the previous event on our incremental clock (the
    /// sequence's default), anchored by a clock snapshot before the first
    /// event. A time before the previous one (clocks of several traces
    /// that disagree) is written whole, on the builtin clock, which leaves
    /// the incremental one where it was.
    fn timestamp(&mut self, ts: u64) -> std::io::Result<(u64, Option<u32>)> {
        let last = match self.last_ts {
            Some(last) => last,
            None => {
                self.packet(TracePacket {
                    timestamp: Some(ts),
                    timestamp_clock_id: Some(BOOTTIME),
                    clock_snapshot: Some(ClockSnapshot {
                        clocks: vec![
                            Clock {
                                clock_id: Some(BOOTTIME),
                                timestamp: Some(ts),
                                is_incremental: None,
                            },
                            Clock {
                                clock_id: Some(DELTA_CLOCK),
                                timestamp: Some(ts),
                                is_incremental: Some(true),
                            },
                        ],
                    }),
                    ..Default::default()
                })?;
                ts
            }
        };
        Ok(match ts.checked_sub(last) {
            Some(delta) => {
                self.last_ts = Some(ts);
                (delta, None)
            }
            None => (ts, Some(BOOTTIME)),
        })
    }

    fn track(&mut self, uuid: u64, name: String, parent: Option<u64>) -> std::io::Result<()> {
        self.packet(TracePacket {
            track_descriptor: Some(TrackDescriptor {
                uuid: Some(uuid),
                name: Some(name),
                parent_uuid: parent,
                ..Default::default()
            }),
            ..Default::default()
        })
    }
}

/// Writes the Perfetto export.
pub fn write(a: &Args) -> Result<(), Box<dyn std::error::Error>> {
    let trace = crate::read::open(&a.dir)?;
    let desc = trace.desc.clone();
    let (pid, procname) = process(&desc);
    let classes = classes(&desc);
    let file = super::create_output(a)?;
    let mut out = Out {
        w: BufWriter::with_capacity(1 << 16, file),
        buf: Vec::with_capacity(256),
        first: true,
        interner: Interner::default(),
        last_ts: None,
    };
    // The first packet clears the sequence's state and sets its defaults.
    out.packet(TracePacket {
        trace_packet_defaults: Some(TracePacketDefaults {
            timestamp_clock_id: Some(DELTA_CLOCK),
        }),
        track_descriptor: Some(TrackDescriptor {
            uuid: Some(PROCESS_TRACK),
            process: Some(ProcessDescriptor {
                pid: Some(pid as i32),
                process_name: Some(procname),
            }),
            ..Default::default()
        }),
        ..Default::default()
    })?;
    let who = crate::who::Contexts::of(&desc);
    let mut spans = super::spans::SpanFields::default();
    // Each lane's track and its name as last described; the processes.
    let mut lane_tracks: HashMap<Lane, (u64, String)> = HashMap::new();
    let mut pids = HashMap::from([(pid, PROCESS_TRACK)]);
    let mut next_uuid = PROCESS_TRACK + 1;
    // Per slice name: the id each lane holds (None: free).
    let mut lanes: HashMap<String, Vec<Option<String>>> = HashMap::new();
    let mut lane_uuid: HashMap<(String, usize), u64> = HashMap::new();
    let mut count = 0u64;
    let errors = crate::read::walk(
        &trace,
        "exporting",
        Show::OnTerminal,
        |item| -> Result<bool, Box<dyn std::error::Error>> {
            let ts = crate::pretty::epoch_ns(&desc.clock, item.ts()).max(0) as u64;
            let (lane, thread_name) = Lane::of_item(&item, &who, pid);
            let (p, tid) = lane.ids(pid);
            let known_process = pids.contains_key(&p);
            let process_track = *pids.entry(p).or_insert_with(|| {
                next_uuid += 1;
                next_uuid - 1
            });
            if !known_process {
                out.packet(TracePacket {
                    track_descriptor: Some(TrackDescriptor {
                        uuid: Some(process_track),
                        process: Some(ProcessDescriptor {
                            pid: Some(p as i32),
                            process_name: None,
                        }),
                        ..Default::default()
                    }),
                    ..Default::default()
                })?;
            }
            let name = lane.name(thread_name);
            let (lane_track, known) = match lane_tracks.get(&lane) {
                Some((t, old)) => (*t, *old == name),
                None => {
                    next_uuid += 1;
                    (next_uuid - 1, false)
                }
            };
            // Described again when the thread's name changes.
            if !known {
                out.packet(TracePacket {
                    track_descriptor: Some(TrackDescriptor {
                        uuid: Some(lane_track),
                        name: Some(name.clone()),
                        parent_uuid: Some(process_track),
                        thread: matches!(lane, Lane::Thread { .. }).then(|| ThreadDescriptor {
                            pid: Some(p as i32),
                            tid: Some(tid as i32),
                            thread_name: Some(name.clone()),
                        }),
                        ..Default::default()
                    }),
                    ..Default::default()
                })?;
                lane_tracks.insert(lane, (lane_track, name));
            }
            let ev = match item {
                ItemRef::Discarded {
                    events, packets, ..
                } => TrackEvent {
                    r#type: Some(INSTANT),
                    track_uuid: Some(lane_track),
                    categories: vec!["ringtrace".into()],
                    name: Some("events lost".into()),
                    debug_annotations: vec![
                        annotation("discarded_events", &Value::Uint(events)),
                        annotation("missing_packets", &Value::Uint(packets)),
                    ],
                    ..Default::default()
                },
                ItemRef::Event(e) => {
                    let (k, cat, name, id) = &classes[e.class];
                    let class = &desc.events[e.class];
                    spans.observe(class, e.values);
                    let args = class
                        .fields
                        .iter()
                        .map(|f| &f.name)
                        .zip(e.values)
                        .chain(spans.entered(class, e.values).iter().map(|(n, v)| (n, v)))
                        .map(|(n, v)| annotation(n, v))
                        .collect();
                    // A `tracing` span's enter/exit pairs nest on the
                    // thread that enters it (its guards drop in reverse
                    // order): slices on the thread's track, which Perfetto
                    // draws nested. Other begin/end pairs keyed by `id`
                    // may overlap (requests in flight): lanes.
                    let key = id
                        .filter(|&i| class.fields[i].name != "span_id")
                        .map(|i| format!("{:?}", e.values[i]));
                    let (ty, track, shown) = match (k, key) {
                        (Kind::Instant, _) => (
                            INSTANT,
                            lane_track,
                            super::instant_name(&class.name).to_string(),
                        ),
                        (Kind::Begin, Some(key)) => {
                            let l = lanes.entry(name.clone()).or_default();
                            let lane = match l.iter().position(Option::is_none) {
                                Some(i) => i,
                                None => {
                                    l.push(None);
                                    l.len() - 1
                                }
                            };
                            l[lane] = Some(key);
                            let fresh = next_uuid;
                            let uuid = *lane_uuid.entry((name.clone(), lane)).or_insert(fresh);
                            if uuid == fresh {
                                next_uuid += 1;
                                out.track(
                                    uuid,
                                    format!("{cat}:{name} #{lane}"),
                                    Some(PROCESS_TRACK),
                                )?;
                            }
                            (SLICE_BEGIN, uuid, name.clone())
                        }
                        (Kind::End, Some(key)) => {
                            let l = lanes.entry(name.clone()).or_default();
                            match l.iter().position(|x| x.as_deref() == Some(key.as_str())) {
                                Some(lane) => {
                                    l[lane] = None;
                                    (SLICE_END, lane_uuid[&(name.clone(), lane)], name.clone())
                                }
                                // Its begin is before the trace: an instant.
                                None => (
                                    INSTANT,
                                    lane_track,
                                    super::instant_name(&class.name).to_string(),
                                ),
                            }
                        }
                        (Kind::Begin, None) => (SLICE_BEGIN, lane_track, name.clone()),
                        (Kind::End, None) => (SLICE_END, lane_track, name.clone()),
                    };
                    TrackEvent {
                        r#type: Some(ty),
                        track_uuid: Some(track),
                        categories: vec![cat.clone()],
                        name: Some(shown),
                        debug_annotations: args,
                        ..Default::default()
                    }
                }
            };
            out.event(ts, ev)?;
            count += 1;
            Ok(true)
        },
    )?;
    out.w.flush()?;
    super::finish(count, a, errors)
}
