#!/usr/bin/env bash
# The measured search on the development corpus, GPU half: each program
# bench/search/build.py planned runs once under `regtune measure`, which
# replays the first two launches of every kernel with every candidate tune
# kept and every hand-sweep build (--compare), interleaved, and byte-
# compares each with plain; the program's own output is kept beside.
#
#   bench/search/run.sh     # from the repository root; results in $OUT (default bench/search/out)
#
# Results are written as each program finishes (a timeout keeps what was
# done), and packed into $OUT/search-out.tar.gz with the measured dbs.
set -u
cd "$(dirname "$0")/../.."
B=bench/search/build
# Everything goes to $WORK; $OUT gets the packed results and the summary
# (a GPU machine may bring back only a few files).
OUT=${OUT:-bench/search/out}
WORK=${WORK:-$OUT/work}
mkdir -p "$OUT" "$WORK"
OUT=$(cd "$OUT" && pwd)
WORK=$(cd "$WORK" && pwd)
ROOT=$PWD
export REGTUNE_CUPTI=$ROOT/$B/lib/libcupti.so.12
R=$ROOT/$B/bin/regtune
BUDGET=${BUDGET:-4}
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader > "$WORK/gpu.txt" 2>&1

# Programs packed by corpus.py travel as tar.xz: unpack those not yet here.
for t in bench/calibrate/build/corpus/*.tar.xz; do
  [ -e "$t" ] || continue
  d=${t%.tar.xz}
  [ -d "$d" ] || tar -xJf "$t" -C bench/calibrate/build/corpus
done

pack() {
  tar -czf "$OUT/search-out.tar.gz.tmp" -C "$WORK" . \
    -C "$ROOT/$B" $(cd "$ROOT/$B" && ls -d */db/decisions.json 2>/dev/null) && mv "$OUT/search-out.tar.gz.tmp" "$OUT/search-out.tar.gz"
  cp "$WORK/summary.txt" "$OUT/summary.txt" 2>/dev/null
}

# PROGRAMS="a b" measures those alone (a GPU call of ten minutes may not hold them all).
for prog in ${PROGRAMS:-$(python3 -c "import json; print(' '.join(json.load(open('$B/plan.json'))))")}; do
  eval "$(python3 - "$prog" <<'PY'
import json, shlex, sys
p = json.load(open("bench/search/build/plan.json"))[sys.argv[1]]
print("binary=" + shlex.quote(p["binary"]))
print("cwd=" + shlex.quote(p["cwd"]))
print("db=" + shlex.quote(p["db"]))
print("args=(" + " ".join(shlex.quote(a) for a in p["args"]) + ")")
print("compare=(" + " ".join(shlex.quote("--compare=" + c.split("=", 1)[0] + "=" + __import__("os").path.abspath(c.split("=", 1)[1])) for c in p["compare"]) + ")")
print("envs=(" + " ".join(shlex.quote(f"{k}={v}") for k, v in p.get("env", {}).items()) + ")")
PY
)"
  t1=$(date +%s.%N)
  (cd "$cwd" && env "${envs[@]}" timeout "${MTIMEOUT:-300}" "$R" measure --db "$ROOT/$db" --launches "${LAUNCHES:-2}" --runs "${RUNS:-1000}" --budget "$BUDGET" \
    --keep "$WORK/keep-$prog" "${compare[@]}" --format json -o "$WORK/$prog.measure.json" -- "$ROOT/$binary" "${args[@]}" \
    > "$WORK/$prog.measured.out" 2> "$WORK/$prog.measure.stderr")
  rc=$?
  t2=$(date +%s.%N)
  rm -f "$WORK/keep-$prog/plan.json"
  awk -v p="$prog" -v b="$rc" -v t1="$t1" -v t2="$t2" 'BEGIN { printf "%s: measure rc %s %.1f s\n", p, b, t2 - t1 }' | tee -a "$WORK/summary.txt"
  pack
done
pack
