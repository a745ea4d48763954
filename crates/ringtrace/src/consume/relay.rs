//! A session's stream to a relay daemon (`output/relay/` speaks the
//! protocol): the consumer hands it each packet it takes from a buffer,
//! as it hands them to the stream files. It adds a relay stream per buffer
//! at the buffer's first packet (named `<channel>_<n>`, as the local
//! files), keeps relayd's copy of the metadata up to date before any packet
//! that could need it, and, in live mode, sends a beacon for each stream
//! that had no packet since the last live tick.
//!
//! Faults stay here: a failed send drops the connection, the packet is
//! counted as lost (and its buffer's packet sequence numbers show the gap
//! to readers), and the connection is tried again after a backoff (0.1 s,
//! doubling to 5 s) when the next packet comes. A new connection is a new
//! relay session in a new folder (`HOST/NAME-DATE-2`, ...): relayd would
//! truncate the stream files of the first. The consumer never waits longer
//! than the client's I/O timeout on one call; the traced program never
//! waits on it at all (full buffers drop records, counted as usual).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::control::config::RelayConfig;
use crate::control::stats::RelayStats;
use crate::output::relay::{Index, Relay};

/// First and longest wait before connecting again.
const BACKOFF_MIN: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(5);
/// Longest wait at stop for relayd to write what it was sent.
const PENDING_WAIT: Duration = Duration::from_secs(5);

#[derive(Debug)]
struct Stream {
    id: u64,
    /// Next network sequence number.
    next_seq: u64,
    /// The CTF stream class (channel) id, for beacons.
    class: u64,
    /// Whether a packet went since the last live tick.
    fresh: bool,
}

#[derive(Debug)]
struct Conn {
    relay: Relay,
    path: String,
    metadata_stream: u64,
    /// The metadata relayd has, and how many times it was reset.
    metadata: String,
    metadata_version: u64,
    streams: HashMap<(usize, usize), Stream>,
}

/// The relay side of a session's output.
#[derive(Debug)]
pub(crate) struct RelaySink {
    cfg: RelayConfig,
    name: String,
    host: String,
    /// `HOST/NAME-DATE`: the folder of the first connection.
    base: String,
    conn: Option<Conn>,
    /// Connections made so far.
    generation: u64,
    next_try: Instant,
    backoff: Duration,
    next_live: Option<Instant>,
    stats: RelayStats,
}

