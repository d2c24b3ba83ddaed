#!/usr/bin/env bash
# The GPU half of bench/nvcc (the CPU half is build.py): the examples'
# program built by nvcc, plain, then under `regtune measure` with nvcc's
# candidates and the hand sweep's cubins (`--compare capR=...`) timed in the
# same replay; everything to bench/nvcc/out and, when $OUT is set, a tarball.
#
#   bench/nvcc/run.sh [RUNS]
set -u
cd "$(dirname "$0")/../.."
B=bench/nvcc/build
FINAL=${OUT:-}
OUT=bench/nvcc/out
RUNS=${1:-200}
rm -rf "$OUT"
mkdir -p "$OUT"
export REGTUNE_CUPTI=$PWD/$B/lib/libcupti.so.12
R=$B/bin/regtune
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader >"$OUT/gpu.txt" 2>&1
cp -r "$B/db" "$OUT/db"
compare=()
for f in "$B"/sweep/cap*/*.cubin; do
  cap=$(basename "$(dirname "$f")")
  compare+=(--compare "$cap=$f")
done
"$B/app" >"$OUT/plain.stdout" 2>"$OUT/plain.stderr"
echo $? >"$OUT/plain.rc"
"$R" measure --db "$OUT/db/decisions.json" --launches 2 --runs "$RUNS" "${compare[@]}" --keep "$OUT/run" \
  --format json -o "$OUT/measure.json" -- "$B/app" >"$OUT/measure.stdout" 2>"$OUT/measure.stderr"
echo $? >"$OUT/measure.rc"
"$R" measure --db "$OUT/db/decisions.json" --launches 2 --runs "$RUNS" "${compare[@]}" \
  -o "$OUT/measure.txt" -- "$B/app" >"$OUT/measure2.stdout" 2>"$OUT/measure2.stderr"
echo $? >"$OUT/measure2.rc"
cmp -s "$OUT/plain.stdout" "$OUT/measure.stdout" && echo same >"$OUT/same-output.txt" || echo differ >"$OUT/same-output.txt"
tail -n 40 "$OUT/measure.txt" "$OUT/measure.stderr" 2>/dev/null
cat "$OUT/gpu.txt" "$OUT"/*.rc "$OUT/same-output.txt"
[ -n "$FINAL" ] && tar czf "$FINAL/nvcc-examples.tar.gz" -C bench/nvcc out
exit 0
