#!/usr/bin/env python3
"""The import graph between the modules of each crate, its circles, and
its layers.

The crates are those under `crates/` and `bench/`. A module is a file or
folder directly under a crate's `src/` (`read/` and everything in it is
one module), and in turn each file or folder directly under such a
folder, among its siblings. An edge A -> B is a `crate::B` path (or a
`crate::{B, …}` group) in any file of A, in a `use` or in code, or between
siblings inside a folder F, a `crate::F::B` or `super::B` path. The
folders of a crate's `tests/`, `benches/` and `examples/` (`tests/common/`)
are looked at the same way, for circles. Prints each crate's top-level
edges and every strongly connected component of more than one module (an
import circle) at any level; where LAYERS lists a crate's layers (lowest
first), every top-level edge must go to a lower layer and every module
must be in a layer. Exits 1 on a circle, an edge against the layers, or a
Rust file over 600 lines anywhere in a crate (sources, tests, benches,
examples, fuzz targets), in any crate (or in the crates named with
--only).

    python3 scripts/module_graph.py                  # check every crate
    python3 scripts/module_graph.py --only ringbuf ctf
"""

import os
import re
import sys

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
ROOTS = [os.path.join(HERE, "crates"), os.path.join(HERE, "bench")]
MAX_LINES = 600

# Layers of a crate's top-level modules, lowest first: a module imports only
# modules of lower layers (not of its own). The recording path is its own
# crate (`ringtrace-core`), below the tracer: it cannot import the
# collector at all (a dependency the other way would be a cycle cargo
# refuses), and inside it the probe sits above the client it calls. Each
# crate's own documentation draws the same map (ringbuf's `lib.rs`, ctf's
# `lib.rs`, the CLI's `main.rs`, bench/compare's `main.rs`).
LAYERS = {
    "ringbuf": [
        ["config", "rseq", "tls", "live"],
        ["sync", "cpu", "counters", "outcome"],
        ["state", "backend", "read_side"],
        ["file"],
        ["frontend"],
        ["commit", "reader", "switch", "writer", "thread_slots"],
        ["channel"],
    ],
    "ctf": [
        ["types", "lex"],
        ["value", "layout", "parse"],
        ["tsdl", "read"],
        ["merge"],
        ["fuzz_entry"],
    ],
    "ringtrace-cli": [
        ["out", "who", "filter", "read", "outdir", "babeltrace", "session_opts", "session_stats", "lttng_ust"],
        ["pretty", "select", "symbols"],
        ["follow"],
        ["demo", "record", "view", "stats", "export", "recover", "ctl", "docs"],
    ],
    "compare": [
        ["cell", "cpus", "disk", "c_build"],
        ["ours", "lttng", "contexts"],
        [
            "baselines",
            "c_interleaved",
            "interleaved",
            "scaling_interleaved",
            "drain",
            "reading",
            "ring",
            "ust_abi",
            "floor",
            "layer",
            "filtered",
            "instructions",
            "wake",
        ],
        ["tracers", "overhead", "between", "shadow"],
        ["frontends", "losses", "scaling"],
        ["ratios"],
    ],
    "ringtrace-core": [
        ["rcu", "clock", "field", "level", "ops", "unfinished"],
        ["context", "tally"],
        ["client"],
        ["any_channel", "filter"],
        ["screen"],
        ["probe"],
        ["open"],
        ["desc"],
    ],
    "ringtrace": [
        ["error"],
        ["sys"],
        ["output"],
        ["control", "recover"],
        ["statedump"],
        ["consume"],
        ["trigger"],
        ["fork"],
        ["ctl"],
        ["session"],
        ["fuzz"],
    ],
}


def modules(src):
    """Top-level module name -> its .rs files."""
    mods = {}
    for entry in sorted(os.listdir(src)):
        path = os.path.join(src, entry)
        if entry.endswith(".rs") and entry not in ("lib.rs", "main.rs"):
            mods[entry[:-3]] = [path]
        elif os.path.isdir(path):
            files = []
            for d, _, names in os.walk(path):
                files += [os.path.join(d, n) for n in names if n.endswith(".rs")]
            mods[entry] = sorted(files)
    return mods


def code_of(path):
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    # Comments and doc text name modules without importing them.
    return "\n".join(l.split("//")[0] for l in text.splitlines())


