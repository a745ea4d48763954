//! What a session is configured with: its mode, its channels (sizes,
//! buffers per CPU or per thread, timers) and its enable rules; the builder
//! that checks them (`session/create.rs` creates the session from it).

use std::path::PathBuf;
use std::time::Duration;

use crate::control::rules::{Rule, RuleFilter};
use crate::error::Error;
use crate::output::relay::RelayUrl;
use crate::output::FileIo;
use ringtrace_core::context::Contexts;
use ringtrace_core::level::Level;

/// What a session does when a buffer is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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
    /// One buffer per possible CPU: restartable sequences where glibc
    /// registered them, else lock-prefixed atomics ([`CpuSync`]).
    PerCpu,
    /// One buffer per thread (from a pool), non-locked atomics: the fastest.
    PerThread,
}

/// How per-CPU buffers synchronize their writers (see `ringbuf::Sync`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CpuSync {
    /// Restartable sequences where glibc registered them for this process
    /// (decided when the session is created), else lock-prefixed atomics.
    #[default]
    Auto,
    /// Restartable sequences: reserving is a critical section on the
    /// current CPU that the kernel restarts on preemption, migration or
    /// signal, without a lock prefix. Creating the session fails where they
    /// are not registered.
    Rseq,
    /// Lock-prefixed atomics: work everywhere.
    Atomics,
}

impl CpuSync {
    /// `auto`, `rseq` (or `on`), `atomics` (or `off`).
    pub fn parse(s: &str) -> Result<CpuSync, String> {
        match s {
            "auto" => Ok(CpuSync::Auto),
            "rseq" | "on" => Ok(CpuSync::Rseq),
            "atomics" | "off" => Ok(CpuSync::Atomics),
            _ => Err(format!(
                "unknown per-CPU synchronization '{s}' (expected auto, rseq or atomics)"
            )),
        }
    }
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
    /// Per-thread channels: buffers in the pool. A thread takes one on its
    /// first record and gives it back at exit; while none is free, its
    /// records are counted as lost ("lost for want of a free per-thread
    /// buffer" in the statistics), never dropped silently.
    pub thread_pool: usize,
    /// Close a non-empty sub-buffer this often so live readers see data
    /// within that delay (per-CPU buffers, and per-thread buffers of exited
    /// threads).
    pub switch_timer: Option<Duration>,
    /// Longest wait of the consumer between two looks for ready
    /// sub-buffers; it looks more often while writers are fast, or were in
    /// the last seconds (a quarter of the buffer's fill time, at least
    /// every 0.5 ms).
    pub read_timer: Duration,
    /// How long the sub-buffer at the read position may wait for a commit
    /// (the writers having moved past it) before the consumer reports a
    /// stalled writer.
    pub stall_timeout: Duration,
    /// What every event of the channel carries besides its fields (the
    /// CTF stream event context): by default the process and thread ids.
    pub contexts: Contexts,
    /// Per-CPU buffers: restartable sequences or lock-prefixed atomics.
    pub cpu_sync: CpuSync,
}

impl ChannelConfig {
    /// Defaults: per CPU, 4 × 256 KiB, read timer 5 ms, no switch timer.
    pub fn new(name: &str) -> ChannelConfig {
        ChannelConfig {
            name: name.to_string(),
            subbuf_size: 256 * 1024,
            num_subbuf: 4,
            buffers: Buffers::PerCpu,
            thread_pool: 64,
            switch_timer: None,
            read_timer: Duration::from_millis(5),
            stall_timeout: Duration::from_secs(5),
            contexts: Contexts::DEFAULT,
            cpu_sync: CpuSync::Auto,
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

    /// Sets the stall timeout.
    pub fn stall_timeout(mut self, t: Duration) -> Self {
        self.stall_timeout = t;
        self
    }

    /// Sets the read timer.
    pub fn read_timer(mut self, period: Duration) -> Self {
        self.read_timer = period;
        self
    }

    /// Per-CPU buffers: forces restartable sequences or lock-prefixed
    /// atomics (the default, [`CpuSync::Auto`], takes rseq where available).
    pub fn cpu_sync(mut self, s: CpuSync) -> Self {
        self.cpu_sync = s;
        self
    }

    /// Sets the contexts every event carries (`Contexts::NONE` for none).
    pub fn contexts(mut self, c: Contexts) -> Self {
        self.contexts = c;
        self
    }
}

/// Streaming configuration of a session (`SessionBuilder::relay`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelayConfig {
    /// Where relayd listens.
    pub url: RelayUrl,
    /// Live mode: how often streams are flushed and quiet ones send a
    /// beacon, so that live viewers see events while the program runs.
    pub live: Option<Duration>,
}

/// Builds a session.
#[derive(Debug, Clone)]
pub struct SessionBuilder {
    name: String,
    output: Option<PathBuf>,
    buffer_dir: Option<PathBuf>,
    mode: Mode,
    channels: Vec<ChannelConfig>,
    rules: Vec<(Option<String>, Rule)>,
    relay: Option<RelayConfig>,
    io: FileIo,
    /// What could not be taken (a filter that does not parse): creating
    /// the session fails with it.
    errors: Vec<String>,
    /// Read in this process, not written anywhere (a trigger's capture):
    /// a discard session that needs no output.
    read_here: bool,
    /// Triggers added when the session is created.
    pub(crate) triggers: Vec<crate::control::trigger_spec::TriggerSpec>,
    rotation: Rotation,
}

/// When a discard session's trace is archived and how many archives stay
/// (as `lttng enable-rotation`): the current trace chunk becomes
/// `archives/<begin>-<end>-<index>/` of the session's directory, a
/// complete trace.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rotation {
    /// Archive when the current chunk's stream files hold this many bytes.
    pub size: Option<u64>,
    /// Archive at least this often (a chunk with no packet is not archived).
    pub every: Option<Duration>,
    /// Keep the newest this many archives (removing older ones).
    pub keep: Option<usize>,
    /// Keep the newest archives up to this many bytes in all (the newest
    /// is kept whatever its size).
    pub keep_size: Option<u64>,
}