impl RelaySink {
    /// Connects to relayd and creates the relay session `name`, stored in
    /// `HOST/<folder>-DATE`, with the metadata `metadata`: an error here
    /// says that relayd cannot be reached, before anything is recorded.
    pub(crate) fn start(
        cfg: &RelayConfig,
        name: &str,
        folder: &str,
        metadata: &str,
    ) -> std::io::Result<RelaySink> {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|s| s.trim().to_string())
            .ok()
            .filter(|h| !h.is_empty() && !h.contains('/'))
            .unwrap_or_else(|| "localhost".into());
        let mut s = RelaySink {
            cfg: cfg.clone(),
            name: name.to_string(),
            base: format!("{host}/{folder}-{}", crate::output::local_time_stamp()),
            host,
            conn: None,
            generation: 0,
            next_try: Instant::now(),
            backoff: BACKOFF_MIN,
            next_live: cfg.live.map(|p| Instant::now() + p),
            stats: RelayStats {
                url: cfg.url.to_string(),
                ..RelayStats::default()
            },
        };
        s.connect(metadata)?;
        Ok(s)
    }

    fn connect(&mut self, metadata: &str) -> std::io::Result<()> {
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
        relay.metadata(metadata_stream, metadata.as_bytes())?;
        // Published with the first data stream, not alone: babeltrace2
        // 2.0's live source, attached to a trace of a metadata stream
        // alone, asks for new streams forever once they come.
        if self.generation > 0 {
            self.stats.reconnects += 1;
        }
        self.generation += 1;
        self.stats.path = path.clone();
        self.stats.connected = true;
        self.backoff = BACKOFF_MIN;
        self.conn = Some(Conn {
            relay,
            path,
            metadata_stream,
            metadata: metadata.to_string(),
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
                self.name, self.stats.url
            );
        }
        self.stats.connected = false;
        self.stats.last_error = Some(e.to_string());
        self.next_try = now + self.backoff;
        self.backoff = (self.backoff * 2).min(BACKOFF_MAX);
    }

    /// A connection, made again if the backoff allows; `None` if there is
    /// none now.
    fn conn(&mut self, now: Instant, metadata: &dyn Fn() -> String) -> Option<&mut Conn> {
        if self.conn.is_none() && now >= self.next_try {
            if let Err(e) = self.connect(&metadata()) {
                self.fail(e, now);
            } else {
                eprintln!(
                    "ringtrace: session '{}': connected to relayd {} again; the trace goes on in {}",
                    self.name, self.stats.url, self.stats.path
                );
            }
        }
        self.conn.as_mut()
    }

    /// Sends one packet of buffer `b` of channel `ci` (stream file
    /// `<channel>_<b>`). `metadata` gives the session's whole metadata now.
    pub(crate) fn packet(
        &mut self,
        ci: usize,
        b: usize,
        channel: &str,
        bytes: &[u8],
        metadata: &dyn Fn() -> String,
    ) {
        let now = Instant::now();
        let Some(c) = self.conn(now, metadata) else {
            self.stats.packets_lost += 1;
            return;
        };
        match c.send(ci, b, channel, bytes, metadata) {
            Ok(()) => {
                self.stats.packets_sent += 1;
                self.stats.bytes_sent += bytes.len() as u64;
            }
            Err(e) => {
                self.stats.packets_lost += 1;
                self.fail(e, now);
            }
        }
    }

    /// Live mode: whether the live timer is due at `now` (then the
    /// consumer flushes every buffer, drains them, and calls [`beacons`]).
    pub(crate) fn live_due(&self, now: Instant) -> bool {
        self.next_live.is_some_and(|t| now >= t)
    }

    /// When the live timer fires next.
    pub(crate) fn next_live(&self) -> Option<Instant> {
        self.next_live
    }

    /// Live tick: a beacon at the trace clock's time (`ts`, read for each)
    /// for each stream that sent no packet since the last tick.
    pub(crate) fn beacons(&mut self, now: Instant, ts: &dyn Fn() -> Option<u64>) {
        if let (Some(p), Some(t)) = (self.cfg.live, self.next_live) {
            // From the last due time, not from now: no drift.
            self.next_live = Some((t + p).max(now));
        }
        let Some(c) = self.conn.as_mut() else {
            return;
        };
        let mut r = Ok(());
        for s in c.streams.values_mut() {
            if let (false, Some(t)) = (std::mem::take(&mut s.fresh), ts()) {
                r = c.relay.beacon(s.id, s.class, t);
                if r.is_err() {
                    break;
                }
            }
        }
        if let Err(e) = r {
            self.fail(e, now);
        }
    }

    /// Waits (at most [`PENDING_WAIT`]) until relayd has written every
    /// packet sent: when a session stops, its trace on the relay side is
    /// complete.
    pub(crate) fn wait_written(&mut self) {
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

    /// Closes every stream and the connection (the session is destroyed).
    pub(crate) fn close(&mut self) {
        self.wait_written();
        if let Some(mut c) = self.conn.take() {
            for s in c.streams.values() {
                if s.next_seq > 0 && c.relay.close_stream(s.id, s.next_seq - 1).is_err() {
                    break;
                }
            }
            let _ = c.metadata_stream;
        }
        self.stats.connected = false;
        self.next_live = None;
    }

    /// What was sent and lost.
    pub(crate) fn stats(&self) -> RelayStats {
        self.stats.clone()
    }
}

impl Conn {
    fn send(
        &mut self,
        ci: usize,
        b: usize,
        channel: &str,
        bytes: &[u8],
        metadata: &dyn Fn() -> String,
    ) -> std::io::Result<()> {
        let ctx = ctf::layout::read_packet_context(bytes)
            .map(|(_, _, pc)| pc)
            .ok_or_else(|| std::io::Error::other("a packet shorter than its header"))?;
        // Every class a record of this packet uses was described before the
        // record was written: the metadata now covers the packet.
        self.update_metadata(&metadata())?;
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
