//! Statistics of a session: per buffer, records written and lost by cause,
//! bytes, packets; summed per channel and session. They are data: a traced
//! process sends them over its control socket as JSON (`serde`), and the
//! `ringtrace` command renders them.

use serde::{Deserialize, Serialize};

use crate::control::config::Mode;
use ringtrace_core::client::Sharing;

/// Counters of one buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
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

    /// Whether every counter is zero: the buffer saw nothing.
    pub fn is_idle(&self) -> bool {
        *self
            == BufferStats {
                index: self.index,
                records: self.records.map(|_| 0),
                ..BufferStats::default()
            }
    }
}

/// Counters of one channel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChannelStats {
    /// Channel name.
    pub name: String,
    /// Its buffers: per CPU with restartable sequences, per CPU with
    /// lock-prefixed atomics (where rseq is not registered, or when forced)
    /// or per thread; by name (`per-cpu rseq`, …) in JSON.
    #[serde(with = "sharing_name")]
    pub sharing: Sharing,
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StandbyStats {
    /// Passes over the sessions it took because the consumer did not come
    /// round in time (every session of the process).
    pub passes: u64,
    /// CPU time it used since it started.
    pub cpu: Option<std::time::Duration>,
}

/// How long a discard session's buffers waited for a reader: what tells
/// why a buffer filled (its writers then lose records, `lost full`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadTimes {
    /// Reads of a channel (a pass over its buffers) so far, by the
    /// consumer or its standby.
    pub reads: u64,
    /// The longest time a channel went unread, from the end of one read to
    /// the start of the next: the read period, and any time the consumer
    /// and its standby did not run (a loaded machine, a CPU quota) or were
    /// busy with other sessions.
    pub longest_unread: std::time::Duration,
    /// The longest read: copying a channel's ready packets to the output
    /// (long when a write waits: a slow device, the page cache throttling
    /// a writer of too many dirty pages).
    pub longest_read: std::time::Duration,
}

impl ReadTimes {
    /// One read that started `unread` after the last one ended and took
    /// `took`.
    pub(crate) fn note(&mut self, unread: std::time::Duration, took: std::time::Duration) {
        self.reads += 1;
        self.longest_unread = self.longest_unread.max(unread);
        self.longest_read = self.longest_read.max(took);
    }
}

/// Counters of a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
    /// Events of LTTng-UST probes dropped in the whole process (every
    /// session) because they were nested too deep, or recorded by several
    /// sessions and did not fit the per-thread staging area
    /// (`ringtrace-lttng-ust`'s `ops.rs`).
    #[serde(default)]
    pub process_lost_unstaged: u64,
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
    /// How long the buffers waited for a reader (discard mode).
    #[serde(default)]
    pub reads: ReadTimes,
    /// The session's triggers and what they did.
    #[serde(default)]
    pub triggers: Vec<TriggerStats>,
    /// Archives its rotations made, and of those, how many were removed
    /// (`keep`, `keep_size`).
    #[serde(default)]
    pub archives: (u64, u64),
    /// The last rotation or removal that failed, in words.
    #[serde(default)]
    pub rotation_error: Option<String>,
}

/// What a trigger did: its matches (captured + lost = matched), the
/// actions its policy ran, and how they ended.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TriggerStats {
    /// Its number in the process (`ctl … trigger remove`).
    pub id: u32,
    /// The trigger as written (`PATTERN [if EXPR] => [POLICY] ACTION`).
    pub spec: String,
    /// Events that matched its pattern and filter.
    pub matched: u64,
    /// Of those, events whose fields were not kept: its capture buffer was
    /// full (they count towards its policy all the same).
    pub lost: u64,
    /// Matches its policy chose to run the action for.
    pub fired: u64,
    /// Actions that completed (a command that exited with status 0).
    pub done: u64,
    /// Actions that failed (the error below; a command's non-zero status).
    pub failed: u64,
    /// Firings that came while the last action still ran (a snapshot
    /// waiting for its window, a command running): counted, not run.
    pub skipped: u64,
    /// An action is running now.
    pub running: bool,
    /// The last failure, in words.
    pub last_error: Option<String>,
    /// Where its last snapshot went.
    pub last_snapshot: Option<std::path::PathBuf>,
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
}

