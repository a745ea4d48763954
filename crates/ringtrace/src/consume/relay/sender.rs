//! The relay sender: the thread that owns a session's connection to
//! relayd and does all its network input and output, so that a slow or
//! vanished relayd never holds up the consumer (which keeps draining the
//! ring buffers into the local files) nor, through it, the program.
//!
//! It adds a relay stream per buffer at the buffer's first packet (named
//! `<channel>_<n>`, as the local files), keeps relayd's copy of the
//! metadata ahead of every packet, sends beacons for quiet streams when
//! the consumer's live timer says so, and answers `wait_written` (stop)
//! and `close` (destroy). A failed send drops the connection, counts the
//! packet lost and tries again after a backoff (0.1 s, doubling to 5 s),
//! at the next packet, as a new relay session in a new folder
//! (`HOST/NAME-PID-DATE-2`, ...: relayd would truncate the first one's files).
//!
//! A session that rotates speaks protocol 2.11: its relay session is named
//! `NAME-PID` (relayd adds `-DATE`), its streams go to folder `NAME` of
//! the current trace chunk. A rotation (`rotate`, in order with the
//! packets) takes every stream out of the chunk after its last packet
//! sent and closes the chunk, which relayd archives; the next chunk is
//! opened before the next packet (every stream moved into it, the whole
//! metadata sent again), so no chunk is ever empty. `close` archives the
//! last chunk too. relayd moves a stream only once its data socket has
//! brought the packets before the rotation's position, and refuses that
//! stream's next rotation until then, so a rotation first waits until
//! relayd has written what the last one left behind.

use std::collections::HashMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::Shared;
use crate::control::config::RelayConfig;
use crate::output::relay::{Index, Relay};

/// First and longest wait before connecting again.
const BACKOFF_MIN: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(5);
/// Longest wait at stop for relayd to write what it was sent.
const PENDING_WAIT: Duration = Duration::from_secs(5);

/// What the consumer asks of the sender.
pub(super) enum Job {
    /// A packet of buffer `b` of channel `ci`, and the session's whole
    /// metadata if it changed since the last job said it.
    Packet {
        ci: usize,
        b: usize,
        bytes: Vec<u8>,
        metadata: Option<String>,
    },
    /// Live tick: a beacon for each stream that sent nothing since the last.
    Beacons,
    /// Answer once relayd has written everything sent so far.
    Written(SyncSender<()>),
    /// Close every stream and the connection, then answer and end.
    Close(SyncSender<()>),
    /// Rotate (protocol 2.11): answer with relayd's folder of the archive.
    Rotate(SyncSender<Result<String, String>>),
}

struct Stream {
    id: u64,
    /// Next network sequence number.
    next_seq: u64,
    /// The CTF stream class (channel) id, for beacons.
    class: u64,
    /// Whether a packet went since the last live tick.
    fresh: bool,
}

struct Conn {
    relay: Relay,
    path: String,
    /// relayd's metadata stream (added with the first trace chunk when
    /// the session rotates).
    metadata_stream: Option<u64>,
    /// Protocol 2.11: the session rotates; the next trace chunk's id.
    chunks: bool,
    next_chunk: u64,
    /// The metadata relayd has, and how many times it was reset.
    metadata: String,
    metadata_version: u64,
    streams: HashMap<(usize, usize), Stream>,
    /// Protocol 2.11: streams were rotated and relayd may not have
    /// finished: it moves a stream's data file once the data socket brings
    /// the packets before the rotation's position, and refuses (code 153)
    /// a stream's next rotation until then.
    rotating: bool,
}

/// The sender's state.
pub(super) struct Sender {
    cfg: RelayConfig,
    name: String,
    host: String,
    channels: Vec<String>,
    /// `HOST/NAME-PID-DATE`: the folder of the first connection.
    base: String,
    /// `NAME-PID`: the relay session's name when it rotates.
    folder: String,
    /// Protocol 2.11, trace chunks: the session rotates.
    chunks: bool,
    conn: Option<Conn>,
    /// The session's metadata as last given.
    metadata: String,
    /// Connections made so far.
    generation: u64,
    next_try: Instant,
    backoff: Duration,
    shared: Arc<Shared>,
}