def edges(mods, prefix="", folder=None):
    """Edges between the modules `mods` (children of the folder `folder`,
    whose module path is `prefix`, or of `src/` when `prefix` is empty)."""
    base = r"\bcrate::" + (re.escape(prefix) + "::" if prefix else "")
    ref = re.compile(base + r"(\w+)")
    group = re.compile(base + r"\{([^;]*?)\}\s*;")
    out = {m: set() for m in mods}
    for m, files in mods.items():
        for f in files:
            code = code_of(f)
            names = ref.findall(code)
            for g in group.findall(code):
                names += re.findall(r"(?:^|,)\s*(\w+)", re.sub(r"\{[^{}]*\}", "", g))
            if folder is not None:
                # `super::B` from a file directly in the folder; from a file
                # one folder deeper, `super::super::B`.
                depth = os.path.relpath(os.path.dirname(f), folder).count(os.sep) + (
                    0 if os.path.dirname(f) == folder else 1
                )
                sup = "super::" * (depth + 1) if not f.endswith("mod.rs") else "super::" * depth
                if sup:
                    names += re.findall(r"(?<![\w:])" + re.escape(sup) + r"(\w+)", code)
            for name in names:
                if name in mods and name != m:
                    out[m].add(name)
    return out


def folders(src, prefix=""):
    """(module path, folder, its child modules) for every folder module."""
    for entry in sorted(os.listdir(src)):
        path = os.path.join(src, entry)
        if os.path.isdir(path):
            sub = f"{prefix}::{entry}" if prefix else entry
            kids = {k: v for k, v in modules(path).items() if k != "mod"}
            yield sub, path, kids
            yield from folders(path, sub)


def against_layers(crate, graph):
    layers = LAYERS.get(crate)
    if not layers:
        return []
    rank = {m: i for i, layer in enumerate(layers) for m in layer}
    bad = [f"{m} is in no layer" for m in graph if m not in rank]
    for m, targets in graph.items():
        for t in targets:
            if m in rank and t in rank and rank[t] >= rank[m]:
                bad.append(f"{m} -> {t} (layer {rank[m]} imports layer {rank[t]})")
    return sorted(bad)


def circles(graph):
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, comps = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return comps


def long_files(crate_dir):
    for d, dirs, names in os.walk(crate_dir):
        dirs[:] = [x for x in dirs if x not in ("target", "corpus", "artifacts")]
        for n in names:
            if n.endswith(".rs"):
                p = os.path.join(d, n)
                with open(p, encoding="utf-8") as fh:
                    count = sum(1 for _ in fh)
                if count > MAX_LINES:
                    yield p, count


def crate_name(d):
    """The package name in `d/Cargo.toml`, if `d` is a crate."""
    try:
        with open(os.path.join(d, "Cargo.toml"), encoding="utf-8") as fh:
            m = re.search(r'^name\s*=\s*"([^"]+)"', fh.read(), re.M)
    except OSError:
        return None
    return m.group(1) if m else None


def main(argv):
    only = None
    if argv[:1] == ["--only"]:
        only = set(argv[1:])
    failed = False
    crates = [
        (name, os.path.join(root, d))
        for root in ROOTS
        for d in sorted(os.listdir(root))
        for name in [crate_name(os.path.join(root, d))]
        if name
    ]
    for crate, cdir in crates:
        src = os.path.join(cdir, "src")
        if not os.path.isdir(src) or (only is not None and crate not in only):
            continue
        graph = edges(modules(src))
        comps = [("", c) for c in circles(graph)]
        for prefix, path, kids in folders(src):
            comps += [(prefix, c) for c in circles(edges(kids, prefix, path))]
        # The folders of tests, benches and examples: circles only.
        for extra in ("tests", "benches", "examples"):
            top = os.path.join(cdir, extra)
            if os.path.isdir(top):
                for prefix, path, kids in folders(top):
                    comps += [(f"{extra}/{prefix}", c) for c in circles(edges(kids, prefix, path))]
        print(f"{crate}: {len(graph)} modules, {sum(map(len, graph.values()))} imports")
        for m in sorted(graph):
            if graph[m]:
                print(f"  {m} -> {', '.join(sorted(graph[m]))}")
        for prefix, c in comps:
            where = f" (in {prefix}/)" if prefix else ""
            print(f"  CIRCLE{where}: {' <-> '.join(c)}")
        bad = against_layers(crate, graph)
        for b in bad:
            print(f"  AGAINST THE LAYERS: {b}")
        longs = list(long_files(cdir))
        for p, n in longs:
            print(f"  OVER {MAX_LINES} LINES: {os.path.relpath(p, HERE)} ({n})")
        if comps or bad or longs:
            failed = True
    if failed:
        print("module_graph: a circle, an import against the layers, or a long file (above)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
