//! `ringtrace recover` and `record --buffer-dir`: the trace of a killed
//! process rebuilt from its buffer files.

mod common;
use common::*;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `ringtrace recover`: the demo, traced through the environment into a
/// flight recorder whose buffers are files, is killed with SIGKILL; the
/// trace is rebuilt from its buffer directory, reads back in babeltrace2,
/// and damaged or missing input gets a clear error without losing the
/// buffers that are intact.
#[test]
fn recover_rebuilds_the_trace_of_a_killed_process() {
    let buf = tmp("recover-bufs");
    let inner = tmp("recover-inner");
    let mut c = demo_command(&assert_cmd::cargo::cargo_bin("ringtrace"), &inner, &[]);
    c.env(
        "RINGTRACE_SESSION",
        format!(
            "{},flight-recorder,per-cpu,subbuf=64k,count=4,bufdir={},demo:*",
            tmp("recover-unused").display(),
            buf.display()
        ),
    );
    let mut traced = Traced(c.spawn().unwrap());
    let t = Instant::now();
    wait_until_recorded(&buf, &inner, t);
    // SAFETY: kill with a valid pid and signal.
    unsafe { libc::kill(traced.0.id() as i32, libc::SIGKILL) };
    traced.0.wait().unwrap();
    let out = tmp("recover-out");
    let o = run(&[
        "recover",
        buf.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.ok, "{}{}", o.stdout, o.stderr);
    assert!(o.stdout.starts_with("buffer file"), "{}", o.stdout);
    let events: u64 = o
        .stdout
        .lines()
        .find_map(|l| l.split(" (").nth(1))
        .and_then(|r| r.split_whitespace().next())
        .unwrap()
        .parse()
        .unwrap();
    assert!(events > 0, "{}", o.stdout);
    assert_eq!(events, count_events(&out));
    if babeltrace2_present() {
        let bt = Command::new("babeltrace2").arg(&out).output().unwrap();
        assert!(
            bt.status.success(),
            "{}",
            String::from_utf8_lossy(&bt.stderr)
        );
        assert_eq!(
            bt.stdout
                .split(|&b| b == b'\n')
                .filter(|l| !l.is_empty())
                .count() as u64,
            events
        );
    }
    // The same output again: refused, the first trace kept.
    let o = run(&[
        "recover",
        buf.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(
        !o.ok && o.stderr.contains("already holds a trace"),
        "{}",
        o.stderr
    );
    // A damaged buffer file is named; the others are recovered.
    let damaged = tmp("recover-damaged");
    std::fs::create_dir_all(&damaged).unwrap();
    let mut files: Vec<_> = std::fs::read_dir(&buf)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    for f in &files {
        std::fs::copy(f, damaged.join(f.file_name().unwrap())).unwrap();
    }
    let victim = files
        .iter()
        .find(|f| f.file_name().unwrap() != "metadata")
        .unwrap();
    let name = victim.file_name().unwrap().to_str().unwrap();
    let mut bytes = std::fs::read(victim).unwrap();
    bytes[0] = b'X';
    std::fs::write(damaged.join(name), &bytes).unwrap();
    let out2 = tmp("recover-out2");
    let o = run(&[
        "recover",
        damaged.to_str().unwrap(),
        "-o",
        out2.to_str().unwrap(),
    ]);
    assert!(!o.ok, "{}", o.stdout);
    assert!(
        o.stdout
            .lines()
            .any(|l| l.starts_with(name) && l.contains("offset 0: not a ringtrace buffer file")),
        "{}",
        o.stdout
    );
    assert!(
        o.stderr.contains("some buffer files could not be read"),
        "{}",
        o.stderr
    );
    assert!(count_events(&out2) <= events);
    // Missing input.
    let o = run(&[
        "recover",
        "/nonexistent/bufs",
        "-o",
        tmp("recover-x").to_str().unwrap(),
    ]);
    assert!(
        !o.ok && o.stderr.contains("/nonexistent/bufs/metadata"),
        "{}",
        o.stderr
    );
    for d in [&buf, &inner, &out, &damaged, &out2] {
        let _ = std::fs::remove_dir_all(d);
    }
}

/// `ringtrace record --buffer-dir`: when the program is killed before it
/// completes its flight-recorder trace, record rebuilds it from the buffers.
#[test]
fn record_recovers_a_killed_program() {
    let buf = tmp("record-kill-bufs");
    let out = tmp("record-kill-out");
    let inner = tmp("record-kill-inner");
    let me = assert_cmd::cargo::cargo_bin("ringtrace");
    let rec = Command::new(&me)
        .args([
            "record",
            "-o",
            out.to_str().unwrap(),
            "--mode",
            "flight-recorder",
        ])
        .args(["--buffer-dir", buf.to_str().unwrap(), "-e", "demo:*", "--"])
        .arg(&me)
        .args([
            "demo",
            "-o",
            inner.to_str().unwrap(),
            "--seconds",
            "20",
            "--show",
            "0",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    wait_until_recorded(&buf, &inner, t);
    let children =
        std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", rec.id())).unwrap();
    let pid: i32 = children.split_whitespace().next().unwrap().parse().unwrap();
    // SAFETY: kill with a valid pid and signal.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let o = rec.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success(),
        "the program was killed: record says so"
    );
    let sub = &ctf::read::find_traces(&buf).unwrap()[0];
    assert!(
        stderr.contains(&format!("from {}", sub.display())),
        "{stderr}"
    );
    // Into the sub-trace of the same name under the output folder.
    let name = sub.file_name().unwrap();
    assert!(out.join(name).join("metadata").is_file(), "{stderr}");
    let events = count_events(&out);
    assert!(events > 0);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains(&format!("{events}")), "{stdout}");
    for d in [&buf, &out, &inner] {
        let _ = std::fs::remove_dir_all(d);
    }
}

/// Whether a trace folder holds a stream file with bytes in it.
fn has_stream_data(dir: &std::path::Path) -> bool {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return false;
    };
    rd.flatten().any(|e| {
        let md = e.metadata();
        if md.as_ref().is_ok_and(|m| m.is_dir()) {
            return has_stream_data(&e.path());
        }
        e.file_name() != "metadata" && md.is_ok_and(|m| m.is_file() && m.len() > 0)
    })
}

/// Waits until the demo under test has its buffers (a folder of its own
/// under `buf`) and has recorded: its own session's trace (`inner`,
/// written every quarter second) has events, which the session in `buf`
/// recorded too. Killed before that (a slow start, a starved CPU), it
/// would leave buffers with no event. Fails 60 s after `t`.
fn wait_until_recorded(buf: &std::path::Path, inner: &std::path::Path, t: Instant) {
    let has_buffers = || ctf::read::find_traces(buf).is_ok_and(|t| t.len() == 1);
    while !has_buffers() || !has_stream_data(inner) {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "within 60 s: buffer directory {}, events in {}",
            has_buffers(),
            has_stream_data(inner)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
