//! `ringtrace export`: the Chrome JSON and Perfetto files of the demo
//! trace read back by real consumers (Python's json module; Perfetto's
//! generated protos): every event there, on
//! the thread that recorded it, slices paired, strings interned once.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::*;

/// Runs a Python checker on `file`; it must succeed and print numbers.
fn python_check(python: &Path, script: &str, files: &[&Path]) -> (String, Vec<u64>) {
    let py = Command::new(python)
        .arg("-c")
        .arg(script)
        .args(files)
        .output()
        .unwrap();
    assert!(
        py.status.success(),
        "{} ({}: bash scripts/setup.sh installs what the checkers need)",
        String::from_utf8_lossy(&py.stderr),
        python.display()
    );
    let s = String::from_utf8(py.stdout).unwrap();
    let nums = s.split_whitespace().map(|x| x.parse().unwrap()).collect();
    (s, nums)
}

/// Exports the demo trace in `format` to a scratch file named `name`.
fn export_demo(format: &str, name: &str) -> PathBuf {
    let out = tmp(name);
    let o = run(&[
        "export",
        demo_trace().to_str().unwrap(),
        "--format",
        format,
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.ok, "{}", o.stderr);
    out
}

#[test]
fn chrome_json_export_is_valid_and_pairs_begin_end() {
    let out = export_demo("chrome-json", "export.json");
    assert_eq!(
        std::fs::metadata(&out).unwrap().permissions().mode() & 0o777,
        0o600
    );
    // A real consumer: Python's json module, then structural checks.
    let script = r#"
import json, sys, collections
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
assert d["displayTimeUnit"] == "ns"
phases = collections.Counter(e["ph"] for e in ev)
open_ = {}
for e in ev:
    assert "pid" in e and "name" in e, e
    if e["ph"] == "M":
        continue
    assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0, e
    assert "tid" in e and isinstance(e["args"], dict), e
    if e["ph"] == "b":
        open_[(e["cat"], e["name"], e["id"])] = e["ts"]
    if e["ph"] == "e":
        k = (e["cat"], e["name"], e["id"])
        assert k in open_ and open_.pop(k) <= e["ts"], e
    if e["ph"] == "i":
        assert e["s"] == "t"
# Threads: each event on the thread that recorded it, named as the demo
# names it; the producer records every enqueue.
names = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
for e in ev:
    if e["ph"] != "M":
        assert (e["pid"], e["tid"]) in names, e
    if e["name"] == "enqueue":
        assert names[(e["pid"], e["tid"])] == "producer", e
workers = sum(1 for n in names.values() if n.startswith("worker-"))
assert workers >= 1 and "producer" in names.values(), names
print(sum(1 for e in ev if e["ph"] != "M"), phases["b"], phases["e"], len(open_), workers)
"#;
    let (s, nums) = python_check(Path::new("python3"), script, &[&out]);
    assert_eq!(nums[0], count_events(demo_trace()), "every event exported");
    assert_eq!(nums[4], 3, "the demo's 3 workers each a thread: {s}");
    assert!(
        nums[1] > 0 && nums[1] == nums[2] + nums[3],
        "request_begin/end pairs: {s}"
    );
}

/// The Perfetto export parsed back by Perfetto's own generated protos
/// (`perfetto_trace_pb2` of the `perfetto` PyPI package, in the checkers'
/// environment that scripts/setup.sh makes; trace_processor is not
/// packaged for Debian). Tracks are declared before use, every string is
/// given once before its first use, timestamps rebuilt from the
/// incremental clock never go back and equal the Chrome export's, slices
/// pair up on every track, every event is there; the bytes each event
/// costs beyond its fields are counted.
#[test]
fn perfetto_export_parses_with_the_perfetto_protos() {
    let out = export_demo("perfetto", "export.pftrace");
    let chrome = export_demo("chrome-json", "export-for-perfetto.json");
    let script = r#"
import sys, collections, json
from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import Trace
def vlen(n):
    return (n.bit_length() + 6) // 7 or 1
t = Trace()
t.ParseFromString(open(sys.argv[1], "rb").read())
p0 = t.packet[0]
assert p0.sequence_flags == 1 and p0.track_descriptor.process.pid > 0, p0
# Timestamps on the sequence's incremental clock (64) unless a packet names
# a builtin one; a clock snapshot anchors it to BOOTTIME (6).
assert p0.trace_packet_defaults.timestamp_clock_id == 64, p0
tracks, depth, last, events, now = set(), collections.Counter(), 0, 0, None
pid, thread_of = p0.track_descriptor.process.pid, {}
# Interned strings, each given once, before (or with) its first use.
cats, names, anns, strs = {}, {}, {}, {}
times, framing, paths = [], 0, collections.Counter()
for p in t.packet:
    assert p.trusted_packet_sequence_id == 1
    for table, given in ((cats, p.interned_data.event_categories), (names, p.interned_data.event_names),
                         (anns, p.interned_data.debug_annotation_names)):
        for i in given:
            assert i.iid not in table and i.name not in table.values(), i
            table[i.iid] = i.name
    for i in p.interned_data.debug_annotation_string_values:
        assert i.iid not in strs and i.str.decode() not in strs.values(), i
        strs[i.iid] = i.str.decode()
    if p.HasField("clock_snapshot"):
        c = {c.clock_id: c for c in p.clock_snapshot.clocks}
        assert c[64].is_incremental and not c[6].is_incremental, p
        assert c[64].timestamp == c[6].timestamp == p.timestamp and p.timestamp_clock_id == 6, p
        now = c[64].timestamp
    if p.HasField("track_descriptor"):
        d = p.track_descriptor
        tracks.add(d.uuid)
        if d.HasField("thread"):
            assert d.thread.pid == pid and d.thread.tid > 0 and d.thread.thread_name == d.name, d
            thread_of[d.uuid] = d.thread.thread_name
        continue
    if not p.HasField("track_event"):
        continue
    e = p.track_event
    assert e.track_uuid in tracks, e
    assert p.sequence_flags & 2, "a packet using interned data says so"
    name = names.get(e.name_iid)
    if name == "enqueue":
        assert thread_of.get(e.track_uuid) == "producer", e
    if p.HasField("timestamp_clock_id"):
        assert p.timestamp_clock_id == 6, p
        ts = p.timestamp
    else:
        assert now is not None, "a delta before the clock snapshot"
        now += p.timestamp
        ts = now
    assert ts >= last
    last = ts
    times.append(ts)
    assert all(a.name_iid in anns for a in e.debug_annotations), e
    for a in e.debug_annotations:
        assert not a.HasField("string_value_iid") or a.string_value_iid in strs, a
        if anns[a.name_iid] == "path":
            paths[strs[a.string_value_iid]] += 1
    # A slice's end names nothing (its begin does).
    assert e.type == 2 or (name and len(e.category_iids) == 1 and e.category_iids[0] in cats), e
    if e.type == 1:
        depth[e.track_uuid] += 1
    elif e.type == 2:
        depth[e.track_uuid] -= 1
        assert depth[e.track_uuid] >= 0, "end without begin"
    else:
        assert e.type == 3
    events += 1
    size = p.ByteSize()
    framing += 1 + vlen(size) + size - sum(1 + vlen(a.ByteSize()) + a.ByteSize() for a in e.debug_annotations)
assert sum(1 for n in thread_of.values() if n.startswith("worker-")) == 3, thread_of
# The same instants as the Chrome export's (microseconds since its first).
chrome = [e["ts"] for e in json.load(open(sys.argv[2]))["traceEvents"] if e["ph"] != "M"]
assert len(chrome) == len(times), (len(chrome), len(times))
bad = [(c, ts) for c, ts in zip(chrome, times) if round(c * 1000) != ts - times[0]]
assert not bad, bad[:5]
# The demo's paths, each string given once.
assert set(paths) == {"/", "/index.html", "/api/v1/users", "/api/v1/orders", "/static/app.js", "/healthz"}, paths
print(events, len(tracks), sum(depth.values()), framing, len(strs))
"#;
    let (s, nums) = python_check(&perfetto_python(), script, &[&out, &chrome]);
    assert_eq!(
        nums[0],
        count_events(demo_trace()),
        "every event exported: {s}"
    );
    assert!(nums[1] >= 3, "process, cpu and lane tracks: {s}");
    assert!(
        nums[2] <= 8,
        "at most the requests in flight at the end stay open: {s}"
    );
    // What an event costs beyond its fields (packet, sequence, flags, time
    // delta, type, track, interned name and category): about 18 bytes on
    // the demo (an absolute time and names in full took 56 before).
    let framing = nums[3] as f64 / nums[0] as f64;
    assert!(
        framing <= 24.0,
        "{framing:.1} bytes per event beyond its fields: {s}"
    );
    // Whole file: about 41 bytes per event (81 before interning, 51 with
    // names interned, absolute times and strings in full).
    let per_event = std::fs::metadata(&out).unwrap().len() as f64 / nums[0] as f64;
    assert!(per_event < 46.0, "{per_event:.1} bytes per event");
}
