#!/usr/bin/env python3
"""Turns the criterion results of `cargo bench -p ringtrace --bench event`
into the tracer table of BENCHMARKS.md: ns per enabled event against the
bare ring-buffer record of the same size, measured interleaved in the same
run, and the dormant event against an empty loop."""
import json
import pathlib
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "target/criterion")
res = {}
for f in root.glob("event/*/new/benchmark.json"):
    meta = json.loads(f.read_text())
    est = json.loads((f.parent / "estimates.json").read_text())
    res[meta.get("function_id") or meta.get("value_str")] = est["median"]["point_estimate"]
if not res:
    sys.exit(f"no results under {root}/event: run `cargo bench -p ringtrace --bench event` first")

print("Enabled event, one u64 field (median ns; bare = the same channel's record without the tracer):\n")
print("| buffers | round | bare record ns | tracer event ns | ratio | target |")
print("|---|---:|---:|---:|---:|---:|")
for alloc, label in [("percpu", "per-CPU, SMP atomics"), ("perthread", "per-thread, non-locked")]:
    for r in range(3):
        bare, tr = res.get(f"{alloc}/bare/{r}"), res.get(f"{alloc}/tracer/{r}")
        if bare and tr:
            print(f"| {label} | {r} | {bare:.1f} | {tr:.1f} | {tr / bare:.2f}× | ≤ 1.20× |")
u = res.get("dormant/unrolled100")
d, e = res.get("dormant/x100"), res.get("empty/x100")
if u or (d and e):
    print("\nDormant event (median ns):\n")
    print("| measurement | ns | ns per event |")
    print("|---|---:|---:|")
    if u:
        print(f"| 100 distinct dormant call sites in a row, no loop | {u:.1f} | {u / 100:.2f} |")
    if d and e:
        print(f"| loop of 100 over one dormant call site | {d:.1f} | {d / 100:.2f} |")
        print(f"| the same loop without the event (black_box of the counter) | {e:.1f} | {e / 100:.2f} |")