impl Sender {
    /// Connects to relayd (in the caller's thread: an error says relayd
    /// cannot be reached before anything is recorded) and creates relay
    /// session `name`, stored in `HOST/<folder>-DATE` (with `chunks`, see
    /// the module's description).
    pub(super) fn connect_first(
        cfg: &RelayConfig,
        name: &str,
        folder: &str,
        channels: Vec<String>,
        metadata: String,
        shared: Arc<Shared>,
        chunks: bool,
    ) -> std::io::Result<Sender> {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|s| s.trim().to_string())
            .ok()
            .filter(|h| !h.is_empty() && !h.contains(['/', '\0']))
            .unwrap_or_else(|| "localhost".into());
        // The 2.4 session message holds 63 bytes of host and 254 of name.
        let host = truncated(&host, 63);
        let mut s = Sender {
            cfg: cfg.clone(),
            name: truncated(&name.replace('\0', "_"), 254),
            base: format!("{host}/{folder}-{}", crate::output::local_time_stamp()),
            folder: truncated(folder, 254),
            chunks,
            host,
            channels,
            conn: None,
            metadata,
            generation: 0,
            next_try: Instant::now(),
            backoff: BACKOFF_MIN,
            shared,
        };
        s.connect()?;
        Ok(s)
    }

    fn connect(&mut self) -> std::io::Result<()> {
        let live_us = self
            .cfg
            .live
            .map_or(0, |p| p.as_micros().clamp(1, u32::MAX as u128) as u32);
        let again = |s: &str| match self.generation {
            0 => s.to_string(),
            n => format!("{s}-{}", n + 1),
        };
        // 2.11: relayd names the session's folder after the relay session;
        // the streams' folder is relative to the trace chunk's.
        let (session, path) = match self.chunks {
            false => (self.name.clone(), again(&self.base)),
            true => (again(&self.folder), stream_folder(&self.name)),
        };
        let mut relay = Relay::connect(&self.cfg.url, &session, &self.host, live_us, self.chunks)?;
        let shown = match self.chunks {
            false => path.clone(),
            true => relay.output_path.clone(),
        };
        // 2.11: added to the first trace chunk, with the first packet.
        let metadata_stream = match self.chunks {
            false => {
                let m = relay.add_stream("metadata", &path)?;
                relay.metadata(m, self.metadata.as_bytes())?;
                Some(m)
            }
            true => None,
        };
        // Published with the first data stream, not alone: babeltrace2
        // 2.0's live source, attached to a trace of a metadata stream
        // alone, asks for new streams forever once they come.
        if self.generation > 0 {
            self.shared.reconnects.fetch_add(1, Relaxed);
        }
        self.generation += 1;
        self.shared.set_path(&shown);
        self.shared.connected.store(true, Relaxed);
        self.backoff = BACKOFF_MIN;
        self.conn = Some(Conn {
            relay,
            path,
            metadata_stream,
            chunks: self.chunks,
            next_chunk: 0,
            metadata: self.metadata.clone(),
            metadata_version: 0,
            streams: HashMap::new(),
            rotating: false,
        });
        Ok(())
    }

    /// The connection failed: drop it, try again later.
    fn fail(&mut self, e: std::io::Error, now: Instant) {
        if self.conn.take().is_some() {
            eprintln!(
                "ringtrace: session '{}': the connection to relayd {} failed ({e}); \
                 packets are counted as lost until it is back",
                self.name, self.cfg.url
            );
        }
        self.shared.connected.store(false, Relaxed);
        self.shared.set_error(&e.to_string());
        self.next_try = now + self.backoff;
        self.backoff = (self.backoff * 2).min(BACKOFF_MAX);
    }

    /// A connection, made again if the backoff allows; `None` if there is
    /// none now.
    fn conn(&mut self, now: Instant) -> Option<&mut Conn> {
        if self.conn.is_none() && now >= self.next_try {
            match self.connect() {
                Err(e) => self.fail(e, now),
                Ok(()) => eprintln!(
                    "ringtrace: session '{}': connected to relayd {} again; the trace goes on in {}",
                    self.name,
                    self.cfg.url,
                    self.conn.as_ref().map_or("", |c| c.path.as_str())
                ),
            }
        }
        self.conn.as_mut()
    }

    /// The thread's loop: jobs until `Close` or until the consumer is gone.
    pub(super) fn run(mut self, jobs: Receiver<Job>) {
        for job in jobs {
            match job {
                Job::Packet {
                    ci,
                    b,
                    bytes,
                    metadata,
                } => {
                    if let Some(m) = metadata {
                        self.metadata = m;
                    }
                    self.packet(ci, b, &bytes);
                    self.shared.queued.fetch_sub(bytes.len(), Relaxed);
                }
                Job::Beacons => self.beacons(),
                Job::Written(ack) => {
                    self.wait_written();
                    let _ = ack.send(());
                }
                Job::Close(ack) => {
                    self.close();
                    let _ = ack.send(());
                    return;
                }
                Job::Rotate(ack) => {
                    let _ = ack.send(self.rotate());
                }
            }
        }
    }

    pub(super) fn packet(&mut self, ci: usize, b: usize, bytes: &[u8]) {
        let now = Instant::now();
        let r = if self.conn(now).is_none() {
            Err(None)
        } else {
            let channel = self.channels.get(ci).map_or("", String::as_str);
            let c = self.conn.as_mut().expect("connected above");
            c.send(ci, b, channel, bytes, &self.metadata).map_err(Some)
        };
        match r {
            Ok(()) => {
                self.shared.packets_sent.fetch_add(1, Relaxed);
                self.shared
                    .bytes_sent
                    .fetch_add(bytes.len() as u64, Relaxed);
            }
            Err(e) => {
                self.shared.packets_lost.fetch_add(1, Relaxed);
                if let Some(e) = e {
                    self.fail(e, now);
                }
            }
        }
    }

    /// A beacon at the trace clock's time, read for each, for each stream
    /// that sent no packet since the last live tick.
    fn beacons(&mut self) {
        let Some(c) = self.conn.as_mut() else {
            return;
        };
        let mut r = Ok(());
        for s in c.streams.values_mut() {
            if let (false, Some(t)) = (std::mem::take(&mut s.fresh), ringtrace_core::clock::now()) {
                r = c.relay.beacon(s.id, s.class, t);
                if r.is_err() {
                    break;
                }
            }
        }
        if let Err(e) = r {
            self.fail(e, Instant::now());
        }
    }

    /// Waits (at most [`PENDING_WAIT`]) until relayd has written every
    /// packet sent.
    fn wait_written(&mut self) {
        let now = Instant::now();
        let Some(c) = self.conn.as_mut() else {
            return;
        };
        if let Err(e) = c.wait_written() {
            self.fail(e, now);
        }
    }

    /// Closes every stream and the connection (a session that rotates:
    /// and its last trace chunk, which relayd archives).
    pub(super) fn close(&mut self) {
        self.wait_written();
        if let Some(mut c) = self.conn.take() {
            let mut closed = true;
            for s in c.streams.values() {
                if s.next_seq > 0 && c.relay.close_stream(s.id, s.next_seq - 1).is_err() {
                    closed = false;
                    break;
                }
            }
            if let (true, Some(id)) = (closed, c.relay.chunk()) {
                match c.relay.close_chunk(id) {
                    Ok(_) => {
                        self.shared.archives.fetch_add(1, Relaxed);
                    }
                    Err(e) => self.shared.set_error(&e.to_string()),
                }
            }
        }
        self.shared.connected.store(false, Relaxed);
    }

    /// A rotation (protocol 2.11), after every packet queued before it:
    /// relayd's folder of the archive.
    fn rotate(&mut self) -> Result<String, String> {
        let now = Instant::now();
        let Some(c) = self.conn.as_mut() else {
            return Err(format!("not connected to relayd {}", self.cfg.url));
        };
        match c.rotate() {
            Ok(Some(path)) => {
                self.shared.archives.fetch_add(1, Relaxed);
                Ok(path)
            }
            Ok(None) => Err(format!(
                "no packet reached relayd {} since its last rotation",
                self.cfg.url
            )),
            Err(e) => {
                let msg = format!("relayd {}: {e}", self.cfg.url);
                self.fail(e, now);
                Err(msg)
            }
        }
    }
}

