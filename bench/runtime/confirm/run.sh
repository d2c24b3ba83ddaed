#!/usr/bin/env bash
# The GPU half of bench/runtime/confirm (the CPU half is build.py): the
# program plainly and rebuilt (FAST), each timing its own launches
# (CONFIRM_TIME=1), then under `regtune measure --launches 2` (the replay
# times the first two launches of each kernel, the confirmation swaps the
# replay's choice into the launches after), twice, then check.py's table.
# Writes bench/runtime/confirm/out/; where $OUT is set, out/ as one tarball
# there and the summary beside it.
#
#   bench/runtime/confirm/run.sh [ITERATIONS]   (default 600)
set -u
cd "$(dirname "$0")/../../.."
C=bench/runtime/confirm
B=$C/build
O=$C/out
rm -rf "$O"
ITERS=${1:-600}
mkdir -p "$O"
export REGTUNE_CUPTI=$PWD/$B/lib/libcupti.so.12
R=$B/bin/regtune
DBS=$(mktemp -d)

nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,compute_cap --format=csv,noheader >"$O/gpu.txt" 2>&1
date -u +%Y-%m-%dT%H:%MZ >"$O/date.txt"
{
  for p in confirm confirm-fast confirm confirm-fast; do
    CONFIRM_TIME=1 timeout 60 "$B/$p" "$ITERS" >"$DBS/$p.stdout" 2>"$DBS/$p.stderr"
    echo "== $p (rc $?): $(cat "$DBS/$p.stdout")"
    cat "$DBS/$p.stderr"
  done
} >"$O/timer.txt"
for n in 1 2; do
  rm -rf "$DBS/db"
  cp -r "$B/db" "$DBS/db"
  t0=$(date +%s.%N)
  timeout 240 "$R" measure --db "$DBS/db/decisions.json" --launches 2 --runs 200 --budget 20 \
    --keep "$DBS/run$n" --format json -o "$O/measure-$n.json" -- "$B/confirm" "$ITERS" >"$O/measure-$n.stdout" 2>"$O/measure-$n.stderr"
  echo "rc $? seconds $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')" >"$O/measure-$n.rc"
  cp "$DBS/db/decisions.json" "$O/decisions-$n.json"
  cp "$DBS/run$n/events.jsonl" "$O/events-$n.jsonl" 2>/dev/null
  cat "$DBS/run$n/replay.log" >>"$O/replay.log" 2>/dev/null
done
cp "$DBS/confirm.stdout" "$O/plain.stdout"
python3 "$C/check.py" "$O" >"$O/summary.txt" 2>&1
cat "$O/gpu.txt" "$O/timer.txt" "$O/summary.txt"
if [ -n "${OUT:-}" ]; then
  tar -czf "$OUT/confirm-out.tar.gz" -C "$C" out
  cp "$O/summary.txt" "$OUT/summary.txt"
fi
rm -rf "$DBS"
