//! Building and running the C and C++ example programs, and reading
//! their traces back, for the C API's end-to-end tests.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::cc::*;
use super::*;

/// Compiles one of `examples/` with warnings as errors; returns the
/// executable.
pub fn build(compiler: &str, source: &str, std: &str, link: Link, dir: &Path) -> PathBuf {
    compile(
        compiler,
        &crate_dir().join("examples").join(source),
        std,
        link,
        dir,
    )
}

/// Writes `text` to `dir/<name>.c` and compiles it (C11, shared library).
pub fn build_inline(cc: &str, dir: &Path, name: &str, text: &str) -> PathBuf {
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, text).unwrap();
    compile(cc, &src, "-std=c11", Link::Shared, dir)
}

pub fn run(exe: &Path, args: &[&Path], env: Option<String>) -> Output {
    let mut cmd = Command::new(exe);
    // No LD_LIBRARY_PATH: ringtrace.pc links with a run path.
    cmd.args(args)
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("RINGTRACE_SESSION");
    if let Some(v) = env {
        cmd.env("RINGTRACE_SESSION", v);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{} failed: {out:?}", exe.display());
    out
}

/// The event lines babeltrace2 prints for `trace` (it must succeed and
/// report no discarded events), without timestamp and host prefix.
pub fn bt2_events(trace: &Path) -> Vec<String> {
    let out = Command::new("babeltrace2")
        .args(["--clock-cycles", "--no-delta"])
        .arg(trace)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "babeltrace2: {stderr}");
    assert!(!stderr.contains("discarded"), "{stderr}");
    // Timestamps never go back within a stream (the tracer's guarantee).
    // Across streams babeltrace2 orders by nanoseconds, so at a TSC of more
    // than 1 GHz two events of one nanosecond may print their cycles in
    // either order: the merged view is not checked in cycles.
    let mut last_ts = std::collections::HashMap::<String, u64>::new();
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let ts: u64 = l[1..l.find(']').unwrap()].parse().unwrap();
            // "[ts] host:proc:(pid) prov:name: { cpu_id = N }, { fields }"
            let at = l.find(") ").unwrap() + 2;
            let rest = &l[at..];
            let ctx_end = rest.find("}, ").unwrap();
            let stream = &rest[rest.find("{ cpu_id").unwrap()..ctx_end];
            let last = last_ts.entry(stream.to_string()).or_default();
            assert!(ts >= *last, "timestamps go back in {stream} at {l}");
            *last = ts;
            let name = &rest[..rest.find(": ").unwrap()];
            // The event context (process and thread ids, on by default):
            // the process babeltrace2 names from the trace's env block.
            let pid = &l[l.find(":(").unwrap() + 2..at - 2];
            let fields = &rest[ctx_end + 3..];
            let want = format!("{{ vpid = {pid}, vtid = ");
            assert!(fields.starts_with(&want), "no context in {l}");
            let tid_end = fields.find(" }, ").unwrap();
            let tid: i32 = fields[want.len()..tid_end].parse().unwrap();
            assert!(tid > 0, "{l}");
            format!("{name} {}", &fields[tid_end + 4..])
        })
        .collect()
}

/// The exact payload `requests.c` records for request `id` of thread `t`
/// (the i-th of that thread).
pub fn request_line(t: u64, i: u64) -> String {
    let id = t * 1_000_000 + i;
    let path = ["/index", "/api/v1/items", "/health"][(id % 3) as usize];
    let ms = i as f64 * 0.5;
    let ok = if id.is_multiple_of(2) {
        "( \"true\" : container = 1 )"
    } else {
        "( \"false\" : container = 0 )"
    };
    format!(
        "capp:request {{ id = {id}, delta = {delta}, path = \"{path}\", ms = {ms}, ok = {ok}, \
         _digest_length = 4, digest = [ [0] = 0x{d0:X}, [1] = 0xAB, [2] = 0xCD, [3] = 0xEF ], \
         small = {small}, big = {big}, ratio = 0.25, port = 8080, tiny = -1, mid = -300, thread = {t} }}",
        delta = -(i as i64),
        d0 = id as u8,
        small = i as u8,
        big = i64::MIN + i as i64,
    )
}

/// Checks a trace of `requests.c`: every request exactly once with its
/// values, in per-thread order; `extra` are the other events expected.
pub fn check_requests(trace: &Path, extra: &[&str]) {
    let lines = bt2_events(trace);
    let mut next = [0u64; 2];
    let mut others = Vec::new();
    for l in &lines {
        if let Some(t) = l.split("thread = ").nth(1) {
            let t: u64 = t.trim_end_matches(" }").parse().unwrap();
            let i = next[t as usize - 1];
            assert_eq!(*l, request_line(t, i));
            next[t as usize - 1] += 1;
        } else {
            others.push(l.as_str());
        }
    }
    assert_eq!(next, [1000, 1000], "requests per thread");
    assert_eq!(others, extra);
}
