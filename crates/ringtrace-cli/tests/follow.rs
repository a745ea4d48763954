//! `ringtrace view --follow` on a trace folder while the demo writes it:
//! events come out while the program runs, in time order, and once it has
//! ended every event it recorded has been shown, none twice; and a trace
//! whose every stream stalled (its consumer blocked) comes out in order
//! when the streams resume one after the other.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;

/// The two tests that run a demo and follow it, one at a time: together
/// on two CPUs (a debug build, two demos and two followers) the follower
/// fell behind the demo and showed nothing while it ran (a full test run
/// failed so).
static ONE: Mutex<()> = Mutex::new(());

/// `ringtrace view --follow DIR` running, its lines collected; killed
/// when dropped (a failed assertion must not leave it running: it never
/// ends by itself, and it holds the test's output pipe open).
struct Follower {
    view: std::process::Child,
    lines: Arc<Mutex<Vec<String>>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Follower {
    fn drop(&mut self) {
        let _ = self.view.kill();
        let _ = self.view.wait();
    }
}

impl Follower {
    fn start(dir: &std::path::Path) -> Follower {
        let mut view = Command::new(env!("CARGO_BIN_EXE_ringtrace"))
            .args(["view", "--follow", dir.to_str().unwrap()])
            .env("TZ", "UTC")
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let lines = Arc::new(Mutex::new(Vec::<String>::new()));
        let reader = {
            let lines = lines.clone();
            let out = view.stdout.take().unwrap();
            std::thread::spawn(move || {
                for l in BufReader::new(out).lines() {
                    lines.lock().unwrap().push(l.unwrap());
                }
            })
        };
        Follower {
            view,
            lines,
            reader: Some(reader),
        }
    }

    /// Lines shown so far.
    fn shown(&self) -> usize {
        self.lines.lock().unwrap().len()
    }

