#!/bin/bash
# One GPU call timing the nvcc corpus under regtune measure, from three tune
# runs (bench/search/build.py --compiler nvcc --out DIR): search-c (tuned
# with the -maxrregcount=R candidates), search-b (re-tuned with them), search
# (the rest). The device tool carries at most 64 MiB, so on this machine:
#   mkdir -p bench/nvcc/carry/corpus-nvcc && cp bench/calibrate/build/corpus-nvcc/{*.tar.xz,programs.json} bench/nvcc/carry/corpus-nvcc/
#   (search and search-b: their tools.tar.xz moved aside; search-c packed: db.tar.xz, tools.tar.xz)
# and carry bench/nvcc/carry, bench/nvcc/search, bench/nvcc/search-b, bench/nvcc/search-c;
# then bench/search/report.py on the three search-out.tar.gz unpacked into one folder.
set -u
mkdir -p bench/calibrate/build/corpus-nvcc
cp -r bench/nvcc/carry/corpus-nvcc/* bench/calibrate/build/corpus-nvcc/
C=bench/nvcc/search-c
tar -xJf $C/tools.tar.xz -C $C
for d in bench/nvcc/search bench/nvcc/search-b; do rm -rf $d/bin $d/lib; cp -r $C/bin $C/lib $d/; done
export MTIMEOUT=${MTIMEOUT:-150}
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader > "$OUT/logs/gpu.txt"
date -u +%FT%TZ > "$OUT/logs/date.txt"
OUT=$OUT/c WORK=/tmp/wc PLAN=$C/plan.json PROGRAMS="MC_SingleAsianOptionP cudaTensorCoreGemm eigenvalues dxtc interval" bash bench/search/run.sh $C > "$OUT/logs/c.log" 2>&1
OUT=$OUT/b WORK=/tmp/wb PLAN=bench/nvcc/search-b/plan.json PROGRAMS="lavaMD miniBUDE" bash bench/search/run.sh bench/nvcc/search-b > "$OUT/logs/b.log" 2>&1
OUT=$OUT/s WORK=/tmp/ws PLAN=bench/nvcc/search/plan.json PROGRAMS="${SPROGS:-RSBench bf16TensorCoreGemm dmmaTensorCoreGemm tf32TensorCoreGemm XSBench immaTensorCoreGemm particlefilter lud}" bash bench/search/run.sh bench/nvcc/search > "$OUT/logs/s.log" 2>&1
cat "$OUT"/*/summary.txt
tar -czf "$OUT/logs.tar.gz" -C "$OUT" logs && rm -rf "$OUT/logs"
