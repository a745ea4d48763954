//! A session's state: its channels, the class ids it assigned, its rules
//! and its metadata files. Its configuration is `config.rs`; the registry
//! of sessions that the probes' lists are built from is `registry.rs`; its
//! output is the consumer's (`consume/`), its handle the public
//! `Session` (`session/`).
//!
//! A session owns its channels and its trace directory. Starting or stopping
//! it is one store to its `active` flag, which every probe of its channels
//! reads, so it takes effect for all events at once. Enabling and disabling
//! rewrite the probe lists of the events concerned (`registry.rs`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use ctf::types::{EventClass, TraceDesc};
use ringbuf::{Backing, ChannelAttr};

use crate::control::config::{Buffers, ChannelConfig, Checked, CpuSync, Mode};
use crate::control::metadata::{self, MetadataFile};
use crate::control::rules::Rule;
use crate::error::Error;
use crate::output;
use ringtrace_core::any_channel::{AnyChannel, ReadSides};
use ringtrace_core::client::{Sharing, StreamIds};
use ringtrace_core::desc::EventDesc;
use ringtrace_core::tally::Tally;

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

impl Meta {
    /// Closes the trace's metadata file (`destroy`: nothing is added to a
    /// destroyed session's trace).
    pub(crate) fn close_file(&mut self) {
        self.file = None;
    }

    /// The trace's metadata file from now on (a rotation's new chunk).
    pub(crate) fn set_file(&mut self, file: MetadataFile) {
        self.file = Some(file);
    }
}

/// One channel of a session.
#[derive(Debug)]
pub(crate) struct ChannelState {
    pub(crate) cfg: ChannelConfig,
    pub(crate) chan: Arc<AnyChannel>,
    /// The channel's read sides: the consumer's passes (discard) and
    /// snapshots (flight recorder) read its buffers holding this lock, so
    /// two snapshots at once take turns rather than one finding the
    /// buffers taken. Not held across `fork` (`fork.rs`): a child never
    /// takes it, its inherited sessions refuse snapshots and are not
    /// consumed.
    pub(crate) read: Mutex<ReadSides>,
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
    /// How stream files are written (`SessionBuilder::file_io`).
    pub(crate) io: crate::output::FileIo,
    /// The relay daemon the trace streams to (`consume/relay/`).
    pub(crate) relay: Option<crate::control::config::RelayConfig>,
    /// When the trace is archived (`consume/rotate.rs`).
    pub(crate) rotation: crate::control::config::Rotation,
    /// Where the buffers' files are (`SessionBuilder::buffer_dir`).
    pub(crate) buffer_dir: Option<PathBuf>,
    pub(crate) active: Arc<AtomicBool>,
    pub(crate) destroyed: AtomicBool,
    pub(crate) channels: Vec<ChannelState>,
    pub(crate) meta: Mutex<Meta>,
    /// The process that created the session: a child of `fork` inherits
    /// the memory but not the session (see `fork.rs`).
    pub(crate) pid: u32,
    /// Children forked while the session recorded, whose events (until an
    /// `exec`) are in no trace: shown by `stats`, never silent.
    pub(crate) forks_untraced: AtomicU64,
    /// Set for the environment's per-process session, whose fork children
    /// make their own sub-traces (not counted above).
    pub(crate) children_traced: AtomicBool,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl SessionState {
    /// Starts or stops the session's writers: its flag, which the probes
    /// and the consumer read, and each channel's route, which the common
    /// probe path takes without reading the flag
    /// (`AnyChannel::set_recording`). The caller holds the control lock.
    pub(crate) fn set_recording(&self, on: bool) {
        for ch in &self.channels {
            ch.chan.set_recording(on);
        }
        self.active.store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether this process is a `fork` child of the session's creator: its
    /// buffers, files and locks belong to the parent, so every operation is
    /// refused or a no-op here, and its probes are off (`fork.rs`).
    pub(crate) fn inherited(&self) -> bool {
        self.pid != std::process::id()
    }

    /// Creates the session's channels, directories and metadata files;
    /// removes what it made if it fails.
    pub(crate) fn new(c: Checked) -> Result<SessionState, Error> {
        let Checked {
            name,
            output,
            buffer_dir,
            mode,
            channels: cfgs,
            rules,
            relay,
            io,
            rotation,
        } = c;
        let clock = ringtrace_core::clock::clock();
        let uuid = crate::sys::random::uuid();
        let desc = metadata::trace_desc(
            uuid,
            &clock,
            &name,
            &cfgs.iter().map(|c| c.contexts).collect::<Vec<_>>(),
        );
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
                // Files survive a crash; memfd (shared memory named in
                // /proc/PID/maps; stream files are written from the mapping,
                // with `write` or direct I/O: output/stream.rs).
                backing: match (&buffer_dir, mode) {
                    (Some(dir), _) => Backing::Dir(dir.clone()),
                    (None, Mode::Discard) => Backing::Memfd,
                    (None, Mode::FlightRecorder) => Backing::Anonymous,
                },
                initial_count: 0,
                thread_pool: cfg.thread_pool,
            };
            let (chan, read) = AnyChannel::new(
                mode == Mode::FlightRecorder,
                sharing(&cfg)?,
                StreamIds {
                    stream_id: i as u32,
                    uuid,
                    instance_base: instance,
                    clock,
                },
                cfg.contexts,
                &attr,
                &match buffer_dir {
                    // Files `<channel>_<n>`, the stream names of a recovered trace.
                    Some(_) => cfg.name.clone(),
                    None => format!("{name}-{}", cfg.name),
                },
            )
            .map_err(|e| Error::Config(format!("channel '{}': {e}", cfg.name)))?;
            // A session is created stopped.
            chan.set_recording(false);
            instance += chan.ops().buffers() as u64;
            channels.push(ChannelState {
                cfg,
                tally: (!chan.counts_records()).then(|| Arc::new(Tally::claim())),
                chan: Arc::new(chan),
                read: Mutex::new(read),
            });
        }
        undo.keep();
        Ok(SessionState {
            name,
            mode,
            output,
            io,
            relay,
            rotation,
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
            channels,
            pid: std::process::id(),
            forks_untraced: AtomicU64::new(0),
            children_traced: AtomicBool::new(false),
        })
    }