/// What the relay stream did, for `stats`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
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
    /// Trace chunks relayd was asked to archive (a session that rotates).
    #[serde(default)]
    pub archives: u64,
    /// The last connection error, if any.
    pub last_error: Option<String>,
}

/// [`Sharing`] by the name `stats` shows (`per-cpu rseq`, `per-cpu
/// atomics`, `per-thread`), so that the JSON reads as the table does.
mod sharing_name {
    use ringtrace_core::client::Sharing;
    use serde::{Deserialize, Deserializer, Serializer};

    const ALL: [Sharing; 3] = [
        Sharing::PerCpuRseq,
        Sharing::PerCpuAtomics,
        Sharing::PerThread,
    ];

    pub fn serialize<S: Serializer>(s: &Sharing, ser: S) -> Result<S::Ok, S::Error> {
        ser.serialize_str(s.name())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(de: D) -> Result<Sharing, D::Error> {
        let name = String::deserialize(de)?;
        ALL.into_iter().find(|s| s.name() == name).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown buffer sharing `{name}` (per-cpu rseq, per-cpu atomics, per-thread)"
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_stats_round_trip_through_json() {
        let b = BufferStats {
            index: 3,
            records: Some(7),
            lost_full: 1,
            stalled: true,
            ..BufferStats::default()
        };
        let st = SessionStats {
            name: "s".into(),
            mode: Mode::FlightRecorder,
            active: true,
            output_error: Some("disk full".into()),
            packets_dropped_by_output: 2,
            channels: vec![ChannelStats {
                name: "c".into(),
                sharing: Sharing::PerCpuRseq,
                lost_no_buffer: 4,
                records: 7,
                buffers: vec![b],
            }],
            process_lost_no_reader_slot: 5,
            process_lost_unstaged: 2,
            forks_untraced: 1,
            relay: Some(RelayStats {
                url: "net://h".into(),
                last_error: Some("refused".into()),
                ..RelayStats::default()
            }),
            consumer_nice: Some(-10),
            consumer_fifo: false,
            consumer_slice_us: Some(100),
            consumer_cpu: Some(std::time::Duration::from_micros(1500)),
            consumer_standby: Some(StandbyStats {
                passes: 9,
                cpu: None,
            }),
            file_io: crate::output::FileIo::Auto,
            stream_files: 2,
            stream_files_direct: 1,
            stream_writes: crate::output::Writes {
                direct: 3,
                cached: 1,
                slowest: std::time::Duration::from_millis(2),
            },
            reads: ReadTimes {
                reads: 7,
                longest_unread: std::time::Duration::from_millis(30),
                longest_read: std::time::Duration::from_micros(900),
            },
            triggers: vec![TriggerStats {
                id: 3,
                spec: "app:slow => once-after:3 snapshot".into(),
                matched: 5,
                lost: 1,
                fired: 1,
                done: 1,
                last_snapshot: Some("/t/snapshot-3-1".into()),
                ..TriggerStats::default()
            }],
            archives: (9, 6),
            rotation_error: Some("disk full".into()),
        };
        assert!(!b.is_idle());
        let idle = BufferStats {
            index: 4,
            records: Some(0),
            ..BufferStats::default()
        };
        assert!(idle.is_idle());
        let json = serde_json::to_string(&st).unwrap();
        assert!(json.contains(r#""sharing":"per-cpu rseq""#), "{json}");
        assert_eq!(serde_json::from_str::<SessionStats>(&json).unwrap(), st);
        let bad = json.replace("per-cpu rseq", "per-core");
        let e = serde_json::from_str::<SessionStats>(&bad).unwrap_err();
        assert!(
            e.to_string().contains("unknown buffer sharing `per-core`"),
            "{e}"
        );
    }
}
