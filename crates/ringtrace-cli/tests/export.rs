//! `ringtrace export`: the Chrome JSON and Perfetto files of the demo
//! trace read back by real consumers (Python's json module; Google's
//! protobuf runtime with Perfetto's field numbers): every event there, on
//! the thread that recorded it, slices paired, strings interned once.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::*;

/// Runs a Python checker on `file`; it must succeed and print numbers.
fn python_check(python: &str, script: &str, file: &Path) -> (String, Vec<u64>) {
    let py = Command::new(python)
        .args(["-c", script, file.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        py.status.success(),
        "{} (Debian packages: python3, python3-protobuf)",
        String::from_utf8_lossy(&py.stderr)
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
    let (s, nums) = python_check("python3", script, &out);
    assert_eq!(nums[0], count_events(demo_trace()), "every event exported");
    assert_eq!(nums[4], 3, "the demo's 3 workers each a thread: {s}");
    assert!(
        nums[1] > 0 && nums[1] == nums[2] + nums[3],
        "request_begin/end pairs: {s}"
    );
}

/// The Perfetto export parsed back by Google's protobuf runtime (Python)
/// with Perfetto's field numbers for the messages we write; trace_processor
/// is not packaged for Debian. Tracks are declared before use, timestamps
/// never go back, slices pair up on every track, every event is there.
#[test]
fn perfetto_export_parses_with_the_perfetto_protos() {
    let out = export_demo("perfetto", "export.pftrace");
    let script = r#"
import sys, collections
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
F = descriptor_pb2.FieldDescriptorProto
O, R = F.LABEL_OPTIONAL, F.LABEL_REPEATED
fdp = descriptor_pb2.FileDescriptorProto(name="perfetto_subset.proto", package="perfetto.protos", syntax="proto2")
def msg(name, fields):
    m = fdp.message_type.add(name=name)
    for n, num, t, lab, tn in fields:
        f = m.field.add(name=n, number=num, type=t, label=lab)
        if tn:
            f.type_name = ".perfetto.protos." + tn
msg("DebugAnnotation", [("bool_value", 2, F.TYPE_BOOL, O, None), ("uint_value", 3, F.TYPE_UINT64, O, None),
    ("int_value", 4, F.TYPE_INT64, O, None), ("double_value", 5, F.TYPE_DOUBLE, O, None),
    ("string_value", 6, F.TYPE_STRING, O, None), ("name", 10, F.TYPE_STRING, O, None), ("name_iid", 1, F.TYPE_UINT64, O, None)])
msg("TrackEvent", [("debug_annotations", 4, F.TYPE_MESSAGE, R, "DebugAnnotation"), ("type", 9, F.TYPE_INT32, O, None),
    ("track_uuid", 11, F.TYPE_UINT64, O, None), ("categories", 22, F.TYPE_STRING, R, None), ("name", 23, F.TYPE_STRING, O, None),
    ("category_iids", 3, F.TYPE_UINT64, R, None), ("name_iid", 10, F.TYPE_UINT64, O, None)])
msg("Interned", [("iid", 1, F.TYPE_UINT64, O, None), ("name", 2, F.TYPE_STRING, O, None)])
msg("InternedData", [("event_categories", 1, F.TYPE_MESSAGE, R, "Interned"), ("event_names", 2, F.TYPE_MESSAGE, R, "Interned"),
    ("debug_annotation_names", 3, F.TYPE_MESSAGE, R, "Interned")])
msg("ProcessDescriptor", [("pid", 1, F.TYPE_INT32, O, None), ("process_name", 6, F.TYPE_STRING, O, None)])
msg("ThreadDescriptor", [("pid", 1, F.TYPE_INT32, O, None), ("tid", 2, F.TYPE_INT32, O, None),
    ("thread_name", 5, F.TYPE_STRING, O, None)])
msg("TrackDescriptor", [("uuid", 1, F.TYPE_UINT64, O, None), ("name", 2, F.TYPE_STRING, O, None),
    ("process", 3, F.TYPE_MESSAGE, O, "ProcessDescriptor"), ("thread", 4, F.TYPE_MESSAGE, O, "ThreadDescriptor"),
    ("parent_uuid", 5, F.TYPE_UINT64, O, None)])
msg("TracePacket", [("timestamp", 8, F.TYPE_UINT64, O, None), ("trusted_packet_sequence_id", 10, F.TYPE_UINT32, O, None),
    ("track_event", 11, F.TYPE_MESSAGE, O, "TrackEvent"), ("sequence_flags", 13, F.TYPE_UINT32, O, None),
    ("interned_data", 12, F.TYPE_MESSAGE, O, "InternedData"), ("track_descriptor", 60, F.TYPE_MESSAGE, O, "TrackDescriptor")])
msg("Trace", [("packet", 1, F.TYPE_MESSAGE, R, "TracePacket")])
pool = descriptor_pool.DescriptorPool()
pool.Add(fdp)
Trace = message_factory.MessageFactory(pool).GetPrototype(pool.FindMessageTypeByName("perfetto.protos.Trace"))
t = Trace()
t.ParseFromString(open(sys.argv[1], "rb").read())
assert t.packet[0].sequence_flags == 1 and t.packet[0].track_descriptor.process.pid > 0
tracks, depth, last, events = set(), collections.Counter(), 0, 0
pid, thread_of = t.packet[0].track_descriptor.process.pid, {}
# Interned strings, each given once, before (or with) its first use.
cats, names, anns = {}, {}, {}
for p in t.packet:
    assert p.trusted_packet_sequence_id == 1
    for table, given in ((cats, p.interned_data.event_categories), (names, p.interned_data.event_names),
                         (anns, p.interned_data.debug_annotation_names)):
        for i in given:
            assert i.iid not in table and i.name not in table.values(), i
            table[i.iid] = i.name
    if p.HasField("track_descriptor"):
        d = p.track_descriptor
        tracks.add(d.uuid)
        if d.HasField("thread"):
            assert d.thread.pid == pid and d.thread.tid > 0 and d.thread.thread_name == d.name, d
            thread_of[d.uuid] = d.thread.thread_name
        continue
    e = p.track_event
    assert e.track_uuid in tracks, e
    assert p.sequence_flags & 2, "a packet using interned data says so"
    name = names.get(e.name_iid)
    if name == "enqueue":
        assert thread_of.get(e.track_uuid) == "producer", e
    assert p.timestamp >= last
    last = p.timestamp
    assert all(a.name_iid in anns for a in e.debug_annotations), e
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
assert sum(1 for n in thread_of.values() if n.startswith("worker-")) == 3, thread_of
print(events, len(tracks), sum(depth.values()))
"#;
    // Debian's python3 (python3-protobuf lives in its dist-packages), not
    // whatever python3 comes first on the PATH.
    let python = if Path::new("/usr/bin/python3").exists() {
        "/usr/bin/python3"
    } else {
        "python3"
    };
    let (s, nums) = python_check(python, script, &out);
    assert_eq!(
        nums[0],
        count_events(demo_trace()),
        "every event exported: {s}"
    );
    assert!(nums[1] >= 3, "process, cpu and lane tracks: {s}");
    // Interned names and small track numbers: about 51 bytes per event of
    // the demo (81 before interning).
    let per_event = std::fs::metadata(&out).unwrap().len() as f64 / nums[0] as f64;
    assert!(per_event < 56.0, "{per_event:.1} bytes per event");
    assert!(
        nums[2] <= 8,
        "at most the requests in flight at the end stay open: {s}"
    );
}
