#!/usr/bin/env bash
# The GPU half of reach.cu's cases (`build.py` builds them, `--reach-only`
# for these alone): the program plain, then under `regtune measure`, and
# check.py's PASS or FAIL per case. Writes bench/runtime/out-reach (and,
# when $OUT is set, check.txt, the reports and a tarball of everything to $OUT):
#
#   measure.txt, all.txt      the reports: every case as measure runs it, and with --capture-all
#   relocated.txt             REGTUNE_REPLAY_RELOCATE=1: the replay on copies of its own, stored pointers moved to them
#   arguments.txt             REGTUNE_REPLAY_RELOCATE=arguments: only the argument buffer's pointers moved, as before
#   budget.txt                --capture-budget 0: chase_list's list left out
#   run-*/                    each run's plan, events, replay log and capture log (--keep)
#   check.txt                 check.py's verdicts
#   app.txt, app-same.txt     with APP=1 and build/app: the examples' program measured, output compared with plain's
#
#   bench/runtime/reach.sh [RUNS]      (RUNS: the most timed runs per candidate, default 30)
set -u
cd "$(dirname "$0")/../.."
B=bench/runtime/build
FINAL=${OUT:-}
O=bench/runtime/out-reach
RUNS=${1:-30}
rm -rf "$O"
mkdir -p "$O"
export REGTUNE_CUPTI=$PWD/$B/lib/libcupti.so.12
R=$B/bin/regtune

nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader >"$O/gpu.txt" 2>&1
date -u +%Y-%m-%dT%H:%MZ >"$O/date.txt"

# run NAME CMD...: stdout, stderr and status of one command.
run() {
  local name=$1
  shift
  timeout 150 "$@" >"$O/$name.stdout" 2>"$O/$name.stderr"
  echo $? >"$O/$name.rc"
}
# measure NAME [OPTIONS...] -- PROGRAM...: a fresh copy of the db, kept run files.
measure() {
  local name=$1
  shift
  cp -r "$B/reach-db" "$O/db-$name"
  run "$name" "$R" measure --db "$O/db-$name/decisions.json" --runs "$RUNS" --budget 2 --keep "$O/run-$name" -o "$O/$name.txt" "$@"
}

run plain "$B/reach"
measure measure -- "$B/reach"
measure all --capture-all -- "$B/reach"
REGTUNE_REPLAY_RELOCATE=1 measure relocated -- "$B/reach" rows list global constant counter
REGTUNE_REPLAY_RELOCATE=arguments measure arguments -- "$B/reach" rows constant
measure budget --capture-budget 0 -- "$B/reach" list

if [ -n "${APP:-}" ] && [ -x "$B/app" ]; then
  cp -r "$B/db" "$O/app-db"
  run app-plain "$B/app"
  run app "$R" measure --db "$O/app-db/decisions.json" --launches 2 --runs "$RUNS" --budget 2 --keep "$O/run-app" -o "$O/app.txt" -- "$B/app"
  cmp -s "$O/app-plain.stdout" "$O/app.stdout" && echo "app: same stdout as plain" >"$O/app-same.txt" || echo "app: STDOUT DIFFERS" >"$O/app-same.txt"
fi

python3 bench/runtime/check.py "$O" >"$O/check.txt" 2>&1
for f in "$O"/*.rc; do echo "$(basename "$f" .rc) $(cat "$f")"; done >"$O/status.txt"
{
  cat "$O/gpu.txt" "$O/date.txt" "$O/status.txt"
  echo "--- check"; cat "$O/check.txt"
  echo "--- measure"; cat "$O/measure.txt"
  echo "--- capture log"; cat "$O/run-measure/capture.log" 2>/dev/null
  echo "--- replay log"; grep -h "replayed in\|faulted" "$O"/run-*/replay.log 2>/dev/null | head -60
  echo "--- all"; cat "$O/all.txt"
  echo "--- relocated"; cat "$O/relocated.txt"
  echo "--- arguments"; cat "$O/arguments.txt"
  echo "--- budget"; cat "$O/budget.txt"
  [ -f "$O/app.txt" ] && { echo "--- app"; cat "$O/app-same.txt" "$O/app.txt"; }
  echo "--- stderr tails"; for f in "$O"/*.stderr; do echo "$(basename "$f"):"; tail -3 "$f"; done
} >"$O/summary.txt" 2>&1
cat "$O/summary.txt"
if [ -n "$FINAL" ]; then
  cp "$O/summary.txt" "$O/check.txt" "$O/measure.txt" "$FINAL/"
  tar -czf "$FINAL/reach-out.tar.gz" -C "$(dirname "$O")" "$(basename "$O")"
fi
