//! A session's stream to a relay daemon (`output/relay/` speaks the
//! protocol). The consumer copies each packet it takes from a buffer into
//! a queue, as it writes them to the stream files, and the session's
//! sender thread (`sender.rs`) sends them: the network never holds up the
//! consumer, so a slow or vanished relayd costs the local trace nothing.
//! The queue is bounded (twice the session's buffers, at least 16 MiB): a
//! packet that finds it full is counted as lost, like one sent to a
//! connection that failed (its buffer's packet sequence numbers show the
//! gap to readers). The traced program never waits on any of it.

mod sender;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use self::sender::{Job, Sender};
use crate::control::config::RelayConfig;
use crate::control::stats::RelayStats;

/// Jobs queued at most (beside the byte bound).
const MAX_JOBS: usize = 4096;
/// Least bytes of packets queued at most.
const MIN_QUEUE: usize = 16 << 20;
/// Longest wait of a stop or destroy for the sender: relayd's own wait
/// for the last packets, and one I/O timeout.
pub(crate) const STOP_WAIT: Duration = Duration::from_secs(7);

/// `SyncSender::send` with a deadline (a full queue of a stuck sender).
fn send_within<T>(tx: &SyncSender<T>, mut t: T, limit: Duration) -> bool {
    let end = Instant::now() + limit;
    loop {
        match tx.try_send(t) {
            Ok(()) => return true,
            Err(TrySendError::Disconnected(_)) => return false,
            Err(TrySendError::Full(back)) if Instant::now() < end => {
                t = back;
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(TrySendError::Full(_)) => return false,
        }
    }
}

/// What the consumer and the sender share: counters, and the words of
/// the folder and the last error.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    url: String,
    packets_sent: AtomicU64,
    bytes_sent: AtomicU64,
    packets_lost: AtomicU64,
    reconnects: AtomicU64,
    /// Trace chunks relayd was asked to archive.
    archives: AtomicU64,
    connected: AtomicBool,
    /// Bytes of packets queued and not yet sent.
    queued: AtomicUsize,
    /// The current folder and the last error.
    text: Mutex<(String, Option<String>)>,
}

impl Shared {
    fn set_path(&self, p: &str) {
        if let Ok(mut t) = self.text.lock() {
            t.0 = p.to_string();
        }
    }

    fn set_error(&self, e: &str) {
        if let Ok(mut t) = self.text.lock() {
            t.1 = Some(e.to_string());
        }
    }
}

/// Relay sessions this process made (each gets the next number).
static RELAY_SESSIONS: AtomicU64 = AtomicU64::new(0);

/// The relay session name and folder (below `HOST/`, before `-DATE`) of
/// session `name`: named after the session, or, for the environment's
/// session (named `env`), after the program (`/proc/self/comm`); the
/// folder also has the process id, and a number after the first relay
/// session of the process, so that no two processes or sessions of one
/// name started in the same second share a folder (relayd would truncate
/// one's files with the other's). A snapshot's folder says so and is
/// always numbered, as LTTng's `snapshot-N`.
pub(crate) fn names(name: &str, snapshot: bool) -> (String, String) {
    let base = if name == "env" {
        std::fs::read_to_string("/proc/self/comm")
            .map(|s| s.trim().replace(['/', ' '], "_"))
            .ok()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "program".into())
    } else {
        name.to_string()
    };
    let pid = std::process::id();
    let k = RELAY_SESSIONS.fetch_add(1, Relaxed) + 1;
    let folder = match (snapshot, k) {
        (true, k) => format!("{base}-{pid}-snapshot-{k}"),
        (false, 1) => format!("{base}-{pid}"),
        (false, k) => format!("{base}-{pid}-{k}"),
    };
    (base, folder)
}

/// A flight-recorder snapshot sent to relayd, as `lttng snapshot record
/// net://…` does: a relay session of its own, in folder
/// `HOST/<name>-<pid>-snapshot-<n>-DATE`, sent by the caller's thread (the control
/// socket's), complete when [`RelaySnapshot::finish`] returns.
pub(crate) struct RelaySnapshot {
    sender: Sender,
    shared: Arc<Shared>,
}

