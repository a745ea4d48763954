//! One stream file, read packet by packet in constant memory (one packet
//! buffer, grown only as far as the file's bytes go).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

mod packet;
mod skip;

use skip::Skip;

use super::ids::IdTable;
use super::{ClockMap, Event, EventRef, Item, ItemRef, ReadError};
use crate::layout::{extend_timestamp, read_event_header, read_event_header_be, PacketContext};
use crate::types::{ClockDesc, HeaderKind, TraceDesc};
use crate::value::{decode_at, DecodeError, Value};

/// The bytes of a stream: a file, or any reader.
struct Source(Box<dyn Read + Send>);

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Source")
    }
}

/// Reads one stream file, packet by packet.
#[derive(Debug)]
pub struct StreamReader {
    desc: Arc<TraceDesc>,
    /// Per stream class: its id, event header kind, event id → index in
    /// `desc.events`, and the map of its clock's times to those given out
    /// (a class may count another clock than the trace's).
    classes: Vec<(u32, HeaderKind, IdTable, ClockMap)>,
    /// The current packet's stream class's table, at hand: one load less
    /// per event than through `classes` (its stream class rarely changes).
    ids: Option<IdTable>,
    path: PathBuf,
    file: Source,
    /// File offset of the current packet.
    offset: u64,
    packet: Vec<u8>,
    content_end: usize,
    pos: usize,
    kind: HeaderKind,
    /// The trace is big-endian (its compact and large headers are).
    big_endian: bool,
    class_idx: usize,
    prev_ts: u64,
    ctx: PacketContext,
    last_discarded: u64,
    last_seq: Option<u64>,
    /// Packets read.
    packets: u64,
    /// Set when the current packet was cut short: reported after its events.
    truncated: Option<String>,
    done: bool,
    /// Ended by an error (a followed stream is not resumed).
    failed: bool,
    /// Following a stream being written: a packet not yet whole is kept
    /// (`partial`) and read again by [`StreamReader::resume`].
    following: bool,
    partial: bool,
    /// One value vector per event class, decoded into in place event after
    /// event: decoding allocates nothing once every class has been seen.
    class_values: Vec<Vec<Value>>,
    /// The same for each stream class's event context (index as `classes`).
    context_values: Vec<Vec<Value>>,
    /// The same for each event class's own context.
    own_context_values: Vec<Vec<Value>>,
    /// The current packet's shown fields (`StreamClass::packet_fields`).
    packet_values: Vec<Value>,
    /// What [`StreamReader::advance`] decoded last (an event's values are in
    /// `class_values[class]`).
    head: Head,
    /// Added to class indices given out (a trace in a set, `set.rs`).
    class_offset: usize,
    /// Timestamps given out are in this clock.
    clock: ClockMap,
    /// Set by [`StreamReader::skip_payloads`]: per event class, the bytes
    /// of its payload when they are always the same.
    fixed_payload: Option<Vec<Skip>>,
    /// Files that continue this stream (the same buffer in later folders
    /// of the same trace: [`StreamReader::continued_by`]), read in turn.
    next_files: std::collections::VecDeque<PathBuf>,
    /// Bytes of the files read before the current one.
    bytes_before: u64,
}

/// The current item of a stream, without its values.
#[derive(Debug, Clone, Copy)]
enum Head {
    Event {
        ts: u64,
        class: usize,
        cpu: u32,
    },
    Discarded {
        events: u64,
        packets: u64,
        ts: u64,
        cpu: u32,
    },
}

impl StreamReader {
    /// Opens a stream file of a trace (a regular file: see
    /// [`super::open_regular`]).
    pub fn open(desc: Arc<TraceDesc>, path: &Path) -> Result<Self, ReadError> {
        let file = super::open_regular(path)?;
        Ok(Self::from_reader(desc, path, Box::new(file)))
    }

