#!/bin/bash
# GPU half of bench/nvcc/whole_runs.py: lavaMD and tf32 GEMM under this
# checkout's `regtune measure` (the replay, then whole runs of each
# program), after the rebuilt programs' own timers beside the plain ones,
# 10 rounds, in the same call. From the repository root:
#
#   OUT=DIR bash bench/nvcc/whole-runs.sh   # DIR/search-out.tar.gz (measure), DIR/rebuilt-out.tar.gz (timers)
set -u
mkdir -p bench/calibrate/build/corpus-nvcc
cp bench/nvcc/search-e/corpus-nvcc/* bench/calibrate/build/corpus-nvcc/
T=$(mktemp -d)
P=${PROGRAMS:-lavaMD tf32TensorCoreGemm}
OUT=$T/timers ROUNDS=${ROUNDS:-10} PROGRAMS="$P" bash bench/search/rebuilt.sh
cp $T/timers/rebuilt-out.tar.gz "$OUT/"
OUT=$OUT WORK=$T/measure PROGRAMS="$P" PLAN=bench/nvcc/search-whole/plan.json MTIMEOUT=${MTIMEOUT:-400} bash bench/search/run.sh bench/nvcc/search-whole
