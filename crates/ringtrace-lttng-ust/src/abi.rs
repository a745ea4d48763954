//! The LTTng-UST 2.13 probe ABI as `repr(C)` mirrors of the structures of
//! `lttng/ust-events.h` that a provider hands to the tracer (its
//! descriptions of events and field types). Each structure starts with
//! its `struct_size`: fields are only ever added at the end, and a
//! structure smaller than the mirror is refused (`check.rs`).
//!
//! C bit fields (`unsigned int x:1`) are laid out as GCC does on x86-64:
//! in the 32-bit unit that holds the bit after the previous member, least
//! significant bit first; each mirror names the word that holds them. The
//! sizes asserted below are those `gcc` gives the C structures (the test
//! `tests/abi.rs` compiles them and compares).

use std::ffi::{c_char, c_int, c_uint, c_void};

use ringtrace_core::desc::EventDesc as RingtraceEvent;

/// `LTTNG_UST_PROVIDER_MAJOR`: the provider ABI this library implements.
pub const PROVIDER_MAJOR: u32 = 3;
/// `LTTNG_UST_PROVIDER_MAJOR_OLDEST_COMPATIBLE`.
pub const PROVIDER_MAJOR_OLDEST: u32 = 3;

/// `enum lttng_ust_type`.
pub mod ty {
    pub const INTEGER: u32 = 0;
    pub const STRING: u32 = 1;
    pub const FLOAT: u32 = 2;
    pub const DYNAMIC: u32 = 3;
    pub const ENUM: u32 = 4;
    pub const ARRAY: u32 = 5;
    pub const SEQUENCE: u32 = 6;
    pub const STRUCT: u32 = 7;
}

/// `enum lttng_ust_string_encoding`.
pub mod encoding {
    pub const NONE: u32 = 0;
    pub const UTF8: u32 = 1;
    pub const ASCII: u32 = 2;
}

/// `struct lttng_ust_probe_desc`.
#[repr(C)]
#[derive(Debug)]
pub struct ProbeDesc {
    pub struct_size: u32,
    pub provider_name: *const c_char,
    pub event_desc: *const *const EventDesc,
    pub nr_events: c_uint,
    pub major: u32,
    pub minor: u32,
}

/// `struct lttng_ust_event_desc`.
#[repr(C)]
#[derive(Debug)]
pub struct EventDesc {
    pub struct_size: u32,
    pub event_name: *const c_char,
    pub probe_desc: *const ProbeDesc,
    pub tp_class: *const TracepointClass,
    /// Points to a pointer to the level, null when the event declares none.
    pub loglevel: *const *const c_int,
    pub model_emf_uri: *const *const c_char,
}

/// `struct lttng_ust_tracepoint_class`.
#[repr(C)]
#[derive(Debug)]
pub struct TracepointClass {
    pub struct_size: u32,
    pub fields: *const *const EventField,
    pub nr_fields: usize,
    pub probe_callback: Option<unsafe extern "C" fn()>,
    pub signature: *const c_char,
    pub probe_desc: *const ProbeDesc,
}

/// `struct lttng_ust_event_field`.
#[repr(C)]
#[derive(Debug)]
pub struct EventField {
    pub struct_size: u32,
    pub name: *const c_char,
    pub ty: *const TypeCommon,
    /// Bit 0: `nowrite` (not in the trace, only for filters); bit 1:
    /// `nofilter`.
    pub flags: c_uint,
}

impl EventField {
    /// Whether the probe leaves the field out of the record.
    pub fn nowrite(&self) -> bool {
        self.flags & 1 != 0
    }
}

/// `struct lttng_ust_type_common`: the first member of every type.
#[repr(C)]
#[derive(Debug)]
pub struct TypeCommon {
    pub ty: u32,
}

