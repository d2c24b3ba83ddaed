#!/usr/bin/env bash
# regtune's main job on a bundled example: installs what is missing, builds,
# then tunes the lattice-Boltzmann kernel (decisions go to .regtune/).
#
# Expect, on gfx90a: nothing applied by default and one suggestion, pow2
# (ocml's pow is not correctly rounded, so x * x changes the last bit) with
# noalias on two pointers, reaching occupancy 6; then, with `--pow2 apply`
# (accepting that rounding), pow2 applied: occupancy 4 → 5 or more, SGPR
# spills 16 → 0.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -eq 0 ]; then ci/bootstrap.sh; else ci/bootstrap.sh || true; fi

cargo build --release --workspace --quiet
target/release/regtune tune --offload-arch gfx90a examples/lbm_d3q19.hip "$@"
echo
echo "== again with --pow2 apply (the rounding change accepted; db: .regtune/decisions-pow2.json)"
exec target/release/regtune tune --offload-arch gfx90a --pow2 apply --db .regtune/decisions-pow2.json examples/lbm_d3q19.hip "$@"
