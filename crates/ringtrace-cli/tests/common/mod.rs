//! Helpers shared by the command's test files: the built binary, scratch
//! directories, a run that fails on a panic, and one demo trace shared by
//! the reading tests of a test binary.
#![allow(dead_code)]

pub mod kernel;
pub mod lttng;
pub mod relayd;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use assert_cmd::cargo::CommandCargoExt;

pub fn bin() -> Command {
    Command::cargo_bin("ringtrace").unwrap()
}

pub fn tmp(name: &str) -> PathBuf {
    scratch::path("ringtrace-cli", name)
}

pub struct Out {
    pub ok: bool,
    pub stdout: String,
    pub stderr: String,
}

pub fn run(args: &[&str]) -> Out {
    let o = bin().args(args).output().unwrap();
    let out = Out {
        ok: o.status.success(),
        stdout: String::from_utf8_lossy(&o.stdout).into(),
        stderr: String::from_utf8_lossy(&o.stderr).into(),
    };
    assert!(!out.stderr.contains("panicked"), "panic: {}", out.stderr);
    out
}

/// The Python of the checkers' environment (scripts/setup.sh makes it in
/// the workspace's `target/python`, with Perfetto's generated protos).
pub fn perfetto_python() -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/python/bin/python");
    assert!(
        p.exists(),
        "{} is missing: run `bash scripts/setup.sh`, which makes the checkers' Python environment",
        p.display()
    );
    p
}

/// One demo trace shared by the reading tests.
pub fn demo_trace() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = tmp("demo");
        let o = run(&[
            "demo",
            "-o",
            d.to_str().unwrap(),
            "--seconds",
            "0.3",
            "--show",
            "5",
        ]);
        assert!(o.ok, "{}", o.stderr);
        assert!(o.stdout.contains("events recorded"), "{}", o.stdout);
        assert!(o.stdout.contains("first 5 events"), "{}", o.stdout);
        d
    })
}

/// Events in a trace, counted by our reader.
pub fn count_events(dir: &Path) -> u64 {
    let t = ctf::read::Trace::open(dir).unwrap();
    ctf::merge::Merger::new(&t)
        .filter(|i| matches!(i, Ok((_, ctf::read::Item::Event(_)))))
        .count() as u64
}

/// The event lines of `view`'s output, without the line it prints for
/// each gap of discarded events.
pub fn event_lines(out: &str) -> impl Iterator<Item = &str> {
    out.lines().filter(|l| !l.contains(" [lost on cpu "))
}

/// The lines `view` prints of the trace in `dir`: one per event and one
/// per gap of discarded events (a demo on a busy machine may lose some,
/// counted and shown).
pub fn count_lines(dir: &Path) -> u64 {
    let t = ctf::read::Trace::open(dir).unwrap();
    ctf::merge::Merger::new(&t).filter(|i| i.is_ok()).count() as u64
}

pub fn copy_trace(from: &Path, name: &str) -> PathBuf {
    let to = tmp(name);
    std::fs::create_dir_all(&to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
    to
}

/// A scratch path (not created, and what was there left alone).
pub fn tmp_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("ringtrace-cli-{}-{name}", std::process::id()))
}

/// A long-running traced process: `exe demo` writing to `dir` for 20 s,
/// with `extra` arguments, output discarded.
pub fn demo_command(exe: &Path, dir: &Path, extra: &[&str]) -> Command {
    let mut c = Command::new(exe);
    c.args([
        "demo",
        "-o",
        dir.to_str().unwrap(),
        "--seconds",
        "20",
        "--show",
        "0",
    ])
    .args(extra)
    .stdout(Stdio::null());
    c
}

/// `ringtrace demo` writing to `dir` (see [`demo_command`]), started and
/// listening on its control socket: its pid, and the process, killed on
/// drop.
pub fn traced_demo(dir: &Path, extra: &[&str]) -> (u32, Traced) {
    let child = demo_command(&assert_cmd::cargo::cargo_bin("ringtrace"), dir, extra)
        .spawn()
        .unwrap();
    let pid = child.id();
    let traced = Traced(child);
    wait_for_socket(pid, &[]);
    (pid, traced)
}

/// A running demo process with its pid, killed on drop.
pub struct Traced(pub std::process::Child);

