//! The Perfetto protobuf export: a `Trace` whose packets are track
//! descriptors (the processes, one track per thread the events' contexts
//! name — per CPU buffer for events without one and for lost events —, and "lanes" for
//! begin/end pairs keyed by an `id` field, so that overlapping requests
//! never mis-nest) and track events (instants with their fields as debug
//! annotations, slice begin/end).
//!
//! Why `prost` with the few messages declared here, rather than a Perfetto
//! crate: `perfetto-sdk` links Perfetto's C library (a large vendored build)
//! and targets live in-process tracing; `tracing-perfetto` is a
//! `tracing` layer, not a writer; the small generated-proto crates are
//! unmaintained. prost is the maintained protobuf crate, and the field
//! numbers below are those of `protos/perfetto/trace/` (trace_packet.proto,
//! track_event/*.proto), which Perfetto keeps stable.

use std::collections::{BTreeSet, HashMap};
use std::io::{BufWriter, Write};

use ctf::read::ItemRef;
use ctf::value::Value;
use prost::Message;

use super::{classes, process, Args, Kind, Lane};
use crate::read::Show;

#[derive(Clone, PartialEq, Message)]
struct TracePacket {
    #[prost(uint64, optional, tag = "8")]
    timestamp: Option<u64>,
    #[prost(uint32, optional, tag = "10")]
    trusted_packet_sequence_id: Option<u32>,
    #[prost(message, optional, tag = "11")]
    track_event: Option<TrackEvent>,
    #[prost(uint32, optional, tag = "13")]
    sequence_flags: Option<u32>,
    #[prost(message, optional, tag = "60")]
    track_descriptor: Option<TrackDescriptor>,
}

#[derive(Clone, PartialEq, Message)]
struct TrackDescriptor {
    #[prost(uint64, optional, tag = "1")]
    uuid: Option<u64>,
    #[prost(string, optional, tag = "2")]
    name: Option<String>,
    #[prost(message, optional, tag = "3")]
    process: Option<ProcessDescriptor>,
    #[prost(message, optional, tag = "4")]
    thread: Option<ThreadDescriptor>,
    #[prost(uint64, optional, tag = "5")]
    parent_uuid: Option<u64>,
}

#[derive(Clone, PartialEq, Message)]
struct ThreadDescriptor {
    #[prost(int32, optional, tag = "1")]
    pid: Option<i32>,
    #[prost(int32, optional, tag = "2")]
    tid: Option<i32>,
    #[prost(string, optional, tag = "5")]
    thread_name: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
struct ProcessDescriptor {
    #[prost(int32, optional, tag = "1")]
    pid: Option<i32>,
    #[prost(string, optional, tag = "6")]
    process_name: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
struct TrackEvent {
    #[prost(message, repeated, tag = "4")]
    debug_annotations: Vec<DebugAnnotation>,
    #[prost(int32, optional, tag = "9")]
    r#type: Option<i32>,
    #[prost(uint64, optional, tag = "11")]
    track_uuid: Option<u64>,
    #[prost(string, repeated, tag = "22")]
    categories: Vec<String>,
    #[prost(string, optional, tag = "23")]
    name: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
struct DebugAnnotation {
    #[prost(bool, optional, tag = "2")]
    bool_value: Option<bool>,
    #[prost(uint64, optional, tag = "3")]
    uint_value: Option<u64>,
    #[prost(int64, optional, tag = "4")]
    int_value: Option<i64>,
    #[prost(double, optional, tag = "5")]
    double_value: Option<f64>,
    #[prost(string, optional, tag = "6")]
    string_value: Option<String>,
    #[prost(string, optional, tag = "10")]
    name: Option<String>,
}

/// `TrackEvent.Type`.
const SLICE_BEGIN: i32 = 1;
const SLICE_END: i32 = 2;
const INSTANT: i32 = 3;
/// `TracePacket.SequenceFlags.SEQ_INCREMENTAL_STATE_CLEARED`.
const STATE_CLEARED: u32 = 1;
/// Our only packet sequence.
const SEQUENCE: u32 = 1;

const PROCESS_TRACK: u64 = 1;
const CPU_TRACK_BASE: u64 = 0x100;
const LANE_TRACK_BASE: u64 = 0x1_0000_0000;
/// Processes other than the trace's own: this plus the pid.
const PROCESS_TRACK_BASE: u64 = 0x2_0000_0000;
/// Threads: this plus the order they first appear in.
const THREAD_TRACK_BASE: u64 = 0x3_0000_0000;

fn annotation(name: &str, v: &Value) -> DebugAnnotation {
    let mut a = DebugAnnotation {
        name: Some(name.to_string()),
        ..Default::default()
    };
    match v {
        Value::Uint(x) => a.uint_value = Some(*x),
        Value::Int(x) | Value::Enum(x) => a.int_value = Some(*x),
        Value::F32(x) => a.double_value = Some(*x as f64),
        Value::F64(x) => a.double_value = Some(*x),
        Value::Bool(b) => a.bool_value = Some(*b),
        Value::Str(s) => a.string_value = Some(s.clone()),
        Value::RawStr(b) => a.string_value = Some(super::escaped(b)),
        Value::UintArray(xs) => a.string_value = Some(format!("{xs:?}")),
        Value::IntArray(xs) => a.string_value = Some(format!("{xs:?}")),
    }
    a
}

struct Out {
    w: BufWriter<std::fs::File>,
    buf: Vec<u8>,
    first: bool,
}

impl Out {
    /// Appends one `Trace.packet` (field 1, length-delimited).
    fn packet(&mut self, mut p: TracePacket) -> std::io::Result<()> {
        p.trusted_packet_sequence_id = Some(SEQUENCE);
        if self.first {
            p.sequence_flags = Some(STATE_CLEARED);
            self.first = false;
        }
        self.buf.clear();
        self.buf.push(0x0a);
        p.encode_length_delimited(&mut self.buf)
            .map_err(std::io::Error::other)?;
        self.w.write_all(&self.buf)
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
    };
    out.packet(TracePacket {
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
    let mut pids = BTreeSet::from([pid]);
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
            let process_track = if p == pid {
                PROCESS_TRACK
            } else {
                PROCESS_TRACK_BASE + p as u32 as u64
            };
            if pids.insert(p) {
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
            let n = lane_tracks.len() as u64;
            let (lane_track, known) = match (lane, lane_tracks.get(&lane)) {
                (_, Some((t, old))) => (*t, *old == name),
                (Lane::Cpu(c), None) => (CPU_TRACK_BASE + c as u64, false),
                (Lane::Thread { .. }, None) => (THREAD_TRACK_BASE + n, false),
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
                    let key = id.map(|i| format!("{:?}", e.values[i]));
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
                            let n = lane_uuid.len() as u64;
                            let uuid = *lane_uuid
                                .entry((name.clone(), lane))
                                .or_insert(LANE_TRACK_BASE + n);
                            if uuid == LANE_TRACK_BASE + n {
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
                    }
                }
            };
            out.packet(TracePacket {
                timestamp: Some(ts),
                track_event: Some(ev),
                ..Default::default()
            })?;
            count += 1;
            Ok(true)
        },
    )?;
    out.w.flush()?;
    super::finish(count, a, errors)
}