    /// Waits (30 s at most) for `total` lines, and 1.5 s more (nothing
    /// more comes), stops the follower, and checks that it showed `total`
    /// lines in time order; returns them.
    fn finish(mut self, total: usize) -> Vec<String> {
        let until = Instant::now() + Duration::from_secs(30);
        while self.shown() < total && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(Duration::from_millis(1500));
        self.view.kill().unwrap();
        let _ = self.view.wait();
        if let Some(r) = self.reader.take() {
            r.join().unwrap();
        }
        let lines = std::mem::take(&mut *self.lines.lock().unwrap());
        assert_eq!(lines.len(), total, "every event once");
        let times: Vec<&str> = lines.iter().map(|l| l.split(' ').next().unwrap()).collect();
        if let Some(k) = times.windows(2).position(|w| w[0] > w[1]) {
            panic!(
                "lines out of time order at {k} of {}:\n{}",
                lines.len(),
                lines[k.saturating_sub(2)..(k + 3).min(lines.len())].join("\n")
            );
        }
        lines
    }
}

#[test]
fn follow_shows_events_while_the_program_runs_and_all_of_them_in_order() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tmp("follow");
    let _ = std::fs::remove_dir_all(&dir);
    // 10 s: the (debug build) follower shows its first line about 2 s
    // after the trace appears on an idle machine (a stream's first packet
    // comes at the demo's switch timer), and in full test runs on the
    // CI's kind of machine it showed nothing within a 3 s demo, then
    // within a 6 s one.
    let mut demo = bin()
        .args(["demo", "-o", dir.to_str().unwrap(), "--seconds", "10"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !dir.join("metadata").exists() {
        assert!(start.elapsed() < Duration::from_secs(20), "no metadata");
        std::thread::sleep(Duration::from_millis(10));
    }
    // A backlog: the follower starts 4 s into the demo, reads what is
    // there at `view`'s pace and shows it as it goes.
    while start.elapsed() < Duration::from_secs(4) {
        assert!(demo.try_wait().unwrap().is_none(), "the demo ended early");
        std::thread::sleep(Duration::from_millis(20));
    }
    let follower = Follower::start(&dir);
    // The first events, while the demo still runs.
    let mut shown_while_running = false;
    while demo.try_wait().unwrap().is_none() {
        if follower.shown() > 0 {
            shown_while_running = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(demo.wait().unwrap().success());
    assert!(shown_while_running, "no event shown before the demo ended");
    // Then all of them (the last ones a second after the streams go quiet).
    let lines = follower.finish(count_lines(&dir) as usize);
    // The same events as `view` of the finished trace.
    let o = bin()
        .args(["view", dir.to_str().unwrap()])
        .env("TZ", "UTC")
        .output()
        .unwrap();
    let mut after: Vec<String> = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| l.split_once(") ").map_or(l, |x| x.1).to_owned())
        .collect();
    let mut live: Vec<String> = lines
        .iter()
        .map(|l| l.split_once(") ").map_or(l.as_str(), |x| x.1).to_owned())
        .collect();
    after.sort();
    live.sort();
    assert_eq!(live, after);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The whole packets of a stream file, in order.
fn packets(bytes: &[u8]) -> Vec<&[u8]> {
    let mut v = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let (_, _, pc) = ctf::layout::read_packet_context(&bytes[at..]).unwrap();
        let len = (pc.packet_size / 8) as usize;
        assert!(len > 0 && at + len <= bytes.len());
        v.push(&bytes[at..at + len]);
        at += len;
    }
    v
}

/// Appends `packets` to the file at `path`.
fn append(path: &std::path::Path, packets: &[&[u8]]) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    std::io::Write::write_all(&mut f, &packets.concat()).unwrap();
}

/// Every stream of a trace stalls for 2 s (as when the consumer that
/// writes them all blocked in one write), then the first stream's
/// backlog arrives and the others' 0.7 s later: streams that wrote nothing
/// during the stall are not taken for quiet ones (whose events may come
/// after newer ones), the lines stay in time order. The stall starts once
/// the follower has shown a line (it has read what came before: a debug
/// build reading hundreds of thousands of events on a loaded machine took
/// longer than a fixed wait, and failed the test). The demo's buffers are
/// per thread: per CPU, a loaded machine that ran all its threads on one
/// CPU left one stream (the test failed, niced, beside a full test run).
#[test]
fn a_stall_of_the_whole_trace_keeps_the_lines_in_order() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let src = tmp("follow-stall-src");
    let _ = std::fs::remove_dir_all(&src);
    let o = run(&[
        "demo",
        "-o",
        src.to_str().unwrap(),
        "--seconds",
        "3",
        "--per-thread",
    ]);
    assert!(o.ok, "{}", o.stderr);
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&src)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("demo_"))
        .map(|n| (n.clone(), std::fs::read(src.join(&n)).unwrap()))
        .collect();
    files.sort();
    // Every stream is copied (the expected count is the whole trace's);
    // two at least have packets on both sides of the stall.
    let split_ones = files.iter().filter(|(_, b)| packets(b).len() >= 6).count();
    assert!(split_ones >= 2, "two streams with packets to split");
    let live = tmp("follow-stall");
    let _ = std::fs::remove_dir_all(&live);
    std::fs::create_dir_all(&live).unwrap();
    // The trace's program is this test (it writes the files): a follower
    // that saw its program ended would print everything at once.
    std::fs::write(live.join("metadata"), as_if_written_here(&src)).unwrap();
    // Half of each stream's packets before the stall (a stream of one
    // packet, the main thread's timer ticks, wholly: every stream file
    // exists before the stall, as the test's subject is streams that stop
    // writing, not new ones).
    let split = |b: &[u8]| match packets(b).len() {
        n @ 0..=1 => n,
        n => n / 2,
    };
    for (n, b) in &files {
        append(&live.join(n), &packets(b)[..split(b)]);
    }
    let follower = Follower::start(&live);
    let until = Instant::now() + Duration::from_secs(60);
    while follower.shown() == 0 {
        assert!(Instant::now() < until, "nothing shown of the first half");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(2000));
    for (i, (n, b)) in files.iter().enumerate() {
        if i == 1 {
            std::thread::sleep(Duration::from_millis(700));
        }
        append(&live.join(n), &packets(b)[split(b)..]);
    }
    follower.finish(count_lines(&src) as usize);
    let _ = std::fs::remove_dir_all(&src);
    let _ = std::fs::remove_dir_all(&live);
}

