#!/usr/bin/env python3
"""The import graph between the top-level modules of each crate, and its
circles.

A module is a file or folder directly under a crate's `src/` (`read/` and
everything in it is one module). An edge A -> B is a `crate::B` path in
any file of A (in a `use` or in code). Prints each crate's edges and every
strongly connected component of more than one module (an import circle);
exits 1 if a crate named with --strict has a circle or a source file over
600 lines.

    python3 scripts/module_graph.py                  # every crate: report
    python3 scripts/module_graph.py --strict ringbuf ctf
"""

import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates")
MAX_LINES = 600


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


def edges(mods):
    ref = re.compile(r"\bcrate::(\w+)")
    out = {m: set() for m in mods}
    for m, files in mods.items():
        for f in files:
            with open(f, encoding="utf-8") as fh:
                text = fh.read()
            # Comments and doc text name modules without importing them.
            code = "\n".join(l.split("//")[0] for l in text.splitlines())
            for name in ref.findall(code):
                if name in mods and name != m:
                    out[m].add(name)
    return out


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
    strict = set()
    if argv[:1] == ["--strict"]:
        strict = set(argv[1:])
    failed = False
    for crate in sorted(os.listdir(ROOT)):
        src = os.path.join(ROOT, crate, "src")
        if not os.path.isdir(src):
            continue
        graph = edges(modules(src))
        comps = circles(graph)
        print(f"{crate}: {len(graph)} modules, {sum(map(len, graph.values()))} imports")
        for m in sorted(graph):
            if graph[m]:
                print(f"  {m} -> {', '.join(sorted(graph[m]))}")
        for c in comps:
            print(f"  CIRCLE: {' <-> '.join(c)}")
        longs = list(long_files(src))
        for p, n in longs:
            print(f"  OVER {MAX_LINES} LINES: {os.path.relpath(p, ROOT)} ({n})")
        if crate in strict and (comps or longs):
            failed = True
    if failed:
        print(f"module_graph: a circle or a long file in a checked crate ({', '.join(sorted(strict))})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
