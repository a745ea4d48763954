#!/usr/bin/env python3
"""Turns the criterion results of `cargo bench -p ringbuf --bench record`
into the markdown tables of BENCHMARKS.md (median ns per record), with the
ratios against the hardware floors measured in the same run."""
import json
import pathlib
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "target/criterion")
res = {}
for f in root.glob("*/*/new/benchmark.json"):
    meta = json.loads(f.read_text())
    est = json.loads((f.parent / "estimates.json").read_text())
    ident = meta.get("function_id") or meta.get("value_str")
    res[(meta["group_id"], ident)] = est["median"]["point_estimate"]

if not res:
    sys.exit(f"no criterion results under {root}: run `cargo bench -p ringbuf --bench record` first")

floor = {k[1]: v for k, v in res.items() if k[0] == "floor"}
print("Hardware floors (ns):\n")
print("| floor | ns |")
print("|---|---:|")
for name in ["rdtsc", "lock_cmpxchg", "cmpxchg_nolock", "bare_event_locked", "bare_event_local"]:
    if name in floor:
        print(f"| {name} | {floor[name]:.1f} |")

rec = {k[1]: v for k, v in res.items() if k[0] == "record"}
cols = ["noreader/1w", "noreader/2w", "reader/1w", "reader/2w"]
print("\nns per record (median; per writer thread):\n")
print("| buffers | mode | payload | sub-buffer | " + " | ".join(c.replace("/", ", ") for c in cols) + " |")
print("|---|---|---:|---:|" + "---:|" * len(cols))
for alloc in ["percpu", "perthread"]:
    for mode in ["discard", "overwrite"]:
        for payload in ["8B", "16B", "64B"]:
            for sb in ["4K", "128K", "512K"]:
                key = f"{alloc}/{mode}/{payload}/{sb}"
                vals = [rec.get(f"{key}/{c}") for c in cols]
                if all(v is None for v in vals):
                    continue
                cells = " | ".join("–" if v is None else f"{v:.1f}" for v in vals)
                print(f"| {alloc} | {mode} | {payload} | {sb} | {cells} |")

def ratio(a, b):
    return f"{a / b:.2f}×" if a and b else "–"

print("\nTargets (one writer, 8-byte payload, 4 KiB sub-buffers, overwrite mode so no record is dropped):\n")
print("| configuration | ns | floor | floor ns | ratio | target |")
print("|---|---:|---|---:|---:|---:|")
pc = rec.get("percpu/overwrite/8B/4K/noreader/1w")
pt = rec.get("perthread/overwrite/8B/4K/noreader/1w")
fl, fn = floor.get("bare_event_locked"), floor.get("bare_event_local")
if pc and fl:
    print(f"| per-CPU, SMP atomics | {pc:.1f} | bare event, lock-prefixed | {fl:.1f} | {ratio(pc, fl)} | ≤ 1.20× |")
if pt and fn:
    print(f"| per-thread, non-locked atomics | {pt:.1f} | bare event, non-locked | {fn:.1f} | {ratio(pt, fn)} | ≤ 1.20× |")
tg = {k[1]: v for k, v in res.items() if k[0] == "target"}
if tg:
    print("\nTargets, interleaved (each configuration measured right after its floor, three rounds):\n")
    print("| round | per-CPU ns | lock-prefixed floor ns | ratio | per-thread ns | non-locked floor ns | ratio |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for r in range(3):
        a, fa = tg.get(f"percpu/{r}"), tg.get(f"bare_event_locked/{r}")
        b, fb = tg.get(f"perthread/{r}"), tg.get(f"bare_event_local/{r}")
        if a and fa and b and fb:
            print(f"| {r} | {a:.1f} | {fa:.1f} | {ratio(a, fa)} | {b:.1f} | {fb:.1f} | {ratio(b, fb)} |")

print("\nScalability (2 writers vs 1, per writer, overwrite, 8 B, no reader):\n")
print("| buffers | sub-buffer | 1 writer | 2 writers | ratio |")
print("|---|---:|---:|---:|---:|")
for alloc in ["percpu", "perthread"]:
    for sb in ["4K", "128K", "512K"]:
        a = rec.get(f"{alloc}/overwrite/8B/{sb}/noreader/1w")
        b = rec.get(f"{alloc}/overwrite/8B/{sb}/noreader/2w")
        if a and b:
            print(f"| {alloc} | {sb} | {a:.1f} | {b:.1f} | {ratio(b, a)} |")
