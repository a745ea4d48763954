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
    metadata_stream: u64,
    /// The metadata relayd has, and how many times it was reset.
    metadata: String,
    metadata_version: u64,
    streams: HashMap<(usize, usize), Stream>,
}

/// The sender's state.
pub(super) struct Sender {
    cfg: RelayConfig,
    name: String,
    host: String,
    channels: Vec<String>,
    /// `HOST/NAME-PID-DATE`: the folder of the first connection.
    base: String,
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
    /// session `name`, stored in `HOST/<folder>-DATE`.
    pub(super) fn connect_first(
        cfg: &RelayConfig,
        name: &str,
        folder: &str,
        channels: Vec<String>,
        metadata: String,
        shared: Arc<Shared>,
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
        let path = match self.generation {
            0 => self.base.clone(),
            n => format!("{}-{}", self.base, n + 1),
        };
        let mut relay = Relay::connect(&self.cfg.url, &self.name, &self.host, live_us)?;
        let metadata_stream = relay.add_stream("metadata", &path)?;
        relay.metadata(metadata_stream, self.metadata.as_bytes())?;
        // Published with the first data stream, not alone: babeltrace2
        // 2.0's live source, attached to a trace of a metadata stream
        // alone, asks for new streams forever once they come.
        if self.generation > 0 {
            self.shared.reconnects.fetch_add(1, Relaxed);
        }
        self.generation += 1;
        self.shared.set_path(&path);
        self.shared.connected.store(true, Relaxed);
        self.backoff = BACKOFF_MIN;
        self.conn = Some(Conn {
            relay,
            path,
            metadata_stream,
            metadata: self.metadata.clone(),
            metadata_version: 0,
            streams: HashMap::new(),
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
        let deadline = now + PENDING_WAIT;
        let r = (|| -> std::io::Result<()> {
            for s in c.streams.values() {
                while s.next_seq > 0 && c.relay.data_pending(s.id, s.next_seq - 1)? {
                    if Instant::now() >= deadline {
                        return Err(std::io::Error::other(
                            "relayd did not write the last packets within 5 s",
                        ));
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
            Ok(())
        })();
        if let Err(e) = r {
            self.fail(e, now);
        }
    }

    /// Closes every stream and the connection.
    pub(super) fn close(&mut self) {
        self.wait_written();
        if let Some(mut c) = self.conn.take() {
            for s in c.streams.values() {
                if s.next_seq > 0 && c.relay.close_stream(s.id, s.next_seq - 1).is_err() {
                    break;
                }
            }
        }
        self.shared.connected.store(false, Relaxed);
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

    /// Sends what relayd's metadata lacks: the new event blocks, or, if the
    /// preamble changed (contexts added before any record), all of it again
    /// after a reset.
    fn update_metadata(&mut self, now: &str) -> std::io::Result<()> {
        if now.len() == self.metadata.len() && now == self.metadata {
            return Ok(());
        }
        if let Some(tail) = now.strip_prefix(self.metadata.as_str()) {
            self.relay.metadata(self.metadata_stream, tail.as_bytes())?;
        } else {
            self.metadata_version += 1;
            self.relay
                .reset_metadata(self.metadata_stream, self.metadata_version)?;
            self.relay.metadata(self.metadata_stream, now.as_bytes())?;
        }
        self.metadata = now.to_string();
        Ok(())
    }
}
