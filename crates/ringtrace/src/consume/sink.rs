//! The consumer side of a session: stream files, the switch and read
//! timers, the copy of ready packets (direct I/O from the sub-buffer, or
//! `write` from it through the page cache: `output/stream.rs`), the
//! closing packet that carries the last losses.

use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{MutexGuard, TryLockError};
use std::time::{Duration, Instant};

use super::period::Pace;
use super::turns::in_turns;
use super::Recording;
use crate::control::config::Mode;
use crate::control::state::{lock, ChannelState};
use crate::control::stats::ReadTimes;
use crate::error::Error;
use crate::output;
use ringtrace_core::ops::{Packet, PacketSink};

/// Read period of flight-recorder channels.
const IDLE_READ_PERIOD: Duration = Duration::from_secs(1);

/// The consumer's state of a session: stream files and timers.
#[derive(Debug)]
pub(crate) struct Sink {
    /// Per channel, in the session's order.
    pub(crate) channels: Vec<ChannelSink>,
    /// First output error (the disk is full...): later packets are consumed
    /// and counted as lost rather than blocking the writers.
    pub(crate) error: Option<String>,
    pub(crate) dropped_packets: u64,
    /// The output directory, held open to notice it being removed or
    /// replaced while tracing (writes into its unlinked files would succeed
    /// and be lost without a word).
    out_dir: Option<(std::fs::File, std::path::PathBuf)>,
    /// The stream to a relay daemon, beside or instead of the files.
    pub(crate) relay: Option<super::relay::RelaySink>,
    /// What the stream files closed by `close_files` were, for `stats`.
    closed: Files,
    /// How long the channels waited for a read, and the longest read.
    pub(crate) reads: ReadTimes,
    /// Where the stream files go now (with a directory: `rotate.rs`).
    pub(crate) chunk: Option<super::rotate::Chunk>,
    /// The archives rotations made.
    pub(crate) archives: super::rotate::Archives,
}

/// The consumer's state of one channel: its timers, its read pace and its
/// buffers'.
#[derive(Debug)]
pub(crate) struct ChannelSink {
    /// When the switch timer fires next (none without one).
    next_switch: Option<Instant>,
    /// When the channel is read next.
    next_read: Instant,
    /// Bytes reserved and records lost in all its buffers at the end of
    /// the last read, and when; the write rate since then sets the next
    /// read (see `period.rs`).
    last_read: (u64, u64, Instant),
    /// The read pace (the last period, the fastest rate seen).
    pace: Pace,
    /// Per buffer, in the channel's order.
    pub(crate) buffers: Vec<BufferSink>,
}

/// The consumer's state of one buffer: its stream file and what went in.
#[derive(Debug)]
pub(crate) struct BufferSink {
    /// The stream file, once it has a packet.
    file: Option<output::StreamFile>,
    /// Packets and bytes written.
    pub(crate) written: (u64, u64),
    /// Header and context of the last packet written.
    last_header: Option<[u8; ctf::PACKET_HEADER_SIZE]>,
    /// Its stream file in the current chunk has a packet.
    pub(crate) written_in_chunk: bool,
    /// Sub-buffers consumed (flight recorder: records dropped) at the last
    /// progress, and when.
    progress: (u64, Instant),
    /// Since when a stall has been reported, if one is.
    pub(crate) stalled: Option<Instant>,
}

/// Stream files of a session: how many, how many with direct I/O, and
/// what went where (`stats`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Files {
    pub(crate) count: usize,
    pub(crate) direct: usize,
    pub(crate) writes: output::Writes,
}

