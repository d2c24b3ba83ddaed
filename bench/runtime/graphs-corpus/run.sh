#!/usr/bin/env bash
# The GPU half of bench/runtime/graphs-corpus (the CPU half is build.py):
# each case of build/plan.json run plainly, then under `regtune measure`
# (its run files kept), each in a folder of its own (the programs write
# files where they run), then check.py's verdict per case. Writes
# bench/runtime/graphs-corpus/out/; when $OUT is set, a tarball of it there
# after every case (a run cut short keeps what it did) and the summary.
#
#   bench/runtime/graphs-corpus/run.sh [CASE...]     # from anywhere; default: every case of the plan
#
# RUNS, BUDGET: measure's --runs and --budget (default 200 and 4).
set -u
cd "$(dirname "$0")/../../.."
ROOT=$PWD
G=bench/runtime/graphs-corpus
B=$G/build
O=$ROOT/$G/out
FINAL=${OUT:-}
DBS=$(mktemp -d)
rm -rf "$O"
mkdir -p "$O"
save() {
  [ -n "$FINAL" ] && tar -czf "$FINAL/graphs-corpus.tar.gz" -C "$ROOT/$G" out
}
export REGTUNE_CUPTI=$ROOT/$B/lib/libcupti.so.12
R=$ROOT/$B/bin/regtune
nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,compute_cap --format=csv,noheader >"$O/gpu.txt" 2>&1
date -u +%Y-%m-%dT%H:%MZ >"$O/date.txt"
cp "$B/plan.json" "$B/build.txt" "$O/"
export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}

CASES=${*:-$(python3 -c "import json; print(' '.join(json.load(open('$B/plan.json'))))")}
START=$(date +%s)
for c in $CASES; do
  if [ $(($(date +%s) - START)) -gt 420 ]; then
    echo "$c: not run (out of time)" >>"$O/skipped.txt"
    continue
  fi
  eval "$(python3 - "$c" "$B/plan.json" <<'PY'
import json, shlex, sys
p = json.load(open(sys.argv[2]))[sys.argv[1]]
print("binary=" + shlex.quote(p["binary"]))
print("db=" + shlex.quote(p["db"]))
print("launches=" + str(p["launches"]))
print("outputs=" + shlex.quote(p.get("outputs") or ""))
print("args=(" + " ".join(shlex.quote(a) for a in p["args"]) + ")")
PY
)"
  C=$O/$c
  mkdir -p "$C/plain" "$C/measured"
  t0=$(date +%s.%N)
  (cd "$C/plain" && timeout 120 "$ROOT/$binary" "${args[@]}" >"$C/plain.stdout" 2>"$C/plain.stderr")
  echo $? >"$C/plain.rc"
  t1=$(date +%s.%N)
  mkdir -p "$DBS/$c"
  cp -r "$(dirname "$ROOT/$db")"/. "$DBS/$c/"
  (cd "$C/measured" && timeout 240 "$R" measure --db "$DBS/$c/decisions.json" --launches "$launches" \
    --runs "${RUNS:-200}" --budget "${BUDGET:-4}" --keep "$C/run" --format json -o "$C/report.json" \
    -- "$ROOT/$binary" "${args[@]}" >"$C/stdout" 2>"$C/stderr")
  echo $? >"$C/rc"
  t2=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN { printf "plain %.1f s, measured %.1f s\n", b - a, c - b }' >"$C/seconds"
  cp "$DBS/$c/decisions.json" "$C/decisions.json"
  rm -f "$C/run/plan.json"
  # The files the program wrote: each one's hash, plainly and measured; then removed (they are large).
  if [ -n "$outputs" ]; then
    for w in plain measured; do
      (cd "$C/$w" && find "$outputs" -type f -print0 | sort -z | xargs -0 -r sha256sum) >"$C/$w.outputs.sha256"
    done
  fi
  rm -rf "$C/plain" "$C/measured"
  save
done

python3 "$G/check.py" "$O" >"$O/summary.txt" 2>&1
cat "$O/gpu.txt" "$O/summary.txt"
save
[ -n "$FINAL" ] && cp "$O/summary.txt" "$FINAL/summary.txt"
rm -rf "$DBS"
