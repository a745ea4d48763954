//! The public handle on a session. Each method is one operation of the
//! layers below: the control registry (start, enable, disable), or the
//! consumer's operations that complete the trace (stop, flush, snapshot,
//! statistics, destroy; `consume/ops.rs`).

use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use crate::consume::{Recording, SnapshotInfo};
use crate::control::config::{Mode, SessionBuilder};
use crate::control::registry;
use crate::control::state::lock;
use crate::control::stats::SessionStats;
use crate::error::Error;
use ringtrace_core::desc::all_events;
use ringtrace_core::level::Level;

/// A tracing session. Dropping the handle destroys the session (after
/// stopping it, so its trace is complete).
///
/// The handle owns the session: it is created by
/// [`SessionBuilder::create`], and destroyed by [`Session::destroy`] or
/// its drop. The control socket reaches the same session without a handle
/// and never destroys it.
#[derive(Debug)]
pub struct Session {
    pub(super) rec: Arc<Recording>,
}

impl Session {
    pub(super) fn new(rec: Arc<Recording>) -> Session {
        Session { rec }
    }

    /// Starts a builder.
    pub fn builder(name: &str) -> SessionBuilder {
        SessionBuilder::new(name)
    }

    /// The session's name.
    pub fn name(&self) -> &str {
        &self.rec.name
    }

    /// The trace directory.
    pub fn output(&self) -> Option<&Path> {
        self.rec.output.as_deref()
    }

    /// Discard or flight recorder.
    pub fn mode(&self) -> Mode {
        self.rec.mode
    }

    /// Whether it is recording.
    pub fn is_active(&self) -> bool {
        self.rec.active.load(Relaxed)
    }

    /// Starts recording: one store, seen by every probe at once.
    pub fn start(&self) {
        self.rec.start();
    }

    /// Stops recording, waits for the writers already inside a probe, closes
    /// every sub-buffer and, in discard mode, writes everything to the trace
    /// directory: when it returns, the trace on disk is complete.
    pub fn stop(&self) -> Result<(), Error> {
        self.rec.stop()
    }

    /// Forced switch of every buffer that may be switched while writers run
    /// (per-CPU buffers; per-thread buffers of exited threads), then, in
    /// discard mode, writes every ready packet: what was emitted before the
    /// call is on disk when it returns, except per-thread buffers' partial
    /// sub-buffers.
    pub fn flush(&self) -> Result<(), Error> {
        self.rec.flush()
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
        registry::enable(&self.rec.state, channel, pattern, level, None)
    }

    /// [`Session::enable`], recording only the events `filter` accepts
    /// (LTTng's filter language: `(i & 1) == 0 && path == "/api/*"`,
    /// `$ctx.procname == "worker-*"`): compiled for each event now, and
    /// evaluated before a record is reserved, so a rejected event costs
    /// no buffer space. An error if it does not parse, or names a field
    /// the events it enables lack. Enabling an event again with another
    /// filter records what either accepts; with none, every record.
    pub fn enable_filtered(
        &self,
        channel: Option<&str>,
        pattern: &str,
        level: Level,
        filter: &str,
    ) -> Result<usize, Error> {
        registry::enable(&self.rec.state, channel, pattern, level, Some(filter))
    }

    /// Disables the events matching `pattern` in `channel` (`None`: every
    /// channel). Returns how many event call sites it disabled.
    pub fn disable(&self, channel: Option<&str>, pattern: &str) -> Result<usize, Error> {
        registry::disable(&self.rec.state, channel, pattern)
    }

    /// Adds `contexts` to those of `channel` (`None`: every channel), as
    /// `lttng add-context`: only while the session is not recording and
    /// the channel's buffers hold no byte (in practice: before the first
    /// start); the metadata is written again. Returns each channel's set
    /// after the change.
    pub fn add_contexts(
        &self,
        channel: Option<&str>,
        contexts: crate::Contexts,
    ) -> Result<Vec<(String, crate::Contexts)>, Error> {
        registry::add_contexts(&self.rec.state, channel, contexts)
    }

    /// This session's fork children trace themselves (the environment's
    /// per-process session): they are not counted as untraced.
    pub(crate) fn children_traced(&self) {
        self.rec
            .children_traced
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Names of the events currently recorded by this session (any channel).
    pub fn enabled_events(&self) -> Vec<String> {
        let meta = lock(&self.rec.meta);
        let channels = self.rec.channels.len();
        let mut v: Vec<String> = all_events()
            .into_iter()
            .filter(|d| {
                (0..channels).any(|c| crate::control::state::SessionState::wants(&meta, c, d))
            })
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
        self.rec.snapshot(dir)
    }

    /// Records a state dump of the loaded objects (executable, shared
    /// libraries: where each is mapped, its file, build id and debug
    /// link) in every channel that records the `ip` context, as a
    /// session's start does: what turns the addresses of later events
    /// into functions and lines when objects were loaded since. Nothing
    /// is done for a stopped session or one without `ip`.
    pub fn statedump(&self) -> Result<crate::statedump::Dumped, Error> {
        if self.rec.inherited() {
            return Err(Error::Inherited(self.rec.name.clone()));
        }
        crate::statedump::dump(&self.rec)
    }

    /// Sends a flight-recorder snapshot to an lttng-relayd (as `lttng
    /// snapshot record net://…`): a relay session of its own, stored by
    /// relayd as `HOST/<name>-<pid>-snapshot-<n>-DATE/`; the result's `dir` is that
    /// folder. Fails if relayd cannot be reached or a packet could not be
    /// sent; the recording goes on either way.
    pub fn snapshot_to_relay(&self, url: &crate::RelayUrl) -> Result<SnapshotInfo, Error> {
        self.rec.snapshot_to_relay(url)
    }

    /// Counters of every buffer. Waits for the consumer's pass over this
    /// session if one is under way (it holds the session's output, and a
    /// pass can spend milliseconds in a `write` to a slow disk): call it
    /// from a thread whose timing does not matter.
    pub fn stats(&self) -> SessionStats {
        let mut s = self.rec.stats();
        s.triggers = crate::trigger::stats(&self.rec);
        s
    }

    /// Stops the session and removes it: its events stop recording into it,
    /// and its buffers are freed after a grace period.
    pub fn destroy(self) -> Result<(), Error> {
        crate::trigger::remove_all(&self.rec);
        self.rec.destroy()
    }

    /// The session's state, as the consumer thread holds it during a look
    /// (`consume/ops.rs`'s test).
    #[cfg(all(test, not(miri), not(loom)))]
    pub(crate) fn recording(&self) -> Arc<Recording> {
        self.rec.clone()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        crate::trigger::remove_all(&self.rec);
        let _ = self.rec.destroy();
    }
}
