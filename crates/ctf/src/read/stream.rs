//! One stream file, read packet by packet in constant memory (one packet
//! buffer, grown only as far as the file's bytes go).

use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{ClockMap, Event, EventRef, Item, ItemRef, ReadError, MAX_PACKET};
use crate::layout::{
    extend_timestamp, read_event_header, read_packet_context, PacketContext, MAGIC,
    PACKET_HEADER_SIZE,
};
use crate::types::{HeaderKind, TraceDesc};
use crate::value::{decode_at, DecodeError, Value};

/// Event id → event class index: a vector indexed by id when the ids are
/// dense (ringtrace's and LTTng's are: 0, 1, 2, …), sorted pairs searched
/// otherwise, so that a metadata naming ids in the millions costs memory
/// for the classes it declares, not for the ids' range.
#[derive(Debug)]
enum IdTable {
    Dense(Vec<Option<usize>>),
    Sparse(Vec<(u64, usize)>),
}

impl IdTable {
    fn new(mut pairs: Vec<(u64, usize)>) -> IdTable {
        let max = pairs.iter().map(|p| p.0).max().unwrap_or(0);
        if max < 2 * pairs.len() as u64 + 64 {
            let mut v = vec![None; max as usize + 1];
            for (id, k) in pairs {
                v[id as usize] = Some(k);
            }
            IdTable::Dense(v)
        } else {
            pairs.sort_unstable();
            IdTable::Sparse(pairs)
        }
    }

