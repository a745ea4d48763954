#!/usr/bin/env bash
# The demo (10 s, the debug build the tests run) with its two reader
# threads, the consumer and the standby, under one CPU quota: how many
# records a discard session loses when what drains its buffers gets less
# CPU than the writers. cgroup v1 `cpu` controller, as root (threads are
# moved one by one through `tasks`).
#
#   bash scripts/starve_readers.sh QUOTA_US   # of each 100 ms; -1: no limit
set -euo pipefail
cd "$(dirname "$0")/.."
q=${1:?usage: bash scripts/starve_readers.sh QUOTA_US (of 100000; -1: no limit)}
cg=/sys/fs/cgroup/cpu/ringtrace-readers
[ -d /sys/fs/cgroup/cpu ] || { echo "starve_readers: needs the cgroup v1 cpu controller at /sys/fs/cgroup/cpu" >&2; exit 1; }
cargo build -q -p ringtrace-cli
mkdir -p "$cg"
echo 100000 >"$cg/cpu.cfs_period_us"
echo "$q" >"$cg/cpu.cfs_quota_us"
out=$(mktemp -d)/trace
target/debug/ringtrace demo -o "$out" --seconds 10 --show 0 >"$out.summary" 2>&1 &
demo=$!
moved=0
for _ in $(seq 500); do
  moved=0
  for t in /proc/$demo/task/*; do
    case $(cat "$t/comm" 2>/dev/null) in
      ringtrace-cons | ringtrace-stby) echo "${t##*/}" >"$cg/tasks" 2>/dev/null && moved=$((moved + 1)) ;;
    esac
  done
  [ "$moved" -ge 2 ] && break
  sleep 0.01
done
wait "$demo"
[ "$moved" -ge 2 ] || echo "starve_readers: the reader threads were not all found" >&2
# The trace's counts, and the demo's own: how long its channels went
# unread and its longest read (what a loss comes from).
target/debug/ringtrace stats "$out" | awk -v q="$q" '$1 == "total" { printf "quota %s us per 100 ms: %s events, %s discarded", q, $2, $3 }'
awk '/^longest unread/ { u = $NF } /^longest read/ { r = $NF } END { printf ", longest unread %s ms, longest read %s ms\n", u, r }' "$out.summary"
rm -rf "$(dirname "$out")"
