//! Statistics of a session: per buffer, records written and lost by cause,
//! bytes, packets; summed per channel and session.

use crate::control::config::Mode;

/// Counters of one buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BufferStats {
    /// Buffer index (CPU number, or per-thread pool slot).
    pub index: usize,
    /// Records committed; `None` for per-CPU buffers, whose records are
    /// counted per channel by the writing threads (`ChannelStats::records`).
    pub records: Option<u64>,
    /// Lost: the buffer was full (discard mode).
    pub lost_full: u64,
    /// Lost: the sub-buffer to reuse was still being written a lap later.
    pub lost_wrap: u64,
    /// Lost: larger than a sub-buffer.
    pub lost_too_big: u64,
    /// Bytes reserved (headers, records and padding of switched sub-buffers).
    pub bytes: u64,
    /// Sub-buffers delivered.
    pub packets_produced: u64,
    /// Flight recorder: sub-buffers overwritten before being read.
    pub overruns: u64,
    /// Packets written to the stream file.
    pub packets_written: u64,
    /// Bytes written to the stream file.
    pub bytes_written: u64,
    /// The consumer found the sub-buffer at the read position waiting for a
    /// commit for longer than the channel's stall timeout (flight recorder:
    /// writers dropping records for that long because the sub-buffer they
    /// would overwrite is not fully committed): a writer stalled between
    /// reserve and commit (other buffers flow).
    pub stalled: bool,
    /// Clock readings earlier than the buffer's last timestamp, raised to
    /// it so that timestamps never go back within the buffer (a clock that
    /// stepped back; on per-CPU buffers also a reading taken just before
    /// another thread's reservation, by design).
    pub clock_clamps: u64,
    /// Per-CPU rseq buffers: reservations whose restartable sequence the
    /// kernel aborted (preemption, migration or a signal inside it), tried
    /// again.
    pub rseq_aborts: u64,
    /// Per-CPU rseq buffers: reservations that found the thread on another
    /// CPU than the buffer's (it migrated after choosing), tried again there.
    pub rseq_moves: u64,
    /// Per-CPU rseq buffers: commits made from another CPU than the
    /// buffer's (the thread migrated between reserve and commit), with a
    /// lock-prefixed add; the others add without one.
    pub rseq_shared_commits: u64,
}

impl BufferStats {
    pub(crate) fn new(
        index: usize,
        s: ringbuf::BufferStats,
        counted: bool,
        written: (u64, u64),
        stalled: bool,
    ) -> BufferStats {
        BufferStats {
            index,
            stalled,
            records: counted.then_some(s.records),
            lost_full: s.lost.full,
            lost_wrap: s.lost.wrap,
            lost_too_big: s.lost.too_big,
            bytes: s.bytes_written,
            packets_produced: s.produced,
            overruns: s.overruns,
            packets_written: written.0,
            bytes_written: written.1,
            clock_clamps: s.clock_clamps,
            rseq_aborts: s.rseq_aborts,
            rseq_moves: s.rseq_moves,
            rseq_shared_commits: s.rseq_shared_commits,
        }
    }

    /// Records lost, every cause.
    pub fn lost(&self) -> u64 {
        self.lost_full + self.lost_wrap + self.lost_too_big
    }
}

/// Counters of one channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelStats {
    /// Channel name.
    pub name: String,
    /// Its buffers: `per-cpu rseq` (restartable sequences), `per-cpu
    /// atomics` (lock-prefixed, where rseq is not registered or when
    /// forced) or `per-thread`.
    pub sharing: &'static str,
    /// Per-thread channels: records dropped because no buffer was free.
    pub lost_no_buffer: u64,
    /// Records committed, every buffer.
    pub records: u64,
    /// Every buffer.
    pub buffers: Vec<BufferStats>,
}

impl ChannelStats {
    /// The buffers' counters summed (`index` is meaningless), with the
    /// channel's record count.
    pub fn total(&self) -> BufferStats {
        let mut t = BufferStats {
            records: Some(self.records),
            ..BufferStats::default()
        };
        for b in &self.buffers {
            t.lost_full += b.lost_full;
            t.lost_wrap += b.lost_wrap;
            t.lost_too_big += b.lost_too_big;
            t.bytes += b.bytes;
            t.packets_produced += b.packets_produced;
            t.overruns += b.overruns;
            t.packets_written += b.packets_written;
            t.bytes_written += b.bytes_written;
            t.stalled |= b.stalled;
            t.clock_clamps += b.clock_clamps;
            t.rseq_aborts += b.rseq_aborts;
            t.rseq_moves += b.rseq_moves;
            t.rseq_shared_commits += b.rseq_shared_commits;
        }
        t
    }

