#!/usr/bin/env bash
# The GPU half of bench/calibrate: time every candidate the cost model
# estimated, on the GPU, and print how well the estimates rank them.
#
#   bench/calibrate/run.sh          # from the repository root; results in $OUT (default bench/calibrate/out)
#
# Examples: examples.py times each example kernel's candidates with
# bench/gpu/run.py's inputs. Corpus: each program corpus.py built runs once
# plainly, then under `regtune measure` (every candidate of every kernel it
# launches, replayed on copies of its first two launches' memory), and
# correlate.py joins the measurements with predict's estimates. The corpus
# travels packed (corpus.py unpack restores it); programs built without
# corpus.py's tune step have no candidates and are skipped.
set -u
cd "$(dirname "$0")/../.."
B=bench/calibrate/build
OUT=${OUT:-bench/calibrate/out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
export REGTUNE_CUPTI=$PWD/$B/lib/libcupti.so.12
R=$B/bin/regtune
PWD_R=$PWD/$R
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader > "$OUT/gpu.txt" 2>&1

[ -f "$B/examples/predict.json" ] && timeout 200 python3 bench/calibrate/examples.py run --out "$OUT/examples.measured.json" > "$OUT/examples.log" 2>&1

pairs=()
[ -f "$B/corpus/programs.json" ] && python3 bench/calibrate/corpus.py unpack
for prog in $(python3 -c "import json; print(' '.join(json.load(open('$B/corpus/programs.json'))))" 2>/dev/null); do
  # Programs built without the tune step (no db) are skipped; each runs from its cwd (input files).
  read -r binary db predict cwd args < <(python3 -c "
import json, os; p = json.load(open('$B/corpus/programs.json'))['$prog']
ab = lambda x: os.path.abspath(x) if x else '-'
print(ab(p.get('binary')), ab(p.get('db')), ab(p.get('predict')), ab(p.get('cwd', '.')), ' '.join(p.get('args', [])))")
  if [ "$db" = - ] || [ "$predict" = - ] || ! "$R" measure --db "$db" --dry-run -- true > /dev/null 2>&1; then
    echo "$prog: no candidates to measure" | tee -a "$OUT/summary.txt"
    continue
  fi
  t0=$(date +%s.%N)
  (cd "$cwd" && CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0} timeout 60 "$binary" $args > /dev/null 2> "$OUT/$prog.plain.stderr")
  rc_plain=$?
  t1=$(date +%s.%N)
  (cd "$cwd" && CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0} timeout 150 "$PWD_R" measure --db "$db" --launches 2 --runs 10 \
    --format json -o "$OUT/$prog.measure.json" -- "$binary" $args > /dev/null 2> "$OUT/$prog.measure.stderr")
  rc=$?
  t2=$(date +%s.%N)
  cp "$predict" "$OUT/$prog.predict.json"
  awk -v p="$prog" -v a="$rc_plain" -v b="$rc" -v t0="$t0" -v t1="$t1" -v t2="$t2" \
    'BEGIN { printf "%s: plain rc %s %.1f s, measure rc %s %.1f s\n", p, a, t1 - t0, b, t2 - t1 }' | tee -a "$OUT/summary.txt"
  [ -s "$OUT/$prog.measure.json" ] && pairs+=("$OUT/$prog.predict.json" "$OUT/$prog.measure.json")
done

if [ -f "$OUT/examples.measured.json" ]; then
  echo "== examples" | tee -a "$OUT/summary.txt"
  python3 bench/calibrate/correlate.py "$B/examples/predict.json" "$OUT/examples.measured.json" | tee -a "$OUT/summary.txt"
fi
if [ ${#pairs[@]} -gt 0 ]; then
  echo "== corpus" | tee -a "$OUT/summary.txt"
  python3 bench/calibrate/correlate.py "${pairs[@]}" | tee -a "$OUT/summary.txt"
fi
# Everything in one file too (the device tool brings back few files).
tar -czf "$OUT/calibrate-out.tar.gz" -C "$OUT" --exclude calibrate-out.tar.gz .