/// The metadata of the trace at `dir`, its `env` naming this process as
/// the one that wrote it.
fn as_if_written_here(dir: &std::path::Path) -> String {
    let meta = std::fs::read_to_string(dir.join("metadata")).unwrap();
    let comm = std::fs::read_to_string("/proc/self/comm").unwrap();
    let mut out = String::new();
    for l in meta.lines() {
        let t = l.trim_start();
        if t.starts_with("vpid = ") {
            out += &format!("\tvpid = {};\n", std::process::id());
        } else if t.starts_with("procname = ") {
            out += &format!("\tprocname = \"{}\";\n", comm.trim_end());
        } else {
            out += l;
            out.push('\n');
        }
    }
    assert!(out.contains(&format!("vpid = {};", std::process::id())));
    out
}

/// `view --follow DIR` until it says on stderr that it waits (two minutes
/// at most: then it is stopped, and the empty line fails the caller's
/// check): the lines it printed, and what it said.
fn follow_until_it_waits(dir: &std::path::Path) -> (Vec<String>, String) {
    let mut view = Command::new(env!("CARGO_BIN_EXE_ringtrace"))
        .args(["view", "--follow", dir.to_str().unwrap()])
        .env("TZ", "UTC")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = view.id() as libc::pid_t;
    let (done, watch) = std::sync::mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        if watch.recv_timeout(Duration::from_secs(120)).is_err() {
            // SAFETY: kill with the pid of a child not yet waited for.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    });
    let out = view.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        BufReader::new(out)
            .lines()
            .map(Result::unwrap)
            .collect::<Vec<_>>()
    });
    let mut said = String::new();
    let _ = BufReader::new(view.stderr.take().unwrap()).read_line(&mut said);
    let _ = done.send(());
    watchdog.join().unwrap();
    let _ = view.kill();
    let _ = view.wait();
    (reader.join().unwrap(), said)
}

/// A finished trace (its program ended): every event is shown at once,
/// in time order, and stderr says that everything was shown and that the
/// follower waits for more.
#[test]
fn a_finished_trace_is_shown_whole_and_the_follower_says_it_waits() {
    let dir = demo_trace();
    let total = count_events(dir) as usize;
    let (lines, said) = follow_until_it_waits(dir);
    assert_eq!(
        said.trim_end(),
        format!(
            "ringtrace view: all {total} events so far shown (the program that wrote the trace \
             has ended); waiting for more (Ctrl-C to stop)"
        )
    );
    // Everything was printed before stderr said so (the events, and a
    // line per gap if the demo lost records).
    assert_eq!(lines.len(), count_lines(dir) as usize);
    let o = bin()
        .args(["view", dir.to_str().unwrap()])
        .env("TZ", "UTC")
        .output()
        .unwrap();
    let whole: Vec<&str> = std::str::from_utf8(&o.stdout).unwrap().lines().collect();
    assert_eq!(lines, whole, "the same lines as view, in the same order");
}

/// A trace whose program still runs and that has not grown for 5 s: what
/// was held back is shown, and stderr says the follower waits.
#[test]
fn a_trace_that_stopped_growing_is_shown_whole_after_five_seconds() {
    let src = demo_trace();
    let live = tmp("follow-still");
    let _ = std::fs::remove_dir_all(&live);
    std::fs::create_dir_all(&live).unwrap();
    for e in std::fs::read_dir(src).unwrap().flatten() {
        if e.file_name() != "metadata" {
            std::fs::copy(e.path(), live.join(e.file_name())).unwrap();
        }
    }
    std::fs::write(live.join("metadata"), as_if_written_here(src)).unwrap();
    let total = count_events(src) as usize;
    let (lines, said) = follow_until_it_waits(&live);
    assert_eq!(lines.len(), count_lines(src) as usize);
    assert!(
        said.starts_with(&format!(
            "ringtrace view: all {total} events so far shown (the trace has not grown for "
        )),
        "{said}"
    );
    let _ = std::fs::remove_dir_all(&live);
}

#[test]
fn follow_refuses_what_needs_the_whole_trace() {
    let o = run(&[
        "view",
        demo_trace().to_str().unwrap(),
        "--follow",
        "--limit",
        "5",
    ]);
    assert!(!o.ok);
    assert!(
        o.stderr.contains("--limit does not go with --follow"),
        "{}",
        o.stderr
    );
}
