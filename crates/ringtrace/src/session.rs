//! Sessions and their channels, configured with a builder; the handle that
//! starts, stops, enables, snapshots and destroys them.
//!
//! A session owns its channels and its trace directory. Starting or stopping
//! it is one store to its `active` flag, which every probe of its channels
//! reads, so it takes effect for all events at once. Enabling and disabling
//! rewrite the probe lists of the events concerned (`control.rs`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use ctf::types::{EventClass, TraceDesc};
use ringbuf::{Backing, ChannelAttr};

use crate::client::{AnyChannel, PacketSink};
use crate::desc::EventDesc;
use crate::level::Level;
use crate::metadata::{self, MetadataFile};
use crate::output;
use crate::stats::{BufferStats, ChannelStats, SessionStats};
use crate::{control, pattern, Error};

/// What a session does when a buffer is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Stream to the trace directory; records that find the buffer full are
    /// dropped and counted.
    Discard,
    /// Keep the last sub-buffers in memory, overwriting the oldest; write
    /// them out on [`Session::snapshot`].
    FlightRecorder,
}

impl std::str::FromStr for Mode {
    type Err = Error;
    fn from_str(s: &str) -> Result<Mode, Error> {
        match s {
            "discard" => Ok(Mode::Discard),
            "flight-recorder" | "overwrite" | "snapshot" => Ok(Mode::FlightRecorder),
            _ => Err(Error::Config(format!(
                "unknown mode '{s}' (expected discard or flight-recorder)"
            ))),
        }
    }
}

/// How a channel's buffers map to threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Buffers {
    /// One buffer per possible CPU, SMP atomics.
    PerCpu,
    /// One buffer per thread (from a pool), non-locked atomics: the fastest.
    PerThread,
}

/// A channel's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelConfig {
    /// Name; stream files are `<name>_<n>`.
    pub name: String,
    /// Sub-buffer size in bytes (a power of two).
    pub subbuf_size: usize,
    /// Sub-buffers per buffer (a power of two, at least 2).
    pub num_subbuf: usize,
    /// Per CPU or per thread.
    pub buffers: Buffers,
    /// Per-thread channels: buffers in the pool.
    pub thread_pool: usize,
    /// Close a non-empty sub-buffer this often so live readers see data
    /// within that delay (per-CPU buffers, and per-thread buffers of exited
    /// threads).
    pub switch_timer: Option<Duration>,
    /// How often the consumer looks for ready sub-buffers.
    pub read_timer: Duration,
}

impl ChannelConfig {
    /// Defaults: per CPU, 4 × 256 KiB, read timer 20 ms, no switch timer.
    pub fn new(name: &str) -> ChannelConfig {
        ChannelConfig {
            name: name.to_string(),
            subbuf_size: 256 * 1024,
            num_subbuf: 4,
            buffers: Buffers::PerCpu,
            thread_pool: 64,
            switch_timer: None,
            read_timer: Duration::from_millis(20),
        }
    }

    /// Sets the sub-buffer size and count.
    pub fn subbufs(mut self, size: usize, count: usize) -> Self {
        self.subbuf_size = size;
        self.num_subbuf = count;
        self
    }

    /// One buffer per thread.
    pub fn per_thread(mut self) -> Self {
        self.buffers = Buffers::PerThread;
        self
    }

    /// Sets the switch timer.
    pub fn switch_timer(mut self, period: Duration) -> Self {
        self.switch_timer = Some(period);
        self
    }

    /// Sets the read timer.
    pub fn read_timer(mut self, period: Duration) -> Self {
        self.read_timer = period;
        self
    }
}

/// An enable or disable rule of a channel; the last matching rule wins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rule {
    pub(crate) pattern: String,
    pub(crate) level: Level,
    pub(crate) enable: bool,
}

/// Builds a session.
#[derive(Debug, Clone)]
pub struct SessionBuilder {
    name: String,
    output: Option<PathBuf>,
    mode: Mode,
    channels: Vec<ChannelConfig>,
    rules: Vec<(Option<String>, Rule)>,
}