impl Drop for Traced {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn wait_for_socket(pid: u32, list_env: &[(&str, &str)]) {
    let t = Instant::now();
    loop {
        let o = bin()
            .args(["ctl", "list"])
            .envs(list_env.iter().copied())
            .output()
            .unwrap();
        if String::from_utf8_lossy(&o.stdout)
            .lines()
            .any(|l| l.split_whitespace().next() == Some(&pid.to_string()))
        {
            return;
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "process {pid} never listed; `ctl list` said {:?} {:?}; the process: {}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr),
            process_state(pid)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// What a process is doing, for a failure message: each thread's name,
/// state and kernel wait channel (a hang shows where), or that it is gone.
pub fn process_state(pid: u32) -> String {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return "gone".into();
    };
    tasks
        .flatten()
        .map(|t| {
            let read = |f: &str| {
                std::fs::read_to_string(t.path().join(f))
                    .unwrap_or_default()
                    .trim()
                    .to_string()
            };
            let stat = read("stat");
            // The state letter follows the parenthesized name.
            let state = stat.rsplit(") ").next().and_then(|r| r.split(' ').next());
            format!(
                "{} {} {}",
                read("comm"),
                state.unwrap_or("?"),
                read("wchan")
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Whether `tool` is on the PATH; under the test command (`CI` or
/// `RINGTRACE_REQUIRE_TOOLS` set) its absence fails the test instead.
/// `package` names the Debian package that brings it.
pub fn tool_present(tool: &str, package: &str) -> bool {
    let ok = std::env::var_os("PATH").is_some_and(|p| {
        std::env::split_paths(&p).any(|d| {
            std::fs::metadata(d.join(tool)).is_ok_and(|m| {
                use std::os::unix::fs::PermissionsExt;
                m.is_file() && m.permissions().mode() & 0o111 != 0
            })
        })
    });
    if !ok
        && ["CI", "RINGTRACE_REQUIRE_TOOLS"]
            .iter()
            .any(|v| std::env::var_os(v).is_some())
    {
        panic!("{tool} is required: CI or RINGTRACE_REQUIRE_TOOLS is set (scripts/setup.sh installs {package})");
    }
    if !ok {
        eprintln!("SKIPPED: {tool} not found (apt-get install {package})");
    }
    ok
}

/// Whether babeltrace2 can be run (see [`tool_present`]).
pub fn babeltrace2_present() -> bool {
    tool_present("babeltrace2", "babeltrace2")
}

/// Runs `babeltrace2` and `ringtrace view --format babeltrace` on `trace`
/// (both in UTC) and checks that they print the same lines: the
/// timestamps and deltas in the same order, and at each timestamp the
/// same events (two events of one nanosecond from different streams may
/// come in either order). Returns the number of lines and babeltrace2's
/// stderr (its warnings of discarded events).
pub fn same_as_babeltrace2(trace: &Path) -> (usize, String) {
    let bt = Command::new("babeltrace2")
        .arg(trace)
        .env("TZ", "UTC")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&bt.stderr).to_string();
    assert!(bt.status.success(), "babeltrace2: {stderr}");
    let ours = bin()
        .args(["view", "--format", "babeltrace"])
        .arg(trace)
        .env("TZ", "UTC")
        .output()
        .unwrap();
    assert!(
        ours.status.success(),
        "{}",
        String::from_utf8_lossy(&ours.stderr)
    );
    let theirs = String::from_utf8(bt.stdout).unwrap();
    let ours = String::from_utf8(ours.stdout).unwrap();
    let (a, b): (Vec<&str>, Vec<&str>) = (ours.lines().collect(), theirs.lines().collect());
    assert_eq!(a.len(), b.len(), "lines of {}", trace.display());
    if a == b {
        return (a.len(), stderr);
    }
    // "[time] (+delta) rest": the prefixes in order, the rests per time.
    let split = |l: &str| {
        let at = l.find(") ").map_or(0, |i| i + 2);
        (l[..at].to_string(), l[at..].to_string())
    };
    let (pa, pb): (Vec<_>, Vec<_>) = (
        a.iter().map(|l| split(l)).collect(),
        b.iter().map(|l| split(l)).collect(),
    );
    let mut k = 0;
    while k < pa.len() {
        assert_eq!(pa[k].0, pb[k].0, "line {} of {}", k + 1, trace.display());
        let time = &pa[k].0[..pa[k].0.find(']').unwrap_or(0)];
        let mut end = k;
        while end < pa.len() && pa[end].0.starts_with(time) {
            end += 1;
        }
        let mut ga: Vec<&String> = pa[k..end].iter().map(|p| &p.1).collect();
        let mut gb: Vec<&String> = pb[k..end].iter().map(|p| &p.1).collect();
        ga.sort();
        gb.sort();
        assert_eq!(ga, gb, "lines {}-{} of {}", k + 1, end, trace.display());
        k = end;
    }
    (a.len(), stderr)
}

/// Rewrites `trace` with babeltrace2's `sink.ctf.fs` into `out` (emptied
/// first), as a user converting a trace would: its own packet header,
/// packet context and event header layouts (`struct { uint64 id; uint64
/// timestamp; }`), its own field declarations.
pub fn rewrite_with_babeltrace2(trace: &Path, out: &Path) {
    let _ = std::fs::remove_dir_all(out);
    let o = Command::new("babeltrace2")
        .arg("convert")
        .arg(trace)
        .args(["--component", "sink.ctf.fs", "--params"])
        .arg(format!("path=\"{}\"", out.display()))
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "babeltrace2 sink.ctf.fs: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}
