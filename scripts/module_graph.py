#!/usr/bin/env python3
"""The import graph between the modules of each crate, its circles, and
its layers.

A module is a file or folder directly under a crate's `src/` (`read/` and
everything in it is one module), and in turn each file or folder directly
under such a folder, among its siblings. An edge A -> B is a `crate::B`
path in any file of A (in a `use` or in code), or between siblings inside
a folder F, a `crate::F::B` or `super::B` path. Prints each crate's
top-level edges and every strongly connected component of more than one
module (an import circle) at any level; where LAYERS lists a crate's
layers (lowest first), every top-level edge must go to a lower layer.
Exits 1 on a circle, an edge against the layers, or a source file over
600 lines, in any crate (or in the crates named with --only).

    python3 scripts/module_graph.py                  # check every crate
    python3 scripts/module_graph.py --only ringbuf ctf
"""

import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates")
MAX_LINES = 600

# Layers of a crate's top-level modules, lowest first: a module imports only
# modules of lower layers (not of its own). The recording path is its own
# crate (`ringtrace-core`), below the tracer: it cannot import the
# collector at all (a dependency the other way would be a cycle cargo
# refuses), and inside it the probe sits above the client it calls.
LAYERS = {
    "ringtrace-core": [
        ["rcu", "clock", "field", "level", "ops"],
        ["context", "tally"],
        ["client"],
        ["probe"],
        ["desc"],
    ],
    "ringtrace": [
        ["error"],
        ["sys", "output"],
        ["control", "recover"],
        ["consume"],
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
    ref = re.compile(r"\bcrate::" + (re.escape(prefix) + "::" if prefix else "") + r"(\w+)")
    out = {m: set() for m in mods}
    for m, files in mods.items():
        for f in files:
            code = code_of(f)
            names = ref.findall(code)
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


def long_files(src):
    for d, _, names in os.walk(src):
        for n in names:
            if n.endswith(".rs"):
                p = os.path.join(d, n)
                with open(p, encoding="utf-8") as fh:
                    count = sum(1 for _ in fh)
                if count > MAX_LINES:
                    yield p, count


def main(argv):
    only = None
    if argv[:1] == ["--only"]:
        only = set(argv[1:])
    failed = False
    for crate in sorted(os.listdir(ROOT)):
        src = os.path.join(ROOT, crate, "src")
        if not os.path.isdir(src) or (only is not None and crate not in only):
            continue
        graph = edges(modules(src))
        comps = [("", c) for c in circles(graph)]
        for prefix, path, kids in folders(src):
            comps += [(prefix, c) for c in circles(edges(kids, prefix, path))]
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
        longs = list(long_files(src))
        for p, n in longs:
            print(f"  OVER {MAX_LINES} LINES: {os.path.relpath(p, ROOT)} ({n})")
        if comps or bad or longs:
            failed = True
    if failed:
        print("module_graph: a circle, an import against the layers, or a long file (above)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
