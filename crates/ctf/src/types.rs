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

    /// Whether it is smaller than a byte or not of whole bytes: as the
    /// element of a sequence, packed bit after bit.
    pub fn is_packed(&self) -> bool {
        !self.bits.is_multiple_of(8)
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
    /// binary32, big-endian (a big-endian machine's `float`).
    F32Be,
    /// binary64, big-endian.
    F64Be,
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
    /// An array of `n` elements of a type other than an integer (the
    /// element a [`Field`], for its alignment; a value of
    /// [`crate::value::Value::Array`]).
    ArrayOf(Box<Field>, u32),
    /// A sequence of such elements, its length (of type `len`) just before.
    SequenceOfAny {
        /// The length's type.
        len: IntType,
        /// The element.
        elem: Box<Field>,
    },
    /// A structure: its fields, in order (a value of
    /// [`crate::value::Value::Struct`]).
    Struct(Vec<Field>),
    /// A variant: one of `options`, the one whose name is the label of
    /// the value of `tag`, an enumeration decoded before it in the same
    /// structure (a value of [`crate::value::Value::Variant`]).
    Variant(Box<VariantType>),
    /// Fixed-length text: an array of `n` 8-bit integers with UTF-8
    /// encoding, its text ending at the first NUL (LTTng's `procname`
    /// context is one).
    Text(u32),
    /// An integer or enumeration placed at a bit, in a run of bit fields
    /// (CTF integers of any size with `align` below 8 bits, packed one
    /// after the other: LTTng kernel's IPv4 `version`/`ihl` nibbles, bare
    /// metal producers' flags). A value of [`crate::value::Value::Uint`],
    /// `Int`, or `Enum` when it has mappings.
    Bits(Box<BitField>),
}

/// Where a bit field sits in its run, the bytes that hold consecutive bit
/// fields (the run starts at a byte boundary: every other field ends on
/// one). CTF 1.8 section 4.1.5: in little-endian order bit 0 of a run is
/// the least significant bit of its first byte; in big-endian order it is
/// the most significant one.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BitField {
    /// Its integer type (`bits` 1..=64, any; `be` its byte order).
    pub int: IntType,
    /// An enumeration's mappings (`None`: a plain integer).
    pub maps: Option<Vec<EnumMapping>>,
    /// Its first bit, counted from the run's start.
    pub at: u32,
    /// Bytes the run takes (its bits rounded up to a byte).
    pub run: u32,
    /// The run's last field: the reader moves past the run after it.
    pub last: bool,
    /// An array of this many such integers, one after the other from
    /// `at` (a value of [`crate::value::Value::UintArray`] or `IntArray`;
    /// never of enumerations); `None`: one integer.
    pub count: Option<u32>,
}

impl FieldType {
    /// The integer type of an integer, an enumeration or a bit field.
    pub fn int(&self) -> Option<&IntType> {
        match self {
            FieldType::Int(t) | FieldType::Enum(t, _) => Some(t),
            FieldType::Bits(b) => Some(&b.int),
            _ => None,
        }
    }

    /// The mappings of an enumeration (also one in bit fields).
    pub fn enum_maps(&self) -> Option<&[EnumMapping]> {
        match self {
            FieldType::Enum(_, m) => Some(m),
            FieldType::Bits(b) => b.maps.as_deref(),
            _ => None,
        }
    }
}

/// What a variant is made of.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct VariantType {
    /// Where its tag is: `up` structures out from the one holding the
    /// variant (0: among the fields before it in its own), the field at
    /// `tag[0]` there, and inside it (a structure) the field at `tag[1]`,
    /// and so on (CTF 1.8 section 7.3.2: a relative path, looked up in the
    /// variant's structure, then in the ones around it).
    pub up: u8,
    /// See `up`.
    pub tag: Vec<usize>,
    /// The tag's path as the metadata writes it (`tag`, `s.tag`,
    /// `event.fields.tag`), without escaping underscores.
    pub tag_name: String,
    /// The tag's values (inclusive ranges) and the option each selects.
    pub choices: Vec<(i64, i64, usize)>,
    /// The options.
    pub options: Vec<Field>,
}

