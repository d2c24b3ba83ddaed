#!/usr/bin/env bash
# The GPU half of bench/runtime (the CPU half is build.py): run the plain
# program, then the same program under `regtune measure`, and the bad
# cases, writing everything to bench/runtime/out (and, when $OUT is set,
# a summary, the reports and a tarball of everything to $OUT):
#
#   wall.txt                  the program's wall time, plain and under measure (3 runs each, interleaved)
#   measure.json, measure.txt the report of two measure runs (JSON, table; --launches 2: both MD steps,
#                             the example's small one and the production-size one); db/decisions.json the db after
#   first-launch.txt          --launches 1: the MD kernel measured on the example's small lattice alone
#   *.stdout, *.stderr, *.rc  each run's output and exit status; same-output.txt compares them with plain's
#   fault.txt                 a db whose Laplacian candidate writes out of bounds
#   unplanned.txt             a run launching no kernel the db has candidates for
#   early.txt                 a program that exits (status 3) after its first kernel
#
#   bench/runtime/run.sh [RUNS]      (RUNS: the most timed runs per candidate, default 200, measure's)
set -u
cd "$(dirname "$0")/../.."
B=bench/runtime/build
FINAL=${OUT:-}
OUT=bench/runtime/out
RUNS=${1:-200}
rm -rf "$OUT"
mkdir -p "$OUT"
export REGTUNE_CUPTI=$PWD/$B/lib/libcupti.so.12
R=$B/bin/regtune
APP=$B/app

nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader > "$OUT/gpu.txt" 2>&1
cp -r "$B/db" "$OUT/db"
cp -r "$B/fault" "$OUT/fault"
cp -r "$B/db" "$OUT/early"
cp -r "$B/db" "$OUT/first"

now() { date +%s.%N; }
# run NAME CMD...: stdout, stderr, status and wall seconds of one command.
run() {
  local name=$1
  shift
  local t0 t1
  t0=$(now)
  timeout 240 "$@" >"$OUT/$name.stdout" 2>"$OUT/$name.stderr"
  echo $? >"$OUT/$name.rc"
  t1=$(now)
  awk -v n="$name" -v a="$t0" -v b="$t1" 'BEGIN { printf "%s %.3f\n", n, b - a }' >>"$OUT/wall.txt"
}

run dry "$R" measure --db "$OUT/db/decisions.json" --dry-run -- "$APP"
# Interleaved: plain, measured (JSON report), plain, measured (table), plain, measured (table, kept run files).
run plain1 "$APP"
run measure1 "$R" measure --db "$OUT/db/decisions.json" --launches 2 --runs "$RUNS" --format json -o "$OUT/measure.json" -- "$APP"
run plain2 "$APP"
run measure2 "$R" measure --db "$OUT/db/decisions.json" --launches 2 --runs "$RUNS" -o "$OUT/measure.txt" -- "$APP"
run plain3 "$APP"
run measure3 "$R" measure --db "$OUT/db/decisions.json" --launches 2 --runs "$RUNS" --keep "$OUT/run-measure" -o "$OUT/measure3.txt" -- "$APP"

run first "$R" measure --db "$OUT/first/decisions.json" --launches 1 --runs "$RUNS" -o "$OUT/first-launch.txt" -- "$APP"
run fault "$R" measure --db "$OUT/fault/decisions.json" --launches 2 --runs "$RUNS" --keep "$OUT/run-fault" -o "$OUT/fault.txt" -- "$APP"
run unplanned "$R" measure --db "$OUT/db/decisions.json" --runs "$RUNS" -o "$OUT/unplanned.txt" -- "$APP" private_array
run plain-entropy "$APP" private_array
run early "$R" measure --db "$OUT/early/decisions.json" --runs "$RUNS" --keep "$OUT/run-early" -o "$OUT/early.txt" -- "$APP" --exit-early
run plain-early "$APP" --exit-early

{
  for r in measure1 measure2 measure3 first fault; do
    cmp -s "$OUT/plain1.stdout" "$OUT/$r.stdout" && echo "$r: same stdout as plain" || echo "$r: STDOUT DIFFERS"
  done
  cmp -s "$OUT/plain-entropy.stdout" "$OUT/unplanned.stdout" && echo "unplanned: same stdout as plain" || echo "unplanned: STDOUT DIFFERS"
  cmp -s "$OUT/plain-early.stdout" "$OUT/early.stdout" && echo "early: same stdout as plain" || echo "early: STDOUT DIFFERS"
} >"$OUT/same-output.txt"
for f in "$OUT"/*.rc; do echo "$(basename "$f" .rc) $(cat "$f")"; done >"$OUT/status.txt"
{
  cat "$OUT/gpu.txt" "$OUT/status.txt" "$OUT/same-output.txt" "$OUT/wall.txt"
  echo "--- measure (table)"; cat "$OUT/measure.txt"
  echo "--- measure, third run"; cat "$OUT/measure3.txt"
  echo "--- first launch only"; cat "$OUT/first-launch.txt"
  echo "--- fault"; cat "$OUT/fault.txt"; tail -2 "$OUT/fault.stderr"
  echo "--- unplanned"; cat "$OUT/unplanned.txt"; tail -1 "$OUT/unplanned.stderr"
  echo "--- early"; cat "$OUT/early.txt"; tail -1 "$OUT/early.stderr"
} >"$OUT/summary.txt" 2>&1
cat "$OUT/summary.txt"
if [ -n "$FINAL" ]; then
  cp "$OUT/summary.txt" "$OUT/measure.json" "$OUT/measure.txt" "$FINAL/"
  cp "$OUT/db/decisions.json" "$FINAL/measured-decisions.json"
  tar -czf "$FINAL/runtime-out.tar.gz" -C "$(dirname "$OUT")" "$(basename "$OUT")"
fi
