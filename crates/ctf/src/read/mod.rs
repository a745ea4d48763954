//! Reading a trace directory: the metadata, then each stream file packet by
//! packet, in constant memory per stream (one packet buffer, `stream.rs`).
//! Every error names the file and the byte offset; events before the
//! damage are delivered first.
//!
//! Traces come from elsewhere, so memory is bounded by what the input
//! really holds, not by what it claims: only regular files are read (a
//! FIFO or a device is refused before a byte is read), the metadata has a
//! size limit ([`MAX_METADATA`]) and its parser limits nesting and type
//! expansion (`parse/`), a packet buffer grows only as the file's bytes
//! arrive, and event-id tables are sparse.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::parse::MetadataError;
use crate::types::TraceDesc;
use crate::value::Value;

mod continued;
mod ids;
pub mod packetized;
mod set;
mod stream;

pub use set::{find_traces, stream_files, ClockMap, Part, MAX_DEPTH};
pub use stream::StreamReader;

/// Largest packet accepted, whatever the file holds.
pub const MAX_PACKET: u64 = 1 << 30;

/// Largest metadata file read (ringtrace's are a few KiB per hundred event
/// classes; LTTng's of large applications a few MiB).
pub const MAX_METADATA: u64 = 16 << 20;

/// Opens `path` for reading if it is a regular file (after links): a FIFO
/// is refused without waiting for a writer, a device without reading it.
pub fn open_regular(path: &Path) -> Result<File, ReadError> {
    let io = |source| ReadError::Io {
        path: path.to_owned(),
        source,
    };
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(io)?;
    if !f.metadata().map_err(io)?.is_file() {
        return Err(io(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        )));
    }
    Ok(f)
}

/// The text of a metadata file: a regular file of at most
/// [`MAX_METADATA`] bytes, UTF-8 text or packets of it (`packetized.rs`).
pub fn read_metadata(path: &Path) -> Result<String, ReadError> {
    let f = open_regular(path)?;
    let mut bytes = Vec::new();
    f.take(MAX_METADATA + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| ReadError::Io {
            path: path.to_owned(),
            source,
        })?;
    if bytes.len() as u64 > MAX_METADATA {
        return Err(ReadError::Stream {
            path: path.to_owned(),
            offset: MAX_METADATA,
            msg: format!(
                "metadata larger than {} MiB: not a trace's metadata",
                MAX_METADATA >> 20
            ),
        });
    }
    // Packetized (as LTTng writes it) or plain text.
    let packetized = packetized::is_packetized(&bytes);
    if packetized {
        bytes = packetized::text(&bytes).map_err(|(offset, msg)| ReadError::Stream {
            path: path.to_owned(),
            offset,
            msg,
        })?;
    }
    String::from_utf8(bytes).map_err(|e| ReadError::Stream {
        path: path.to_owned(),
        offset: e.utf8_error().valid_up_to() as u64,
        msg: if packetized {
            "the text of the metadata packets is not UTF-8 (offset in the text)".into()
        } else {
            "metadata is neither UTF-8 text nor metadata packets".into()
        },
    })
}

/// A trace could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// A file could not be opened or read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// The metadata is not what this reader supports.
    #[error("{path}: {source}")]
    Metadata {
        /// The metadata file.
        path: PathBuf,
        /// Where and why.
        source: MetadataError,
    },
    /// A stream file is damaged.
    #[error("{path}: byte {offset}: {msg}")]
    Stream {
        /// The stream file.
        path: PathBuf,
        /// Offset in the file.
        offset: u64,
        /// What is wrong.
        msg: String,
    },
}

/// An event, decoded.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Full timestamp, in clock ticks.
    pub ts: u64,
    /// The same in the ticks of the clock its stream counts (its stream
    /// class's, or its own trace's in a set of traces): what babeltrace2
    /// converts to print it, to the nanosecond.
    pub own_ts: u64,
    /// Index of the event class in [`TraceDesc::events`].
    pub class: usize,
    /// Field values, in class order.
    pub values: Vec<Value>,
    /// Values of the stream's event context (`vtid`, `vpid`, …), in the
    /// order of [`crate::types::StreamClass::context`]; empty without one.
    pub context: Vec<Value>,
    /// Values of the event's own context, in the order of
    /// [`crate::types::EventClass::context`]; empty without one.
    pub own_context: Vec<Value>,
    /// CPU of the packet it came from.
    pub cpu: u32,
    /// Values of its packet context's shown fields (`cpu_id` and the
    /// producer's own), in the order of
    /// [`crate::types::StreamClass::packet_fields`].
    pub packet: Vec<Value>,
}

/// What a stream yields.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// An event.
    Event(Event),
    /// Records were lost before this packet: `events` discarded by the
    /// producer (its running count went up) and `packets` missing from the
    /// sequence (overwritten in flight-recorder mode).
    Discarded {
        /// Discarded events.
        events: u64,
        /// Missing packets.
        packets: u64,
        /// Begin time of the packet after the gap.
        ts: u64,
        /// CPU.
        cpu: u32,
    },
}

impl Item {
    /// Time of the item (for a gap: the begin of the packet after it).
    pub fn ts(&self) -> u64 {
        match self {
            Item::Event(e) => e.ts,
            Item::Discarded { ts, .. } => *ts,
        }
    }
}

