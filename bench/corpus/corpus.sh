#!/bin/bash
# Assemble the tune-time benchmark's corpus: public HIP (and CUDA) sources
# nobody on the team wrote, taken from read-only git mirrors, written to a
# directory outside the repository with a compile_commands.json that gives
# each file the flags it needs. `cargo bench -p regtune --bench tune_time`
# reads it; `regtune batch -p DEST` can too.
#
#   bench/corpus/corpus.sh [DEST]        # default: $REGTUNE_CORPUS, else /tmp/regtune-corpus
#
# Mirrors (bare repositories), overridable with MIRRORS=dir:
#   $MIRRORS/amd+HPCTrainingExamples/repo   $MIRRORS/ROCm+HIP-Examples/repo
#   $MIRRORS/ROCm+rocm-examples/repo        $MIRRORS/yuhc+gpu-rodinia/repo
#
# Each file is compiled as HIP for gfx90a with Debian's HIP 5.2 headers.
# Rodinia's CUDA sources compile through compat/: cuda.h and friends that
# include <hip/hip_runtime.h> and name CUDA's runtime calls as HIP's (device
# code is spelled the same in both). Files whose sources are not all in a
# mirror (blobs missing) are skipped with a warning.
set -euo pipefail

DEST=${1:-${REGTUNE_CORPUS:-/tmp/regtune-corpus}}
MIRRORS=${MIRRORS:-/work/.mirror}

# repository | file | extra flags (relative -I resolve against the file's directory)
FILES='
ROCm+HIP-Examples|add4/hip-stream.cpp|
ROCm+HIP-Examples|cuda-stream/stream.cpp|
ROCm+HIP-Examples|reduction/reduction.cpp|
ROCm+HIP-Examples|rtm8/rtm8.cpp|
ROCm+HIP-Examples|gpu-burn/BurnKernel.cpp|
ROCm+HIP-Examples|HIP-Examples-Applications/SimpleConvolution/SimpleConvolution.cpp|
ROCm+HIP-Examples|HIP-Examples-Applications/PrefixSum/PrefixSum.cpp|
ROCm+HIP-Examples|HIP-Examples-Applications/RecursiveGaussian/RecursiveGaussian.cpp|
ROCm+HIP-Examples|HIP-Examples-Applications/BinomialOption/BinomialOption.cpp|
ROCm+HIP-Examples|HIP-Examples-Applications/dct/dct.cpp|
ROCm+HIP-Examples|HIP-Examples-Applications/FastWalshTransform/FastWalshTransform.cpp|
ROCm+HIP-Examples|HIP-Examples-Applications/FloydWarshall/FloydWarshall.cpp|
ROCm+HIP-Examples|HIP-Examples-Applications/Histogram/Histogram.cpp|
ROCm+HIP-Examples|HIP-Examples-Applications/BitonicSort/BitonicSort.cpp|
ROCm+HIP-Examples|HIP-Examples-Applications/MatrixMultiplication/MatrixMultiplication.cpp|
ROCm+HIP-Examples|HIP-Examples-Applications/dwtHaar1D/dwtHaar1D.cpp|
amd+HPCTrainingExamples|Profiling-by-example/shallow-water/novice/0_baseline/shallow.hip|
amd+HPCTrainingExamples|HIP/hip-stream/stream.hip|
amd+HPCTrainingExamples|HIP/register_usage/register_usage.hip|
amd+HPCTrainingExamples|rocm-blogs-codes/finite-difference/laplacian.cpp|
amd+HPCTrainingExamples|rocm-blogs-codes/register-pressure/lbm.cpp|
amd+HPCTrainingExamples|HIP/allocators/test_allocators.hip|
amd+HPCTrainingExamples|Speedup_Examples/rzf_training/src/rzf_CUDA.cu|
amd+HPCTrainingExamples|HIP/stencil_examples/stencil_overlap/stencil.cpp|
amd+HPCTrainingExamples|rocprof-compute/3-RegisterOccupancyLimit/problem.cpp|
amd+HPCTrainingExamples|HIP/reduction/reduction_shfl.cpp|
amd+HPCTrainingExamples|HIP/transpose/transpose_kernel_tiled.cpp|
amd+HPCTrainingExamples|HIP/basic_examples/07_matrix_multiply_shared/matrix_multiply.cpp|
ROCm+rocm-examples|Applications/prefix_sum/main.hip|-I../../Common
ROCm+rocm-examples|Applications/convolution/main.hip|-I../../Common
ROCm+rocm-examples|Applications/histogram/main.hip|-I../../Common
yuhc+gpu-rodinia|cuda/huffman/scan.cu|
yuhc+gpu-rodinia|cuda/huffman/vlc_kernel_sm64huff.cu|
yuhc+gpu-rodinia|cuda/huffman/pack_kernels.cu|
yuhc+gpu-rodinia|cuda/dwt2d/components.cu|
yuhc+gpu-rodinia|cuda/dwt2d/dwt_cuda/fdwt97.cu|
yuhc+gpu-rodinia|cuda/dwt2d/dwt_cuda/rdwt97.cu|
yuhc+gpu-rodinia|cuda/dwt2d/dwt_cuda/fdwt53.cu|
yuhc+gpu-rodinia|cuda/backprop/backprop_cuda.cu|
yuhc+gpu-rodinia|cuda/bfs/bfs.cu|
yuhc+gpu-rodinia|cuda/hotspot/hotspot.cu|
'

