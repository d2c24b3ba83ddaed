#!/usr/bin/env bash
# The rebuilt programs (bench/search/rebuild.py) beside the plain ones, each
# run ROUNDS times in turn (plain, rebuilt, plain, ...), with their own
# output (their timers) and wall time kept; compare.py reads them.
# PROGRAMS="a b" runs those programs alone.
#
#   bench/search/rebuilt.sh     # from the repository root; results in $OUT (default bench/search/out-rebuilt)
set -u
cd "$(dirname "$0")/../.."
B=bench/search/build/rebuilt
OUT=${OUT:-bench/search/out-rebuilt}
ROUNDS=${ROUNDS:-3}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
ROOT=$PWD
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/gpu.txt" 2>&1
# The plain programs travel packed (clang's corpus, nvcc's corpus-nvcc).
for t in bench/calibrate/build/corpus*/*.tar.xz; do
  [ -e "$t" ] || continue
  d=${t%.tar.xz}
  [ -d "$d" ] || tar -xJf "$t" -C "$(dirname "$t")"
done
for prog in ${PROGRAMS:-$(python3 -c "import json; print(' '.join(json.load(open('$B/plan.json'))))")}; do
  eval "$(python3 - "$prog" <<'PY'
import json, shlex, sys
p = json.load(open("bench/search/build/rebuilt/plan.json"))[sys.argv[1]]
print("cwd=" + shlex.quote(p["cwd"]))
print("args=(" + " ".join(shlex.quote(a) for a in p["args"]) + ")")
print("variants=(" + " ".join(shlex.quote(f"{k}={v['binary']}") for k, v in [("plain", {"binary": p["plain"]})] + list(p["rebuilt"].items())) + ")")
PY
)"
  for round in $(seq 1 "$ROUNDS"); do
    for v in "${variants[@]}"; do
      name=${v%%=*}
      binary=${v#*=}
      t0=$(date +%s.%N)
      (cd "$cwd" && CUDA_VISIBLE_DEVICES=0 timeout "${PTIMEOUT:-120}" "$ROOT/$binary" "${args[@]}" > "$OUT/$prog.$name.$round.out" 2>&1)
      rc=$?
      t1=$(date +%s.%N)
      awk -v p="$prog" -v n="$name" -v r="$round" -v rc="$rc" -v t0="$t0" -v t1="$t1" \
        'BEGIN { printf "%s %s %s rc=%s %.3f s\n", p, n, r, rc, t1 - t0 }' >> "$OUT/wall.txt"
    done
  done
  tar -czf "$OUT/rebuilt-out.tar.gz" -C "$OUT" --exclude rebuilt-out.tar.gz .
done
