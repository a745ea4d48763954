#!/usr/bin/env bash
# Regenerates the barectf fixtures (crates/ringtrace-cli/tests/barectf/*/trace):
# for each fixture, barectf generates a C tracer from its config.yaml, gcc
# builds it with the fixture's main.c and the shared platform.h (a clock
# that advances a fixed step, so the same trace on every run), and the
# program writes its streams beside barectf's metadata.
#
#   bash scripts/barectf_fixtures.sh [OUT]
#
# Without OUT the kept fixtures are replaced; with it, they are written
# under OUT/<fixture>/trace (the barectf test compares those with the kept
# ones). barectf comes from the checkers' Python environment that
# scripts/setup.sh installs.
set -euo pipefail
cd "$(dirname "$0")/.."
root="crates/ringtrace-cli/tests/barectf"
barectf="target/python/bin/barectf"
[ -x "$barectf" ] || { echo "barectf missing: run bash scripts/setup.sh" >&2; exit 1; }
out="${1:-$root}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for dir in "$root"/*/; do
  name="$(basename "$dir")"
  gen="$work/$name"
  mkdir -p "$gen" "$out/$name/trace"
  "$barectf" generate -c "$gen" -H "$gen" -m "$gen" "$dir/config.yaml"
  gcc -O1 -Wall -Wno-unused-function -Werror -I"$gen" -I"$root" -o "$gen/prog" \
    "$dir/main.c" "$gen/barectf.c"
  rm -f "$out/$name/trace/"*
  cp "$gen/metadata" "$out/$name/trace/metadata"
  (cd "$out/$name/trace" && "$gen/prog")
  echo "$name: $(ls "$out/$name/trace" | tr '\n' ' ')"
done