mkdir -p "$DEST/src" "$DEST/compat"

# Every source and header file of the repositories used, as of HEAD.
for repo in $(printf '%s\n' "$FILES" | cut -d'|' -f1 | sort -u); do
    git_dir=$MIRRORS/$repo/repo
    [ -d "$git_dir" ] || { echo "corpus: no mirror at $git_dir" >&2; exit 1; }
    git -C "$git_dir" ls-tree -r HEAD | while read -r _mode type object path; do
        [ "$type" = blob ] || continue
        case "$path" in *.hip|*.cu|*.cuh|*.cpp|*.c|*.h|*.hpp|*.inc) ;; *) continue ;; esac
        out=$DEST/src/$repo/$path
        [ -f "$out" ] && continue
        if git -C "$git_dir" cat-file -e "$object" 2>/dev/null; then
            mkdir -p "$(dirname "$out")"
            git -C "$git_dir" cat-file blob "$object" > "$out"
        fi
    done
done

cat > "$DEST/compat/cuda_to_hip.h" <<'EOF'
// regtune corpus: CUDA runtime names as HIP's, so CUDA sources compile as HIP.
#pragma once
#include <hip/hip_runtime.h>
#define cudaError_t hipError_t
#define cudaError hipError_t
#define cudaSuccess hipSuccess
#define cudaMalloc hipMalloc
#define cudaMallocHost hipHostMalloc
#define cudaFreeHost hipHostFree
#define cudaFree hipFree
#define cudaMemcpy hipMemcpy
#define cudaMemcpyAsync hipMemcpyAsync
#define cudaMemcpy2D hipMemcpy2D
#define cudaMemset hipMemset
#define cudaMemcpyHostToDevice hipMemcpyHostToDevice
#define cudaMemcpyDeviceToHost hipMemcpyDeviceToHost
#define cudaMemcpyDeviceToDevice hipMemcpyDeviceToDevice
#define cudaMemcpyToSymbol hipMemcpyToSymbol
#define cudaMemcpyFromSymbol hipMemcpyFromSymbol
#define cudaGetErrorString hipGetErrorString
#define cudaGetLastError hipGetLastError
#define cudaThreadSynchronize hipDeviceSynchronize
#define cudaDeviceSynchronize hipDeviceSynchronize
#define cudaThreadExit hipDeviceReset
#define cudaDeviceReset hipDeviceReset
#define cudaSetDevice hipSetDevice
#define cudaGetDevice hipGetDevice
#define cudaGetDeviceCount hipGetDeviceCount
#define cudaGetDeviceProperties hipGetDeviceProperties
#define cudaDeviceProp hipDeviceProp_t
#define cudaEvent_t hipEvent_t
#define cudaEventCreate hipEventCreate
#define cudaEventRecord hipEventRecord
#define cudaEventSynchronize hipEventSynchronize
#define cudaEventElapsedTime hipEventElapsedTime
#define cudaEventDestroy hipEventDestroy
#define cudaStream_t hipStream_t
#define cudaStreamCreate hipStreamCreate
#define cudaStreamSynchronize hipStreamSynchronize
EOF
for h in cuda.h cuda_runtime.h cuda_runtime_api.h; do
    echo '#include "cuda_to_hip.h"' > "$DEST/compat/$h"
done

# compile_commands.json: one device compile per file, as hipcc would run it.
entries=()
skipped=0
while IFS='|' read -r repo file flags; do
    [ -n "$repo" ] || continue
    src=$DEST/src/$repo/$file
    if [ ! -f "$src" ]; then
        echo "corpus: warning: $repo/$file is not in the mirror; skipped" >&2
        skipped=$((skipped + 1))
        continue
    fi
    dir=$(dirname "$src")
    args="\"clang++\", \"-x\", \"hip\", \"--offload-arch=gfx90a\", \"-O3\", \"-w\", \"-I$dir\", \"-I$DEST/compat\""
    case "$file" in *.cu) args="$args, \"-include\", \"$DEST/compat/cuda_to_hip.h\"" ;; esac
    for f in $flags; do
        case "$f" in -I*) f="-I$dir/${f#-I}" ;; esac
        args="$args, \"$f\""
    done
    entries+=("  {\"directory\": \"$dir\", \"file\": \"$src\", \"arguments\": [$args, \"-c\", \"$src\"]}")
done <<< "$FILES"

{
    echo "["
    for i in "${!entries[@]}"; do
        [ "$i" -gt 0 ] && echo ","
        printf '%s' "${entries[$i]}"
    done
    echo
    echo "]"
} > "$DEST/compile_commands.json"

echo "corpus: ${#entries[@]} files in $DEST/compile_commands.json ($skipped skipped)"