impl Sink {
    /// The state of a new session: no file yet, timers from now.
    pub(crate) fn empty(channels: &[ChannelState]) -> Sink {
        let now = Instant::now();
        Sink {
            channels: channels
                .iter()
                .map(|c| ChannelSink {
                    next_switch: c.cfg.switch_timer.map(|p| now + p),
                    next_read: now + c.cfg.read_timer,
                    last_read: (0, 0, now),
                    pace: Pace::new(),
                    buffers: (0..c.chan.ops().buffers())
                        .map(|_| BufferSink {
                            file: None,
                            written: (0, 0),
                            last_header: None,
                            written_in_chunk: false,
                            progress: (0, now),
                            stalled: None,
                        })
                        .collect(),
                })
                .collect(),
            error: None,
            closed: Files::default(),
            reads: ReadTimes::default(),
            dropped_packets: 0,
            out_dir: None,
            relay: None,
            chunk: None,
            archives: Default::default(),
        }
    }

    /// Every buffer's state, all channels.
    fn buffers_mut(&mut self) -> impl Iterator<Item = &mut BufferSink> {
        self.channels.iter_mut().flat_map(|c| c.buffers.iter_mut())
    }

    /// Watches `dir`, the trace directory just created.
    pub(crate) fn watch_dir(&mut self, dir: &std::path::Path) {
        use std::os::unix::fs::OpenOptionsExt;
        self.out_dir = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
            .open(dir)
            .ok()
            // Absolute: the program may change its working directory.
            .zip(std::path::absolute(dir).ok());
    }

    /// Records an output error if the trace directory was removed, or its
    /// path now names another directory: what is written from then on (and
    /// what was) is not where the user will look. Two `stat`s at every
    /// consumer pass over the session: the path first, then the directory
    /// held, so that a removal between the two reads as a removal (the
    /// held directory has no link left), never as the path alone missing.
    fn check_dir(&mut self) {
        use std::os::unix::fs::MetadataExt;
        let Some((f, path)) = &self.out_dir else {
            return;
        };
        if self.error.is_some() {
            return;
        }
        let now = std::fs::metadata(path);
        let held = f.metadata();
        let gone = match (&held, &now) {
            (Ok(h), _) if h.nlink() == 0 => Some("was removed"),
            (Ok(h), Ok(n)) if (h.dev(), h.ino()) != (n.dev(), n.ino()) => {
                Some("was moved or replaced")
            }
            (Ok(_), Err(_)) => Some("was moved or removed"),
            _ => None,
        };
        if let Some(what) = gone {
            self.error = Some(format!(
                "the output directory {} {what} while tracing: the trace is not there; \
                 later packets are dropped",
                path.display()
            ));
        }
    }

    /// The session's stream files, open and closed.
    pub(crate) fn files(&self) -> Files {
        self.channels
            .iter()
            .flat_map(|c| &c.buffers)
            .filter_map(|b| b.file.as_ref())
            .fold(self.closed, |mut t, f| {
                t.count += 1;
                t.direct += usize::from(f.is_direct());
                t.writes.add(&f.writes());
                t
            })
    }

    /// Closes every stream file and the trace directory, in the calling
    /// thread (`destroy`, with the metadata file): the
    /// consumer thread, which may hold the session a moment longer, must
    /// not be the one to close them. Closing a file whose name is already
    /// gone frees its blocks, which on a file system mounted with
    /// `discard` waits for the device: measured in bench/compare, 12-15 ms
    /// in `blkdev_issue_discard` for a 120 MB trace written with direct I/O
    /// (its blocks are allocated at once; buffered files deleted before
    /// writeback have none), enough for a writer of the next session to
    /// fill 4 MiB of buffers while the consumer slept.
    pub(crate) fn close_files(&mut self) {
        self.close_stream_files();
        self.out_dir = None;
    }

    /// Closes every stream file (a rotation: the next packets go to the
    /// next chunk's files); their counts stay in `stats`.
    pub(crate) fn close_stream_files(&mut self) {
        self.closed = self.files();
        self.buffers_mut().for_each(|b| {
            b.file = None;
            b.written_in_chunk = false;
        });
    }

    /// Makes every channel's read timer due now, and the idle periods
    /// start again from the shortest (writers may start any moment).
    pub(crate) fn read_now(&mut self) {
        let now = Instant::now();
        for c in &mut self.channels {
            c.next_read = now;
            c.pace.restart();
        }
    }

