//! A session's state (channels, class ids, rules, metadata) and the handle
//! that starts, stops, enables, snapshots and destroys it. Its configuration
//! is `config.rs`, its consumer side `sink.rs`.
//!
//! A session owns its channels and its trace directory. Starting or stopping
//! it is one store to its `active` flag, which every probe of its channels
//! reads, so it takes effect for all events at once. Enabling and disabling
//! rewrite the probe lists of the events concerned (`control.rs`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use ctf::types::{EventClass, TraceDesc};
use ringbuf::{Backing, ChannelAttr};

use crate::client::AnyChannel;
use crate::config::{Buffers, ChannelConfig, Mode, Rule, SessionBuilder};
use crate::desc::EventDesc;
use crate::level::Level;
use crate::metadata::{self, MetadataFile};
use crate::output;
use crate::sink::{Sink, SnapshotWriter};
use crate::stats::{BufferStats, ChannelStats, SessionStats};
use crate::tally::Tally;
use crate::{control, Error};

/// A session's class ids, rules, metadata: changed only under its lock.
#[derive(Debug)]
pub(crate) struct Meta {
    pub(crate) desc: TraceDesc,
    pub(crate) rules: Vec<Vec<Rule>>,
    /// Per channel: the descriptor each id was assigned for.
    pub(crate) classes: Vec<Vec<&'static EventDesc>>,
    file: Option<MetadataFile>,
    /// The copy kept next to the buffer files, for crash recovery.
    buffer_file: Option<MetadataFile>,
}

/// One channel of a session.
#[derive(Debug)]
pub(crate) struct ChannelState {
    pub(crate) cfg: ChannelConfig,
    pub(crate) chan: Arc<AnyChannel>,
    /// The record count of a channel whose buffers do not count.
    pub(crate) tally: Option<Arc<Tally>>,
}