/// An open trace: its description and its stream files. A directory of
/// traces (one per process of a program, or any tree of them) opens as
/// one trace: its parts are merged by time (see `set.rs`).
#[derive(Debug)]
pub struct Trace {
    /// The trace's description, from its metadata (the union of its
    /// parts' for a directory of traces).
    pub desc: Arc<TraceDesc>,
    /// The stream files, sorted by name (part after part); a stream of a
    /// trace in several folders is named by its first file.
    pub streams: Vec<PathBuf>,
    /// Per stream, the files that continue it in the later folders of its
    /// trace (usually none; see [`StreamReader::continued_by`]).
    pub continued: Vec<Vec<PathBuf>>,
    /// The traces it is made of (one for a plain trace).
    pub parts: Vec<Part>,
    /// Attributes of its metadata that are ignored, each with its file and
    /// place (babeltrace2 warns of them too): for the reader to show once.
    pub warnings: Vec<String>,
}

impl Trace {
    /// Opens `dir`: parses `dir/metadata` and lists the stream files (every
    /// regular file except `metadata` and dot-files). A directory without
    /// `metadata` opens every trace below it (up to [`MAX_DEPTH`] levels).
    ///
    /// ```no_run
    /// use ctf::read::{Item, Trace};
    ///
    /// let trace = Trace::open(std::path::Path::new("/tmp/trace"))?;
    /// for item in ctf::merge::Merger::new(&trace) {
    ///     // (stream index, item), every stream merged by time
    ///     if let (_, Item::Event(e)) = item? {
    ///         let class = &trace.desc.events[e.class];
    ///         println!("{} {} {:?}", e.ts, class.name, e.values);
    ///     }
    /// }
    /// # Ok::<(), ctf::read::ReadError>(())
    /// ```
    pub fn open(dir: &Path) -> Result<Trace, ReadError> {
        let dirs = if dir.join("metadata").exists() {
            vec![dir.to_path_buf()]
        } else {
            find_traces(dir)?
        };
        if dirs.is_empty() {
            return Err(ReadError::Io {
                path: dir.to_owned(),
                source: io::Error::new(
                    io::ErrorKind::NotFound,
                    format!(
                        "no trace here or in the {MAX_DEPTH} levels of folders below it (a trace is a \
                         folder with a `metadata` file)"
                    ),
                ),
            });
        }
        let j = set::join(&dirs)?;
        Ok(Trace {
            desc: Arc::new(j.desc),
            streams: j.streams,
            continued: j.continued,
            parts: j.parts,
            warnings: j.warnings,
        })
    }

    /// The part stream `k` belongs to.
    pub fn part_of(&self, k: usize) -> &Part {
        let i = self.parts.partition_point(|p| p.streams.end <= k);
        &self.parts[i.min(self.parts.len() - 1)]
    }

    /// A reader for stream file `k`: its items in the set's terms (class
    /// indices into [`Trace::desc`], the set's clock).
    pub fn stream(&self, k: usize) -> Result<StreamReader, ReadError> {
        let p = self.part_of(k);
        let s = StreamReader::open(p.desc.clone(), &self.streams[k])?
            .continued_by(self.continued[k].clone());
        Ok(s.mapped(p.class_offset, &self.desc.clock))
    }
}

/// An event lent by [`StreamReader::head`] and [`crate::Merger::next_ref`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EventRef<'a> {
    /// Full timestamp, in clock ticks.
    pub ts: u64,
    /// The same in its stream's own clock (see [`Event::own_ts`]).
    pub own_ts: u64,
    /// Index of the event class in [`TraceDesc::events`].
    pub class: usize,
    /// Field values, in class order.
    pub values: &'a [Value],
    /// Values of the stream's event context (see [`Event::context`]).
    pub context: &'a [Value],
    /// Values of the event's own context (see [`Event::own_context`]).
    pub own_context: &'a [Value],
    /// CPU of the packet it came from.
    pub cpu: u32,
    /// Values of its packet's shown fields (see [`Event::packet`]).
    pub packet: &'a [Value],
}

/// An item lent in place (see [`Item`] for the owned form).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ItemRef<'a> {
    /// An event.
    Event(EventRef<'a>),
    /// Records lost before the packet that follows (see [`Item::Discarded`]).
    Discarded {
        /// Discarded events.
        events: u64,
        /// Missing packets.
        packets: u64,
        /// Begin time of the packet after the gap.
        ts: u64,
        /// CPU.
        cpu: u32,
    },
}

impl ItemRef<'_> {
    /// Time of the item.
    pub fn ts(&self) -> u64 {
        match self {
            ItemRef::Event(e) => e.ts,
            ItemRef::Discarded { ts, .. } => *ts,
        }
    }

    /// An owned copy.
    pub fn to_owned(&self) -> Item {
        match *self {
            ItemRef::Event(e) => Item::Event(Event {
                ts: e.ts,
                own_ts: e.own_ts,
                class: e.class,
                values: e.values.to_vec(),
                context: e.context.to_vec(),
                own_context: e.own_context.to_vec(),
                cpu: e.cpu,
                packet: e.packet.to_vec(),
            }),
            ItemRef::Discarded {
                events,
                packets,
                ts,
                cpu,
            } => Item::Discarded {
                events,
                packets,
                ts,
                cpu,
            },
        }
    }
}