    /// The session starts: every channel is read now, and often until its
    /// writers' rate is known (`Pace::expect_writers`).
    pub(crate) fn started(&mut self) {
        let now = Instant::now();
        for c in &mut self.channels {
            c.next_read = now;
            c.last_read.2 = now;
            c.pace.expect_writers(now);
        }
    }
}

impl Recording {
    /// Consumer work for this session at `now`: switch timers, then, in
    /// discard mode, copy every ready packet to the stream files. Returns
    /// the next deadline.
    pub(crate) fn consume(&self, now: Instant, force: bool) -> Option<Instant> {
        self.consume_with(lock(&self.sink), now, force)
    }

    /// As [`Recording::consume`], unless another thread holds the
    /// session's output (the consumer in a pass, a thread stopping the
    /// session): `None` then, at once (the standby consumer's pass).
    pub(crate) fn try_consume(&self, now: Instant) -> Option<Option<Instant>> {
        let sink = match self.sink.try_lock() {
            Ok(g) => g,
            Err(TryLockError::Poisoned(e)) => e.into_inner(),
            Err(TryLockError::WouldBlock) => return None,
        };
        Some(self.consume_with(sink, now, false))
    }

    fn consume_with(
        &self,
        mut sink: MutexGuard<'_, Sink>,
        now: Instant,
        force: bool,
    ) -> Option<Instant> {
        sink.check_dir();
        let mut next: Option<Instant> = None;
        // Live: every buffer flushed and read now, then beacons for the
        // streams that had nothing to send.
        let live = sink.relay.as_ref().is_some_and(|r| r.live_due(now));
        if live {
            if self.active.load(Relaxed) {
                self.channels.iter().for_each(|c| {
                    c.chan.ops().flush_live();
                });
            }
            sink.read_now();
        }
        for (ci, ch) in self.channels.iter().enumerate() {
            let ops = ch.chan.ops();
            if let (Some(due), Some(p)) = (sink.channels[ci].next_switch, ch.cfg.switch_timer) {
                if now >= due {
                    if self.active.load(Relaxed) {
                        ops.flush_live();
                    }
                    sink.channels[ci].next_switch = Some(now + p);
                }
            }
            if force || now >= sink.channels[ci].next_read {
                let period = if self.mode == Mode::Discard {
                    // The write rate since the end of the last copy, not
                    // over it: on a busy machine the copy may have kept the
                    // writers off the CPU, which is not idleness.
                    let start = Instant::now();
                    let (written, lost) = ch.chan.written_and_lost();
                    let (before, lost_before, then) = sink.channels[ci].last_read;
                    let period = sink.channels[ci].pace.next(
                        written.wrapping_sub(before),
                        lost.wrapping_sub(lost_before),
                        now.saturating_duration_since(then),
                        (ch.cfg.subbuf_size * ch.cfg.num_subbuf) as u64,
                        ch.cfg.read_timer,
                        now,
                    );
                    // A packet of each buffer in turn (turns.rs).
                    in_turns(ops.buffers(), |b| {
                        self.drain_buffer(&mut sink, ci, b, 1) > 0
                    });
                    for (b, buf) in sink.channels[ci].buffers.iter_mut().enumerate() {
                        self.watch_stall(buf, ci, b, now);
                    }
                    ops.recycle();
                    let (written, lost) = ch.chan.written_and_lost();
                    let end = Instant::now();
                    sink.reads
                        .note(start.saturating_duration_since(then), end - start);
                    sink.channels[ci].last_read = (written, lost, end);
                    period
                } else {
                    // Writers wait for these (rseq buffers, rarely).
                    ops.deliver_missed();
                    for (b, buf) in sink.channels[ci].buffers.iter_mut().enumerate() {
                        self.watch_wrap(buf, ci, b, now);
                    }
                    // A flight recorder is read only by snapshots: nothing
                    // to poll for but stalls (its switch timer keeps its
                    // own deadline).
                    ch.cfg.read_timer.max(IDLE_READ_PERIOD)
                };
                sink.channels[ci].next_read = now + period;
            }
            for d in [
                sink.channels[ci].next_switch,
                Some(sink.channels[ci].next_read),
            ]
            .into_iter()
            .flatten()
            {
                next = Some(next.map_or(d, |n: Instant| n.min(d)));
            }
        }
        if let Some(r) = &mut sink.relay {
            if live {
                r.beacons(now);
            }
            if let Some(d) = r.next_live() {
                next = Some(next.map_or(d, |n: Instant| n.min(d)));
            }
        }
        next
    }