    /// Reads a stream from any byte source; `path` names it in errors.
    pub fn from_reader(desc: Arc<TraceDesc>, path: &Path, file: Box<dyn Read + Send>) -> Self {
        let n_classes = desc.events.len();
        let n_streams = desc.streams.len();
        let classes = desc
            .streams
            .iter()
            .map(|s| {
                let ids = desc
                    .events
                    .iter()
                    .enumerate()
                    .filter(|(_, e)| e.stream_id == s.id)
                    .map(|(k, e)| (e.id as u64, k))
                    .collect();
                let from = s.clock.as_ref().unwrap_or(&desc.clock);
                (
                    s.id,
                    s.header,
                    IdTable::new(ids),
                    ClockMap::between(from, &desc.clock),
                )
            })
            .collect();
        StreamReader {
            desc,
            classes,
            ids: None,
            path: path.to_owned(),
            file: Source(file),
            offset: 0,
            packet: Vec::new(),
            content_end: 0,
            pos: 0,
            kind: HeaderKind::Compact,
            big_endian: false,
            class_idx: 0,
            prev_ts: 0,
            ctx: PacketContext::default(),
            last_discarded: 0,
            last_seq: None,
            packets: 0,
            truncated: None,
            done: false,
            failed: false,
            following: false,
            partial: false,
            class_values: vec![Vec::new(); n_classes],
            own_context_values: vec![Vec::new(); n_classes],
            context_values: vec![Vec::new(); n_streams],
            packet_values: Vec::new(),
            head: Head::Discarded {
                events: 0,
                packets: 0,
                ts: 0,
                cpu: 0,
            },
            class_offset: 0,
            clock: ClockMap::Same,
            fixed_payload: None,
            next_files: Default::default(),
            bytes_before: 0,
        }
    }

    /// The stream goes on in `files`, read in turn after this one (the
    /// same buffer's file in later folders of one trace, as relayd writes
    /// a stream again after a reconnection): packets missing between them
    /// are reported as discarded, and an error in one file (a packet cut
    /// when its writer died) ends that file, not the stream.
    pub fn continued_by(mut self, files: Vec<PathBuf>) -> Self {
        self.next_files = files.into();
        self
    }

    /// Whether another file continues the stream (after an error too).
    pub fn has_next_file(&self) -> bool {
        !self.next_files.is_empty()
    }

    /// Moves to the next file of the stream.
    fn next_file(&mut self) -> Result<(), ReadError> {
        let Some(p) = self.next_files.pop_front() else {
            return Ok(());
        };
        self.bytes_before += self.offset + self.packet.len() as u64;
        self.path = p;
        self.offset = 0;
        self.packet.clear();
        self.pos = 0;
        self.content_end = 0;
        self.truncated = None;
        self.partial = false;
        match super::open_regular(&self.path) {
            Ok(f) => {
                self.file = Source(Box::new(f));
                self.done = false;
                self.failed = false;
                Ok(())
            }
            Err(e) => {
                self.done = true;
                self.failed = true;
                Err(e)
            }
        }
    }

    /// The reader of a stream of one trace of a set: class indices shifted
    /// by `class_offset`, timestamps given in clock `to` (the set's).
    pub fn mapped(mut self, class_offset: usize, to: &ClockDesc) -> Self {
        self.class_offset = class_offset;
        for (c, s) in self.classes.iter_mut().zip(&self.desc.streams) {
            c.3 = ClockMap::between(s.clock.as_ref().unwrap_or(&self.desc.clock), to);
        }
        self.clock = self.classes.first().map_or(ClockMap::Same, |c| c.3);
        self
    }

    /// The file read.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes of the stream file read so far (whole packets): the progress
    /// of a long read, against the file's size.
    pub fn bytes_read(&self) -> u64 {
        self.bytes_before + self.offset + self.packet.len() as u64
    }

    /// Packets read so far, those without events included.
    #[inline]
    pub fn packets_read(&self) -> u64 {
        self.packets
    }

    /// The context of the packet being read.
    #[inline]
    pub fn packet_context(&self) -> &PacketContext {
        &self.ctx
    }

    /// Follows a stream file that is still being written: a packet not
    /// whole yet ends the stream for now, without an error, and is read
    /// again, whole, after [`StreamReader::resume`].
    pub fn following(mut self) -> Self {
        self.following = true;
        self
    }

    /// Goes on after the end of what the file held (the packets added
    /// since are read next); `false` if the stream ended with an error.
    pub fn resume(&mut self) -> bool {
        if !self.failed {
            self.done = false;
        }
        !self.failed
    }

    fn err(&mut self, at: u64, msg: impl Into<String>) -> ReadError {
        self.done = true;
        self.failed = true;
        ReadError::Stream {
            path: self.path.clone(),
            offset: at,
            msg: msg.into(),
        }
    }

