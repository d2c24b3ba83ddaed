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
  "$regtune" measure --db "$out/$prog/db/decisions.json" --from "$keep" "${compare[@]}" --format json -o "$out/$prog.measure.json"
  echo "$prog: decided again (rc $?)"
done