    /// A buffer whose writers have moved past the sub-buffer at the read
    /// position while the reader got nothing for the stall timeout: that
    /// sub-buffer waits for a commit that does not come. Reported once (on
    /// stderr and in the statistics) until the buffer moves again.
    fn watch_stall(&self, buf: &mut BufferSink, ci: usize, b: usize, now: Instant) {
        let ch = &self.channels[ci];
        let st = ch.chan.ops().stats(b);
        let s = ch.cfg.subbuf_size as u64;
        let (seen, since) = buf.progress;
        if st.consumed != seen || st.bytes_written < (st.consumed + 1) * s {
            buf.progress = (st.consumed, now);
            buf.stalled = None;
            return;
        }
        if buf.stalled.is_none() && now.saturating_duration_since(since) >= ch.cfg.stall_timeout {
            buf.stalled = Some(now);
            eprintln!(
                "ringtrace: session '{}', channel '{}', buffer {b}: a sub-buffer has waited {:.1} s for a commit \
                 (a writer stalled between reserve and commit); the records behind it wait, other buffers flow",
                self.name,
                ch.cfg.name,
                now.saturating_duration_since(since).as_secs_f64()
            );
        }
    }

    /// Flight recorder: writers that keep dropping records because the
    /// sub-buffer they would overwrite is still not fully committed (a
    /// writer stalled between reserve and commit), for longer than the stall
    /// timeout. Reported once, on stderr and in the statistics, until the
    /// drops stop.
    fn watch_wrap(&self, buf: &mut BufferSink, ci: usize, b: usize, now: Instant) {
        let ch = &self.channels[ci];
        let dropped = ch.chan.ops().stats(b).lost.wrap;
        let (seen, since) = buf.progress;
        if dropped == seen {
            buf.progress = (seen, now);
            buf.stalled = None;
            return;
        }
        buf.progress = (dropped, since);
        if buf.stalled.is_none() && now.saturating_duration_since(since) >= ch.cfg.stall_timeout {
            buf.stalled = Some(now);
            eprintln!(
                "ringtrace: session '{}', channel '{}', buffer {b}: a sub-buffer has not been fully committed for {:.1} s \
                 (a writer stalled between reserve and commit); writers drop records instead of overwriting it \
                 ({dropped} so far), other buffers flow",
                self.name,
                ch.cfg.name,
                now.saturating_duration_since(since).as_secs_f64()
            );
        }
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
        let dir = sink.chunk.as_ref().map(|c| c.dir.to_path_buf());
        let meta_uuid = lock(&self.meta).desc.uuid;
        for (ci, ch) in self.channels.iter().enumerate() {
            let ops = ch.chan.ops();
            for b in 0..ops.buffers() {
                let lost = ops.stats(b).lost.total();
                let last = sink.channels[ci].buffers[b].last_header;
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
                if let Some(r) = &mut sink.relay {
                    r.packet(ci, b, &h, &|| self.metadata_text());
                }
                sink.channels[ci].buffers[b].last_header = Some(h);
                let Some(dir) = &dir else {
                    continue;
                };
                let path = dir.join(format!("{}_{b}", ch.cfg.name));
                let r = match &mut sink.channels[ci].buffers[b].file {
                    // Padded as the others, so that a direct file stays so.
                    Some(f) => {
                        let mut p = h.to_vec();
                        let block = f.block(false);
                        if block > 1 {
                            p.resize(block, 0);
                            ctf::layout::set_packet_size(&mut p, block as u64);
                        }
                        f.append(&p, output::Hint::default())
                    }
                    None => output::append_own(&path)
                        .and_then(|mut f| std::io::Write::write_all(&mut f, &h)),
                };
                match r {
                    Ok(()) => sink.channels[ci].buffers[b].written_in_chunk = true,
                    Err(e) if sink.error.is_none() => {
                        sink.error = Some(format!("{}: {e}", path.display()))
                    }
                    Err(_) => {}
                }
            }
        }
    }