impl SessionBuilder {
    /// A discard-mode session named `name`, no output yet.
    pub fn new(name: &str) -> SessionBuilder {
        SessionBuilder {
            name: name.to_string(),
            output: None,
            mode: Mode::Discard,
            channels: Vec::new(),
            rules: Vec::new(),
        }
    }

    /// The trace directory (required in discard mode).
    pub fn output(mut self, dir: impl Into<PathBuf>) -> Self {
        self.output = Some(dir.into());
        self
    }

    /// Discard or flight recorder.
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    /// Adds a channel. Without any, the session gets one per-CPU channel
    /// named `channel0` with the defaults of [`ChannelConfig::new`].
    pub fn channel(mut self, cfg: ChannelConfig) -> Self {
        self.channels.push(cfg);
        self
    }

    /// Enables the events matching `pattern` at every level, in every channel.
    pub fn enable(self, pattern: &str) -> Self {
        self.enable_level(pattern, Level::Debug)
    }

    /// Enables the events matching `pattern` of level `level` or more severe,
    /// in every channel.
    pub fn enable_level(mut self, pattern: &str, level: Level) -> Self {
        self.rules.push((
            None,
            Rule {
                pattern: pattern.into(),
                level,
                enable: true,
            },
        ));
        self
    }

    /// Enables the events matching `pattern` of level `level` or more severe
    /// in channel `channel`.
    pub fn enable_in(mut self, channel: &str, pattern: &str, level: Level) -> Self {
        self.rules.push((
            Some(channel.into()),
            Rule {
                pattern: pattern.into(),
                level,
                enable: true,
            },
        ));
        self
    }

    /// Creates the session (stopped): its buffers, its directory and
    /// metadata; events matching its rules get their probes.
    pub fn create(self) -> Result<Session, Error> {
        let mut channels = self.channels;
        if channels.is_empty() {
            channels.push(ChannelConfig::new("channel0"));
        }
        for (i, c) in channels.iter().enumerate() {
            if c.name.is_empty()
                || c.name.contains(['/', '\0'])
                || c.name == "metadata"
                || c.name.starts_with('.')
            {
                return Err(Error::Config(format!(
                    "channel name '{}' cannot name a stream file",
                    c.name
                )));
            }
            if channels[..i].iter().any(|o| o.name == c.name) {
                return Err(Error::Config(format!(
                    "two channels are named '{}'",
                    c.name
                )));
            }
        }
        let mut rules: Vec<Vec<Rule>> = vec![Vec::new(); channels.len()];
        for (ch, r) in self.rules {
            match ch {
                None => rules.iter_mut().for_each(|v| v.push(r.clone())),
                Some(name) => match channels.iter().position(|c| c.name == name) {
                    Some(i) => rules[i].push(r),
                    None => return Err(Error::UnknownChannel(name)),
                },
            }
        }
        if self.mode == Mode::Discard && self.output.is_none() {
            return Err(Error::Config(format!(
                "session '{}' is in discard mode and needs an output directory",
                self.name
            )));
        }
        let state = SessionState::new(self.name, self.output, self.mode, channels, rules)?;
        let state = Arc::new(state);
        control::add_session(state.clone());
        Ok(Session { state })
    }
}

/// A session's class ids, rules, metadata: changed only under its lock.
#[derive(Debug)]
pub(crate) struct Meta {
    pub(crate) desc: TraceDesc,
    pub(crate) rules: Vec<Vec<Rule>>,
    /// Per channel: the descriptor each id was assigned for.
    pub(crate) classes: Vec<Vec<&'static EventDesc>>,
    file: Option<MetadataFile>,
}

/// The consumer's state of a session: stream files and timers.
#[derive(Debug)]
pub(crate) struct Sink {
    /// Per channel, per buffer: the stream file, once it has a packet.
    files: Vec<Vec<Option<std::fs::File>>>,
    /// Per channel: when the switch and read timers fire next.
    pub(crate) next_switch: Vec<Option<Instant>>,
    pub(crate) next_read: Vec<Instant>,
    /// Packets and bytes written, per channel per buffer.
    written: Vec<Vec<(u64, u64)>>,
    /// Header and context of the last packet written, per channel per buffer.
    last_header: Vec<Vec<Option<[u8; ctf::PACKET_HEADER_SIZE]>>>,
    /// First output error (the disk is full...): later packets are consumed
    /// and counted as lost rather than blocking the writers.
    pub(crate) error: Option<String>,
    dropped_packets: u64,
}

