#!/usr/bin/env bash
# regtune's main job on a bundled example: installs what is missing, builds,
# then reports the lattice-Boltzmann kernel's registers and occupancy.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -eq 0 ]; then ci/bootstrap.sh; else ci/bootstrap.sh || true; fi

cargo build --release --workspace --quiet
exec target/release/regtune report --offload-arch gfx90a,gfx1100 examples/lbm_d3q19.hip "$@"