impl Rotation {
    /// Whether anything rotates or removes archives on its own.
    pub fn is_set(&self) -> bool {
        *self != Rotation::default()
    }
}

impl SessionBuilder {
    /// A discard-mode session named `name`, no output yet.
    pub fn new(name: &str) -> SessionBuilder {
        SessionBuilder {
            name: name.to_string(),
            output: None,
            buffer_dir: None,
            mode: Mode::Discard,
            channels: Vec::new(),
            rules: Vec::new(),
            relay: None,
            io: FileIo::default(),
            errors: Vec::new(),
            read_here: false,
            triggers: Vec::new(),
            rotation: Rotation::default(),
        }
    }

    /// Rotates the trace (discard mode, with a directory): see [`Rotation`].
    pub fn rotate(mut self, r: Rotation) -> Self {
        self.rotation = r;
        self
    }

    /// The name, mode and output the session will have (what its
    /// triggers are checked against before it is created).
    pub(crate) fn planned(&self) -> (&str, Mode, Option<&std::path::Path>) {
        (&self.name, self.mode, self.output.as_deref())
    }

    /// Adds a trigger when the session is created (see
    /// `Session::add_trigger`); creating the session fails if it cannot
    /// apply.
    pub fn trigger(mut self, spec: crate::control::trigger_spec::TriggerSpec) -> Self {
        self.triggers.push(spec);
        self
    }

    /// A discard session whose records this process reads itself (a
    /// trigger's capture): no output needed.
    pub(crate) fn read_here(mut self) -> Self {
        self.read_here = true;
        self
    }

    /// Renames the session.
    pub fn name(mut self, name: &str) -> Self {
        self.name = name.to_string();
        self
    }

    /// The trace directory (required in discard mode).
    pub fn output(mut self, dir: impl Into<PathBuf>) -> Self {
        self.output = Some(dir.into());
        self
    }