    /// Appends up to `len` bytes of the file to the packet buffer, growing
    /// it only as far as the bytes that are there; returns how many.
    fn fill_to(&mut self, len: usize) -> Result<usize, ReadError> {
        let start = self.packet.len();
        let r = (&mut self.file.0)
            .take(len as u64)
            .read_to_end(&mut self.packet);
        match r {
            Ok(_) => Ok(self.packet.len() - start),
            Err(source) => {
                self.done = true;
                self.failed = true;
                Err(ReadError::Io {
                    path: self.path.clone(),
                    source,
                })
            }
        }
    }

    /// The next item, `Ok(None)` at the end of the stream. After an error
    /// the stream ends.
    pub fn next_item(&mut self) -> Result<Option<Item>, ReadError> {
        Ok(self.advance()?.then(|| self.take_head()))
    }

    /// The item decoded by the last successful [`StreamReader::advance`],
    /// lent in place.
    #[inline]
    pub fn head(&self) -> ItemRef<'_> {
        match self.head {
            Head::Event { ts, class, cpu } => ItemRef::Event(EventRef {
                ts: self.clock.apply(ts),
                own_ts: ts,
                class: class + self.class_offset,
                values: &self.class_values[class],
                context: &self.context_values[self.class_idx],
                own_context: &self.own_context_values[class],
                cpu,
                packet: &self.packet_values,
            }),
            Head::Discarded {
                events,
                packets,
                ts,
                cpu,
            } => ItemRef::Discarded {
                events,
                packets,
                ts: self.clock.apply(ts),
                cpu,
            },
        }
    }

    /// Time of the current item.
    #[inline]
    pub fn head_ts(&self) -> u64 {
        match self.head {
            Head::Event { ts, .. } | Head::Discarded { ts, .. } => self.clock.apply(ts),
        }
    }

    /// Moves the current item out (its class then decodes into a new vector).
    pub fn take_head(&mut self) -> Item {
        match self.head {
            Head::Event { ts, class, cpu } => Item::Event(Event {
                ts: self.clock.apply(ts),
                own_ts: ts,
                class: class + self.class_offset,
                values: std::mem::take(&mut self.class_values[class]),
                context: self.context_values[self.class_idx].clone(),
                own_context: self.own_context_values[class].clone(),
                cpu,
                packet: self.packet_values.clone(),
            }),
            Head::Discarded { .. } => self.head().to_owned(),
        }
    }

    /// Decodes the next item into [`StreamReader::head`], in place, reusing
    /// the previous event's memory; `Ok(false)` at the end of the stream.
    /// After an error the stream ends.
    pub fn advance(&mut self) -> Result<bool, ReadError> {
        loop {
            if self.done {
                if self.next_files.is_empty() {
                    return Ok(false);
                }
                self.next_file()?;
                continue;
            }
            if self.pos < self.content_end && self.decode_event()? {
                return Ok(true);
            }
            if let Some(msg) = self.truncated.take() {
                let at = self.offset + self.packet.len() as u64;
                return Err(self.err(at, msg));
            }
            if !self.next_packet()? {
                self.done = true;
                continue;
            }
            let ctx = self.ctx;
            let events = ctx.events_discarded.saturating_sub(self.last_discarded);
            self.last_discarded = self.last_discarded.max(ctx.events_discarded);
            // A damaged sequence number may be anything, 2^64-1 included.
            let packets = match self.last_seq {
                Some(s) => ctx.packet_seq_num.saturating_sub(s).saturating_sub(1),
                None => 0,
            };
            self.last_seq = Some(ctx.packet_seq_num);
            if events > 0 || packets > 0 {
                self.head = Head::Discarded {
                    events,
                    packets,
                    ts: ctx.timestamp_begin,
                    cpu: ctx.cpu_id,
                };
                return Ok(true);
            }
        }
    }

    /// Decodes the event at `pos`; `Ok(false)` when the packet's content
    /// held only alignment padding there.
    fn decode_event(&mut self) -> Result<bool, ReadError> {
        if let HeaderKind::Plain(p) = self.kind {
            self.pos = self.pos.next_multiple_of(p.align as usize);
            if self.pos >= self.content_end {
                // Only padding was left.
                self.pos = self.content_end;
                return Ok(false);
            }
        }
        let at = self.offset + self.pos as u64;
        let content = &self.packet[..self.content_end];
        // Taken apart into scalars at once: kept whole, the header went
        // through the stack and its reload waited on a store-forwarding
        // stall (a third of this function's time in `stats`).
        let b = &content[self.pos..];
        let parts =
            |h: Option<crate::layout::EventHeader>| h.map(|h| (h.id, h.ts, h.ts_bits, h.len));
        let h = if self.big_endian {
            parts(read_event_header_be(b, self.kind))
        } else {
            parts(read_event_header(b, self.kind))
        };
        let Some((id, low, bits, len)) = h else {
            return Err(self.cut(at, "event header"));
        };
        let ts = extend_timestamp(self.prev_ts, low, bits);
        let class = self.ids.as_ref().and_then(|t| t.get(id as u64));
        let Some(class) = class else {
            let sid = self.ctx.stream_id;
            return Err(self.err(at, format!("unknown event id {id} in stream class {sid}")));
        };
        let mut pos = self.pos + len;
        // The stream event context, between the header and the payload,
        // then the payload; each decoded in place into its value vector.
        let context = &self.desc.streams[self.class_idx].context;
        if let Err((e, i)) = decode_fields(
            context,
            content,
            &mut pos,
            &mut self.context_values[self.class_idx],
        ) {
            let name = context[i].name.clone();
            return Err(self.decode_error(
                at,
                e,
                "event context",
                &format!("context field `{name}`"),
            ));
        }
        // The event's own context, when its class has one.
        let own = &self.desc.events[class].context;
        if !own.is_empty() {
            if let Err((e, i)) =
                decode_fields(own, content, &mut pos, &mut self.own_context_values[class])
            {
                let name = own[i].name.clone();
                return Err(self.decode_error(
                    at,
                    e,
                    "event context",
                    &format!("event context field `{name}`"),
                ));
            }
        }
        let fields = &self.desc.events[class].fields;
        let skip = self
            .fixed_payload
            .as_ref()
            .map_or(Skip::Decode, |f| f[class]);
        let payload = match skip {
            Skip::Decode => decode_fields(fields, content, &mut pos, &mut self.class_values[class]),
            Skip::Fixed(n) if pos.checked_add(n).is_some_and(|e| e <= content.len()) => {
                pos += n;
                Ok(())
            }
            Skip::Fixed(_) => Err((DecodeError::Truncated, 0)),
            Skip::Walk => fields.iter().enumerate().try_for_each(|(i, f)| {
                if f.align > 1 {
                    pos = pos.next_multiple_of(f.align as usize);
                }
                crate::value::skip(&f.ty, content, &mut pos).map_err(|e| (e, i))
            }),
        };
        if let Err((e, i)) = payload {
            let name = fields[i].name.clone();
            return Err(self.decode_error(at, e, "event payload", &format!("field `{name}`")));
        }
        self.prev_ts = ts;
        self.pos = pos;
        self.head = Head::Event {
            ts,
            class,
            cpu: self.ctx.cpu_id,
        };
        Ok(true)
    }

    /// The error of a part of an event (`part`, named `what` in messages)
    /// that did not decode.
    fn decode_error(&mut self, at: u64, e: DecodeError, part: &str, what: &str) -> ReadError {
        match e {
            DecodeError::Truncated => self.cut(at, part),
            e => self.err(at, format!("{what}: {e}")),
        }
    }

    /// An event runs past the available content: the packet was truncated,
    /// or its content size is wrong.
    fn cut(&mut self, at: u64, what: &str) -> ReadError {
        let msg = self
            .truncated
            .take()
            .unwrap_or_else(|| format!("{what} runs past the packet's content size"));
        self.err(at, msg)
    }
}

/// Decodes `fields` at `*pos` into `values` (reusing its memory, and
/// leaving exactly one value per field); on failure, the error and the
/// field's index, with `values` emptied.
fn decode_fields(
    fields: &[crate::types::Field],
    content: &[u8],
    pos: &mut usize,
    values: &mut Vec<Value>,
) -> Result<(), (DecodeError, usize)> {
    for (i, f) in fields.iter().enumerate() {
        if f.align > 1 {
            *pos = pos.next_multiple_of(f.align as usize);
        }
        if let Err(e) = decode_at(&f.ty, content, pos, values, i) {
            values.clear();
            return Err((e, i));
        }
    }
    if values.len() > fields.len() {
        values.truncate(fields.len());
    }
    Ok(())
}

impl Iterator for StreamReader {
    type Item = Result<Item, ReadError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_item().transpose()
    }
}