/// One channel of a session.
#[derive(Debug)]
pub(crate) struct ChannelState {
    pub(crate) cfg: ChannelConfig,
    pub(crate) chan: Arc<AnyChannel>,
}

/// Everything a session is; shared by its handle, the control registry and
/// the consumer.
#[derive(Debug)]
pub(crate) struct SessionState {
    pub(crate) name: String,
    pub(crate) mode: Mode,
    pub(crate) output: Option<PathBuf>,
    pub(crate) active: Arc<AtomicBool>,
    pub(crate) destroyed: AtomicBool,
    pub(crate) channels: Vec<ChannelState>,
    pub(crate) meta: Mutex<Meta>,
    pub(crate) sink: Mutex<Sink>,
    snapshots: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl SessionState {
    fn new(
        name: String,
        output: Option<PathBuf>,
        mode: Mode,
        cfgs: Vec<ChannelConfig>,
        rules: Vec<Vec<Rule>>,
    ) -> Result<SessionState, Error> {
        let clock = crate::clock();
        let uuid = random_uuid();
        let desc = metadata::trace_desc(uuid, &clock, &name, cfgs.len());
        let file = match (&output, mode) {
            (Some(dir), Mode::Discard) => {
                output::create_dir(dir).map_err(|e| Error::io(dir, e))?;
                let f = MetadataFile::create(dir, &desc).map_err(|e| Error::io(dir, e))?;
                Some(f)
            }
            _ => None,
        };
        let mut channels = Vec::new();
        let mut instance = 0u64;
        for (i, cfg) in cfgs.into_iter().enumerate() {
            let attr = ChannelAttr {
                subbuf_size: cfg.subbuf_size,
                num_subbuf: cfg.num_subbuf,
                // memfd: the consumer copies with sendfile.
                backing: if mode == Mode::Discard {
                    Backing::Memfd
                } else {
                    Backing::Anonymous
                },
                initial_count: 0,
                thread_pool: cfg.thread_pool,
            };
            let chan = AnyChannel::new(
                mode == Mode::FlightRecorder,
                cfg.buffers == Buffers::PerThread,
                (i as u32, uuid, instance, clock),
                &attr,
                &format!("{name}-{}", cfg.name),
            )
            .map_err(|e| Error::Config(format!("channel '{}': {e}", cfg.name)))?;
            instance += chan.ops().buffers() as u64;
            channels.push(ChannelState {
                cfg,
                chan: Arc::new(chan),
            });
        }
        let now = Instant::now();
        let sink = Sink {
            files: channels
                .iter()
                .map(|c| (0..c.chan.ops().buffers()).map(|_| None).collect())
                .collect(),
            next_switch: channels
                .iter()
                .map(|c| c.cfg.switch_timer.map(|p| now + p))
                .collect(),
            next_read: channels.iter().map(|c| now + c.cfg.read_timer).collect(),
            written: channels
                .iter()
                .map(|c| vec![(0, 0); c.chan.ops().buffers()])
                .collect(),
            last_header: channels
                .iter()
                .map(|c| vec![None; c.chan.ops().buffers()])
                .collect(),
            error: None,
            dropped_packets: 0,
        };
        Ok(SessionState {
            name,
            mode,
            output,
            active: Arc::new(AtomicBool::new(false)),
            destroyed: AtomicBool::new(false),
            meta: Mutex::new(Meta {
                desc,
                classes: vec![Vec::new(); channels.len()],
                rules,
                file,
            }),
            sink: Mutex::new(sink),
            channels,
            snapshots: AtomicU64::new(0),
        })
    }

    /// Whether channel `ch` records `desc` (its last matching rule enables).
    pub(crate) fn wants(meta: &Meta, ch: usize, desc: &EventDesc) -> bool {
        let name = desc.full_name();
        meta.rules[ch]
            .iter()
            .rev()
            .find(|r| pattern::matches(&r.pattern, &name) && (!r.enable || desc.level <= r.level))
            .is_some_and(|r| r.enable)
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
        if let Some(f) = meta.file.as_mut() {
            f.append(&class)
                .map_err(|e| Error::io(Path::new("metadata"), e))?;
        }
        meta.desc.events.push(class);
        meta.classes[ch].push(desc);
        Ok(id)
    }

    /// Consumer work for this session at `now`: switch timers, then, in
    /// discard mode, copy every ready packet to the stream files. Returns
    /// the next deadline.
    pub(crate) fn consume(&self, now: Instant, force: bool) -> Option<Instant> {
        let mut sink = lock(&self.sink);
        let mut next: Option<Instant> = None;
        for (ci, ch) in self.channels.iter().enumerate() {
            let ops = ch.chan.ops();
            if let (Some(due), Some(p)) = (sink.next_switch[ci], ch.cfg.switch_timer) {
                if now >= due {
                    if self.active.load(Relaxed) {
                        ops.flush_live();
                    }
                    sink.next_switch[ci] = Some(now + p);
                }
            }
            if force || now >= sink.next_read[ci] {
                if self.mode == Mode::Discard {
                    for b in 0..ops.buffers() {
                        self.drain_buffer(&mut sink, ci, b);
                    }
                    ops.recycle();
                }
                sink.next_read[ci] = now + ch.cfg.read_timer;
            }
            for d in [sink.next_switch[ci], Some(sink.next_read[ci])]
                .into_iter()
                .flatten()
            {
                next = Some(next.map_or(d, |n: Instant| n.min(d)));
            }
        }
        next
    }

    /// Reports the first output error, if any. Stream files are written
    /// without user-space buffering: once a packet is copied, readers see it.
    pub(crate) fn sync_output(&self) -> Result<(), Error> {
        let sink = lock(&self.sink);
        match &sink.error {
            Some(e) => Err(Error::Output {
                session: self.name.clone(),
                msg: e.clone(),
                dropped_packets: sink.dropped_packets,
            }),
            None => Ok(()),
        }
    }

    /// After the final drain of a stopped session: a buffer that dropped
    /// records after its last packet closed (it was full exactly at a
    /// sub-buffer boundary, so no later packet carries the count) gets one
    /// more packet, header only, whose running discarded count is the
    /// buffer's total: readers then report every lost record.
    pub(crate) fn close_lost_tail(&self) {
        let mut sink = lock(&self.sink);
        let Some(dir) = self.output.clone() else {
            return;
        };
        let meta_uuid = lock(&self.meta).desc.uuid;
        for (ci, ch) in self.channels.iter().enumerate() {
            let ops = ch.chan.ops();
            for b in 0..ops.buffers() {
                let lost = ops.stats(b).lost.total();
                let last = sink.last_header[ci][b];
                let (reported, seq, ts, instance) = match last
                    .as_ref()
                    .and_then(|h| ctf::layout::read_packet_context(h))
                {
                    Some((_, _, pc)) => (
                        pc.events_discarded,
                        pc.packet_seq_num + 1,
                        pc.timestamp_end,
                        pc.stream_instance_id,
                    ),
                    None => (0, 0, 0, u64::MAX),
                };
                if lost <= reported || instance == u64::MAX {
                    continue;
                }
                let mut h = [0u8; ctf::PACKET_HEADER_SIZE];
                ctf::layout::write_packet_begin(
                    &mut h,
                    &meta_uuid,
                    ci as u32,
                    instance,
                    ts,
                    ctf::PACKET_HEADER_SIZE as u64,
                    seq,
                    b as u32,
                );
                ctf::layout::write_packet_end(&mut h, ts, ctf::PACKET_HEADER_SIZE as u64, lost);
                let path = dir.join(format!("{}_{b}", ch.cfg.name));
                let r = std::fs::OpenOptions::new()
                    .append(true)
                    .open(&path)
                    .and_then(|mut f| std::io::Write::write_all(&mut f, &h));
                match r {
                    Ok(()) => sink.last_header[ci][b] = Some(h),
                    Err(e) if sink.error.is_none() => {
                        sink.error = Some(format!("{}: {e}", path.display()))
                    }
                    Err(_) => {}
                }
            }
        }
    }

    fn drain_buffer(&self, sink: &mut Sink, ci: usize, b: usize) {
        let Some(dir) = self.output.as_deref() else {
            return;
        };
        let name = &self.channels[ci].cfg.name;
        let ops = self.channels[ci].chan.ops();
        struct ToFile<'s> {
            sink: &'s mut Sink,
            dir: &'s Path,
            name: &'s str,
            ci: usize,
        }
        impl PacketSink for ToFile<'_> {
            fn packet(&mut self, b: usize, bytes: &[u8], src: Option<(&std::fs::File, u64)>) {
                let s = &mut *self.sink;
                if s.error.is_some() {
                    s.dropped_packets += 1;
                    return;
                }
                if s.files[self.ci][b].is_none() {
                    let path = self.dir.join(format!("{}_{b}", self.name));
                    match output::create_file(&path) {
                        Ok(f) => s.files[self.ci][b] = Some(f),
                        Err(e) => {
                            s.error = Some(format!("{}: {e}", path.display()));
                            s.dropped_packets += 1;
                            return;
                        }
                    }
                }
                let f = s.files[self.ci][b].as_mut().expect("created above");
                match output::copy_packet(f, bytes, src) {
                    Ok(()) => {
                        let w = &mut s.written[self.ci][b];
                        w.0 += 1;
                        w.1 += bytes.len() as u64;
                        if let Some(h) = bytes.get(..ctf::PACKET_HEADER_SIZE) {
                            s.last_header[self.ci][b] = Some(h.try_into().expect("sized"));
                        }
                    }
                    Err(e) => {
                        s.error = Some(format!("{}/{}_{b}: {e}", self.dir.display(), self.name));
                        s.dropped_packets += 1;
                    }
                }
            }
        }
        ops.drain(
            b,
            &mut ToFile {
                sink,
                dir,
                name,
                ci,
            },
        );
    }
}

