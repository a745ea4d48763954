#!/usr/bin/env python3
"""Functions over 120 lines, outside tests, in every crate and in bench/.

A function runs from its `fn` line to the first line after it that is a
`}` at the same indentation (the code is `cargo fmt`-formatted, so a
function's closing brace sits at the indentation of its `fn`); the count
includes its comments and blank lines, as a reader sees it. Tests are
skipped: the files under a crate's `tests/` folder, a `#[cfg(test)]`
module written inline, and the files that such a module names
(`#[cfg(test)] mod gap_tests;`). Prints every long function, longest
first, and exits 1 if there is one.

    python3 scripts/long_functions.py
"""

import os
import re
import sys

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
MAX_LINES = 120
FN = re.compile(r'^(\s*)(?:pub(?:\([\w:]+\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?(?:extern\s+"C"\s+)?fn\s+(\w+)')
TEST_MOD = re.compile(r"^(\s*)#\[cfg\(test\)\]\s*$")
MOD_DECL = re.compile(r"^\s*(?:pub(?:\([\w:]+\))?\s+)?mod\s+(\w+)\s*;")
MOD_OPEN = re.compile(r"^(\s*)(?:pub(?:\([\w:]+\))?\s+)?mod\s+\w+\s*\{")


def sources():
    """Every .rs file of the crates and bench/ that is not a test folder's."""
    for top in ("crates", "bench"):
        for d, dirs, names in os.walk(os.path.join(HERE, top)):
            dirs[:] = [x for x in dirs if x not in ("target", "tests", "corpus", "artifacts")]
            for n in names:
                if n.endswith(".rs"):
                    yield os.path.normpath(os.path.join(d, n))


def test_module_files(path, lines):
    """Files that `#[cfg(test)] mod NAME;` in `path` names."""
    out = []
    base = os.path.dirname(path)
    stem = os.path.basename(path)[:-3]
    if stem not in ("lib", "main", "mod"):
        base = os.path.join(base, stem)
    for i, line in enumerate(lines[:-1]):
        if TEST_MOD.match(line):
            m = MOD_DECL.match(lines[i + 1])
            if m:
                out += [os.path.join(base, m.group(1) + ".rs"), os.path.join(base, m.group(1), "mod.rs")]
    return out


def closing(lines, start, indent):
    """Index of the line that closes the item opened at `start`."""
    for j in range(start + 1, len(lines)):
        if lines[j] == indent + "}":
            return j
    return None


def long_functions(path, lines):
    skip = set()
    for i, line in enumerate(lines[:-1]):
        if TEST_MOD.match(line) and MOD_OPEN.match(lines[i + 1]):
            end = closing(lines, i + 1, MOD_OPEN.match(lines[i + 1]).group(1))
            skip.update(range(i, (end or len(lines)) + 1))
    for i, line in enumerate(lines):
        m = FN.match(line)
        if not m or i in skip:
            continue
        # The signature may wrap; it ends at `{` (a body) or `;` (a declaration).
        j = i
        while j < len(lines) and not lines[j].rstrip().endswith(("{", ";", "}")):
            j += 1
        if j >= len(lines) or not lines[j].rstrip().endswith("{"):
            continue
        end = closing(lines, j, m.group(1))
        if end is not None and end - i + 1 > MAX_LINES:
            yield m.group(2), i + 1, end - i + 1


def main():
    tests = set()
    found = []
    files = sorted(sources())
    texts = {}
    for p in files:
        with open(p, encoding="utf-8") as fh:
            texts[p] = fh.read().splitlines()
        tests.update(os.path.normpath(t) for t in test_module_files(p, texts[p]))
    for p in files:
        if p in tests:
            continue
        for name, line, count in long_functions(p, texts[p]):
            found.append((count, f"{os.path.relpath(p, HERE)}:{line}", name))
    for count, where, name in sorted(found, reverse=True):
        print(f"{count:5} lines  {name:<24} {where}")
    if found:
        print(f"long_functions: {len(found)} function(s) over {MAX_LINES} lines (above): split them")
        return 1
    print(f"long_functions: no function over {MAX_LINES} lines outside tests")
    return 0


if __name__ == "__main__":
    sys.exit(main())
