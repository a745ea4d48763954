//! A session's statistics as `ringtrace ctl PID stats` prints them: an
//! aligned table of its buffers and channels, then a line per thing of the
//! process that explains a loss or a cost (untraced children, the consumer
//! and standby threads, direct I/O, the relay). The traced process sends
//! them as data ([`ringtrace::SessionStats`], JSON); this is the only place
//! that renders them.

use std::fmt::Write;

use ringtrace::client::Sharing;
use ringtrace::{BufferStats, ChannelStats, FileIo, SessionStats, TriggerStats};

/// The whole text.
pub fn table(st: &SessionStats) -> String {
    let mut s = String::new();
    row(
        &mut s,
        "channel",
        "buffer",
        [
            "records",
            "lost full",
            "lost wrap",
            "too big",
            "packets",
            "bytes",
            "clock clamps",
        ]
        .map(str::to_owned),
    );
    for c in &st.channels {
        channel(&mut s, c);
    }
    threads(&mut s, st);
    reads(&mut s, st);
    direct_io(&mut s, st);
    relay(&mut s, st);
    rotation(&mut s, st);
    if !st.triggers.is_empty() {
        s.push('\n');
        s.push_str(&triggers(&st.triggers));
    }
    s
}

/// The triggers' counts (`ctl PID triggers`, and under `stats`): a row
/// each, then what failed last and where the last snapshot went.
pub fn triggers(v: &[TriggerStats]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:>7} {:>10} {:>8} {:>8} {:>8} {:>8} {:>8}  when => action",
        "trigger", "matched", "lost", "fired", "done", "failed", "skipped"
    );
    for t in v {
        let _ = writeln!(
            s,
            "{:>7} {:>10} {:>8} {:>8} {:>8} {:>8} {:>8}  {}{}",
            t.id,
            t.matched,
            t.lost,
            t.fired,
            t.done,
            t.failed,
            t.skipped,
            t.spec,
            if t.running { " (running)" } else { "" }
        );
    }
    for t in v {
        if let Some(e) = &t.last_error {
            let _ = writeln!(s, "trigger {}: last failure: {e}", t.id);
        }
        if let Some(d) = &t.last_snapshot {
            let _ = writeln!(s, "trigger {}: last snapshot in {}", t.id, d.display());
        }
    }
    if v.is_empty() {
        let _ = writeln!(s, "(no trigger)");
    }
    s
}

fn row(s: &mut String, channel: &str, buffer: &str, v: [String; 7]) {
    let _ = writeln!(
        s,
        "{channel:<12} {buffer:>6} {:>12} {:>10} {:>10} {:>10} {:>9} {:>12} {:>12}",
        v[0], v[1], v[2], v[3], v[4], v[5], v[6]
    );
}

fn counts(b: &BufferStats) -> [String; 7] {
    [
        b.records.map_or("-".to_owned(), |r| r.to_string()),
        b.lost_full.to_string(),
        b.lost_wrap.to_string(),
        b.lost_too_big.to_string(),
        b.packets_produced.to_string(),
        b.bytes.to_string(),
        b.clock_clamps.to_string(),
    ]
}

/// One line per buffer that saw any record ("-" where only the channel
/// counts records), the channel's total, then how its buffers are shared.
fn channel(s: &mut String, c: &ChannelStats) {
    let used: Vec<_> = c
        .buffers
        .iter()
        .filter(|b| b.bytes + b.lost() > 0)
        .collect();
    for b in &used {
        row(s, &c.name, &b.index.to_string(), counts(b));
    }
    let t = c.total();
    if used.len() > 1 || used.first().is_some_and(|b| b.records.is_none()) {
        row(s, &c.name, "total", counts(&t));
    }
    if c.lost_no_buffer > 0 {
        let _ = writeln!(
            s,
            "{:<12} {:>6} lost for want of a free per-thread buffer: {}",
            c.name, "-", c.lost_no_buffer
        );
    }
    let rseq = if c.sharing == Sharing::PerCpuRseq {
        format!(
            " ({} aborted and {} moved reservations retried, {} commits from another CPU)",
            t.rseq_aborts, t.rseq_moves, t.rseq_shared_commits
        )
    } else {
        String::new()
    };
    let _ = writeln!(
        s,
        "{:<12} {:>6} buffers: {}{rseq}",
        c.name,
        "-",
        c.sharing.name()
    );
}

