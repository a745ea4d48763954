#!/usr/bin/env bash
# The project's tests, as CI runs them: formatting, lints, the test suites,
# the loom models and the tests Miri can run.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s\n' "$*"; }

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy -D warnings"
cargo clippy --workspace --all-targets -- -D warnings

step "cargo test (workspace)"
cargo test --workspace

step "loom models (--cfg loom)"
# The code the models compile (loom atomics, stubs) is linted too.
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
  cargo clippy -p ringbuf -p traceclock -p ringtrace --lib --tests -- -D warnings
# The models print how many interleavings each explored.
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
  cargo test -p ringbuf -p traceclock -p ringtrace --test loom --release -- --nocapture

step "Miri"
MIRIFLAGS="-Zmiri-disable-isolation" cargo +nightly miri test -p ringbuf --lib --test sequential --test equations
# The tracer's RCU (threads, publish/reclaim), fields, patterns, levels.
MIRIFLAGS="-Zmiri-disable-isolation" cargo +nightly miri test -p ringtrace --lib
# The C API's payload serialization (strlen on C strings, raw slices).
MIRIFLAGS="-Zmiri-disable-isolation" cargo +nightly miri test -p ringtrace-ffi --lib

step "benchmarks and examples build"
cargo bench --workspace --no-run -q
cargo build --workspace --examples -q
