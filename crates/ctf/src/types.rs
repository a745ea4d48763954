//! Rust descriptions of a trace: the trace itself (uuid, byte order, clock),
//! its stream classes (packet context, event header) and event classes
//! (name, id, loglevel, typed fields). The metadata text is generated from
//! these, and the reader parses it back into them.

/// An integer type. Every integer ringtrace writes is byte-aligned and
/// little-endian except the bit fields of the compact event header; other
/// producers write big-endian ones too (LTTng's `ctf_integer_network`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IntType {
    /// Size in bits, 1..=64.
    pub bits: u8,
    /// Two's complement.
    pub signed: bool,
    /// Preferred display base (2, 8, 10, 16).
    pub base: u8,
    /// Big-endian (`byte_order = be` or `network`).
    pub be: bool,
}

impl IntType {
    /// Unsigned, base 10.
    pub const fn unsigned(bits: u8) -> Self {
        IntType {
            bits,
            signed: false,
            base: 10,
            be: false,
        }
    }
    /// Signed, base 10.
    pub const fn signed(bits: u8) -> Self {
        IntType {
            bits,
            signed: true,
            base: 10,
            be: false,
        }
    }
    /// Size in bytes (integers in payloads are whole bytes).
    pub fn bytes(&self) -> usize {
        (self.bits as usize).div_ceil(8)
    }
}

/// One mapping of an enumeration: a label for a range of values.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EnumMapping {
    /// The label.
    pub label: String,
    /// First value.
    pub start: i64,
    /// Last value (inclusive).
    pub end: i64,
}

/// The type of an event field.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum FieldType {
    /// Integer of 8, 16, 32 or 64 bits.
    Int(IntType),
    /// IEEE 754 binary32.
    F32,
    /// IEEE 754 binary64.
    F64,
    /// Boolean, stored as an 8-bit enumeration { false = 0, true = 1 }
    /// (CTF 1.8 has no boolean type).
    Bool,
    /// Enumeration over an integer container.
    Enum(IntType, Vec<EnumMapping>),
    /// NUL-terminated UTF-8 string.
    String,
    /// Fixed-length array of integers.
    Array(IntType, u32),
    /// Variable-length sequence of integers, preceded by a 32-bit length
    /// (written as a separate field `_<name>_length`).
    Sequence(IntType),
    /// A sequence of integers whose length is an unsigned integer of
    /// another size, just before it (LTTng's `ctf_sequence`, whose length
    /// is a `size_t` or the type the probe names).
    SequenceOf {
        /// The length's type.
        len: IntType,
        /// The elements' type.
        elem: IntType,
    },
    /// A sequence of 8-bit characters (its length just before it, of type
    /// `len`), LTTng's `ctf_sequence_text`: its value holds all its bytes
    /// (the length is part of what it says), and its text is what comes
    /// before the first NUL ([`crate::value::text_before_nul`]).
    TextSequence {
        /// The length's type.
        len: IntType,
    },
    /// Fixed-length text: an array of `n` 8-bit integers with UTF-8
    /// encoding, its text ending at the first NUL (LTTng's `procname`
    /// context is one).
    Text(u32),
}

/// A named, typed field.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Field {
    /// Name as it appears in the metadata (an identifier).
    pub name: String,
    /// Its type.
    pub ty: FieldType,
}

impl Field {
    /// A field.
    pub fn new(name: impl Into<String>, ty: FieldType) -> Self {
        Field {
            name: name.into(),
            ty,
        }
    }
}

/// An event class.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EventClass {
    /// Numeric id, unique in its stream class.
    pub id: u32,
    /// `provider:event`.
    pub name: String,
    /// LTTng-compatible loglevel (0 = emergency … 14 = debug).
    pub loglevel: u8,
    /// Stream class this event belongs to.
    pub stream_id: u32,
    /// Payload fields, in order.
    pub fields: Vec<Field>,
}

/// Which event header a stream class uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HeaderKind {
    /// 5-bit id + 27-bit timestamp (4 bytes), extended to 5-bit 31 +
    /// 32-bit id + 64-bit timestamp (13 bytes).
    Compact,
    /// 16-bit id + 32-bit timestamp (6 bytes), extended to 16-bit 65535 +
    /// 32-bit id + 64-bit timestamp (14 bytes).
    Large,
}

/// A stream class: every stream file of the class shares its packet
/// context and event header layout.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StreamClass {
    /// Stream class id.
    pub id: u32,
    /// Event header layout.
    pub header: HeaderKind,
    /// The stream event context: fields written after every event's
    /// header, before its payload (`vtid`, `vpid`, `procname`, …).
    pub context: Vec<Field>,
}

/// The trace clock as readers need it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClockDesc {
    /// Clock name (an identifier).
    pub name: String,
    /// Ticks per second.
    pub freq: u64,
    /// Seconds from the epoch to clock value 0 …
    pub offset_s: i64,
    /// … plus this many ticks.
    pub offset: i64,
    /// Uncertainty, in ticks.
    pub precision: u64,
    /// Human description.
    pub description: String,
}

/// A whole trace description.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceDesc {
    /// Trace uuid (also written in every packet header).
    pub uuid: [u8; 16],
    /// The clock.
    pub clock: ClockDesc,
    /// `env` block entries (strings or integers).
    pub env: Vec<(String, EnvValue)>,
    /// Stream classes.
    pub streams: Vec<StreamClass>,
    /// Event classes.
    pub events: Vec<EventClass>,
}

/// A value of the `env` block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvValue {
    /// A string.
    Str(String),
    /// An integer.
    Int(i64),
}

impl TraceDesc {
    /// The event class with this id in this stream class.
    pub fn event(&self, stream_id: u32, id: u32) -> Option<&EventClass> {
        self.events
            .iter()
            .find(|e| e.id == id && e.stream_id == stream_id)
    }
    /// The stream class with this id.
    pub fn stream(&self, id: u32) -> Option<&StreamClass> {
        self.streams.iter().find(|s| s.id == id)
    }
}

/// Formats a uuid the way TSDL writes it.
pub fn uuid_string(u: &[u8; 16]) -> String {
    let h: Vec<String> = u.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        h[0..4].concat(),
        h[4..6].concat(),
        h[6..8].concat(),
        h[8..10].concat(),
        h[10..16].concat()
    )
}

/// Parses a uuid string (`8-4-4-4-12` hex digits).
pub fn parse_uuid(s: &str) -> Option<[u8; 16]> {
    let b = s.as_bytes();
    if b.len() != 36 || [8, 13, 18, 23].iter().any(|&i| b[i] != b'-') {
        return None;
    }
    let digits: Vec<u8> = b.iter().filter(|c| **c != b'-').copied().collect();
    if digits.len() != 32 {
        return None;
    }
    let nibble = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let mut u = [0u8; 16];
    for (i, out) in u.iter_mut().enumerate() {
        *out = nibble(digits[2 * i])? << 4 | nibble(digits[2 * i + 1])?;
    }
    Some(u)
}
