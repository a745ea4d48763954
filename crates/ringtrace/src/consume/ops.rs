//! The operations that complete or report a session's trace, on both
//! sides at once: the writers (stopped through `control/registry.rs`) and
//! the output (`sink.rs`). The public `Session` handle and the control
//! socket both call these.

use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::relay::RelaySnapshot;
use super::sink::Sink;
use super::snapshot_writer::{SnapshotInfo, SnapshotWriter};
use super::{consumer, priority, standby, Recording};
use crate::control::config::{Buffers, Mode};
use crate::control::metadata::MetadataFile;
use crate::control::registry;
use crate::control::state::lock;
use crate::control::stats::{BufferStats, ChannelStats, SessionStats};
use crate::error::Error;
use crate::output;

impl Recording {
    /// Starts recording: one store, seen by every probe at once; the
    /// consumer looks at the buffers at once, then as often as they fill.
    pub(crate) fn start(&self) {
        if self.inherited() {
            return;
        }
        registry::start(self);
        lock(&self.sink).started();
        consumer::wake();
        self.report_statedump();
    }

    /// Records a state dump of the loaded objects in the channels that
    /// record `ip` (`statedump/`); an error is said on stderr: the
    /// recording goes on without it.
    pub(crate) fn report_statedump(&self) {
        if let Err(e) = crate::statedump::dump(self) {
            eprintln!(
                "ringtrace: session '{}': no state dump of the loaded objects: {e}",
                self.name
            );
        }
    }

    /// Stops recording, waits for the writers already inside a probe,
    /// closes every sub-buffer and, in discard mode, writes everything to
    /// the trace directory: when it returns, the trace on disk is complete.
    pub(crate) fn stop(&self) -> Result<(), Error> {
        if self.inherited() {
            // The parent's session: its probes are already off here.
            return Ok(());
        }
        let quiescent = registry::stop(self);
        if self.mode == Mode::Discard {
            self.consume(Instant::now(), true);
            self.close_lost_tail();
            if let Some(r) = &mut lock(&self.sink).relay {
                r.wait_written();
            }
            self.sync_output()?;
            // A rotating session's last chunk is an archive too.
            self.archive_at_stop()?;
        }
        // Some thread is stuck inside a probe, maybe of another session:
        // this session is complete anyway if every one of its records
        // reached the trace (discard mode: every buffer drained after the
        // switch).
        let complete = quiescent
            || (self.mode == Mode::Discard && self.channels.iter().all(|c| c.chan.ops().drained()));
        if complete {
            Ok(())
        } else {
            Err(Error::StuckWriter(self.name.clone()))
        }
    }

    /// Forced switch of every buffer that may be switched while writers
    /// run, then, in discard mode, writes every ready packet.
    pub(crate) fn flush(&self) -> Result<(), Error> {
        if self.inherited() {
            return Ok(());
        }
        for ch in &self.channels {
            ch.chan.ops().flush_live();
        }
        if self.mode == Mode::Discard {
            self.consume(Instant::now(), true);
        }
        self.sync_output()
    }

    /// Stops and removes the session: its probes disappear and the
    /// consumer forgets it; its buffers are freed when the last published
    /// list naming them is reclaimed.
    pub(crate) fn destroy(self: &Arc<Self>) -> Result<(), Error> {
        if self.destroyed.load(Relaxed) || self.inherited() {
            return Ok(());
        }
        let r = self.stop();
        if let Some(relay) = &mut lock(&self.sink).relay {
            relay.close();
        }
        self.remove_empty_chunk();
        registry::remove(&self.state);
        consumer::remove(self);
        // Closed here, not by whichever thread drops the session last.
        lock(&self.sink).close_files();
        lock(&self.meta).close_file();
        r
    }