/// A named, typed field.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Field {
    /// Name as it appears in the metadata (an identifier).
    pub name: String,
    /// Its type.
    pub ty: FieldType,
    /// A sequence's length field, when it is not named `_<name>_length`
    /// (ringtrace's and LTTng's convention): its name.
    pub length: Option<String>,
    /// Alignment of its first byte in the packet, in bytes (1: none;
    /// CTF's `align` beyond 8 bits, natural alignment in some producers).
    pub align: u8,
}

impl Field {
    /// A field.
    pub fn new(name: impl Into<String>, ty: FieldType) -> Self {
        Field {
            name: name.into(),
            ty,
            length: None,
            align: 1,
        }
    }

    /// The name of a sequence's length field.
    pub fn length_name(&self) -> String {
        match &self.length {
            Some(n) => n.clone(),
            None => format!("_{}_length", self.name),
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
    /// Its own context (`context :=` in its `event` block), between the
    /// stream's event context and the payload; empty for most events.
    pub context: Vec<Field>,
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
    /// A structure of fixed size holding an id and a timestamp, each
    /// optional (babeltrace2's `sink.ctf.fs` writes `{ uint64 id; uint64
    /// timestamp; }`; a stream of one event class may have no header).
    Plain(PlainHeader),
}

/// Where an integer the reader needs lies: its byte offset (from the
/// packet's start, or from the event header's start in a [`PlainHeader`])
/// and its type (whole bytes, either byte order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Slot {
    /// Byte offset.
    pub offset: u32,
    /// Its type.
    pub ty: IntType,
}

impl Slot {
    /// The slot's value in `b` (sign bits are not extended: ids, sizes
    /// and times are unsigned); `None` when `b` is too short.
    #[inline]
    pub fn read(&self, b: &[u8]) -> Option<u64> {
        let n = self.ty.bytes();
        let start = self.offset as usize;
        let bytes = b.get(start..start.checked_add(n)?)?;
        let mut v = 0u64;
        if self.ty.be {
            for &x in bytes {
                v = v << 8 | x as u64;
            }
        } else {
            for &x in bytes.iter().rev() {
                v = v << 8 | x as u64;
            }
        }
        Some(v)
    }

    /// Writes the low bytes of `v` in the slot (`b` long enough).
    pub fn write(&self, b: &mut [u8], v: u64) {
        let n = self.ty.bytes();
        let at = self.offset as usize;
        let le = v.to_le_bytes();
        for k in 0..n {
            b[at + if self.ty.be { n - 1 - k } else { k }] = le[k];
        }
    }
}

/// A fixed-size event header of any layout: where its id and timestamp
/// are, from its start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PlainHeader {
    /// The event class id (none: the stream has one event class).
    pub id: Option<Slot>,
    /// The timestamp, or its low bits.
    pub ts: Option<Slot>,
    /// Size in bytes.
    pub len: u16,
    /// Alignment of its start in the packet, in bytes.
    pub align: u8,
}

/// Where a stream class's packets keep what the reader needs: the fields
/// of the packet header and packet context it knows by name, each
/// optional, at fixed offsets from the packet's start (CTF 1.8 section
/// 5: `magic`, `uuid`, `stream_id`, `stream_instance_id` in the header;
/// `timestamp_begin`, `timestamp_end`, `content_size`, `packet_size`,
/// `packet_seq_num`, `events_discarded`, `cpu_id` in the context).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PacketLayout {
    /// `magic` (0xC1FC1FC1).
    pub magic: Option<Slot>,
    /// Offset of the 16-byte `uuid`.
    pub uuid: Option<u32>,
    /// `stream_id`: the stream class.
    pub stream_id: Option<Slot>,
    /// `stream_instance_id`.
    pub stream_instance_id: Option<Slot>,
    /// `timestamp_begin`.
    pub timestamp_begin: Option<Slot>,
    /// `timestamp_end`.
    pub timestamp_end: Option<Slot>,
    /// `content_size` (bits).
    pub content_size: Option<Slot>,
    /// `packet_size` (bits); none: the packet is the whole file.
    pub packet_size: Option<Slot>,
    /// `packet_seq_num`.
    pub packet_seq_num: Option<Slot>,
    /// `events_discarded` (running total).
    pub events_discarded: Option<Slot>,
    /// `cpu_id`.
    pub cpu_id: Option<Slot>,
    /// Bytes of packet header and context: where the first event starts.
    pub len: u32,
    /// The trace's byte order is big-endian: compact and large event
    /// headers follow it.
    pub big_endian: bool,
}

