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

use ctf::types::EventClass;
use ctf::value::Value;
use prost::Message;

use super::{drive, Args, Drawn, Kind, Lane};

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
    let o = drive::open(a)?;
    let mut w = Perfetto {
        out: Out {
            w: BufWriter::with_capacity(1 << 16, o.file),
            buf: Vec::with_capacity(256),
            first: true,
            interner: Interner::default(),
            last_ts: None,
        },
        pids: HashMap::from([(o.pid, PROCESS_TRACK)]),
        lane_tracks: HashMap::new(),
        next_uuid: PROCESS_TRACK + 1,
        slices: HashMap::new(),
        slice_tracks: HashMap::new(),
    };
    // The first packet clears the sequence's state and sets its defaults.
    w.out.packet(TracePacket {
        trace_packet_defaults: Some(TracePacketDefaults {
            timestamp_clock_id: Some(DELTA_CLOCK),
        }),
        track_descriptor: Some(TrackDescriptor {
            uuid: Some(PROCESS_TRACK),
            process: Some(ProcessDescriptor {
                pid: Some(o.pid as i32),
                process_name: Some(o.procname.clone()),
            }),
            ..Default::default()
        }),
        ..Default::default()
    })?;
    drive::drive(a, &o.trace, o.pid, &mut w)
}

/// The tracks given so far.
struct Perfetto {
    out: Out,
    /// Each process's track.
    pids: HashMap<i64, u64>,
    /// Each lane's track.
    lane_tracks: HashMap<Lane, u64>,
    /// The uuid the next track gets.
    next_uuid: u64,
    /// Per slice name, the key (`id` value) of the slice each of its
    /// tracks has open (None: free).
    slices: HashMap<String, Vec<Option<String>>>,
    /// The track of a slice name's n-th lane.
    slice_tracks: HashMap<(String, usize), u64>,
}

impl Perfetto {
    fn uuid(&mut self) -> u64 {
        self.next_uuid += 1;
        self.next_uuid - 1
    }

    /// The type, track and name of a track event for an event drawn as
    /// `d` on the track `lane_track`: a `tracing` span's enter/exit pairs
    /// nest on the thread that enters it (its guards drop in reverse
    /// order): slices on the thread's track, which Perfetto draws nested.
    /// Other begin/end pairs keyed by `id` may overlap (requests in
    /// flight): each open slice on a track of its own among its name's.
    fn placed(
        &mut self,
        d: &Drawn,
        class: &EventClass,
        values: &[Value],
        lane_track: u64,
    ) -> std::io::Result<(i32, u64, String)> {
        let instant = || {
            (
                INSTANT,
                lane_track,
                super::instant_name(&class.name).to_string(),
            )
        };
        let key =
            d.id.filter(|&i| class.fields[i].name != "span_id")
                .map(|i| format!("{:?}", values[i]));
        let name = &d.name;
        Ok(match (d.kind, key) {
            (Kind::Instant, _) => instant(),
            (Kind::Begin, Some(key)) => {
                let l = self.slices.entry(name.clone()).or_default();
                let lane = match l.iter().position(Option::is_none) {
                    Some(i) => i,
                    None => {
                        l.push(None);
                        l.len() - 1
                    }
                };
                l[lane] = Some(key);
                let uuid = match self.slice_tracks.get(&(name.clone(), lane)) {
                    Some(&u) => u,
                    None => {
                        let u = self.uuid();
                        self.slice_tracks.insert((name.clone(), lane), u);
                        let track = format!("{}:{name} #{lane}", d.cat);
                        self.out.track(u, track, Some(PROCESS_TRACK))?;
                        u
                    }
                };
                (SLICE_BEGIN, uuid, name.clone())
            }
            (Kind::End, Some(key)) => {
                let l = self.slices.entry(name.clone()).or_default();
                match l.iter().position(|x| x.as_deref() == Some(key.as_str())) {
                    Some(lane) => {
                        l[lane] = None;
                        let track = self.slice_tracks[&(name.clone(), lane)];
                        (SLICE_END, track, name.clone())
                    }
                    // Its begin is before the trace: an instant.
                    None => instant(),
                }
            }
            (Kind::Begin, None) => (SLICE_BEGIN, lane_track, name.clone()),
            (Kind::End, None) => (SLICE_END, lane_track, name.clone()),
        })
    }
}

impl drive::Sink for Perfetto {
    fn process(&mut self, pid: i64) -> std::io::Result<()> {
        let uuid = self.uuid();
        self.pids.insert(pid, uuid);
        self.out.packet(TracePacket {
            track_descriptor: Some(TrackDescriptor {
                uuid: Some(uuid),
                process: Some(ProcessDescriptor {
                    pid: Some(pid as i32),
                    process_name: None,
                }),
                ..Default::default()
            }),
            ..Default::default()
        })
    }

    /// Described again when the thread's name changes.
    fn lane(&mut self, lane: Lane, pid: i64, tid: i64, name: &str) -> std::io::Result<()> {
        let uuid = match self.lane_tracks.get(&lane) {
            Some(&t) => t,
            None => {
                let t = self.uuid();
                self.lane_tracks.insert(lane, t);
                t
            }
        };
        self.out.packet(TracePacket {
            track_descriptor: Some(TrackDescriptor {
                uuid: Some(uuid),
                name: Some(name.to_owned()),
                parent_uuid: self.pids.get(&pid).copied(),
                thread: matches!(lane, Lane::Thread { .. }).then(|| ThreadDescriptor {
                    pid: Some(pid as i32),
                    tid: Some(tid as i32),
                    thread_name: Some(name.to_owned()),
                }),
                ..Default::default()
            }),
            ..Default::default()
        })
    }

    fn item(&mut self, it: drive::Item<'_>) -> std::io::Result<()> {
        let ts = it.ns.max(0) as u64;
        let lane_track = self.lane_tracks[&it.lane];
        let ev = match it.what {
            drive::What::Lost { events, packets } => TrackEvent {
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
            drive::What::Event {
                class,
                drawn,
                values,
                span,
                func,
                at,
            } => {
                let mut args: Vec<_> = class
                    .fields
                    .iter()
                    .map(|f| &f.name)
                    .zip(values)
                    .chain(span.iter().map(|(n, v)| (n, v)))
                    .map(|(n, v)| annotation(n, v))
                    .collect();
                if let Some(at) = at {
                    args.push(annotation("at", &Value::Str(at.to_string())));
                }
                let (ty, track, mut shown) = self.placed(drawn, class, values, lane_track)?;
                if let (Some(f), SLICE_BEGIN) = (func, ty) {
                    shown = f.to_string();
                }
                TrackEvent {
                    r#type: Some(ty),
                    track_uuid: Some(track),
                    categories: vec![drawn.cat.clone()],
                    name: Some(shown),
                    debug_annotations: args,
                    ..Default::default()
                }
            }
        };
        self.out.event(ts, ev)
    }

    fn end(&mut self) -> std::io::Result<()> {
        self.out.w.flush()
    }
}
