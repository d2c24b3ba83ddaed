#!/usr/bin/env bash
# regtune's main job on a bundled example: installs what is missing, builds,
# then tunes the lattice-Boltzmann kernel (decisions go to .regtune/).
#
# Expect, on gfx90a: nothing applied by default and one suggestion, pow2
# (ocml's pow is not correctly rounded, so x * x changes the last bit) with
# noalias on two pointers, reaching occupancy 6; then, with `--pow2 apply`
# (accepting that rounding), pow2 applied: occupancy 4 → 5 or more, SGPR
# spills 16 → 0. Then the same kernel as nvcc 13.5 builds it for sm_90: 80
# registers, 24 warps per SM, every occupancy step kept as a candidate for
# `regtune measure` (nothing applied without the GPU's word).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -eq 0 ]; then ci/bootstrap.sh; else ci/bootstrap.sh || true; fi

cargo build --release --workspace --quiet
target/release/regtune tune --offload-arch gfx90a examples/lbm_d3q19.hip "$@"
echo
echo "== again with --pow2 apply (the rounding change accepted; db: .regtune/decisions-pow2.json)"
target/release/regtune tune --offload-arch gfx90a --pow2 apply --db .regtune/decisions-pow2.json examples/lbm_d3q19.hip "$@"
echo
echo "== the same kernel as nvcc builds it for sm_90 (db: .regtune/decisions-nvcc.json; candidates for regtune measure)"
exec target/release/regtune tune --compiler nvcc --offload-arch sm_90 --db .regtune/decisions-nvcc.json examples/lbm_d3q19.hip -- -x cu -O3