/// A tracing session. Dropping the handle destroys the session (after
/// stopping it, so its trace is complete).
#[derive(Debug)]
pub struct Session {
    pub(crate) state: Arc<SessionState>,
}

impl Session {
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
        self.state.active.store(true, Relaxed);
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
        if st.mode != Mode::FlightRecorder {
            return Err(Error::Config(format!(
                "session '{}' is in discard mode: its trace is streamed to its directory; snapshots need a flight-recorder session",
                st.name
            )));
        }
        output::create_dir(dir).map_err(|e| Error::io(dir, e))?;
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
        let sink = lock(&st.sink);
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
                    ChannelStats {
                        name: c.cfg.name.clone(),
                        lost_no_buffer: ops.records_lost_no_buffer(),
                        buffers: (0..ops.buffers())
                            .map(|b| BufferStats::new(b, ops.stats(b), sink.written[ci][b]))
                            .collect(),
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

struct SnapshotWriter<'a> {
    path: PathBuf,
    file: Option<std::fs::File>,
    err: Option<Error>,
    info: &'a mut SnapshotInfo,
}

impl PacketSink for SnapshotWriter<'_> {
    fn packet(&mut self, _b: usize, bytes: &[u8], _src: Option<(&std::fs::File, u64)>) {
        if self.err.is_some() {
            return;
        }
        if self.file.is_none() {
            match output::create_file(&self.path) {
                Ok(f) => self.file = Some(f),
                Err(e) => {
                    self.err = Some(Error::io(&self.path, e));
                    return;
                }
            }
        }
        let f = self.file.as_mut().expect("created above");
        match output::copy_packet(f, bytes, None) {
            Ok(()) => {
                self.info.packets += 1;
                self.info.bytes += bytes.len() as u64;
            }
            Err(e) => self.err = Some(Error::io(&self.path, e)),
        }
    }
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
