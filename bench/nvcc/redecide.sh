#!/bin/bash
# The nvcc corpus's measurements decided again under this checkout's rule,
# from the runs corpus-gpu.sh kept (`regtune measure --from`, nothing runs):
#
#   bash bench/nvcc/redecide.sh RESULTS.tar.gz OUT_DIR [REGTUNE]
#
# RESULTS.tar.gz: a corpus-gpu.sh result (its keep-<program>/ events and the
# measured <program>/db/decisions.json); the code objects are the tune's
# (bench/nvcc/search*/<program>/db/decisions.code, unpacked from db.tar.xz
# where packed), the hand sweep's cubins under bench/calibrate/build/corpus-nvcc,
# each program's --compare list from the plan corpus-gpu.sh used. OUT_DIR is
# the result unpacked, each <program>.measure.json and db decided again:
# what fix.py and bench/search/report.py read.
#
# RETUNED=DIR: a later tune's dbs (DIR/<program>/decisions.json, e.g. by
# this checkout, which records which earlier build each file-wide cap's
# code equals: Entry::file_wide_same_as) lend those records to the kept
# run's entries whose candidates are the same builds; nothing else of
# them is used.
set -eu
results=${1:?usage: redecide.sh RESULTS.tar.gz OUT_DIR [REGTUNE]}
out=${2:?usage: redecide.sh RESULTS.tar.gz OUT_DIR [REGTUNE]}
regtune=$(realpath "${3:-target/debug/regtune}")
root=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$out" && mkdir -p "$out"
tar -xzf "$results" -C "$out"
for keep in "$out"/keep-*; do
  prog=${keep##*/keep-}
  # The plan corpus-gpu.sh measured it with: the line whose PROGRAMS names it.
  line=$(grep 'PROGRAMS=' "$root/bench/nvcc/corpus-gpu.sh" | grep -w -- "$prog" | head -1 || true)
  plan=""
  case "$line" in
    *'$C/plan.json'*) plan=$root/bench/nvcc/search-c/plan.json ;;
    *search-b/plan.json*) plan=$root/bench/nvcc/search-b/plan.json ;;
    *search/plan.json*) plan=$root/bench/nvcc/search/plan.json ;;
  esac
  [ -n "$plan" ] || { echo "$prog: no plan in corpus-gpu.sh names it" >&2; continue; }
  search=$(dirname "$plan")
  if [ ! -d "$search/$prog/db/decisions.code" ] && [ -e "$search/$prog/db.tar.xz" ]; then
    tar -xJf "$search/$prog/db.tar.xz" -C "$search/$prog"
  fi
  ln -s "$search/$prog/db/decisions.code" "$out/$prog/db/decisions.code"
  mapfile -t compare < <(python3 -c "
import json, os, sys
for c in json.load(open(sys.argv[1]))[sys.argv[2]]['compare']:
    label, path = c.split('=', 1)
    print('--compare=' + label + '=' + os.path.join(sys.argv[3], path))" "$plan" "$prog" "$root")
  if [ -n "${RETUNED:-}" ] && [ -f "$RETUNED/$prog/decisions.json" ]; then
    python3 - "$RETUNED/$prog/decisions.json" "$out/$prog/db/decisions.json" <<'PY'
import json, sys
new = json.load(open(sys.argv[1]))["kernels"]
path = sys.argv[2]
db = json.load(open(path))
# Older dbs spell NVIDIA's step waves_per_eu.
spell = lambda t: {("warps_per_sm" if k == "waves_per_eu" else k): v for k, v in t.items()}
builds = lambda e: [spell(c["transforms"]) for c in e.get("candidates", [])]
lent = 0
for key, e in db["kernels"].items():
    n = new.get(key)
    if n and builds(n) == builds(e) and n.get("file_wide_same_as"):
        e["file_wide_same_as"] = n["file_wide_same_as"]
        lent += 1
json.dump(db, open(path, "w"), indent=2)
print(f"{len(db['kernels'])} entries, {lent} given the later tune's file-wide records", file=sys.stderr)
PY
  fi
  "$regtune" measure --db "$out/$prog/db/decisions.json" --from "$keep" "${compare[@]}" --format json -o "$out/$prog.measure.json"
  echo "$prog: decided again (rc $?)"
done