    #[inline]
    fn get(&self, id: u64) -> Option<usize> {
        match self {
            IdTable::Dense(v) => usize::try_from(id)
                .ok()
                .and_then(|i| v.get(i).copied().flatten()),
            IdTable::Sparse(v) => v.binary_search_by_key(&id, |p| p.0).ok().map(|i| v[i].1),
        }
    }
}

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
    /// Per stream class: its id, event header kind, and event id → index
    /// in `desc.events`.
    classes: Vec<(u32, HeaderKind, IdTable)>,
    path: PathBuf,
    file: Source,
    /// File offset of the current packet.
    offset: u64,
    packet: Vec<u8>,
    content_end: usize,
    pos: usize,
    kind: HeaderKind,
    class_idx: usize,
    prev_ts: u64,
    ctx: PacketContext,
    last_discarded: u64,
    last_seq: Option<u64>,
    /// Set when the current packet was cut short: reported after its events.
    truncated: Option<String>,
    done: bool,
    /// One value vector per event class, decoded into in place event after
    /// event: decoding allocates nothing once every class has been seen.
    class_values: Vec<Vec<Value>>,
    /// The same for each stream class's event context (index as `classes`).
    context_values: Vec<Vec<Value>>,
    /// What [`StreamReader::advance`] decoded last (an event's values are in
    /// `class_values[class]`).
    head: Head,
    /// Added to class indices given out (a trace in a set, `set.rs`).
    class_offset: usize,
    /// Timestamps given out are in this clock.
    clock: ClockMap,
    /// Set by [`StreamReader::skip_payloads`]: per event class, the bytes
    /// of its payload when they are always the same.
    fixed_payload: Option<Vec<Option<usize>>>,
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
                (s.id, s.header, IdTable::new(ids))
            })
            .collect();
        StreamReader {
            desc,
            classes,
            path: path.to_owned(),
            file: Source(file),
            offset: 0,
            packet: Vec::new(),
            content_end: 0,
            pos: 0,
            kind: HeaderKind::Compact,
            class_idx: 0,
            prev_ts: 0,
            ctx: PacketContext::default(),
            last_discarded: 0,
            last_seq: None,
            truncated: None,
            done: false,
            class_values: vec![Vec::new(); n_classes],
            context_values: vec![Vec::new(); n_streams],
            head: Head::Discarded {
                events: 0,
                packets: 0,
                ts: 0,
                cpu: 0,
            },
            class_offset: 0,
            clock: ClockMap::Same,
            fixed_payload: None,
        }
    }

    /// From now on, event payloads are stepped over, not decoded: each
    /// event's values are empty (its class, time, CPU and stream context
    /// are still there). For readers that count, such as `stats`; a payload
    /// of fixed size is one bounds check.
    pub fn skip_payloads(mut self) -> Self {
        self.fixed_payload = Some(
            self.desc
                .events
                .iter()
                .map(|c| {
                    c.fields.iter().try_fold(0usize, |n, f| {
                        n.checked_add(crate::value::fixed_size(&f.ty)?)
                    })
                })
                .collect(),
        );
        self
    }

    /// The reader of a stream of one trace of a set: class indices shifted
    /// by `class_offset`, timestamps mapped by `clock`.
    pub fn mapped(mut self, class_offset: usize, clock: ClockMap) -> Self {
        self.class_offset = class_offset;
        self.clock = clock;
        self
    }

    /// The file read.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes of the stream file read so far (whole packets): the progress
    /// of a long read, against the file's size.
    pub fn bytes_read(&self) -> u64 {
        self.offset + self.packet.len() as u64
    }

    /// The context of the packet being read.
    pub fn packet_context(&self) -> &PacketContext {
        &self.ctx
    }

    fn err(&mut self, at: u64, msg: impl Into<String>) -> ReadError {
        self.done = true;
        ReadError::Stream {
            path: self.path.clone(),
            offset: at,
            msg: msg.into(),
        }
    }

    /// Reads up to `buf.len()` bytes; returns how many (short only at EOF).
    fn fill(&mut self, buf_start: usize, len: usize) -> Result<usize, ReadError> {
        let mut got = 0;
        while got < len {
            match self
                .file
                .0
                .read(&mut self.packet[buf_start + got..buf_start + len])
            {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(source) => {
                    self.done = true;
                    return Err(ReadError::Io {
                        path: self.path.clone(),
                        source,
                    });
                }
            }
        }
        Ok(got)
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
                Err(ReadError::Io {
                    path: self.path.clone(),
                    source,
                })
            }
        }
    }

    /// Loads the next packet; `Ok(false)` at the end of the file.
    fn next_packet(&mut self) -> Result<bool, ReadError> {
        self.offset += self.packet.len() as u64;
        self.packet.resize(PACKET_HEADER_SIZE, 0);
        let got = self.fill(0, PACKET_HEADER_SIZE)?;
        if got == 0 {
            self.packet.clear();
            return Ok(false);
        }
        let at = self.offset;
        if got < PACKET_HEADER_SIZE {
            return Err(self.err(
                at,
                format!("truncated packet header ({got} of {PACKET_HEADER_SIZE} bytes)"),
            ));
        }
        let (magic, uuid, ctx) = read_packet_context(&self.packet).expect("header length checked");
        if magic != MAGIC {
            return Err(self.err(at, format!("bad packet magic {magic:#010x}")));
        }
        if uuid != self.desc.uuid {
            return Err(self.err(at + 4, "packet uuid differs from the trace uuid"));
        }
        let Some(ci) = self.classes.iter().position(|c| c.0 == ctx.stream_id) else {
            return Err(self.err(at + 20, format!("unknown stream class {}", ctx.stream_id)));
        };
        let hdr_bits = PACKET_HEADER_SIZE as u64 * 8;
        if ctx.packet_size % 8 != 0
            || ctx.packet_size < hdr_bits
            || ctx.packet_size / 8 > MAX_PACKET
        {
            return Err(self.err(at + 56, format!("bad packet size {} bits", ctx.packet_size)));
        }
        if ctx.content_size % 8 != 0
            || ctx.content_size < hdr_bits
            || ctx.content_size > ctx.packet_size
        {
            return Err(self.err(
                at + 48,
                format!(
                    "bad content size {} bits (packet {} bits)",
                    ctx.content_size, ctx.packet_size
                ),
            ));
        }
        let size = (ctx.packet_size / 8) as usize;
        let content = (ctx.content_size / 8) as usize;
        // The buffer grows as the bytes arrive, never to what the header
        // claims: an 84-byte file claiming a 1 GiB packet costs 84 bytes.
        let got = PACKET_HEADER_SIZE + self.fill_to(size - PACKET_HEADER_SIZE)?;
        self.content_end = content.min(got);
        if got < size {
            self.packet.truncate(got);
            self.truncated = Some(format!("packet truncated: {got} of {size} bytes present"));
        }
        self.class_idx = ci;
        self.kind = self.classes[ci].1;
        self.pos = PACKET_HEADER_SIZE;
        self.prev_ts = ctx.timestamp_begin;
        self.ctx = ctx;
        Ok(true)
    }

    /// The next item, `Ok(None)` at the end of the stream. After an error
    /// the stream ends.
    pub fn next_item(&mut self) -> Result<Option<Item>, ReadError> {
        Ok(self.advance()?.then(|| self.take_head()))
    }

    /// The item decoded by the last successful [`StreamReader::advance`],
    /// lent in place.
    pub fn head(&self) -> ItemRef<'_> {
        match self.head {
            Head::Event { ts, class, cpu } => ItemRef::Event(EventRef {
                ts: self.clock.apply(ts),
                class: class + self.class_offset,
                values: &self.class_values[class],
                context: &self.context_values[self.class_idx],
                cpu,
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
                class: class + self.class_offset,
                values: std::mem::take(&mut self.class_values[class]),
                context: self.context_values[self.class_idx].clone(),
                cpu,
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
                return Ok(false);
            }
            if self.pos < self.content_end {
                self.decode_event()?;
                return Ok(true);
            }
            if let Some(msg) = self.truncated.take() {
                let at = self.offset + self.packet.len() as u64;
                return Err(self.err(at, msg));
            }
            if !self.next_packet()? {
                self.done = true;
                return Ok(false);
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

    fn decode_event(&mut self) -> Result<(), ReadError> {
        let at = self.offset + self.pos as u64;
        let content = &self.packet[..self.content_end];
        let Some(h) = read_event_header(&content[self.pos..], self.kind) else {
            return Err(self.cut(at, "event header"));
        };
        let ts = extend_timestamp(self.prev_ts, h.ts, h.ts_bits);
        let class = self.classes[self.class_idx].2.get(h.id as u64);
        let Some(class) = class else {
            let sid = self.ctx.stream_id;
            return Err(self.err(
                at,
                format!("unknown event id {} in stream class {sid}", h.id),
            ));
        };
        let mut pos = self.pos + h.len;
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
        let fields = &self.desc.events[class].fields;
        let payload = match &self.fixed_payload {
            None => decode_fields(fields, content, &mut pos, &mut self.class_values[class]),
            Some(fixed) => match fixed[class] {
                Some(n) if pos.checked_add(n).is_some_and(|e| e <= content.len()) => {
                    pos += n;
                    Ok(())
                }
                Some(_) => Err((DecodeError::Truncated, 0)),
                None => fields.iter().enumerate().try_for_each(|(i, f)| {
                    crate::value::skip(&f.ty, content, &mut pos).map_err(|e| (e, i))
                }),
            },
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
        Ok(())
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
        if let Err(e) = decode_at(&f.ty, content, pos, values, i) {
            values.clear();
            return Err((e, i));
        }
    }
    values.truncate(fields.len());
    Ok(())
}

impl Iterator for StreamReader {
    type Item = Result<Item, ReadError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_item().transpose()
    }
}