    /// Records lost, every cause including `lost_no_buffer`.
    pub fn lost(&self) -> u64 {
        self.total().lost() + self.lost_no_buffer
    }
}

/// The standby consumer thread of a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StandbyStats {
    /// Passes over the sessions it took because the consumer did not come
    /// round in time (every session of the process).
    pub passes: u64,
    /// CPU time it used since it started.
    pub cpu: Option<std::time::Duration>,
}

/// Counters of a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionStats {
    /// Session name.
    pub name: String,
    /// Its mode.
    pub mode: Mode,
    /// Whether it is recording.
    pub active: bool,
    /// The first error writing the trace, if any.
    pub output_error: Option<String>,
    /// Packets consumed but not written because of that error.
    pub packets_dropped_by_output: u64,
    /// Every channel.
    pub channels: Vec<ChannelStats>,
    /// Events dropped in the whole process (every session) because more
    /// than [`ringtrace_core::rcu::SLOTS`] threads were inside probes at once.
    pub process_lost_no_reader_slot: u64,
    /// Children forked while the session recorded: they record nothing
    /// into it (their events until an `exec` are in no trace, unless the
    /// session is the environment's `per-process` one).
    pub forks_untraced: u64,
    /// The stream to a relay daemon, if the session has one.
    pub relay: Option<RelayStats>,
    /// The nice value of the process's consumer thread, once it runs
    /// (`RINGTRACE_CONSUMER_NICE`; -10 when the process may raise it).
    pub consumer_nice: Option<i32>,
    /// Whether the consumer thread runs in the real-time `SCHED_FIFO`
    /// class (priority 1: `RINGTRACE_CONSUMER_RT=fifo`, where the process
    /// may).
    pub consumer_fifo: bool,
    /// The consumer thread's time slice, µs, where the kernel took the one
    /// it asked for (`RINGTRACE_CONSUMER_SLICE_US`; 100 by default: it
    /// runs as soon as it wakes); `None`: the kernel's default.
    pub consumer_slice_us: Option<u64>,
    /// CPU time the process's consumer thread has used since it started
    /// (for every session of the process): what the tracer costs beside
    /// the writes themselves.
    pub consumer_cpu: Option<std::time::Duration>,
    /// The standby consumer thread, kept off the consumer's CPU, that takes
    /// a pass when the consumer is late (its CPU did not run: a virtual
    /// machine's vCPU the host stopped); `None` where the process has none
    /// (`RINGTRACE_CONSUMER_STANDBY=off`, or a single CPU allowed).
    pub consumer_standby: Option<StandbyStats>,
    /// How the session writes its stream files (`SessionBuilder::file_io`).
    pub file_io: crate::output::FileIo,
    /// Stream files written so far, and how many of them with direct I/O
    /// (`SessionBuilder::file_io`; a file system without it, or a packet
    /// that could not be aligned, makes a file buffered).
    pub stream_files: usize,
    /// See `stream_files`.
    pub stream_files_direct: usize,
    /// Packets written directly and, of direct files, through the page
    /// cache; the slowest direct write (a device stall the buffers had to
    /// outlast).
    pub stream_writes: crate::output::Writes,
}

impl SessionStats {
    /// Records committed, all channels.
    pub fn records(&self) -> u64 {
        self.channels.iter().map(|c| c.records).sum()
    }

    /// Records lost, all channels, every cause.
    pub fn lost(&self) -> u64 {
        self.channels.iter().map(|c| c.lost()).sum()
    }

    /// Bytes of stream files written.
    pub fn bytes_written(&self) -> u64 {
        self.channels.iter().map(|c| c.total().bytes_written).sum()
    }

