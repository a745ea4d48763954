#!/usr/bin/env bash
# Kills a flight recorder N times and recovers it (the crash test
# `a_killed_flight_recorder_is_recovered_up_to_its_last_heartbeat` of
# crates/ringtrace/tests/crash.rs, each run a fresh process): prints how
# many runs failed and a tally of what recovery reported in each (the
# unfinished records it stepped over, gaps, headless laps, uncounted
# records kept). A failed run's output and its buffer files are kept in
# target/crash-loop/.
#
#   bash scripts/crash_loop.sh N
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:?usage: bash scripts/crash_loop.sh N}
export RINGTRACE_REQUIRE_TOOLS=1
out=target/crash-loop
rm -rf "$out" && mkdir -p "$out"
exe=$(cargo test -q -p ringtrace --test crash --no-run --message-format=json 2>/dev/null |
  python3 -c 'import json, sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and "test" in m["target"]["kind"]:
        print(m["executable"])')
test=a_killed_flight_recorder_is_recovered_up_to_its_last_heartbeat
failed=0
: >"$out/tally"
for ((i = 1; i <= n; i++)); do
  log=$(cd crates/ringtrace && "$exe" --exact "$test" --nocapture 2>&1) || true
  if ! grep -q "test result: ok. 1 passed" <<<"$log"; then
    failed=$((failed + 1))
    echo "$log" >"$out/fail-$i.log"
    for d in "${TMPDIR:-/tmp}"/ringtrace-test-*-crash-bufs; do [ -d "$d" ] && cp -r "$d" "$out/bufs-$i"; done
    echo "run $i FAILED: $out/fail-$i.log" >&2
  fi
  grep -o "unfinished records stepped over: .*" <<<"$log" >>"$out/tally" || true
  printf '\rrun %d of %d, %d failed' "$i" "$n" "$failed" >&2
done
printf '\n' >&2
echo "runs $n, failed $failed; what recovery reported (runs):"
sort "$out/tally" | uniq -c
[ "$failed" -eq 0 ]