/// The streams' folder in a trace chunk: the session's name as one
/// folder (never `.`, `..` or empty).
fn stream_folder(name: &str) -> String {
    match name.replace('/', "_") {
        n if n.is_empty() || n == "." || n == ".." => "trace".into(),
        n => n,
    }
}

/// `s` cut to at most `max` bytes, at a character boundary.
fn truncated(s: &str, max: usize) -> String {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

impl Conn {
    fn send(
        &mut self,
        ci: usize,
        b: usize,
        channel: &str,
        bytes: &[u8],
        metadata: &str,
    ) -> std::io::Result<()> {
        let ctx = ctf::layout::read_packet_context(bytes)
            .map(|(_, _, pc)| pc)
            .ok_or_else(|| std::io::Error::other("a packet shorter than its header"))?;
        // Every class a record of this packet uses was described before the
        // record was written: the metadata given with it covers it.
        self.open_chunk(metadata)?;
        self.update_metadata(metadata)?;
        if !self.streams.contains_key(&(ci, b)) {
            let id = self
                .relay
                .add_stream(&format!("{channel}_{b}"), &self.path)?;
            self.relay.streams_sent()?;
            self.streams.insert(
                (ci, b),
                Stream {
                    id,
                    next_seq: 0,
                    class: ctx.stream_id as u64,
                    fresh: false,
                },
            );
        }
        let s = self.streams.get_mut(&(ci, b)).expect("added above");
        let packet = (ctx.packet_size / 8).min(bytes.len() as u64) as usize;
        let content = (ctx.content_size.div_ceil(8) as usize).min(packet);
        let index = Index {
            packet_size: packet as u64 * 8,
            content_size: ctx.content_size.min(packet as u64 * 8),
            timestamp_begin: ctx.timestamp_begin,
            timestamp_end: ctx.timestamp_end,
            events_discarded: ctx.events_discarded,
            stream_id: ctx.stream_id as u64,
            stream_instance_id: ctx.stream_instance_id,
            packet_seq_num: ctx.packet_seq_num,
        };
        self.relay.packet(
            s.id,
            s.next_seq,
            &bytes[..content],
            (packet - content) as u32,
            &index,
        )?;
        s.next_seq += 1;
        s.fresh = true;
        Ok(())
    }

    /// Every stream's position now: the metadata stream, and each data
    /// stream at its next packet.
    fn positions(&self) -> Vec<(u64, u64)> {
        let mut p: Vec<(u64, u64)> = self.metadata_stream.map(|m| (m, 0)).into_iter().collect();
        p.extend(self.streams.values().map(|s| (s.id, s.next_seq)));
        p
    }

    /// Waits (at most [`PENDING_WAIT`]) until relayd has written every
    /// packet sent (and so finished moving the streams of a rotation: it
    /// does that on the data socket, under the lock its answer takes).
    fn wait_written(&mut self) -> std::io::Result<()> {
        let deadline = Instant::now() + PENDING_WAIT;
        for s in self.streams.values() {
            while s.next_seq > 0 && self.relay.data_pending(s.id, s.next_seq - 1)? {
                if Instant::now() >= deadline {
                    return Err(std::io::Error::other(
                        "relayd did not write the last packets within 5 s",
                    ));
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        self.rotating = false;
        Ok(())
    }

    /// Protocol 2.11: moves every stream to trace chunk `next` (`None`:
    /// out of any chunk) from its next packet on, once relayd finished the
    /// last rotation.
    fn rotate_streams(&mut self, next: Option<u64>) -> std::io::Result<()> {
        if self.rotating {
            self.wait_written()?;
        }
        let positions = self.positions();
        self.relay.rotate_streams(next, &positions)?;
        self.rotating = true;
        Ok(())
    }

    /// Protocol 2.11: takes every stream out of the current trace chunk
    /// after its last packet sent and closes the chunk, which relayd
    /// archives; returns relayd's folder of the archive (`None`: no chunk
    /// is open, nothing was sent since the last rotation).
    fn rotate(&mut self) -> std::io::Result<Option<String>> {
        let Some(cur) = self.relay.chunk() else {
            return Ok(None);
        };
        self.rotate_streams(None)?;
        self.relay.close_chunk(cur).map(Some)
    }

    /// Protocol 2.11: before a packet, the trace chunk it goes to (the
    /// next one after a rotation: every stream moves to it, and it gets
    /// the whole metadata).
    fn open_chunk(&mut self, metadata: &str) -> std::io::Result<()> {
        if !self.chunks || self.relay.chunk().is_some() {
            return Ok(());
        }
        let id = self.next_chunk;
        self.relay.create_chunk(id)?;
        self.next_chunk += 1;
        match self.metadata_stream {
            None => self.metadata_stream = Some(self.relay.add_stream("metadata", &self.path)?),
            Some(_) => self.rotate_streams(Some(id))?,
        }
        // The chunk's metadata file starts empty.
        self.metadata.clear();
        self.update_metadata(metadata)
    }

    /// Sends what relayd's metadata lacks: the new event blocks, or, if the
    /// preamble changed (contexts added before any record), all of it again
    /// after a reset.
    fn update_metadata(&mut self, now: &str) -> std::io::Result<()> {
        let Some(stream) = self.metadata_stream else {
            return Ok(());
        };
        if now.len() == self.metadata.len() && now == self.metadata {
            return Ok(());
        }
        if let Some(tail) = now.strip_prefix(self.metadata.as_str()) {
            self.relay.metadata(stream, tail.as_bytes())?;
        } else {
            self.metadata_version += 1;
            self.relay.reset_metadata(stream, self.metadata_version)?;
            self.relay.metadata(stream, now.as_bytes())?;
        }
        self.metadata = now.to_string();
        Ok(())
    }
}