    /// The session's whole metadata now (what a relay must have).
    fn metadata_text(&self) -> String {
        ctf::tsdl::metadata(&lock(&self.meta).desc)
    }

    /// Copies up to `max` of buffer `b`'s ready packets to its stream file
    /// and to the relay; returns how many.
    fn drain_buffer(&self, sink: &mut Sink, ci: usize, b: usize, max: usize) -> usize {
        let chunk_dir = sink.chunk.as_ref().map(|c| c.dir.clone());
        let dir = chunk_dir.as_deref();
        if dir.is_none() && sink.relay.is_none() {
            return 0;
        }
        let name = &self.channels[ci].cfg.name;
        let ops = self.channels[ci].chan.ops();
        struct Out<'s> {
            sink: &'s mut Sink,
            rec: &'s Recording,
            dir: Option<&'s Path>,
            name: &'s str,
            ci: usize,
        }
        impl PacketSink for Out<'_> {
            fn packet(&mut self, b: usize, p: Packet<'_>) {
                let bytes = p.bytes;
                if let Some(r) = &mut self.sink.relay {
                    r.packet(self.ci, b, bytes, &|| self.rec.metadata_text());
                }
                // Relay only: written means taken from the buffer and
                // handed to the relay (its own counters say the rest).
                if let Some(dir) = self.dir {
                    let Some(f) = self.file(b) else {
                        self.sink.dropped_packets += 1;
                        return;
                    };
                    let hint = output::Hint {
                        behind: p.behind,
                        fast: p.fast,
                    };
                    if let Err(e) = f.append(bytes, hint) {
                        let s = &mut *self.sink;
                        s.error = Some(format!("{}/{}_{b}: {e}", dir.display(), self.name));
                        s.dropped_packets += 1;
                        return;
                    }
                }
                let s = &mut *self.sink;
                let buf = &mut s.channels[self.ci].buffers[b];
                buf.written.0 += 1;
                buf.written.1 += bytes.len() as u64;
                buf.written_in_chunk = true;
                if let Some(c) = &mut s.chunk {
                    c.bytes += bytes.len() as u64;
                }
                if let Some(h) = bytes.get(..ctf::PACKET_HEADER_SIZE) {
                    s.channels[self.ci].buffers[b].last_header = Some(h.try_into().expect("sized"));
                }
            }

            fn block(&mut self, b: usize, fast: bool) -> usize {
                self.file(b).map_or(1, |f| f.block(fast))
            }
        }
        impl Out<'_> {
            /// Buffer `b`'s stream file, created at its first packet; `None`
            /// after an output error (or without a trace folder).
            fn file(&mut self, b: usize) -> Option<&mut output::StreamFile> {
                let dir = self.dir?;
                let s = &mut *self.sink;
                if s.error.is_some() {
                    return None;
                }
                if s.channels[self.ci].buffers[b].file.is_none() {
                    let path = dir.join(format!("{}_{b}", self.name));
                    match output::StreamFile::create(&path, self.rec.io) {
                        Ok(f) => s.channels[self.ci].buffers[b].file = Some(f),
                        Err(e) => {
                            s.error = Some(format!("{}: {e}", path.display()));
                            return None;
                        }
                    }
                }
                s.channels[self.ci].buffers[b].file.as_mut()
            }
        }
        let mut read = lock(&self.channels[ci].read);
        ops.drain(
            &mut read[b],
            b,
            &mut Out {
                sink,
                rec: self,
                dir,
                name,
                ci,
            },
            max,
        )
    }
}
