#!/usr/bin/env bash
# A newcomer's first command, checked: clones this repository (its committed
# HEAD) into a temporary directory, points RUSTUP_HOME and CARGO_HOME at
# empty temporary directories, installs only a default stable toolchain
# with rustup (as `rustup-init` does on a machine with no Rust), and runs the
# README's main command there. Fails unless the demo's summary appears and
# its trace is in a new folder. Prints how long each step took.
#
#   bash scripts/newcomer.sh
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/ringtrace-newcomer.XXXXXX")"
trap 'rm -rf "$work"' EXIT
start=$SECONDS
lap() { printf 'newcomer: %-44s %4d s\n' "$1" $((SECONDS - start)); }

# The README's main command, read from the README itself: the first
# `cargo run` line of its first shell block.
main_cmd="$(sed -n '/^```sh/,/^```/p' "$repo/README.md" | grep -m1 '^cargo run' | sed 's/ *#.*//')"
[ -n "$main_cmd" ] || { echo "newcomer: no 'cargo run' command in README.md's first shell block" >&2; exit 1; }

git clone --quiet --no-hardlinks "$repo" "$work/ringtrace"
lap "cloned"

export RUSTUP_HOME="$work/rustup" CARGO_HOME="$work/cargo"
mkdir -p "$RUSTUP_HOME" "$CARGO_HOME"
# Nothing of this machine's Rust: only the system directories on PATH, and
# no toolchain installed behind the user's back (recent rustup's default).
export PATH="$CARGO_HOME/bin:/usr/local/bin:/usr/bin:/bin"
export RUSTUP_AUTO_INSTALL=0
unset RUSTUP_TOOLCHAIN RUSTC RUSTC_WRAPPER RUSTFLAGS CARGO_TARGET_DIR CARGO_BUILD_TARGET RINGTRACE_SESSION \
  CARGO_INCREMENTAL CARGO_PROFILE_DEV_DEBUG CARGO_PROFILE_TEST_DEBUG

# rustup-init: the rustup binary of this machine is the same program (it
# acts by the name it is called by); without one, the official download.
init="$work/rustup-init"
if [ -x "${HOME}/.cargo/bin/rustup" ]; then
  cp "${HOME}/.cargo/bin/rustup" "$init"
else
  curl --proto '=https' --tlsv1.2 -sSf -o "$init" \
    "https://static.rust-lang.org/rustup/dist/$(uname -m)-unknown-linux-gnu/rustup-init"
  chmod +x "$init"
fi
"$init" -y --no-modify-path --profile minimal --default-toolchain stable >"$work/rustup.log" 2>&1 ||
  { cat "$work/rustup.log" >&2; exit 1; }
lap "rustup installed $(rustc --version | cut -d' ' -f1-2)"

cd "$work/ringtrace"
echo "newcomer: \$ $main_cmd"
if ! bash -c "$main_cmd" >"$work/out.txt" 2>"$work/err.txt"; then
  echo "newcomer: the main command failed:" >&2
  tail -n 40 "$work/err.txt" >&2
  exit 1
fi
lap "main command done"
sed -n '1,16p' "$work/out.txt"
for want in "events recorded" "events lost" "events in the trace" "first 20 events"; do
  grep -q "$want" "$work/out.txt" || { echo "newcomer: no '$want' in the demo's summary" >&2; exit 1; }
done
trace="$(find . -maxdepth 1 -type d -name 'ringtrace-demo-*' | head -1)"
[ -n "$trace" ] && [ -f "$trace/metadata" ] ||
  { echo "newcomer: the demo wrote no trace folder named ringtrace-demo-<date>-<time>" >&2; exit 1; }
lap "ok: summary shown, trace in $trace"