impl RelaySnapshot {
    /// Connects and creates the relay session.
    pub(crate) fn start(
        url: &crate::RelayUrl,
        session: &str,
        channels: Vec<String>,
        metadata: &str,
    ) -> std::io::Result<RelaySnapshot> {
        let shared = Arc::new(Shared {
            url: url.to_string(),
            ..Shared::default()
        });
        let (name, folder) = names(session, true);
        let cfg = RelayConfig {
            url: url.clone(),
            live: None,
        };
        let sender = Sender::connect_first(
            &cfg,
            &name,
            &folder,
            channels,
            metadata.to_string(),
            shared.clone(),
            false,
        )?;
        Ok(RelaySnapshot { sender, shared })
    }

    /// Sends one packet of buffer `b` of channel `ci`.
    pub(crate) fn packet(&mut self, ci: usize, b: usize, bytes: &[u8]) {
        self.sender.packet(ci, b, bytes);
    }

    /// Waits until relayd wrote everything and closes the streams;
    /// returns the folder and the packets and bytes sent, or an error if
    /// any packet could not be sent.
    pub(crate) fn finish(mut self) -> Result<(String, u64, u64), String> {
        self.sender.close();
        let st = RelaySink::stats_of(&self.shared);
        match st.packets_lost {
            0 => Ok((st.path, st.packets_sent, st.bytes_sent)),
            n => Err(format!(
                "{n} packets of the snapshot could not be sent to relayd {} ({}); {} were",
                st.url,
                st.last_error.unwrap_or_default(),
                st.packets_sent
            )),
        }
    }
}

/// The consumer's side of a session's relay stream.
#[derive(Debug)]
pub(crate) struct RelaySink {
    jobs: SyncSender<Job>,
    shared: Arc<Shared>,
    /// Bytes of packets queued at most.
    max_queued: usize,
    /// The metadata last handed to the sender.
    metadata: String,
    live: Option<Duration>,
    next_live: Option<Instant>,
    /// Protocol 2.11: the session rotates on relayd.
    chunks: bool,
    /// Bytes of packets queued since the last rotation, and its time.
    pub(crate) chunk_bytes: u64,
    pub(crate) chunk_began: Instant,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Job")
    }
}

impl RelaySink {
    /// Connects to relayd (in this thread: an error says it cannot be
    /// reached, before anything is recorded), creates the relay session
    /// `name` stored in `HOST/<folder>-DATE`, and starts its sender.
    /// `channels` names the stream files; `buffer_bytes` is the size of
    /// all the session's ring buffers. With `chunks` the session rotates
    /// (protocol 2.11: `sender.rs`); a relayd too old for it is refused
    /// with an error of kind `Unsupported`.
    pub(crate) fn start(
        cfg: &RelayConfig,
        name: &str,
        folder: &str,
        channels: Vec<String>,
        buffer_bytes: usize,
        metadata: &str,
        chunks: bool,
    ) -> std::io::Result<RelaySink> {
        let shared = Arc::new(Shared {
            url: cfg.url.to_string(),
            ..Shared::default()
        });
        let sender = Sender::connect_first(
            cfg,
            name,
            folder,
            channels,
            metadata.to_string(),
            shared.clone(),
            chunks,
        )?;
        let (jobs, rx) = sync_channel(MAX_JOBS);
        // Not `std::thread`: this may run in a fork child (`sys/thread.rs`).
        crate::sys::thread::spawn("ringtrace-relay", move || sender.run(rx))?;
        Ok(RelaySink {
            jobs,
            shared,
            max_queued: buffer_bytes.saturating_mul(2).max(MIN_QUEUE),
            metadata: metadata.to_string(),
            live: cfg.live,
            next_live: cfg.live.map(|p| Instant::now() + p),
            chunks,
            chunk_bytes: 0,
            chunk_began: Instant::now(),
        })
    }

    /// Whether the session rotates on relayd (protocol 2.11).
    pub(crate) fn rotates(&self) -> bool {
        self.chunks
    }

