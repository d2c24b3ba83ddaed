#!/usr/bin/env bash
# The measured search on the development corpus, GPU half: each program
# bench/search/build.py planned runs once under `regtune measure`, which
# replays the first two launches of every kernel with every candidate tune
# kept and every hand-sweep build (--compare), interleaved, and byte-
# compares each with plain; the program's own output is kept beside.
#
#   bench/search/run.sh [BUILD]   # from the repository root; results in $OUT (default bench/search/out)
#
# BUILD: what build.py wrote (default bench/search/build; `build.py
# --compiler nvcc` writes bench/nvcc/search, the corpus built by nvcc);
# PLAN=BUILD/plan-2.json runs one batch of it (build.py --batches);
# PROGRAMS="a b" runs those programs alone.
#
# Results are written as each program finishes (a timeout keeps what was
# done), and packed into $OUT/search-out.tar.gz with the measured dbs.
set -u
cd "$(dirname "$0")/../.."
B=${1:-${BUILD:-bench/search/build}}
B=${B%/}
export PLAN=${PLAN:-$B/plan.json}
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

# Programs packed by corpus.py travel as tar.xz (clang's corpus, nvcc's corpus-nvcc): unpack those not yet here.
for t in bench/calibrate/build/corpus*/*.tar.xz; do
  [ -e "$t" ] || continue
  d=${t%.tar.xz}
  [ -d "$d" ] || tar -xJf "$t" -C "$(dirname "$t")"
done
# build.py may pack the tools and the dbs as well (tools.tar.xz, <program>/db.tar.xz): unpacked afresh
# (measure writes into the dbs; a machine may keep an earlier call's).
if [ -e "$B/tools.tar.xz" ]; then
  rm -rf "$B/bin" "$B/lib" && tar -xJf "$B/tools.tar.xz" -C "$B"
fi
for t in "$B"/*/db.tar.xz; do
  [ -e "$t" ] || continue
  rm -rf "$(dirname "$t")/db" && tar -xJf "$t" -C "$(dirname "$t")"
done

pack() {
  tar -czf "$OUT/search-out.tar.gz.tmp" -C "$WORK" . \
    -C "$ROOT/$B" $(cd "$ROOT/$B" && ls -d */db/decisions.json 2>/dev/null) && mv "$OUT/search-out.tar.gz.tmp" "$OUT/search-out.tar.gz"
  cp "$WORK/summary.txt" "$OUT/summary.txt" 2>/dev/null
}

# PROGRAMS="a b" measures those alone (a GPU call of ten minutes may not hold them all).
for prog in ${PROGRAMS:-$(python3 -c "import json; print(' '.join(json.load(open('$PLAN'))))")}; do
  eval "$(python3 - "$prog" <<'PY'
import json, os, shlex, sys
p = json.load(open(os.environ["PLAN"]))[sys.argv[1]]
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