impl PacketLayout {
    /// The layout ringtrace writes (and LTTng-UST on 64-bit machines):
    /// see [`crate::layout`], whose offsets these are.
    pub const RINGTRACE: PacketLayout = {
        const fn at(offset: u32, bits: u8) -> Option<Slot> {
            Some(Slot {
                offset,
                ty: IntType::unsigned(bits),
            })
        }
        PacketLayout {
            magic: at(0, 32),
            uuid: Some(4),
            stream_id: at(20, 32),
            stream_instance_id: at(24, 64),
            timestamp_begin: at(32, 64),
            timestamp_end: at(40, 64),
            content_size: at(48, 64),
            packet_size: at(56, 64),
            packet_seq_num: at(64, 64),
            events_discarded: at(72, 64),
            cpu_id: at(80, 32),
            len: 84,
            big_endian: false,
        }
    };
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
    /// Where its packets keep their header and context.
    pub packet: PacketLayout,
    /// The packet context's integer fields other than the sizes, times,
    /// sequence number and discarded count that CTF defines: `cpu_id`
    /// and what producers add, shown with each event as babeltrace2
    /// shows them (in declared order).
    pub packet_fields: Vec<Field>,
    /// The byte offset of each of `packet_fields` in the packet.
    pub packet_field_offsets: Vec<u32>,
    /// The clock its timestamps count, when it is not the trace's
    /// ([`TraceDesc::clock`]): a trace may declare several clocks, each
    /// stream class mapping its times to one of them.
    pub clock: Option<ClockDesc>,
}

impl StreamClass {
    /// A stream class with ringtrace's packet layout.
    pub fn new(id: u32, header: HeaderKind, context: Vec<Field>) -> Self {
        let cpu = PacketLayout::RINGTRACE.cpu_id.expect("ringtrace's has one");
        StreamClass {
            id,
            header,
            context,
            packet: PacketLayout::RINGTRACE,
            packet_fields: vec![Field::new("cpu_id", FieldType::Int(cpu.ty))],
            packet_field_offsets: vec![cpu.offset],
            clock: None,
        }
    }

    /// Whether its packets are laid out as ringtrace writes them.
    pub fn has_ringtrace_packets(&self) -> bool {
        let r = StreamClass::new(self.id, self.header, Vec::new());
        self.packet == r.packet
            && self.clock.is_none()
            && self.packet_fields == r.packet_fields
            && self.packet_field_offsets == r.packet_field_offsets
    }
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

impl ClockDesc {
    /// What a trace whose metadata declares no clock has in its place
    /// (bare-metal producers that stamp nothing): its events carry no
    /// time, stay in their order within each stream, and are printed
    /// without one, as babeltrace2 prints them. Its name is empty, which
    /// no declared clock's is (an identifier).
    pub fn absent() -> ClockDesc {
        ClockDesc {
            name: String::new(),
            freq: 1_000_000_000,
            offset_s: 0,
            offset: 0,
            precision: 0,
            description: String::new(),
        }
    }

    /// Whether this is [`ClockDesc::absent`]: the trace has no clock.
    pub fn is_absent(&self) -> bool {
        self.name.is_empty()
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

/// Whether `s` is a TSDL identifier (a letter or `_`, then letters,
/// digits and `_`).
pub fn is_identifier(s: &str) -> bool {
    let mut c = s.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
}