    /// Queues a rotation after every packet queued so far; `None` if no
    /// packet was queued since the last one (nothing to archive). The
    /// answer comes when relayd has it: its folder of the archive.
    pub(crate) fn rotate(&mut self) -> Option<Receiver<Result<String, String>>> {
        if !self.chunks || self.chunk_bytes == 0 {
            return None;
        }
        let (ack, answer) = sync_channel(1);
        if !send_within(&self.jobs, Job::Rotate(ack), STOP_WAIT) {
            return None;
        }
        self.chunk_bytes = 0;
        self.chunk_began = Instant::now();
        Some(answer)
    }

    /// Queues one packet of buffer `b` of channel `ci`; `metadata` gives
    /// the session's whole metadata now (it covers every record of the
    /// packet). A full queue counts the packet as lost.
    pub(crate) fn packet(
        &mut self,
        ci: usize,
        b: usize,
        bytes: &[u8],
        metadata: &dyn Fn() -> String,
    ) {
        let len = bytes.len();
        if self.shared.queued.load(Relaxed) + len > self.max_queued {
            self.shared.packets_lost.fetch_add(1, Relaxed);
            return;
        }
        let now = metadata();
        let changed = now != self.metadata;
        let job = Job::Packet {
            ci,
            b,
            bytes: bytes.to_vec(),
            metadata: changed.then(|| now.clone()),
        };
        self.shared.queued.fetch_add(len, Relaxed);
        match self.jobs.try_send(job) {
            Ok(()) => {
                if changed {
                    self.metadata = now;
                }
                self.chunk_bytes += len as u64;
            }
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.shared.queued.fetch_sub(len, Relaxed);
                self.shared.packets_lost.fetch_add(1, Relaxed);
            }
        }
    }

    /// Live mode: whether the live timer is due at `now` (then the
    /// consumer flushes every buffer, drains them, and calls
    /// [`RelaySink::beacons`]).
    pub(crate) fn live_due(&self, now: Instant) -> bool {
        self.next_live.is_some_and(|t| now >= t)
    }

    /// When the live timer fires next.
    pub(crate) fn next_live(&self) -> Option<Instant> {
        self.next_live
    }

    /// Live tick, after the buffers were drained: the streams that had
    /// nothing to send say so.
    pub(crate) fn beacons(&mut self, now: Instant) {
        if let (Some(p), Some(t)) = (self.live, self.next_live) {
            // From the last due time, not from now: no drift.
            self.next_live = Some((t + p).max(now));
        }
        let _ = self.jobs.try_send(Job::Beacons);
    }

    /// Waits until the sender has sent everything queued and relayd has
    /// written it: when a session stops, its trace on the relay side is
    /// complete. Bounded by [`STOP_WAIT`] (a relayd that stopped reading
    /// keeps the sender on its I/O timeouts; the stop goes on without it).
    pub(crate) fn wait_written(&mut self) {
        let (ack, done) = sync_channel(1);
        if send_within(&self.jobs, Job::Written(ack), STOP_WAIT) {
            let _ = done.recv_timeout(STOP_WAIT);
        }
    }

    /// Closes every stream and the connection; the sender ends (bounded
    /// as [`RelaySink::wait_written`]).
    pub(crate) fn close(&mut self) {
        let (ack, done) = sync_channel(1);
        if send_within(&self.jobs, Job::Close(ack), STOP_WAIT) {
            let _ = done.recv_timeout(STOP_WAIT);
        }
        self.next_live = None;
    }

    /// What was sent and lost.
    pub(crate) fn stats(&self) -> RelayStats {
        Self::stats_of(&self.shared)
    }

    fn stats_of(s: &Shared) -> RelayStats {
        // `try_lock`: in a fork child the sender that held it is gone.
        let (path, last_error) = s
            .text
            .try_lock()
            .map(|t| (t.0.clone(), t.1.clone()))
            .unwrap_or_default();
        RelayStats {
            url: s.url.clone(),
            path,
            connected: s.connected.load(Relaxed),
            packets_sent: s.packets_sent.load(Relaxed),
            bytes_sent: s.bytes_sent.load(Relaxed),
            packets_lost: s.packets_lost.load(Relaxed),
            reconnects: s.reconnects.load(Relaxed),
            archives: s.archives.load(Relaxed),
            last_error,
        }
    }
}