/// `struct lttng_ust_type_integer`.
#[repr(C)]
#[derive(Debug)]
pub struct TypeInteger {
    pub parent: TypeCommon,
    pub struct_size: u32,
    /// Bits.
    pub size: c_uint,
    /// Bits.
    pub alignment: u16,
    /// Bit 0: `signedness`; bit 1: `reverse_byte_order`.
    pub flags: u16,
    pub base: c_uint,
}

/// `struct lttng_ust_type_float`.
#[repr(C)]
#[derive(Debug)]
pub struct TypeFloat {
    pub parent: TypeCommon,
    pub struct_size: u32,
    pub exp_dig: c_uint,
    pub mant_dig: c_uint,
    /// Bits.
    pub alignment: u16,
    /// Bit 0: `reverse_byte_order`.
    pub flags: u16,
}

/// `struct lttng_ust_type_string`.
#[repr(C)]
#[derive(Debug)]
pub struct TypeString {
    pub parent: TypeCommon,
    pub struct_size: u32,
    pub encoding: u32,
}

/// `struct lttng_ust_type_enum`.
#[repr(C)]
#[derive(Debug)]
pub struct TypeEnum {
    pub parent: TypeCommon,
    pub struct_size: u32,
    pub desc: *const EnumDesc,
    pub container_type: *const TypeCommon,
}

/// `struct lttng_ust_type_array`.
#[repr(C)]
#[derive(Debug)]
pub struct TypeArray {
    pub parent: TypeCommon,
    pub struct_size: u32,
    pub elem_type: *const TypeCommon,
    pub length: c_uint,
    pub alignment: c_uint,
    pub encoding: u32,
}

/// `struct lttng_ust_type_sequence`.
#[repr(C)]
#[derive(Debug)]
pub struct TypeSequence {
    pub parent: TypeCommon,
    pub struct_size: u32,
    /// The length field's name; null: the field just before.
    pub length_name: *const c_char,
    pub elem_type: *const TypeCommon,
    pub alignment: c_uint,
    pub encoding: u32,
}

/// `struct lttng_ust_enum_value`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct EnumValue {
    pub value: u64,
    /// Bit 0: `signedness`.
    pub flags: c_uint,
}

/// `struct lttng_ust_enum_entry`.
#[repr(C)]
#[derive(Debug)]
pub struct EnumEntry {
    pub struct_size: u32,
    pub start: EnumValue,
    pub end: EnumValue,
    pub string: *const c_char,
    pub options: c_uint,
}

/// `struct lttng_ust_enum_desc`.
#[repr(C)]
#[derive(Debug)]
pub struct EnumDesc {
    pub struct_size: u32,
    pub name: *const c_char,
    pub entries: *const *const EnumEntry,
    pub nr_entries: c_uint,
    pub probe_desc: *const ProbeDesc,
}

// The tracer's side: what a probe reads when its call site fires.

/// `LTTNG_UST_EVENT_TYPE_RECORDER`.
pub const EVENT_TYPE_RECORDER: u32 = 0;

/// `run_filter(event, interpreter_stack_data, probe_ctx, filter_ctx)`:
/// `LTTNG_UST_EVENT_FILTER_ACCEPT` (0) or `…_REJECT` (1).
pub type RunFilter =
    unsafe extern "C" fn(*const EventCommon, *const c_char, *mut ProbeCtx, *mut c_void) -> c_int;

/// `struct lttng_ust_event_common`.
#[repr(C)]
pub struct EventCommon {
    pub struct_size: u32,
    pub private: *mut c_void,
    pub ty: u32,
    pub child: *mut c_void,
    pub enabled: c_int,
    pub eval_filter: c_int,
    pub run_filter: Option<RunFilter>,
}

/// `struct lttng_ust_event_recorder`.
#[repr(C)]
pub struct EventRecorder {
    pub struct_size: u32,
    pub parent: *const EventCommon,
    /// The tracer's: here the event's ringtrace descriptor.
    pub private: *const RingtraceEvent,
    pub chan: *const ChannelBuffer,
}

