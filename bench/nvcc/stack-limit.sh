#!/bin/bash
# Does tf32 GEMM's timer count a first launch growing local memory? Its
# plain nvcc build has a 1,304-byte stack frame a thread (the kept build
# 8): the program timed plain and rebuilt, each also with 2 KiB of stack a
# thread reserved before it starts (stack_limit.c, LD_PRELOAD), ROUNDS
# rounds in turn, in one GPU call. From the repository root, after
# `gcc -O2 -shared -fPIC bench/nvcc/stack_limit.c -o bench/nvcc/search-whole/libstack_limit.so -ldl`:
#
#   OUT=DIR bash bench/nvcc/stack-limit.sh    # DIR/stack-limit.txt: "variant round ms"; stderr in DIR/stack-err.tar.gz
set -u
ROOT=$PWD
LIB=$ROOT/bench/nvcc/search-whole/libstack_limit.so
C=bench/calibrate/build/corpus-nvcc
mkdir -p $C
[ -d $C/tf32TensorCoreGemm ] || tar -xJf bench/nvcc/search-e/corpus-nvcc/tf32TensorCoreGemm.tar.xz -C $C
PLAIN=$ROOT/$C/tf32TensorCoreGemm/tf32TensorCoreGemm
REBUILT=$ROOT/bench/search/build/rebuilt/tf32TensorCoreGemm
mkdir -p "$OUT/err"
cd $C/tf32TensorCoreGemm
for round in $(seq 1 "${ROUNDS:-10}"); do
  for v in plain plain+stack rebuilt rebuilt+stack; do
    case $v in plain*) bin=$PLAIN ;; *) bin=$REBUILT ;; esac
    case $v in *+stack) pre=$LIB ;; *) pre= ;; esac
    ms=$(LD_PRELOAD=$pre REGTUNE_STACK_BYTES=2048 CUDA_VISIBLE_DEVICES=0 timeout 120 "$bin" 2>"$OUT/err/${v/+/-}.$round.txt" | awk '/Time:/ {print $2}')
    echo "$v $round ${ms:-failed}" | tee -a "$OUT/stack-limit.txt"
  done
done
tar -czf "$OUT/stack-err.tar.gz" -C "$OUT" err && rm -r "$OUT/err"
