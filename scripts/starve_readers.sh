#!/usr/bin/env bash
# The demo (10 s, the debug build the tests run) with its two reader
# threads, the consumer and the standby, moved together into one cgroup
# with a CPU quota: how many records a discard session loses when what
# drains its buffers gets less CPU than the writers. cgroup v1 `cpu`
# controller, as root (threads are moved one by one through `tasks`).
# `off` leaves the readers where they are (the baseline: no group).
#
# Prints the trace's events and discarded records, the demo's longest
# unread and longest read, the readers' time runnable but not running (on
# the run queue), and how many of the group's periods were throttled by
# the quota: a loss with none throttled is the group waiting
# on the run queue (group scheduling: the consumer's nice and time slice
# count only inside its group), not the quota.
#
#   bash scripts/starve_readers.sh QUOTA_US   # of each 100 ms; -1: no limit; off: no group
set -euo pipefail
cd "$(dirname "$0")/.."
q=${1:?usage: bash scripts/starve_readers.sh QUOTA_US (of 100000; -1: no limit; off: no group)}
cg=/sys/fs/cgroup/cpu/ringtrace-readers
[ -d /sys/fs/cgroup/cpu ] || { echo "starve_readers: needs the cgroup v1 cpu controller at /sys/fs/cgroup/cpu" >&2; exit 1; }
cargo build -q -p ringtrace-cli
if [ "$q" != off ]; then
  mkdir -p "$cg"
  echo 100000 >"$cg/cpu.cfs_period_us"
  echo "$q" >"$cg/cpu.cfs_quota_us"
fi
throttled() { [ "$q" = off ] && echo 0 || awk '$1 == "nr_throttled" { print $2 }' "$cg/cpu.stat"; }
t0=$(throttled)
out=$(mktemp -d)/trace
target/debug/ringtrace demo -o "$out" --seconds 10 --show 0 >"$out.summary" 2>&1 &
demo=$!
moved=0
for _ in $(seq 500); do
  [ "$q" = off ] && break
  moved=0
  for t in /proc/$demo/task/*; do
    case $(cat "$t/comm" 2>/dev/null) in
      ringtrace-cons | ringtrace-stby) echo "${t##*/}" >"$cg/tasks" 2>/dev/null && moved=$((moved + 1)) ;;
    esac
  done
  [ "$moved" -ge 2 ] && break
  sleep 0.01
done
# The readers' time spent runnable but not running (schedstat's run
# delay), read until the demo ends.
delay=0
while kill -0 "$demo" 2>/dev/null; do
  d=0
  for t in /proc/$demo/task/*; do
    case $(cat "$t/comm" 2>/dev/null) in
      ringtrace-cons | ringtrace-stby) d=$((d + $(cut -d' ' -f2 "$t/schedstat" 2>/dev/null || echo 0))) ;;
    esac
  done
  [ "$d" -gt 0 ] && delay=$d
  sleep 0.1
done
wait "$demo"
[ "$q" = off ] || [ "$moved" -ge 2 ] || echo "starve_readers: the reader threads were not all found" >&2
# The trace's counts, and the demo's own: how long its channels went
# unread and its longest read (what a loss comes from).
target/debug/ringtrace stats "$out" | awk -v q="$q" '$1 == "total" { printf "quota %s: %s events, %s discarded", q, $2, $3 }'
awk -v th=$(($(throttled) - t0)) -v rq=$((delay / 1000000)) '/^longest unread/ { u = $NF } /^longest read/ { r = $NF }
  END { printf ", longest unread %s ms, longest read %s ms, readers runnable not running %d ms, periods throttled %d\n", u, r, rq, th }' "$out.summary"
rm -rf "$(dirname "$out")"
