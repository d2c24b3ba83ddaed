#!/usr/bin/env bash
# regtune's main job on a bundled example: installs what is missing, builds,
# then tunes the lattice-Boltzmann kernel (decisions go to .regtune/).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -eq 0 ]; then ci/bootstrap.sh; else ci/bootstrap.sh || true; fi

cargo build --release --workspace --quiet
exec target/release/regtune tune --offload-arch gfx90a examples/lbm_d3q19.hip "$@"
