#!/usr/bin/env bash
# `ringtrace view` against babeltrace2's text output on the same trace of
# 10 million events, in one run: each tool's output goes to /dev/null, best
# of three wall-clock runs each, interleaved. Usage: bash bench/view_speed.sh [N]
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-10000000}
DIR=${TMPDIR:-/tmp}/ringtrace-view-bench
cargo build --release -q -p ringtrace-cli --bin ringtrace --example gen_trace
./target/release/examples/gen_trace "$DIR" "$N"
du -sh "$DIR"
secs() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null; t1=$(date +%s.%N); echo "$t1 - $t0" | bc; }
best_rt=999999; best_bt=999999
for round in 1 2 3; do
  rt=$(secs ./target/release/ringtrace view "$DIR")
  bt=$(secs babeltrace2 "$DIR")
  echo "round $round: ringtrace view ${rt}s, babeltrace2 ${bt}s"
  best_rt=$(echo "if ($rt < $best_rt) $rt else $best_rt" | bc)
  best_bt=$(echo "if ($bt < $best_bt) $bt else $best_bt" | bc)
done
lines_rt=$(./target/release/ringtrace view "$DIR" | wc -l)
lines_bt=$(babeltrace2 "$DIR" | wc -l)
printf '\n| tool | events | best s | events/s |\n|---|---:|---:|---:|\n'
printf '| ringtrace view | %s | %.2f | %.0f |\n' "$lines_rt" "$best_rt" "$(echo "$lines_rt / $best_rt" | bc -l)"
printf '| babeltrace2 (text) | %s | %.2f | %.0f |\n' "$lines_bt" "$best_bt" "$(echo "$lines_bt / $best_bt" | bc -l)"
printf '\nratio babeltrace2/ringtrace view: %.2f\n' "$(echo "$best_bt / $best_rt" | bc -l)"
