#!/bin/bash
# Per-kernel register usage of an example, from the backend's
# kernel-resource-usage remarks (Debian clang-22 + Debian's ROCm bitcode).
# Stop-gap until `regtune report` does this.
#
#   examples/measure.sh ARCH FILE.hip [extra clang flags, e.g. -DTILE=8]
#   RAW=1 examples/measure.sh ...      # print the raw remarks instead
#
# ARCH: gfx90a, gfx942, gfx950 or gfx1100.  Debian ships no
# oclc_isa_version bitcode for the last three, so one is generated (from the
# gfx940 file, with the version number changed) in an overlay directory.
set -euo pipefail

arch=$1 file=$2
shift 2
B=/usr/lib/x86_64-linux-gnu/amdgcn/bitcode
T=${REGTUNE_EXAMPLES_TMP:-/tmp/regtune-examples}
mkdir -p "$T/dl"

for w in 64 32; do
    [ -f "$T/prelude$w.h" ] || printf '%s\n' \
        "#define __AMDGCN_WAVEFRONT_SIZE $w" \
        'extern "C" __device__ _Float16 __llvm_amdgcn_rcp_f16(_Float16);' \
        'typedef _Float16 __rt_h2 __attribute__((ext_vector_type(2)));' \
        'extern "C" __device__ __rt_h2 __llvm_amdgcn_rcp_2f16(__rt_h2);' >"$T/prelude$w.h"
done
for f in "$B"/*.bc; do ln -sf "$f" "$T/dl/"; done
for v in 942:9402 950:9500 1100:11000; do
    out="$T/dl/oclc_isa_version_${v%%:*}.bc"
    [ -f "$out" ] || llvm-dis-22 "$B/oclc_isa_version_940.bc" -o - |
        sed "s/constant i32 9400/constant i32 ${v#*:}/" | llvm-as-22 -o "$out"
done

case $arch in gfx1*) prelude=$T/prelude32.h ;; *) prelude=$T/prelude64.h ;; esac
obj=$(mktemp "$T/out.XXXXXX.o")
trap 'rm -f "$obj"' EXIT

remarks=$(clang-22 -x hip --offload-arch="$arch" --cuda-device-only --no-gpu-bundle-output \
    -c -O3 --rocm-path=/usr --rocm-device-lib-path="$T/dl" -mcode-object-version=5 \
    -Xclang -mlink-builtin-bitcode -Xclang "$B/hip.bc" \
    -Xclang -mlink-builtin-bitcode -Xclang "$B/oclc_daz_opt_off.bc" \
    -include "$prelude" -Wall -Wextra -Rpass-analysis=kernel-resource-usage \
    "$@" "$file" -o "$obj" 2>&1)

if [ "${RAW:-0}" = 1 ]; then
    printf '%s\n' "$remarks"
    exit 0
fi
printf '%s\n' "$remarks" | grep -E 'warning|error' || true
printf '%s\n' "$remarks" | awk -v arch="$arch" '
/Function Name:/    { agpr = ""; for (i = 1; i <= NF; i++) if ($i == "Name:") name = $(i + 1) }
/ (Total)?SGPRs: /  { sgpr = $4 }
/ VGPRs: /          { vgpr = $4 }
/ AGPRs: /          { agpr = $4 }
/ScratchSize/       { scratch = $(NF - 1) }
/Occupancy/         { occ = $(NF - 1) }
/SGPRs Spill/       { sspill = $(NF - 1) }
/VGPRs Spill/       { vspill = $(NF - 1) }
/LDS Size/ {
    printf "%-8s %-40s VGPR %3s  AGPR %s  SGPR %3s  scratch %4s  VGPR-spill %3s  SGPR-spill %3s  occupancy %s\n",
        arch, name, vgpr, (agpr == "" ? "-" : agpr), sgpr, scratch, vspill, sspill, occ
}'