fn cpu_so_far(cpu: Option<std::time::Duration>) -> String {
    cpu.map(|c| format!("; CPU {:.1} ms so far", c.as_secs_f64() * 1e3))
        .unwrap_or_default()
}

/// Children forked while recording, the consumer and the standby threads.
fn threads(s: &mut String, st: &SessionStats) {
    if st.process_lost_no_reader_slot > 0 {
        let _ = writeln!(
            s,
            "events lost in the process for want of a reader slot (too many threads inside probes at once): {}",
            st.process_lost_no_reader_slot
        );
    }
    if st.process_lost_unstaged > 0 {
        let _ = writeln!(
            s,
            "LTTng-UST events lost in the process, recorded by several sessions and larger than the staging area, or nested too deep: {}",
            st.process_lost_unstaged
        );
    }
    if st.forks_untraced > 0 {
        let _ = writeln!(
            s,
            "children forked while recording: {} (not traced: their events before any exec are \
             in no trace; `per-process` in RINGTRACE_SESSION, as `ringtrace record` sets, \
             traces each in its own sub-trace)",
            st.forks_untraced
        );
    }
    if let Some(n) = st.consumer_nice {
        let class = match (st.consumer_fifo, st.consumer_slice_us) {
            (true, _) => "SCHED_FIFO 1, ".to_owned(),
            (false, Some(us)) => format!("slice {} ms, ", us as f64 / 1000.0),
            (false, None) => String::new(),
        };
        let _ = writeln!(
            s,
            "consumer thread: {class}nice {n}{}",
            cpu_so_far(st.consumer_cpu)
        );
    }
    if let Some(sb) = &st.consumer_standby {
        let _ = writeln!(
            s,
            "standby consumer thread (off the consumer's CPU): {} passes for a late consumer{}",
            sb.passes,
            cpu_so_far(sb.cpu)
        );
    }
}

/// How long the buffers waited for a reader, and the longest read: a
/// loss of `lost full` records is explained by one or the other.
fn reads(s: &mut String, st: &SessionStats) {
    let r = &st.reads;
    if r.reads == 0 {
        return;
    }
    let _ = writeln!(
        s,
        "reads: {}; longest a channel went unread {:.1} ms, longest read {:.1} ms \
         (a buffer fills in what its size over the write rate takes)",
        r.reads,
        r.longest_unread.as_secs_f64() * 1e3,
        r.longest_read.as_secs_f64() * 1e3
    );
}

/// Direct I/O asked for (for every packet or, auto, for fast streams'):
/// how much of it happened (buffered says nothing).
fn direct_io(s: &mut String, st: &SessionStats) {
    if st.file_io == FileIo::Buffered || st.stream_files == 0 {
        return;
    }
    let w = &st.stream_writes;
    let others = if st.stream_files_direct < st.stream_files {
        " (the others through the page cache)"
    } else {
        ""
    };
    let packets = if w.direct + w.cached > 0 {
        format!(
            "; {} packets direct (slowest write {:.1} ms), {} through the page cache \
             (behind, after a stalled write or while the page cache wrote back)",
            w.direct,
            w.slowest.as_secs_f64() * 1e3,
            w.cached
        )
    } else {
        String::new()
    };
    let _ = writeln!(
        s,
        "stream files: {} of {} written with direct I/O{others}{packets}",
        st.stream_files_direct, st.stream_files
    );
}