/// Everything a session is; shared by its handle, the control registry and
/// the consumer.
#[derive(Debug)]
pub(crate) struct SessionState {
    pub(crate) name: String,
    pub(crate) mode: Mode,
    pub(crate) output: Option<PathBuf>,
    /// Where the buffers' files are (`SessionBuilder::buffer_dir`).
    pub(crate) buffer_dir: Option<PathBuf>,
    pub(crate) active: Arc<AtomicBool>,
    pub(crate) destroyed: AtomicBool,
    pub(crate) channels: Vec<ChannelState>,
    pub(crate) meta: Mutex<Meta>,
    pub(crate) sink: Mutex<Sink>,
    snapshots: AtomicU64,
    /// The process that created the session: a child of `fork` inherits
    /// the memory but not the session (see `fork.rs`).
    pub(crate) pid: u32,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl SessionState {
    /// Whether this process is a `fork` child of the session's creator: its
    /// buffers, files and locks belong to the parent, so every operation is
    /// refused or a no-op here, and its probes are off (`fork.rs`).
    pub(crate) fn inherited(&self) -> bool {
        self.pid != std::process::id()
    }

    pub(crate) fn new(
        name: String,
        output: Option<PathBuf>,
        buffer_dir: Option<PathBuf>,
        mode: Mode,
        cfgs: Vec<ChannelConfig>,
        rules: Vec<Vec<Rule>>,
    ) -> Result<SessionState, Error> {
        let clock = crate::clock();
        let uuid = random_uuid();
        let desc = metadata::trace_desc(uuid, &clock, &name, cfgs.len());
        // Removes what this creation made if it fails from here on.
        let mut undo = output::Undo::default();
        let file = match (&output, mode) {
            (Some(dir), Mode::Discard) => {
                undo.dirs(output::create_trace_dir(dir)?);
                let f = MetadataFile::create(dir, &desc).map_err(|e| Error::io(dir, e))?;
                undo.file(dir.join("metadata"));
                Some(f)
            }
            _ => None,
        };
        let buffer_file = match &buffer_dir {
            Some(dir) => {
                undo.dirs(output::create_buffer_dir(dir)?);
                // Empty when checked: every file in it from now is ours.
                undo.contents(dir.clone());
                let f = MetadataFile::create(dir, &desc).map_err(|e| Error::io(dir, e))?;
                Some(f)
            }
            None => None,
        };
        let mut channels = Vec::new();
        let mut instance = 0u64;
        for (i, cfg) in cfgs.into_iter().enumerate() {
            let attr = ChannelAttr {
                subbuf_size: cfg.subbuf_size,
                num_subbuf: cfg.num_subbuf,
                // Files survive a crash; memfd: the consumer copies with sendfile.
                backing: match (&buffer_dir, mode) {
                    (Some(dir), _) => Backing::Dir(dir.clone()),
                    (None, Mode::Discard) => Backing::Memfd,
                    (None, Mode::FlightRecorder) => Backing::Anonymous,
                },
                initial_count: 0,
                thread_pool: cfg.thread_pool,
            };
            let chan = AnyChannel::new(
                mode == Mode::FlightRecorder,
                cfg.buffers == Buffers::PerThread,
                (i as u32, uuid, instance, clock),
                &attr,
                &match buffer_dir {
                    // Files `<channel>_<n>`, the stream names of a recovered trace.
                    Some(_) => cfg.name.clone(),
                    None => format!("{name}-{}", cfg.name),
                },
            )
            .map_err(|e| Error::Config(format!("channel '{}': {e}", cfg.name)))?;
            instance += chan.ops().buffers() as u64;
            channels.push(ChannelState {
                cfg,
                tally: (!chan.counts_records()).then(|| Arc::new(Tally::new())),
                chan: Arc::new(chan),
            });
        }
        let mut sink = Sink::empty(&channels);
        if let (Some(dir), Mode::Discard) = (&output, mode) {
            sink.watch_dir(dir);
        }
        undo.keep();
        Ok(SessionState {
            name,
            mode,
            output,
            buffer_dir,
            active: Arc::new(AtomicBool::new(false)),
            destroyed: AtomicBool::new(false),
            meta: Mutex::new(Meta {
                desc,
                classes: vec![Vec::new(); channels.len()],
                rules,
                file,
                buffer_file,
            }),
            sink: Mutex::new(sink),
            channels,
            snapshots: AtomicU64::new(0),
            pid: std::process::id(),
        })
    }

    /// Whether channel `ch` records `desc` (its last matching rule enables).
    pub(crate) fn wants(meta: &Meta, ch: usize, desc: &EventDesc) -> bool {
        crate::config::enabled_by(&meta.rules[ch], &desc.full_name(), desc.level)
    }

    /// The id of `desc`'s class in channel `ch`, assigning one (and writing
    /// its metadata) on first use.
    pub(crate) fn class_id(
        meta: &mut Meta,
        ch: usize,
        desc: &'static EventDesc,
    ) -> Result<u32, Error> {
        if let Some(i) = meta.classes[ch].iter().position(|d| d.same_class(desc)) {
            return Ok(i as u32);
        }
        let id = meta.classes[ch].len() as u32;
        let class: EventClass = metadata::event_class(desc, id, ch as u32);
        for f in [meta.file.as_mut(), meta.buffer_file.as_mut()]
            .into_iter()
            .flatten()
        {
            f.append(&class)
                .map_err(|e| Error::io(Path::new("metadata"), e))?;
        }
        meta.desc.events.push(class);
        meta.classes[ch].push(desc);
        Ok(id)
    }
}

impl Drop for SessionState {
    /// The buffer files are scratch once the session ends normally (a crash
    /// never gets here, and leaves them for `ringtrace recover`). A fork
    /// child's copy of the state leaves the parent's files alone.
    fn drop(&mut self) {
        if let (Some(dir), false) = (&self.buffer_dir, self.inherited()) {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// A tracing session. Dropping the handle destroys the session (after
/// stopping it, so its trace is complete).
#[derive(Debug)]
pub struct Session {
    pub(crate) state: Arc<SessionState>,
    /// False for the handles the control socket makes: dropping those does
    /// not destroy the session.
    owned: bool,
}

impl Session {
    pub(crate) fn owned(state: Arc<SessionState>) -> Session {
        Session { state, owned: true }
    }

    /// A handle on a session some other code owns (the control socket).
    pub(crate) fn borrowed(state: Arc<SessionState>) -> Session {
        Session {
            state,
            owned: false,
        }
    }

    /// Forced switch of every buffer that may be switched while writers run
    /// (per-CPU buffers; per-thread buffers of exited threads), then, in
    /// discard mode, writes every ready packet: what was emitted before the
    /// call is on disk when it returns, except per-thread buffers' partial
    /// sub-buffers.
    pub fn flush(&self) -> Result<(), Error> {
        if self.state.inherited() {
            return Ok(());
        }
        for ch in &self.state.channels {
            ch.chan.ops().flush_live();
        }
        if self.state.mode == Mode::Discard {
            self.state.consume(std::time::Instant::now(), true);
        }
        self.state.sync_output()
    }

    /// Starts a builder.
    pub fn builder(name: &str) -> SessionBuilder {
        SessionBuilder::new(name)
    }

    /// The session's name.
    pub fn name(&self) -> &str {
        &self.state.name
    }

    /// The trace directory.
    pub fn output(&self) -> Option<&Path> {
        self.state.output.as_deref()
    }

    /// Discard or flight recorder.
    pub fn mode(&self) -> Mode {
        self.state.mode
    }

    /// Whether it is recording.
    pub fn is_active(&self) -> bool {
        self.state.active.load(Relaxed)
    }

    /// Starts recording: one store, seen by every probe at once.
    pub fn start(&self) {
        if self.state.inherited() {
            return;
        }
        control::start(&self.state);
        // The consumer looks at the buffers at once, then as often as they
        // fill (see `sink.rs`).
        lock(&self.state.sink).read_now();
        crate::consumer::wake();
    }

    /// Stops recording, waits for the writers already inside a probe, closes
    /// every sub-buffer and, in discard mode, writes everything to the trace
    /// directory: when it returns, the trace on disk is complete.
    pub fn stop(&self) -> Result<(), Error> {
        control::stop(&self.state)
    }

    /// Enables the events matching `pattern` (with `*` wildcards) of level
    /// `level` or more severe in `channel` (`None`: every channel). Returns
    /// how many event call sites it enabled now (the rule also applies to
    /// events registered later).
    pub fn enable(
        &self,
        channel: Option<&str>,
        pattern: &str,
        level: Level,
    ) -> Result<usize, Error> {
        control::add_rule(
            &self.state,
            channel,
            Rule {
                pattern: pattern.into(),
                level,
                enable: true,
            },
        )
    }

    /// Disables the events matching `pattern` in `channel` (`None`: every
    /// channel). Returns how many event call sites it disabled.
    pub fn disable(&self, channel: Option<&str>, pattern: &str) -> Result<usize, Error> {
        control::add_rule(
            &self.state,
            channel,
            Rule {
                pattern: pattern.into(),
                level: Level::Debug,
                enable: false,
            },
        )
    }

    /// Names of the events currently recorded by this session (any channel).
    pub fn enabled_events(&self) -> Vec<String> {
        let meta = lock(&self.state.meta);
        let mut v: Vec<String> = crate::desc::all_events()
            .into_iter()
            .filter(|d| (0..self.state.channels.len()).any(|c| SessionState::wants(&meta, c, d)))
            .map(|d| d.full_name())
            .collect();
        v.sort();
        v.dedup();
        v
    }

    /// Writes the flight recorder's buffers to `dir` as a complete CTF
    /// trace (metadata and one stream file per buffer holding data), without
    /// disturbing the recording; repeatable. Discard sessions stream to their
    /// directory instead and refuse this.
    pub fn snapshot(&self, dir: &Path) -> Result<SnapshotInfo, Error> {
        let st = &self.state;
        if st.inherited() {
            return Err(Error::Inherited(st.name.clone()));
        }
        if st.mode != Mode::FlightRecorder {
            return Err(Error::Config(format!(
                "session '{}' is in discard mode: its trace is streamed to its directory; snapshots need a flight-recorder session",
                st.name
            )));
        }
        output::create_trace_dir(dir)?;
        {
            let meta = lock(&st.meta);
            MetadataFile::create(dir, &meta.desc).map_err(|e| Error::io(dir, e))?;
        }
        let active = st.active.load(Relaxed);
        let mut info = SnapshotInfo {
            dir: dir.to_path_buf(),
            packets: 0,
            bytes: 0,
        };
        for ch in &st.channels {
            let ops = ch.chan.ops();
            // Another thread may switch per-thread buffers only while no one
            // writes them: a stopped session has been flushed by `stop`.
            let switch = ch.cfg.buffers == Buffers::PerCpu && active;
            for b in 0..ops.buffers() {
                let mut w = SnapshotWriter {
                    path: dir.join(format!("{}_{b}", ch.cfg.name)),
                    file: None,
                    err: None,
                    info: &mut info,
                };
                ops.snapshot(b, switch, &mut w);
                if let Some(e) = w.err {
                    return Err(e);
                }
            }
        }
        st.snapshots.fetch_add(1, Relaxed);
        Ok(info)
    }

    /// Counters of every buffer.
    pub fn stats(&self) -> SessionStats {
        let st = &self.state;
        // In a fork child the sink lock may have been held by a thread that
        // does not exist here.
        let held;
        let sink = if st.inherited() {
            match st.sink.try_lock() {
                Ok(g) => g,
                Err(_) => {
                    held = Mutex::new(Sink::empty(&st.channels));
                    lock(&held)
                }
            }
        } else {
            lock(&st.sink)
        };
        SessionStats {
            name: st.name.clone(),
            mode: st.mode,
            active: st.active.load(Relaxed),
            output_error: sink.error.clone(),
            packets_dropped_by_output: sink.dropped_packets,
            process_lost_no_reader_slot: crate::rcu::no_slot_drops(),
            channels: st
                .channels
                .iter()
                .enumerate()
                .map(|(ci, c)| {
                    let ops = c.chan.ops();
                    let buffers: Vec<BufferStats> = (0..ops.buffers())
                        .map(|b| {
                            BufferStats::new(
                                b,
                                ops.stats(b),
                                c.tally.is_none(),
                                sink.written[ci][b],
                                sink.stalled[ci][b].is_some(),
                            )
                        })
                        .collect();
                    ChannelStats {
                        name: c.cfg.name.clone(),
                        lost_no_buffer: ops.records_lost_no_buffer(),
                        records: match &c.tally {
                            Some(t) => t.total(),
                            None => buffers.iter().filter_map(|b| b.records).sum(),
                        },
                        buffers,
                    }
                })
                .collect(),
        }
    }

    /// Stops the session and removes it: its events stop recording into it,
    /// and its buffers are freed after a grace period.
    pub fn destroy(self) -> Result<(), Error> {
        control::destroy(&self.state)
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if !self.owned {
            return;
        }
        let _ = control::destroy(&self.state);
    }
}

/// What a snapshot wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotInfo {
    /// The trace directory.
    pub dir: PathBuf,
    /// Packets written.
    pub packets: u64,
    /// Bytes of stream files.
    pub bytes: u64,
}

/// 16 random bytes (version-4 UUID) from the kernel.
fn random_uuid() -> [u8; 16] {
    let mut u = [0u8; 16];
    // SAFETY: `u` is a valid writable buffer of 16 bytes.
    let n = unsafe { libc::getrandom(u.as_mut_ptr().cast(), 16, 0) };
    if n != 16 {
        // No entropy syscall: time and pid still make collisions unlikely.
        let t = traceclock::tsc::realtime_ns() as u128 ^ ((std::process::id() as u128) << 64);
        u = t.to_le_bytes();
    }
    u[6] = (u[6] & 0x0f) | 0x40;
    u[8] = (u[8] & 0x3f) | 0x80;
    u
}

/// How long `stop` and `destroy` wait for writers inside a probe.
pub(crate) const GRACE_TIMEOUT: Duration = Duration::from_secs(2);
