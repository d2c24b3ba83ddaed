#!/usr/bin/env bash
# The GPU half of bench/runtime/launches (the CPU half is build.py): each
# program plainly, then under `regtune measure` (its run files kept), then
# check.py's verdict per case. Writes bench/runtime/launches/out/; when
# $OUT is set, a tarball of it there after every case (a run cut short
# keeps what it did) and the summary.
#
#   bench/runtime/launches/run.sh [one|two|all|graphs|variables]   one: the cases for one GPU (default);
#                                                        two: those that need a second GPU (device 1);
#                                                        graphs: the graph cases alone (build/graph and build/db);
#                                                        variables: the module-variable case alone
set -u
cd "$(dirname "$0")/../../.."
L=bench/runtime/launches
B=$L/build
FINAL=${OUT:-}
WHICH=${1:-one}
O=$L/out
DBS=$(mktemp -d)
rm -rf "$O"
mkdir -p "$O"
save() {
  [ -n "$FINAL" ] && tar -czf "$FINAL/launches-$WHICH.tar.gz" -C "$L" out
}
export REGTUNE_CUPTI=$PWD/$B/lib/libcupti.so.12
R=$B/bin/regtune

nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,compute_cap --format=csv,noheader >"$O/gpu.txt" 2>&1
date -u +%Y-%m-%dT%H:%MZ >"$O/date.txt"

# case NAME DB LAUNCHES PROGRAM ARGS...: the program plainly, then measured.
START=$(date +%s)
case_() {
  local name=$1 db=$2 launches=$3
  shift 3
  if [ $(($(date +%s) - START)) -gt 240 ]; then
    echo "$name: not run (out of time)" >>"$O/skipped.txt"
    return
  fi
  timeout 30 "$@" >"$O/$name.plain.stdout" 2>"$O/$name.plain.stderr"
  echo $? >"$O/$name.plain.rc"
  cp -r "$B/$db" "$DBS/$name"
  local t0 t1
  t0=$(date +%s.%N)
  timeout 60 "$R" measure --db "$DBS/$name/decisions.json" --launches "$launches" --runs 20 --budget 2 \
    --keep "$O/$name-run" --format json -o "$O/$name.json" -- "$@" >"$O/$name.stdout" 2>"$O/$name.stderr"
  echo $? >"$O/$name.rc"
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f\n", b - a }' >"$O/$name.seconds"
  cp "$DBS/$name/decisions.json" "$O/$name.decisions.json"
  save
}

if [ "$WHICH" != two ] && [ "$WHICH" != variables ]; then
  case_ capture db 3 "$B/graph" capture
  case_ explicit db 2 "$B/graph" explicit
  case_ explicit-later db 1 "$B/graph" explicit
  case_ update db 3 "$B/graph" update
  case_ destroyed-driver db 1 "$B/graph" destroyed driver
  case_ destroyed-entry db 1 "$B/graph" destroyed entry
  case_ destroyed-runtime db 1 "$B/graph" destroyed runtime
fi
if [ "$WHICH" = one ] || [ "$WHICH" = all ]; then
  case_ coop db 2 "$B/coop"
  case_ coop-fat fat 2 "$B/coop"
  case_ threads db 4 "$B/threads" threads
  case_ capture-beside db 4 "$B/threads" capture-beside
fi
if [ "$WHICH" = one ] || [ "$WHICH" = all ] || [ "$WHICH" = variables ]; then
  case_ variables fast 2 "$B/variables"
fi
if [ "$WHICH" = two ] || [ "$WHICH" = all ]; then
  case_ device1 db 3 "$B/threads" device 1
  case_ devices db 6 "$B/threads" devices
fi

if command -v python3 >/dev/null; then
  python3 "$L/check.py" "$O" >"$O/summary.txt" 2>&1
else
  echo "no python3 here: run bench/runtime/launches/check.py on the fetched out/" >"$O/summary.txt"
fi
cat "$O/gpu.txt" "$O/summary.txt"
save
[ -n "$FINAL" ] && cp "$O/summary.txt" "$FINAL/summary-$WHICH.txt"
rm -rf "$DBS"