fn rotation(s: &mut String, st: &SessionStats) {
    let (made, removed) = st.archives;
    if made > 0 || st.rotation_error.is_some() {
        let _ = writeln!(
            s,
            "archives: {made} made, {removed} removed (kept: {}){}",
            made - removed.min(made),
            st.rotation_error
                .as_ref()
                .map_or(String::new(), |e| format!("; last failure: {e}"))
        );
    }
}

fn relay(s: &mut String, st: &SessionStats) {
    let Some(r) = &st.relay else { return };
    let reconnects = match r.reconnects {
        0 => String::new(),
        n => format!(", {n} reconnections"),
    };
    let archives = match r.archives {
        0 => String::new(),
        n => format!(", {n} trace chunks archived"),
    };
    let error = match &r.last_error {
        Some(e) => format!("; last error: {e}"),
        None => String::new(),
    };
    let _ = writeln!(
        s,
        "relayd {} ({}): {} packets sent ({} bytes), {} packets lost to the network{archives}{reconnects}{error}",
        r.url,
        if r.connected {
            "connected"
        } else {
            "not connected"
        },
        r.packets_sent,
        r.bytes_sent,
        r.packets_lost,
    );
    let _ = writeln!(s, "relayd folder: {}", r.path);
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringtrace::{Mode, StandbyStats};
    use std::time::Duration;

    fn stats(sharing: Sharing, buffers: Vec<BufferStats>) -> SessionStats {
        SessionStats {
            name: "s".into(),
            mode: Mode::Discard,
            active: true,
            output_error: None,
            packets_dropped_by_output: 0,
            channels: vec![ChannelStats {
                name: "chan".into(),
                sharing,
                lost_no_buffer: 0,
                records: 4000,
                buffers,
            }],
            process_lost_no_reader_slot: 0,
            process_lost_unstaged: 0,
            forks_untraced: 0,
            relay: None,
            consumer_nice: None,
            consumer_fifo: false,
            consumer_slice_us: None,
            consumer_cpu: None,
            consumer_standby: None,
            file_io: FileIo::Buffered,
            stream_files: 0,
            stream_files_direct: 0,
            stream_writes: Default::default(),
            reads: Default::default(),
            triggers: Vec::new(),
            archives: (0, 0),
            rotation_error: None,
        }
    }

    fn buffer(index: usize, records: Option<u64>, lost_full: u64) -> BufferStats {
        BufferStats {
            index,
            records,
            lost_full,
            bytes: 1000,
            packets_produced: 2,
            ..BufferStats::default()
        }
    }

    #[test]
    fn per_cpu_atomics_buffers_count_their_records_only_in_the_total() {
        let st = stats(
            Sharing::PerCpuAtomics,
            vec![buffer(0, None, 1), buffer(1, None, 0)],
        );
        assert_eq!(
            table(&st),
            "channel      buffer      records  lost full  lost wrap    too big   packets        bytes clock clamps\n\
             chan              0            -          1          0          0         2         1000            0\n\
             chan              1            -          0          0          0         2         1000            0\n\
             chan          total         4000          1          0          0         4         2000            0\n\
             chan              - buffers: per-cpu atomics\n"
        );
    }

    #[test]
    fn one_counted_buffer_needs_no_total_and_rseq_shows_its_retries() {
        let mut b = buffer(3, Some(4000), 0);
        b.rseq_aborts = 5;
        b.rseq_moves = 6;
        b.rseq_shared_commits = 7;
        // Buffer 4 saw no record: no line.
        let idle = BufferStats {
            index: 4,
            ..BufferStats::default()
        };
        let t = table(&stats(Sharing::PerCpuRseq, vec![b, idle]));
        assert_eq!(t.lines().count(), 3, "{t}");
        let t = t.replace(&" ".repeat(2), " ");
        assert!(!t.contains("total"), "{t}");
        assert!(
            t.contains("buffers: per-cpu rseq (5 aborted and 6 moved reservations retried, 7 commits from another CPU)"),
            "{t}"
        );
    }

    #[test]
    fn the_process_lines_explain_losses_and_costs() {
        let mut st = stats(Sharing::PerThread, vec![buffer(0, Some(4000), 0)]);
        st.channels[0].lost_no_buffer = 9;
        st.process_lost_unstaged = 4;
        st.forks_untraced = 1;
        st.consumer_nice = Some(-10);
        st.consumer_slice_us = Some(100);
        st.consumer_cpu = Some(Duration::from_micros(2500));
        st.consumer_standby = Some(StandbyStats {
            passes: 3,
            cpu: None,
        });
        st.file_io = FileIo::Auto;
        st.stream_files = 4;
        st.stream_files_direct = 3;
        st.stream_writes.direct = 10;
        st.stream_writes.cached = 2;
        st.stream_writes.slowest = Duration::from_micros(1250);
        st.reads = ringtrace::ReadTimes {
            reads: 120,
            longest_unread: Duration::from_micros(812_340),
            longest_read: Duration::from_micros(2_050),
        };
        st.relay = Some(ringtrace::RelayStats {
            url: "net://h:5342:5343".into(),
            path: "host/s".into(),
            connected: true,
            packets_sent: 8,
            bytes_sent: 800,
            packets_lost: 1,
            reconnects: 2,
            archives: 3,
            last_error: Some("reset".into()),
        });
        let t = table(&st);
        let lines: Vec<&str> = t.lines().skip(2).collect();
        assert_eq!(
            lines,
            [
                "chan              - lost for want of a free per-thread buffer: 9",
                "chan              - buffers: per-thread",
                "LTTng-UST events lost in the process, recorded by several sessions and larger than the staging area, or nested too deep: 4",
                "children forked while recording: 1 (not traced: their events before any exec are in no trace; \
                 `per-process` in RINGTRACE_SESSION, as `ringtrace record` sets, traces each in its own sub-trace)",
                "consumer thread: slice 0.1 ms, nice -10; CPU 2.5 ms so far",
                "standby consumer thread (off the consumer's CPU): 3 passes for a late consumer",
                "reads: 120; longest a channel went unread 812.3 ms, longest read 2.1 ms (a buffer fills in \
                 what its size over the write rate takes)",
                "stream files: 3 of 4 written with direct I/O (the others through the page cache); 10 packets \
                 direct (slowest write 1.2 ms), 2 through the page cache (behind, after a stalled write or while \
                 the page cache wrote back)",
                "relayd net://h:5342:5343 (connected): 8 packets sent (800 bytes), 1 packets lost to the network, \
                 3 trace chunks archived, 2 reconnections; last error: reset",
                "relayd folder: host/s",
            ]
        );
        // Buffered writes say nothing of direct I/O.
        st.file_io = FileIo::Buffered;
        assert!(!table(&st).contains("direct I/O"));
    }

    #[test]
    fn triggers_print_a_row_each_then_their_failures_and_snapshots() {
        let t = ringtrace::TriggerStats {
            id: 1,
            spec: "demo:slow_request => snapshot after 2000ms".into(),
            matched: 1,
            fired: 1,
            done: 1,
            last_snapshot: Some("/tmp/t/p/snapshot-1-1".into()),
            ..Default::default()
        };
        let failing = ringtrace::TriggerStats {
            id: 2,
            spec: "app:* => every:2 exec notify".into(),
            matched: 10,
            fired: 5,
            failed: 1,
            skipped: 3,
            running: true,
            last_error: Some("the command exit status: 1".into()),
            ..Default::default()
        };
        assert_eq!(
            triggers(&[t, failing]),
            "trigger    matched     lost    fired     done   failed  skipped  when => action\n\
             \x20     1          1        0        1        1        0        0  demo:slow_request => snapshot after 2000ms\n\
             \x20     2         10        0        5        0        1        3  app:* => every:2 exec notify (running)\n\
             trigger 1: last snapshot in /tmp/t/p/snapshot-1-1\n\
             trigger 2: last failure: the command exit status: 1\n"
        );
        assert_eq!(triggers(&[]).lines().nth(1), Some("(no trigger)"));
    }
}