    /// Keeps the ring buffers in files of `dir` (created 0700, files 0600;
    /// it must not exist or be empty) instead of anonymous memory, with the
    /// trace metadata next to them: if the process is killed, `ringtrace
    /// recover <dir>` rebuilds the trace from them. Put it on a tmpfs
    /// (`/dev/shm/...`) to keep buffer writes in memory. Removed when the
    /// session is destroyed.
    pub fn buffer_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.buffer_dir = Some(dir.into());
        self
    }

    /// Streams the trace to an `lttng-relayd` at `url` (beside the
    /// output directory if there is one, else instead of it), as
    /// lttng-consumerd does: relayd stores it under its output folder as
    /// `HOST/NAME-PID-DATE/`, readable by babeltrace2 and Trace Compass.
    /// Creating the session fails if relayd cannot be reached, unless an
    /// output directory was given: then it warns and writes only there.
    pub fn relay(mut self, url: crate::output::relay::RelayUrl) -> Self {
        let live = self.relay.as_ref().and_then(|r| r.live);
        self.relay = Some(RelayConfig { url, live });
        self
    }

    /// Live mode for the relay stream (after [`SessionBuilder::relay`]):
    /// every `period`, buffers are flushed and quiet streams send a beacon,
    /// so that `babeltrace2 net://HOST/host/HOSTNAME/SESSION` shows events
    /// while the program runs. Per-thread buffers of running threads are
    /// sent when their sub-buffer fills (only their own thread can switch
    /// them).
    pub fn live(mut self, period: Duration) -> Self {
        if let Some(r) = &mut self.relay {
            r.live = Some(period.max(Duration::from_millis(1)));
        }
        self
    }

    /// How stream files are written: [`FileIo::Buffered`] (the default)
    /// copies every packet into the page cache; [`FileIo::Auto`] writes
    /// a fast stream's packets (at least half a sub-buffer each) with
    /// direct I/O, padded to 4 KiB as LTTng pads them, and a slow stream's
    /// through the page cache, unpadded; [`FileIo::Direct`] pads and writes
    /// every packet directly, where the file system supports it. Direct
    /// I/O costs the consumer about a third of the CPU and leaves no dirty
    /// pages for the kernel to write back (on a busy machine, CPU taken
    /// from the traced program); buffered writes keep the trace in the
    /// page cache for a reader right after.
    pub fn file_io(mut self, io: FileIo) -> Self {
        self.io = io;
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

    /// The channels added so far.
    pub fn channels(&self) -> &[ChannelConfig] {
        &self.channels
    }

    /// Enables the events matching `pattern` at every level, in every channel.
    pub fn enable(self, pattern: &str) -> Self {
        self.enable_level(pattern, Level::Debug)
    }

    /// Enables the events matching `pattern` of level `level` or more severe,
    /// in every channel.
    pub fn enable_level(self, pattern: &str, level: Level) -> Self {
        self.enable_where(None, pattern, level, None)
    }

    /// Enables the events matching `pattern` of level `level` or more severe
    /// in channel `channel`.
    pub fn enable_in(self, channel: &str, pattern: &str, level: Level) -> Self {
        self.enable_where(Some(channel), pattern, level, None)
    }

    /// Enables the events matching `pattern` of level `level` or more
    /// severe, in `channel` (`None`: every channel), recording only those
    /// that `filter` accepts (`ringtrace_core::filter`'s language, LTTng's:
    /// `(i & 1) == 0 && path == "/api/*"`). The filter is compiled for
    /// each event it enables and evaluated before the record is reserved;
    /// creating the session fails if it does not parse, or names a field
    /// the events it enables lack.
    pub fn enable_where(
        mut self,
        channel: Option<&str>,
        pattern: &str,
        level: Level,
        filter: Option<&str>,
    ) -> Self {
        let f = filter.map(|t| (t.to_string(), RuleFilter::parse(t)));
        let rule = match &f {
            Some((_, Err(_))) | None => Rule::enable(pattern, level, None),
            Some((_, Ok(f))) => Rule::enable(pattern, level, Some(f.clone())),
        };
        if let Some((_, Err(e))) = f {
            self.errors.push(e.to_string());
        }
        self.rules.push((channel.map(str::to_string), rule));
        self
    }

    /// The configuration, checked: channel names that can name stream
    /// files, rules naming existing channels, an output directory where
    /// the mode needs one. The session is created from it by
    /// [`SessionBuilder::create`].
    pub(crate) fn check(self) -> Result<Checked, Error> {
        if let Some(e) = self.errors.first() {
            return Err(Error::Config(format!("session '{}': {e}", self.name)));
        }
        for (_, r) in &self.rules {
            crate::control::rules::check_filter(r)?;
        }
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
        if self.mode == Mode::Discard
            && self.output.is_none()
            && self.relay.is_none()
            && !self.read_here
        {
            return Err(Error::Config(format!(
                "session '{}' is in discard mode and needs an output directory or a relay",
                self.name
            )));
        }
        if self.rotation.is_set()
            && (self.mode != Mode::Discard || (self.output.is_none() && self.relay.is_none()))
        {
            return Err(Error::Config(format!(
                "session '{}': rotation archives a discard session's directory or its trace \
                 on lttng-relayd (a flight recorder saves snapshots instead)",
                self.name
            )));
        }
        if self.rotation.is_set() && self.relay.as_ref().is_some_and(|r| r.live.is_some()) {
            return Err(Error::Config(format!(
                "session '{}': a live session cannot rotate (as in LTTng): stream without \
                 live=, or without rotation",
                self.name
            )));
        }
        let keeps = self.rotation.keep.is_some() || self.rotation.keep_size.is_some();
        if keeps && self.output.is_none() {
            return Err(Error::Config(format!(
                "session '{}': keep= and keep-size= remove the archives ringtrace writes to \
                 its directory; relayd keeps its own (give the session a directory, or \
                 remove old archives on the relay host)",
                self.name
            )));
        }
        if self.rotation.size == Some(0) || self.rotation.keep == Some(0) {
            return Err(Error::Config(format!(
                "session '{}': a rotation size and a number of archives kept are at least 1",
                self.name
            )));
        }
        if self.mode == Mode::FlightRecorder && self.relay.is_some() {
            return Err(Error::Config(format!(
                "session '{}': a flight recorder writes snapshots to local folders; \
                 stream to relayd from a discard-mode session",
                self.name
            )));
        }
        Ok(Checked {
            name: self.name,
            output: self.output,
            buffer_dir: self.buffer_dir,
            mode: self.mode,
            channels,
            rules,
            relay: self.relay,
            io: self.io,
            rotation: self.rotation,
        })
    }
}

/// A checked [`SessionBuilder`]: what a session's state is made from.
#[derive(Debug)]
pub(crate) struct Checked {
    pub(crate) name: String,
    pub(crate) output: Option<PathBuf>,
    pub(crate) buffer_dir: Option<PathBuf>,
    pub(crate) mode: Mode,
    /// At least one, each named as a stream file may be.
    pub(crate) channels: Vec<ChannelConfig>,
    /// Per channel.
    pub(crate) rules: Vec<Vec<Rule>>,
    pub(crate) relay: Option<RelayConfig>,
    pub(crate) io: FileIo,
    pub(crate) rotation: Rotation,
}
