#!/bin/bash
# lavaMD's own kernel timer, plain beside rebuilt (bench/search/rebuild.py
# --compiler nvcc), more rounds than rebuilt.sh runs: with CUDA's lazy
# module loading (the default, which puts the module's load in the first
# launch's time) and eager, at the tuned size (-boxes1d 10, one 1 ms
# launch) and at 27 times the work (-boxes1d 30). Then the single-launch
# timers of cudaTensorCoreGemm, 10 rounds. One GPU call, from the repository root,
# carrying bench/search/build and bench/nvcc/search-e/corpus-nvcc:
#
#   OUT=DIR bash bench/nvcc/program-timers.sh    # DIR/lava.txt
set -u
root=$PWD
rebuilt=$root/bench/search/build/rebuilt
mkdir -p bench/calibrate/build/corpus-nvcc
cp bench/nvcc/search-e/corpus-nvcc/* bench/calibrate/build/corpus-nvcc/
cd bench/calibrate/build/corpus-nvcc
for p in lavaMD cudaTensorCoreGemm; do [ -d $p ] || tar -xJf $p.tar.xz; done
L=$OUT/lava.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$L"
date -u +%FT%TZ >> "$L"
binary() { if [ "$2" = rebuilt ]; then echo "$rebuilt/$1"; else echo "./$1"; fi; }
for load in LAZY EAGER; do for b in 10 30; do for r in 1 2 3 4 5 6 7; do for v in plain rebuilt; do
  t=$(cd lavaMD && CUDA_MODULE_LOADING=$load timeout 60 "$(binary lavaMD $v)" -boxes1d $b 2>&1 | grep "GPU: KERNEL" | awk '{print $1}')
  echo "lavaMD $load boxes=$b $v $r $t" >> "$L"
done; done; done; done
for r in $(seq 1 10); do for v in plain rebuilt; do
  t=$(cd cudaTensorCoreGemm && timeout 60 "$(binary cudaTensorCoreGemm $v)" 2>&1 | grep -o "Time: *[0-9.]*" | head -1)
  echo "cudaTensorCoreGemm $v $r $t" >> "$L"
done; done
