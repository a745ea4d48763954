//! The messages of Perfetto's trace format that the export writes, with
//! Perfetto's field numbers (`protos/perfetto/trace/`: trace_packet.proto,
//! track_event/*.proto, interned_data/interned_data.proto), which Perfetto
//! keeps stable, and the constants of their enumerations.

use ctf::value::Value;
use prost::Message;

#[derive(Clone, PartialEq, Message)]
pub(super) struct TracePacket {
    #[prost(uint64, optional, tag = "8")]
    pub(super) timestamp: Option<u64>,
    #[prost(uint32, optional, tag = "10")]
    pub(super) trusted_packet_sequence_id: Option<u32>,
    #[prost(message, optional, tag = "11")]
    pub(super) track_event: Option<TrackEvent>,
    #[prost(uint32, optional, tag = "13")]
    pub(super) sequence_flags: Option<u32>,
    #[prost(message, optional, tag = "12")]
    pub(super) interned_data: Option<InternedData>,
    #[prost(message, optional, tag = "60")]
    pub(super) track_descriptor: Option<TrackDescriptor>,
    #[prost(message, optional, tag = "6")]
    pub(super) clock_snapshot: Option<ClockSnapshot>,
    #[prost(uint32, optional, tag = "58")]
    pub(super) timestamp_clock_id: Option<u32>,
    #[prost(message, optional, tag = "59")]
    pub(super) trace_packet_defaults: Option<TracePacketDefaults>,
}

/// What the packets of the sequence that do not say otherwise have: here,
/// the clock of their timestamps.
#[derive(Clone, PartialEq, Message)]
pub(super) struct TracePacketDefaults {
    #[prost(uint32, optional, tag = "58")]
    pub(super) timestamp_clock_id: Option<u32>,
}

/// Clocks read at one instant: ties a clock of the sequence to a builtin
/// one.
#[derive(Clone, PartialEq, Message)]
pub(super) struct ClockSnapshot {
    #[prost(message, repeated, tag = "1")]
    pub(super) clocks: Vec<Clock>,
}

#[derive(Clone, PartialEq, Message)]
pub(super) struct Clock {
    #[prost(uint32, optional, tag = "1")]
    pub(super) clock_id: Option<u32>,
    #[prost(uint64, optional, tag = "2")]
    pub(super) timestamp: Option<u64>,
    /// Each timestamp of this clock is the time since the sequence's
    /// previous one (the first since the snapshot's).
    #[prost(bool, optional, tag = "3")]
    pub(super) is_incremental: Option<bool>,
}

/// `ClockSnapshot.Clock.BuiltinClocks.BOOTTIME`: the clock of timestamps
/// that name none, and the trace's time.
pub(super) const BOOTTIME: u32 = 6;
/// Our clock of the sequence (64 to 127 are a sequence's own): the time
/// since the previous event, in nanoseconds, two or three bytes where an
/// absolute time takes nine.
pub(super) const DELTA_CLOCK: u32 = 64;

#[derive(Clone, PartialEq, Message)]
pub(super) struct TrackDescriptor {
    #[prost(uint64, optional, tag = "1")]
    pub(super) uuid: Option<u64>,
    #[prost(string, optional, tag = "2")]
    pub(super) name: Option<String>,
    #[prost(message, optional, tag = "3")]
    pub(super) process: Option<ProcessDescriptor>,
    #[prost(message, optional, tag = "4")]
    pub(super) thread: Option<ThreadDescriptor>,
    #[prost(uint64, optional, tag = "5")]
    pub(super) parent_uuid: Option<u64>,
}

