#!/bin/bash
# One GPU call timing the nvcc corpus that one or more tune runs planned:
#
#   python3 bench/search/build.py --compiler nvcc --out bench/nvcc/search-X ...   # CPU: tune, plan
#   bash bench/nvcc/gpu.sh --pack bench/nvcc/search-X                             # CPU: the corpus, into it
#   OUT=... bash bench/nvcc/gpu.sh bench/nvcc/search-X [bench/nvcc/search-Y ...]  # GPU: carry those folders
#
# --pack copies the corpus's packed programs (bench/nvcc/corpus.py pack:
# <program>.tar.xz, the hand sweep's cubins inside) and programs.json into
# SEARCH/corpus-nvcc, so that ignored folders hold all a GPU call needs
# (within the device tool's 64 MiB); the corpus is unpacked again here. The
# GPU half unpacks it where bench/search/run.sh looks and times every
# program of each SEARCH/plan.json (PROGRAMS_<name>="a b", the folder's
# name with - as _, for some), each candidate against plain and the hand
# sweep (`--compare`); results in $OUT/<name>/ (run.sh's search-out.tar.gz,
# summary.txt), the card in $OUT/gpu.txt.
set -u
cd "$(dirname "$0")/../.."
if [ "${1:-}" = --pack ]; then
  S=${2:?usage: gpu.sh --pack SEARCH}
  python3 bench/nvcc/corpus.py pack > /dev/null
  mkdir -p "$S/corpus-nvcc"
  cp bench/calibrate/build/corpus-nvcc/*.tar.xz bench/calibrate/build/corpus-nvcc/programs.json "$S/corpus-nvcc/"
  python3 bench/nvcc/corpus.py unpack > /dev/null
  du -sh "$S"
  exit 0
fi
[ $# -gt 0 ] || { echo "usage: gpu.sh SEARCH... (or --pack SEARCH)" >&2; exit 2; }
: "${OUT:?set OUT}"
mkdir -p bench/calibrate/build/corpus-nvcc
for S in "$@"; do
  [ -d "$S/corpus-nvcc" ] && cp "$S"/corpus-nvcc/* bench/calibrate/build/corpus-nvcc/
done
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader > "$OUT/gpu.txt"
date -u +%FT%TZ >> "$OUT/gpu.txt"
for S in "$@"; do
  name=$(basename "$S")
  var=PROGRAMS_${name//-/_}
  mkdir -p "$OUT/$name"
  OUT=$OUT/$name WORK=/tmp/gpu-work-$name PLAN=$S/plan.json PROGRAMS=${!var:-} bash bench/search/run.sh "$S" > "$OUT/$name/run.log" 2>&1
  cat "$OUT/$name/summary.txt"
done