    /// Writes the metadata files again from `meta.desc` (the stream classes
    /// changed: `registry::add_contexts`, before any record).
    pub(crate) fn rewrite_metadata(meta: &mut Meta) -> Result<(), Error> {
        let Meta {
            desc,
            file,
            buffer_file,
            ..
        } = meta;
        for f in [file.as_mut(), buffer_file.as_mut()].into_iter().flatten() {
            f.rewrite(desc)
                .map_err(|e| Error::io(Path::new("metadata"), e))?;
        }
        Ok(())
    }

    /// Whether channel `ch` records `desc` (its last matching rule enables).
    pub(crate) fn wants(meta: &Meta, ch: usize, desc: &EventDesc) -> bool {
        crate::control::rules::enabled_by(&meta.rules[ch], &desc.full_name(), desc.level)
    }

    /// The id of `desc`'s class in channel `ch`, assigning one (and writing
    /// its metadata) on first use.
    pub(crate) fn class_id(
        meta: &mut Meta,
        ch: usize,
        desc: &'static EventDesc,
    ) -> Result<u32, Error> {
        // Ids from 1: a record whose header's id bits are zero is an
        // unfinished one (`ringtrace_core::unfinished`).
        if let Some(i) = meta.classes[ch].iter().position(|d| d.same_class(desc)) {
            return Ok(i as u32 + 1);
        }
        let id = meta.classes[ch].len() as u32 + 1;
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

/// How long `stop` and `destroy` wait for writers inside a probe.
pub(crate) const GRACE_TIMEOUT: Duration = Duration::from_secs(2);

/// The buffers a channel gets: per thread, or per CPU with restartable
/// sequences where glibc registered them (or where asked to, else an error
/// that says how to do without).
fn sharing(cfg: &ChannelConfig) -> Result<Sharing, Error> {
    if cfg.buffers == Buffers::PerThread {
        return Ok(Sharing::PerThread);
    }
    let rseq = ringbuf::rseq::available();
    // The program names its own CPUs (LTTng-UST's getcpu plugin): a record
    // goes to the buffer of the CPU it names, which only atomics allow.
    if ringbuf::cpu::overridden() {
        return match cfg.cpu_sync {
            CpuSync::Rseq => Err(Error::Config(format!(
                "channel '{}': rseq asked for, but the program names its own CPUs (a getcpu \
                 plugin, LTTNG_UST_GETCPU_PLUGIN): restartable sequences record into the buffer \
                 of the CPU the kernel says; use rseq=auto or rseq=atomics",
                cfg.name
            ))),
            CpuSync::Auto | CpuSync::Atomics => Ok(Sharing::PerCpuAtomics),
        };
    }
    match cfg.cpu_sync {
        CpuSync::Atomics => Ok(Sharing::PerCpuAtomics),
        CpuSync::Auto if !rseq => Ok(Sharing::PerCpuAtomics),
        CpuSync::Auto | CpuSync::Rseq if rseq => Ok(Sharing::PerCpuRseq),
        CpuSync::Rseq | CpuSync::Auto => Err(Error::Config(format!(
            "channel '{}': rseq asked for, but restartable sequences are not registered in this \
             process (glibc 2.35+ on Linux 4.18+ registers them unless \
             GLIBC_TUNABLES=glibc.pthread.rseq=0), or the CPU has no AVX: use rseq=auto or \
             rseq=atomics",
            cfg.name
        ))),
    }
}