    /// Writes the flight recorder's buffers to `dir` as a complete CTF
    /// trace (metadata and one stream file per buffer holding data), without
    /// disturbing the recording; repeatable. Discard sessions stream to their
    /// directory instead and refuse this.
    pub(crate) fn snapshot(&self, dir: &Path) -> Result<SnapshotInfo, Error> {
        let st = self;
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
        // A dump at the end of the window the snapshot keeps, however
        // long ago the session started (per-CPU buffers: the switch below
        // includes it; a per-thread buffer's live sub-buffer is not
        // switched, see `statedump/`).
        if st.active.load(Relaxed) {
            st.report_statedump();
        }
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
            let mut read = lock(&ch.read);
            for b in 0..ops.buffers() {
                let mut w = SnapshotWriter {
                    path: dir.join(format!("{}_{b}", ch.cfg.name)),
                    file: None,
                    err: None,
                    info: &mut info,
                };
                ops.snapshot(&mut read[b], b, switch, &mut w);
                if let Some(e) = w.err {
                    return Err(e);
                }
            }
        }
        Ok(info)
    }

    /// Sends the flight recorder's buffers to relayd at `url` as a relay
    /// session of its own (see [`RelaySnapshot`]), without disturbing the
    /// recording; `dir` of the result is its folder below relayd's output.
    pub(crate) fn snapshot_to_relay(&self, url: &crate::RelayUrl) -> Result<SnapshotInfo, Error> {
        let st = self;
        if st.inherited() {
            return Err(Error::Inherited(st.name.clone()));
        }
        if st.mode != Mode::FlightRecorder {
            return Err(Error::Config(format!(
                "session '{}' is in discard mode: snapshots need a flight-recorder session \
                 (a discard session streams with relay=)",
                st.name
            )));
        }
        let meta = ctf::tsdl::metadata(&lock(&st.meta).desc);
        let channels = st.channels.iter().map(|c| c.cfg.name.clone()).collect();
        let mut snap = RelaySnapshot::start(url, &st.name, channels, &meta).map_err(|e| {
            Error::Config(format!(
                "cannot send the snapshot to relayd at {url}: {e}; is lttng-relayd running there?"
            ))
        })?;
        let active = st.active.load(Relaxed);
        struct ToRelay<'s> {
            snap: &'s mut RelaySnapshot,
            ci: usize,
        }
        impl ringtrace_core::ops::PacketSink for ToRelay<'_> {
            fn packet(&mut self, b: usize, p: ringtrace_core::ops::Packet<'_>) {
                self.snap.packet(self.ci, b, p.bytes);
            }
        }
        for (ci, ch) in st.channels.iter().enumerate() {
            let ops = ch.chan.ops();
            // As `snapshot`: per-thread buffers switch only while stopped.
            let switch = ch.cfg.buffers == Buffers::PerCpu && active;
            let mut read = lock(&ch.read);
            for b in 0..ops.buffers() {
                ops.snapshot(
                    &mut read[b],
                    b,
                    switch,
                    &mut ToRelay {
                        snap: &mut snap,
                        ci,
                    },
                );
            }
        }
        let (dir, packets, bytes) = snap.finish().map_err(|msg| Error::Output {
            session: st.name.clone(),
            msg,
            dropped_packets: 0,
        })?;
        Ok(SnapshotInfo {
            dir: dir.into(),
            packets,
            bytes,
        })
    }

    /// Counters of every buffer.
    pub(crate) fn stats(&self) -> SessionStats {
        let st = self;
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
        let files = sink.files();
        SessionStats {
            name: st.name.clone(),
            mode: st.mode,
            active: st.active.load(Relaxed),
            output_error: sink.error.clone(),
            packets_dropped_by_output: sink.dropped_packets,
            process_lost_no_reader_slot: ringtrace_core::rcu::no_slot_drops(),
            process_lost_unstaged: ringtrace_core::probe::unstaged(),
            forks_untraced: st.forks_untraced.load(Relaxed),
            relay: sink.relay.as_ref().map(|r| r.stats()),
            consumer_nice: priority::nice(),
            consumer_fifo: priority::fifo(),
            consumer_slice_us: priority::slice_us(),
            consumer_cpu: consumer::cpu_time(),
            consumer_standby: standby::report(),
            file_io: st.io,
            stream_files: files.count,
            stream_files_direct: files.direct,
            stream_writes: files.writes,
            reads: sink.reads,
            // Filled by the layer that keeps them (`trigger/`).
            triggers: Vec::new(),
            archives: (sink.archives.made, sink.archives.removed),
            rotation_error: sink.archives.error.clone(),
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
                                sink.channels[ci].buffers[b].written,
                                sink.channels[ci].buffers[b].stalled.is_some(),
                            )
                        })
                        .collect();
                    ChannelStats {
                        name: c.cfg.name.clone(),
                        sharing: c.chan.sharing(),
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
}

#[cfg(all(test, not(miri), not(loom)))]
mod tests {
    use crate::{event, ChannelConfig, Session};

    /// Descriptors of this process open on files under `dir`.
    fn open_under(dir: &std::path::Path) -> usize {
        std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .flatten()
            .filter_map(|e| std::fs::read_link(e.path()).ok())
            .filter(|t| t.starts_with(dir))
            .count()
    }

    /// The consumer thread may hold a session (a look in progress) when
    /// another thread destroys it; the stream files are closed by
    /// `destroy` anyway, so the consumer never frees a deleted trace's
    /// blocks (a synchronous discard on some file systems) in the middle
    /// of the next session's work. Its statistics still count them.
    #[test]
    fn destroy_closes_the_stream_files_whoever_holds_the_session() {
        let dir = std::env::temp_dir().join(format!("ringtrace-close-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let s = Session::builder("close")
            .output(&dir)
            .channel(ChannelConfig::new("c").subbufs(4096, 4))
            .enable("closetest:*")
            .create()
            .unwrap();
        s.start();
        for i in 0..1000u64 {
            event!(closetest, ev, i: u64 = i);
        }
        s.stop().unwrap();
        let files = s.stats().stream_files;
        assert!(files > 0, "the events went to at least one stream file");
        assert!(open_under(&dir) >= files, "the stream files are open");
        let held = s.recording();
        s.destroy().unwrap();
        assert_eq!(open_under(&dir), 0, "destroy closed every stream file");
        assert_eq!(held.stats().stream_files, files, "still counted");
        drop(held);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