    /// An aligned table: one line per buffer that saw any record ("-" where
    /// only the channel counts records), then the channel's total.
    pub fn table(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{:<12} {:>6} {:>12} {:>10} {:>10} {:>10} {:>9} {:>12} {:>12}",
            "channel",
            "buffer",
            "records",
            "lost full",
            "lost wrap",
            "too big",
            "packets",
            "bytes",
            "clock clamps"
        );
        for c in &self.channels {
            let row = |s: &mut String, buffer: &str, b: &BufferStats| {
                let _ = writeln!(
                    s,
                    "{:<12} {:>6} {:>12} {:>10} {:>10} {:>10} {:>9} {:>12} {:>12}",
                    c.name,
                    buffer,
                    b.records.map_or("-".to_string(), |r| r.to_string()),
                    b.lost_full,
                    b.lost_wrap,
                    b.lost_too_big,
                    b.packets_produced,
                    b.bytes,
                    b.clock_clamps
                );
            };
            let used: Vec<_> = c
                .buffers
                .iter()
                .filter(|b| b.bytes + b.lost() > 0)
                .collect();
            for b in &used {
                row(&mut s, &b.index.to_string(), b);
            }
            if used.len() > 1 || used.first().is_some_and(|b| b.records.is_none()) {
                row(&mut s, "total", &c.total());
            }
            if c.lost_no_buffer > 0 {
                let _ = writeln!(
                    s,
                    "{:<12} {:>6} lost for want of a free per-thread buffer: {}",
                    c.name, "-", c.lost_no_buffer
                );
            }
            let t = c.total();
            let _ = writeln!(
                s,
                "{:<12} {:>6} buffers: {}{}",
                c.name,
                "-",
                c.sharing,
                if c.sharing == "per-cpu rseq" {
                    format!(
                        " ({} aborted and {} moved reservations retried, {} commits from another CPU)",
                        t.rseq_aborts, t.rseq_moves, t.rseq_shared_commits
                    )
                } else {
                    String::new()
                }
            );
        }
        if self.forks_untraced > 0 {
            let _ = writeln!(
                s,
                "children forked while recording: {} (not traced: their events before any exec are \
                 in no trace; `per-process` in RINGTRACE_SESSION, as `ringtrace record` sets, \
                 traces each in its own sub-trace)",
                self.forks_untraced
            );
        }
        if let Some(n) = self.consumer_nice {
            let class = match (self.consumer_fifo, self.consumer_slice_us) {
                (true, _) => "SCHED_FIFO 1, ".to_string(),
                (false, Some(us)) => format!("slice {} ms, ", us as f64 / 1000.0),
                (false, None) => String::new(),
            };
            let cpu = self
                .consumer_cpu
                .map(|c| format!("; CPU {:.1} ms so far", c.as_secs_f64() * 1e3))
                .unwrap_or_default();
            let _ = writeln!(s, "consumer thread: {class}nice {n}{cpu}");
        }
        if let Some(sb) = &self.consumer_standby {
            let cpu = sb
                .cpu
                .map(|c| format!("; CPU {:.1} ms so far", c.as_secs_f64() * 1e3))
                .unwrap_or_default();
            let _ = writeln!(
                s,
                "standby consumer thread (off the consumer's CPU): {} passes for a late consumer{cpu}",
                sb.passes
            );
        }
        // Direct I/O asked for (for every packet or, auto, for fast
        // streams'): how much of it happened (buffered says nothing).
        if self.file_io != crate::output::FileIo::Buffered && self.stream_files > 0 {
            let w = &self.stream_writes;
            let _ = writeln!(
                s,
                "stream files: {} of {} written with direct I/O{}{}",
                self.stream_files_direct,
                self.stream_files,
                if self.stream_files_direct < self.stream_files {
                    " (the others through the page cache)"
                } else {
                    ""
                },
                if w.direct + w.cached > 0 {
                    format!(
                        "; {} packets direct (slowest write {:.1} ms), {} through the page cache \
                         (behind, after a stalled write or while the page cache wrote back)",
                        w.direct,
                        w.slowest.as_secs_f64() * 1e3,
                        w.cached
                    )
                } else {
                    String::new()
                }
            );
        }
        if let Some(r) = &self.relay {
            let _ =
                writeln!(
                s,
                "relayd {} ({}): {} packets sent ({} bytes), {} packets lost to the network{}{}",
                r.url,
                if r.connected { "connected" } else { "not connected" },
                r.packets_sent,
                r.bytes_sent,
                r.packets_lost,
                match r.reconnects {
                    0 => String::new(),
                    n => format!(", {n} reconnections"),
                },
                match &r.last_error {
                    Some(e) => format!("; last error: {e}"),
                    None => String::new(),
                }
            );
            let _ = writeln!(s, "relayd folder: {}", r.path);
        }
        s
    }
}

/// What the relay stream did, for `stats`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RelayStats {
    /// `net://HOST:CONTROL:DATA`.
    pub url: String,
    /// The folder of the current (or last) relay session, below relayd's
    /// output directory.
    pub path: String,
    /// Whether a connection is up now.
    pub connected: bool,
    /// Packets and bytes relayd accepted.
    pub packets_sent: u64,
    /// Bytes of those packets.
    pub bytes_sent: u64,
    /// Packets taken from the buffers that could not be sent (no
    /// connection, or it failed while sending them).
    pub packets_lost: u64,
    /// Connections made after the first.
    pub reconnects: u64,
    /// The last connection error, if any.
    pub last_error: Option<String>,
}