#[derive(Clone, PartialEq, Message)]
pub(super) struct ThreadDescriptor {
    #[prost(int32, optional, tag = "1")]
    pub(super) pid: Option<i32>,
    #[prost(int32, optional, tag = "2")]
    pub(super) tid: Option<i32>,
    #[prost(string, optional, tag = "5")]
    pub(super) thread_name: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
pub(super) struct ProcessDescriptor {
    #[prost(int32, optional, tag = "1")]
    pub(super) pid: Option<i32>,
    #[prost(string, optional, tag = "6")]
    pub(super) process_name: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
pub(super) struct TrackEvent {
    #[prost(message, repeated, tag = "4")]
    pub(super) debug_annotations: Vec<DebugAnnotation>,
    #[prost(int32, optional, tag = "9")]
    pub(super) r#type: Option<i32>,
    #[prost(uint64, optional, tag = "11")]
    pub(super) track_uuid: Option<u64>,
    #[prost(uint64, repeated, packed = "false", tag = "3")]
    pub(super) category_iids: Vec<u64>,
    #[prost(uint64, optional, tag = "10")]
    pub(super) name_iid: Option<u64>,
    #[prost(string, repeated, tag = "22")]
    pub(super) categories: Vec<String>,
    #[prost(string, optional, tag = "23")]
    pub(super) name: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
pub(super) struct DebugAnnotation {
    #[prost(uint64, optional, tag = "1")]
    pub(super) name_iid: Option<u64>,
    #[prost(bool, optional, tag = "2")]
    pub(super) bool_value: Option<bool>,
    #[prost(uint64, optional, tag = "3")]
    pub(super) uint_value: Option<u64>,
    #[prost(int64, optional, tag = "4")]
    pub(super) int_value: Option<i64>,
    #[prost(double, optional, tag = "5")]
    pub(super) double_value: Option<f64>,
    #[prost(string, optional, tag = "6")]
    pub(super) string_value: Option<String>,
    #[prost(uint64, optional, tag = "17")]
    pub(super) string_value_iid: Option<u64>,
    #[prost(string, optional, tag = "10")]
    pub(super) name: Option<String>,
}

/// `TrackEvent.Type`.
pub(super) const SLICE_BEGIN: i32 = 1;
pub(super) const SLICE_END: i32 = 2;
pub(super) const INSTANT: i32 = 3;
/// `TracePacket.SequenceFlags.SEQ_INCREMENTAL_STATE_CLEARED`.
pub(super) const STATE_CLEARED: u32 = 1;
/// `SEQ_NEEDS_INCREMENTAL_STATE`: the packet uses interned data.
pub(super) const NEEDS_STATE: u32 = 2;

/// `InternedData`: names given once per sequence, then referred to by
/// their iid.
#[derive(Clone, PartialEq, Message)]
pub(super) struct InternedData {
    #[prost(message, repeated, tag = "1")]
    pub(super) event_categories: Vec<Interned>,
    #[prost(message, repeated, tag = "2")]
    pub(super) event_names: Vec<Interned>,
    #[prost(message, repeated, tag = "3")]
    pub(super) debug_annotation_names: Vec<Interned>,
    #[prost(message, repeated, tag = "29")]
    pub(super) debug_annotation_string_values: Vec<Interned>,
}

/// `EventCategory`, `EventName`, `DebugAnnotationName`, and
/// `InternedString` (whose `str` is bytes: the same encoding as a string):
/// the same fields.
#[derive(Clone, PartialEq, Message)]
pub(super) struct Interned {
    #[prost(uint64, optional, tag = "1")]
    pub(super) iid: Option<u64>,
    #[prost(string, optional, tag = "2")]
    pub(super) name: Option<String>,
}

pub(super) fn annotation(name: &str, v: &Value) -> DebugAnnotation {
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
        Value::RawStr(b) => a.string_value = Some(crate::export::escaped(b)),
        Value::UintArray(xs) => a.string_value = Some(format!("{xs:?}")),
        Value::IntArray(xs) => a.string_value = Some(format!("{xs:?}")),
        // A structure or array as the JSON array of its values.
        Value::Struct(_) | Value::Array(_) => {
            a.string_value = Some(crate::export::chrome::json_value(v).to_string())
        }
        Value::Variant(_, v) => {
            let mut inner = annotation(name, v);
            inner.name = a.name.take();
            return inner;
        }
    }
    a
}
