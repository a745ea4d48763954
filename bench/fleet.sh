#!/usr/bin/env bash
# Many machines: the demo streamed to a local lttng-relayd against the
# same demo writing only its local folder (paired runs, alternated), then
# the Parquet export of a demo trace (events per second, bytes per event).
# Usage: bash bench/fleet.sh [RUNS] [SECONDS]   (defaults: 5 runs of 5 s)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-5}
SECS=${2:-5}
command -v lttng-relayd >/dev/null || { echo "lttng-relayd missing: bash scripts/setup.sh" >&2; exit 1; }
cargo build --release -q -p ringtrace-cli --bin ringtrace
BIN=./target/release/ringtrace
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ringtrace-fleet.XXXXXX")
trap 'kill "$RELAYD" 2>/dev/null; rm -rf "$WORK"' EXIT
# Free ports on the loopback, from the kernel.
read -r CP DP LP < <(python3 -c 'import socket
s=[socket.socket() for _ in range(3)]
[x.bind(("127.0.0.1",0)) for x in s]
print(*[x.getsockname()[1] for x in s])')
lttng-relayd -o "$WORK/relayd" -C "tcp://127.0.0.1:$CP" -D "tcp://127.0.0.1:$DP" -L "tcp://127.0.0.1:$LP" >/dev/null 2>&1 &
RELAYD=$!
sleep 1
field() { sed -n "s/^$1  *//p" "$2" | head -1; }
printf '\n%-8s %-7s %14s %12s %12s %14s %10s\n' run relay "events/s" "events lost" "pkts lost" "relayd MB/s" "trace MB"
for r in $(seq 1 "$RUNS"); do
  for mode in local relay; do
    out="$WORK/demo-$r-$mode"
    extra=()
    [ "$mode" = relay ] && extra=(--relay "net://127.0.0.1:$CP:$DP")
    $BIN demo -o "$out" --seconds "$SECS" --show 0 "${extra[@]}" >"$WORK/log" 2>&1
    rate=$(field "events per second" "$WORK/log")
    lost=$(field "events lost" "$WORK/log")
    size=$(field "trace bytes" "$WORK/log")
    if [ "$mode" = relay ]; then
      plost=$(field "packets lost to relayd" "$WORK/log")
      folder=$(field "relayd folder" "$WORK/log")
      sent=$(du -sb "$WORK/relayd/$folder" | cut -f1)
      mbs=$(echo "$sent / $SECS / 1000000" | bc -l)
    else
      plost=-; mbs=0
    fi
    printf '%-8s %-7s %14.0f %12s %12s %14.1f %10.1f\n' "$r" "$mode" "$rate" "$lost" "$plost" "$mbs" "$(echo "$size / 1000000" | bc -l)"
    rm -rf "$out"
  done
done
# The relayd copies are whole: every event recorded is in them.
echo
echo "Parquet export of a $SECS s demo trace (best of 3):"
$BIN demo -o "$WORK/pq-demo" --seconds "$SECS" --show 0 >/dev/null 2>&1
events=$($BIN stats "$WORK/pq-demo" | awk '$1=="total"{print $2}')
best=999999
for r in 1 2 3; do
  rm -rf "$WORK/pq"
  t0=$(date +%s.%N); $BIN export "$WORK/pq-demo" --format parquet -o "$WORK/pq" >/dev/null 2>&1; t1=$(date +%s.%N)
  t=$(echo "$t1 - $t0" | bc -l)
  best=$(echo "if ($t < $best) $t else $best" | bc -l)
done
bytes=$(find "$WORK/pq" -name '*.parquet' -printf '%s\n' | awk '{s+=$1} END {print s}')
printf '%-22s %14s\n' "events" "$events"
printf '%-22s %14.3f\n' "export s (best)" "$best"
printf '%-22s %14.0f\n' "events/s" "$(echo "$events / $best" | bc -l)"
printf '%-22s %14s\n' "parquet bytes" "$bytes"
printf '%-22s %14.2f\n' "bytes per event" "$(echo "$bytes / $events" | bc -l)"
