#!/bin/sh
# Robustness: run every regtune pass, under the IR verifier, over the
# modules llvm-stress generates for a range of seeds.
#
#   stress.sh <first-seed> <last-seed> <work-prefix> <opt> [opt args...]
#
# Each seed's module runs three times: as generated (no target), through
# every pass by name; made an AMDGPU kernel (still without a target, as
# AMDGPU's verifier wants private allocas, which llvm-stress does not
# make), through every pass by name again; and made an NVPTX kernel with a
# decisions db that enables every transform, through regtune-apply by name
# and through the default O3 pipeline (where the plugin's extension-point
# callbacks run), and with a block size through regtune-lds-spill. On the first failure the module that failed is kept next
# to the work prefix, and the seed is reported.
set -u
first=$1 last=$2 work=$3
shift 3

all_passes='regtune-pow2,regtune-unroll-cap<4>,regtune-unroll-cap<1>,regtune-occupancy<4;block=256>,regtune-noalias<0;1>,regtune-noalias-rank,regtune-sink,function(loop-unroll<O3>)'

fail() {
  echo "stress: seed $seed: $1 failed; module kept at $2" >&2
  exit 1
}

seed=$first
while [ "$seed" -le "$last" ]; do
  plain=$work.$seed.ll
  amdgpu=$work.$seed.amdgpu.ll
  nvptx=$work.$seed.nvptx.ll
  db=$work.$seed.json
  llvm-stress -seed="$seed" -size=300 -o "$plain" || fail llvm-stress "$plain"

  "$@" -disable-output -passes="$all_passes" "$plain" >/dev/null || fail "$all_passes" "$plain"

  sed "s/^define void @autogen_SD$seed(\(.*\)) {\$/define amdgpu_kernel void @autogen_SD$seed(\1) #0 {/" "$plain" > "$amdgpu"
  echo 'attributes #0 = { "target-cpu"="gfx90a" }' >> "$amdgpu"
  "$@" -disable-output -passes="$all_passes" "$amdgpu" >/dev/null || fail "$all_passes" "$amdgpu"

  {
    echo 'target triple = "nvptx64-nvidia-cuda"'
    sed "s/^define void @autogen_SD$seed(\(.*\)) {\$/define ptx_kernel void @autogen_SD$seed(\1) #0 {/" "$plain"
    echo 'attributes #0 = { "target-cpu"="sm_80" }'
  } > "$nvptx"
  cat > "$db" <<JSON
{"version": 1, "kernels": {"sm_80/autogen_SD$seed/stress": {
  "symbol": "autogen_SD$seed", "arch": "sm_80", "input_hash": "stress",
  "transforms": {"pow2": true, "sink": true, "unroll_cap": 2, "noalias": [{"index": 0}, {"index": 1}],
                 "waves_per_eu": 4, "launch_bounds": 128}}}}
JSON
  REGTUNE_DECISIONS=$db "$@" -disable-output -passes='regtune-apply,regtune-noalias-rank' "$nvptx" >/dev/null \
    || fail regtune-apply "$nvptx"
  REGTUNE_DECISIONS=$db "$@" -disable-output -passes='default<O3>' "$nvptx" || fail 'default<O3>' "$nvptx"
  "$@" -disable-output -passes='regtune-occupancy<block=128>,regtune-lds-spill<8>' "$nvptx" \
    || fail 'regtune-lds-spill<8>' "$nvptx"

  rm -f "$plain" "$amdgpu" "$nvptx" "$db"
  seed=$((seed + 1))
done
echo "stress: seeds $first..$last passed"
