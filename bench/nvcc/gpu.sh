#!/bin/bash
# One GPU call timing the nvcc corpus that one tune run planned:
#
#   python3 bench/search/build.py --compiler nvcc --out bench/nvcc/search-X ...   # CPU: tune, plan, pack
#   bash bench/nvcc/gpu.sh --pack bench/nvcc/search-X                             # CPU: what travels, into it
#   OUT=... bash bench/nvcc/gpu.sh bench/nvcc/search-X                            # GPU: carry bench/nvcc/search-X
#
# --pack copies the corpus's packed programs (bench/nvcc/corpus.py pack:
# <program>.tar.xz, the hand sweep's cubins inside) and programs.json into
# SEARCH/corpus-nvcc, so that one ignored folder holds all a GPU call needs
# (within the device tool's 64 MiB). The GPU half unpacks it where
# bench/search/run.sh looks and times every program of SEARCH/plan.json
# (PROGRAMS="a b" for some), each candidate against plain and the hand
# sweep (`--compare`), results in $OUT: search-out.tar.gz (run.sh's), gpu.txt.
set -u
cd "$(dirname "$0")/../.."
if [ "${1:-}" = --pack ]; then
  S=${2:?usage: gpu.sh --pack SEARCH}
  python3 bench/nvcc/corpus.py pack > /dev/null
  mkdir -p "$S/corpus-nvcc"
  cp bench/calibrate/build/corpus-nvcc/*.tar.xz bench/calibrate/build/corpus-nvcc/programs.json "$S/corpus-nvcc/"
  du -sh "$S"
  exit 0
fi
S=${1:?usage: gpu.sh SEARCH (or --pack SEARCH)}
: "${OUT:?set OUT}"
mkdir -p bench/calibrate/build/corpus-nvcc
cp "$S"/corpus-nvcc/* bench/calibrate/build/corpus-nvcc/
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader > "$OUT/gpu.txt"
date -u +%FT%TZ >> "$OUT/gpu.txt"
OUT=$OUT WORK=/tmp/gpu-work PLAN=$S/plan.json bash bench/search/run.sh "$S" > "$OUT/run.log" 2>&1
cat "$OUT/summary.txt"