/// `struct lttng_ust_channel_buffer_ops`.
#[repr(C)]
pub struct ChannelOps {
    pub struct_size: u32,
    pub private: *mut c_void,
    pub event_reserve: unsafe extern "C" fn(*mut RingBufferCtx) -> c_int,
    pub event_commit: unsafe extern "C" fn(*mut RingBufferCtx),
    pub event_write: unsafe extern "C" fn(*mut RingBufferCtx, *const c_void, usize, usize),
    pub event_strcpy: unsafe extern "C" fn(*mut RingBufferCtx, *const c_char, usize),
    pub event_pstrcpy_pad: unsafe extern "C" fn(*mut RingBufferCtx, *const c_char, usize),
}

/// `struct lttng_ust_channel_common`.
#[repr(C)]
pub struct ChannelCommon {
    pub struct_size: u32,
    pub private: *mut c_void,
    pub ty: u32,
    pub child: *const ChannelBuffer,
    pub enabled: c_int,
    pub session: *const Session,
}

/// `struct lttng_ust_channel_buffer`.
#[repr(C)]
pub struct ChannelBuffer {
    pub struct_size: u32,
    pub parent: *const ChannelCommon,
    pub private: *mut c_void,
    pub ops: *const ChannelOps,
}

/// `struct lttng_ust_session`.
#[repr(C)]
pub struct Session {
    pub struct_size: u32,
    pub private: *mut c_void,
    pub active: c_int,
}

/// `struct lttng_ust_ring_buffer_ctx`.
#[repr(C)]
pub struct RingBufferCtx {
    pub struct_size: u32,
    /// The event recorder (`lttng_ust_ring_buffer_ctx_init`).
    pub client_priv: *mut c_void,
    pub data_size: usize,
    pub largest_align: c_int,
    pub probe_ctx: *mut ProbeCtx,
    /// The tracer's, set by `event_reserve`: here the thread's level (its
    /// open record or staging area, and the write cursor).
    pub private: *mut c_void,
}

/// `struct lttng_ust_probe_ctx`.
#[repr(C)]
pub struct ProbeCtx {
    pub struct_size: u32,
    pub ip: *mut c_void,
}

/// The sizes `gcc` gives the C structures on x86-64 (the base ABI: a
/// provider's `struct_size` is at least this).
pub mod size {
    pub const PROBE_DESC: usize = 40;
    pub const EVENT_DESC: usize = 48;
    pub const TRACEPOINT_CLASS: usize = 48;
    pub const EVENT_FIELD: usize = 32;
    pub const TYPE_INTEGER: usize = 20;
    pub const TYPE_FLOAT: usize = 20;
    pub const TYPE_STRING: usize = 12;
    pub const TYPE_ENUM: usize = 24;
    pub const TYPE_ARRAY: usize = 32;
    pub const TYPE_SEQUENCE: usize = 32;
    pub const ENUM_ENTRY: usize = 56;
    pub const ENUM_DESC: usize = 40;
}

const _: () = {
    use std::mem::size_of;
    assert!(size_of::<ProbeDesc>() == size::PROBE_DESC);
    assert!(size_of::<EventDesc>() == size::EVENT_DESC);
    assert!(size_of::<TracepointClass>() == size::TRACEPOINT_CLASS);
    assert!(size_of::<EventField>() == size::EVENT_FIELD);
    assert!(size_of::<TypeInteger>() == size::TYPE_INTEGER);
    assert!(size_of::<TypeFloat>() == size::TYPE_FLOAT);
    assert!(size_of::<TypeString>() == size::TYPE_STRING);
    assert!(size_of::<TypeEnum>() == size::TYPE_ENUM);
    assert!(size_of::<TypeArray>() == size::TYPE_ARRAY);
    assert!(size_of::<TypeSequence>() == size::TYPE_SEQUENCE);
    assert!(size_of::<EnumEntry>() == size::ENUM_ENTRY);
    assert!(size_of::<EnumDesc>() == size::ENUM_DESC);
};
