#!/usr/bin/env bash
# Every check, as CI runs them: installs what the tests need and this
# machine lacks (scripts/setup.sh), then formatting, lints, the test suites
# on the newest stable Rust, a debug build of the benchmarks, a check that
# every target compiles with the oldest supported one, the loom models, the
# tests Miri can run, and the newcomer's check of the README's main command in a fresh clone
# (scripts/newcomer.sh). Prints each step's time at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each step's wall time, printed as a table when every step passed (CI
# must stay well under 30 minutes on 2 cores; this says where they go).
times=()
cur=""
t0=$SECONDS
tstep=$SECONDS
# Disk: CI machines may have little free space (a run once failed with
# "No space left on device" in its last step), so each step's row also says
# how much the target directory holds and how much is free after it.
disk() {
  printf '%6s target %6s free' "$(du -sh target 2>/dev/null | cut -f1)" \
    "$(df -h --output=avail . | tail -1 | tr -d ' ')"
}
close_step() {
  [ -n "$cur" ] && times+=("$(printf '%5d s  %s  %s' $((SECONDS - tstep)) "$(disk)" "$cur")")
  return 0
}
step() {
  close_step
  cur="$*"
  tstep=$SECONDS
  printf '\n== %s\n' "$*"
}

# What the builds keep, kept small: no incremental state (a run builds
# everything once) and line tables only in debug builds (panics and
# addr2line still name files and lines). With full debug information and
# incremental state a fresh clone's target directory reached 5.9 GB, now
# 3.5 GB; the loom, MSRV and Miri directories are removed once their step
# has passed.
export CARGO_INCREMENTAL=0
export CARGO_PROFILE_DEV_DEBUG=line-tables-only
export CARGO_PROFILE_TEST_DEBUG=line-tables-only

# A fresh run peaked at 3.5 GB of build artifacts here, 1.2 GB more for
# the newcomer's check; less free space than that fails late.
free_mb=$(df -Pm . | awk 'NR == 2 { print $4 }')
if [ "$free_mb" -lt 5000 ]; then
  echo "test.sh: only ${free_mb} MB free here; a full run needs about 5000 MB (free some, or expect 'No space left on device')" >&2
fi

step "setup: what the tests need"
bash scripts/setup.sh
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
read -r STABLE MSRV MIRI_NIGHTLY < <(bash scripts/setup.sh --print-toolchains)
# Tests that need an outside tool (babeltrace2, gcc, g++, python3 with
# protobuf) fail without it here, instead of passing by skipping.
export RINGTRACE_REQUIRE_TOOLS=1
# Stress tests (tests/thread_storm.rs, ...) repeat their scenario this many
# times; raise it to hunt rare interleavings (100 for a closing note).
export RINGTRACE_STRESS_REPEAT="${RINGTRACE_STRESS_REPEAT:-10}"

step "cargo fmt --check"
cargo "+$STABLE" fmt --all -- --check

step "cargo clippy -D warnings"
cargo "+$STABLE" clippy --workspace --all-targets -- -D warnings

step "module graph: layers kept, no import circle, no file over 600 lines, no function over 120"
# Every crate and bench/, at every folder level, tests' folders too; the
# declared layers (LAYERS in the script) are checked too.
python3 scripts/module_graph.py
python3 scripts/long_functions.py
# A library that only records events links the call site's crate and what
# it needs, none of the collector (sessions, consumer, control, output,
# relay): the record path is apart by construction.
if cargo "+$STABLE" tree -p ringtrace-core -e normal --prefix none | grep -E '^ringtrace v'; then
  echo "ringtrace-core depends on the collector (cargo tree above)" >&2
  exit 1
fi

step "cargo test (workspace, $(cargo "+$STABLE" --version))"
cargo "+$STABLE" test --workspace

step "benchmarks build and link (debug, beside the tests' artifacts)"
# A check does not link: this is what finds a missing library the
# benchmarks link (liburcu for benches/rcu.rs) on a fresh machine. About a
# minute; the release build of them took 12.
cargo "+$STABLE" build --workspace --benches -q

step "oldest supported Rust: $MSRV (rust-version)"
# What rust-version promises: every target compiles with it (type-checked,
# as clippy does above on stable; the tests ran on stable). Its own target
# directory, so the two toolchains do not rebuild each other's artifacts.
# (Building and running the tests again on it took 7 of the 27 minutes of
# this script on a 2-core machine.)
CARGO_TARGET_DIR="$PWD/target/msrv" cargo "+$MSRV" check --workspace --all-targets
rm -rf target/msrv

step "loom models (--cfg loom)"
# The code the models compile (loom atomics, stubs) is linted too.
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR="$PWD/target/loom" \
  cargo "+$STABLE" clippy -p ringbuf -p traceclock -p ringtrace-core -p ringtrace --lib --tests -- -D warnings
# The models print how many interleavings each explored.
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR="$PWD/target/loom" \
  cargo "+$STABLE" test -p ringbuf -p traceclock -p ringtrace --test loom --release -- --nocapture
rm -rf target/loom

step "Miri ($MIRI_NIGHTLY)"
export MIRIFLAGS="-Zmiri-disable-isolation"
cargo "+$MIRI_NIGHTLY" miri test -p ringbuf --lib --test sequential --test equations --test thread_slots
# The recording path's RCU (threads, publish/reclaim), fields, levels,
# contexts; the tracer's patterns, configuration and sinks.
cargo "+$MIRI_NIGHTLY" miri test -p ringtrace-core -p ringtrace --lib
# The C API's payload serialization (strlen on C strings, raw slices).
cargo "+$MIRI_NIGHTLY" miri test -p ringtrace-ffi --lib
# The tracing layer's text area (uninitialized but where written); its
# classes' names are leaked on purpose (they live as long as the program).
MIRIFLAGS="$MIRIFLAGS -Zmiri-ignore-leaks" cargo "+$MIRI_NIGHTLY" miri test -p ringtrace-tracing --lib
rm -rf target/miri

# The examples need no build of their own here: `cargo test` built them.

step "a newcomer's first command, in a fresh clone (scripts/newcomer.sh)"
# CI's clone ends here: its build artifacts make room for the newcomer's
# toolchain and build (about 1.2 GB), not kept for a next run.
[ -n "${CI:-}" ] && rm -rf target
bash scripts/newcomer.sh
close_step

printf '\n== every check passed in %d s\n' $((SECONDS - t0))
printf '%s\n' "${times[@]}"
