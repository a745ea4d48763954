#!/usr/bin/env bash
# Runs chosen integration tests N times each, every run a fresh process,
# and prints a table of failures per test: what a rare interleaving needs
# to show itself, and what a closing note shows it no longer does.
#
#   bash scripts/repeat.sh N TEST[::FILTER]...
#   bash scripts/repeat.sh 50 standby crash follow fork_locks thread_storm rseq relay stalled
#   bash scripts/repeat.sh 20 ctl::slow_clients
#
# TEST is an integration test target (a file of some crate's tests/, found
# in whichever crate has it); FILTER, if given, is passed to it as libtest's
# name filter. The tests are built once (debug, as the test command builds
# them) and each run goes as `cargo test` would run it: from its crate's
# directory, with the test command's environment (RINGTRACE_REQUIRE_TOOLS).
# The runs of the tests are interleaved (round robin), so that what the
# machine does meanwhile falls on all of them alike. Each failed run's
# output is kept in target/repeat/<test>-<run>.log. Exits 1 if any run
# failed.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -lt 2 ] || ! [[ "$1" =~ ^[0-9]+$ ]] || [ "$1" -lt 1 ]; then
  echo "usage: bash scripts/repeat.sh N TEST[::FILTER]... (N >= 1)" >&2
  exit 2
fi
runs=$1
shift
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
export RINGTRACE_REQUIRE_TOOLS=1
export RINGTRACE_STRESS_REPEAT="${RINGTRACE_STRESS_REPEAT:-10}"
logs=target/repeat
mkdir -p "$logs"

# Build every test target once; keep (target name, executable, crate dir).
targets=()
for spec in "$@"; do targets+=("--test" "${spec%%::*}"); done
echo "building: ${*%%::*}" >&2
cargo test --workspace --no-run --message-format=json "${targets[@]}" 2>/dev/null >"$logs/build.json" || {
  echo "repeat: the build failed; run: cargo test --workspace --no-run ${targets[*]}" >&2
  exit 1
}
declare -A exe dir
while IFS=$'\t' read -r name path manifest; do
  exe[$name]=$path
  dir[$name]=$(dirname "$manifest")
done < <(python3 -c '
import json, sys
for line in open(sys.argv[1]):
    m = json.loads(line)
    t = m.get("target") or {}
    if m.get("reason") == "compiler-artifact" and "test" in t.get("kind", []) and m.get("executable"):
        print(t["name"], m["executable"], m["manifest_path"], sep="\t")
' "$logs/build.json")

names=()
for spec in "$@"; do
  name=${spec%%::*}
  [ -n "${exe[$name]:-}" ] || { echo "repeat: no test target '$name' in the workspace" >&2; exit 2; }
  names+=("$spec")
done

declare -A failed total_ms slowest_ms
for spec in "${names[@]}"; do failed[$spec]=0; total_ms[$spec]=0; slowest_ms[$spec]=0; done
for ((i = 1; i <= runs; i++)); do
  for spec in "${names[@]}"; do
    name=${spec%%::*}
    filter=()
    [ "$spec" != "$name" ] && filter=("${spec#*::}")
    log="$logs/${spec//::/-}-$i.log"
    t0=$(date +%s%N)
    if (cd "${dir[$name]}" && "${exe[$name]}" "${filter[@]}") >"$log" 2>&1; then
      rm -f "$log"
    else
      failed[$spec]=$((failed[$spec] + 1))
      echo "run $i of $spec FAILED: $log" >&2
    fi
    ms=$((($(date +%s%N) - t0) / 1000000))
    total_ms[$spec]=$((total_ms[$spec] + ms))
    [ "$ms" -gt "${slowest_ms[$spec]}" ] && slowest_ms[$spec]=$ms
  done
  printf '\rrun %d of %d' "$i" "$runs" >&2
done
printf '\n' >&2

bad=0
printf '%-32s %6s %8s %10s %10s\n' test runs failed "mean s" "slowest s"
for spec in "${names[@]}"; do
  awk -v t="$spec" -v n="$runs" -v f="${failed[$spec]}" -v sum="${total_ms[$spec]}" -v max="${slowest_ms[$spec]}" \
    'BEGIN { printf "%-32s %6d %8d %10.2f %10.2f\n", t, n, f, sum / n / 1000, max / 1000 }'
  [ "${failed[$spec]}" -eq 0 ] || bad=1
done
exit $bad
