#!/bin/bash
# The hand edits recorded in examples/README.md: each applies one regtune
# rewrite by hand to a copy of an example and measures it.
#
#   examples/hand_experiments.sh [ARCH]     (default gfx90a)
set -euo pipefail
cd "$(dirname "$0")"
arch=${1:-gfx90a}
T=$(mktemp -d "${TMPDIR:-/tmp}/regtune-hand.XXXXXX")
trap 'rm -rf "$T"' EXIT

# Print "label: VGPR .. occupancy .." for every kernel of a file.
m() {
    local label=$1 file=$2
    shift 2
    ./measure.sh "$arch" "$file" "$@" | sed -E "s/^[^ ]+ +[^ ]+ +/  $label: /"
}
wpe() { sed "s/^__global__ void/__global__ __attribute__((amdgpu_waves_per_eu($1))) void/"; }
pow2() { sed -E 's/pow\(([^,]*), 2\.0\)/((\1) * (\1))/g'; }
restrict() { sed -E "s/(double|int)\* ($1)([,)])/\1* __restrict__ \2\3/g"; }
lb256() { sed 's/^__global__ void/__global__ __launch_bounds__(256) void/'; }

echo "== lbm_d3q19.hip ($arch)"
m "baseline" lbm_d3q19.hip
pow2 <lbm_d3q19.hip >"$T/lbm_pow2.hip"
m "pow(x,2.0) -> x*x" "$T/lbm_pow2.hip"
for p in 'force_[xyz]' flags 'rho_out|u[xyz]_out' 'f[0-9]+'; do
    restrict "$p" <lbm_d3q19.hip >"$T/lbm_r.hip"
    m "restrict $p" "$T/lbm_r.hip"
    restrict "$p" <"$T/lbm_pow2.hip" >"$T/lbm_pow2_r.hip"
    m "pow2 + restrict $p" "$T/lbm_pow2_r.hip"
done
for n in 5 6; do
    wpe $n <lbm_d3q19.hip >"$T/lbm_w.hip"
    m "waves_per_eu($n)" "$T/lbm_w.hip"
    wpe $n <"$T/lbm_pow2.hip" >"$T/lbm_w.hip"
    m "pow2 + waves_per_eu($n)" "$T/lbm_w.hip"
done
restrict 'force_[xyz]' <"$T/lbm_pow2.hip" | wpe 6 >"$T/lbm_w.hip"
m "pow2 + restrict force_[xyz] + waves_per_eu(6)" "$T/lbm_w.hip"
restrict flags <"$T/lbm_pow2.hip" | wpe 6 >"$T/lbm_w.hip"
m "pow2 + restrict flags + waves_per_eu(6)" "$T/lbm_w.hip"
restrict 'rho_out|u[xyz]_out' <"$T/lbm_pow2.hip" | wpe 6 >"$T/lbm_w.hip"
m "pow2 + restrict rho_out|u[xyz]_out + waves_per_eu(6)" "$T/lbm_w.hip"

echo "== laplacian3d.hip ($arch)"
for t in 1 2 4 8 16 32; do
    m "TILE=$t" laplacian3d.hip -DTILE=$t
done
for c in 1 2 4 8; do
    sed "s/^#pragma unroll$/#pragma unroll $c/" laplacian3d.hip >"$T/lap_cap.hip"
    m "TILE=16, tile loop '#pragma unroll $c'" "$T/lap_cap.hip"
done
wpe 8 <laplacian3d.hip >"$T/lap_w.hip"
m "TILE=16, waves_per_eu(8) instead of a cap" "$T/lap_w.hip"

echo "== long_lived.hip ($arch)"
m "baseline" long_lived.hip
# Move the particle-state loads that are only used after the neighbour loop
# down to just before that use.
python3 - long_lived.hip "$T/ll_sunk.hip" <<'EOF'
import sys
src = open(sys.argv[1]).read()
late = [l for l in src.splitlines(keepends=True)
        if l.lstrip().startswith(("const double vxi", "const double fx_old", "const double rmass",
                                  "const double lambda", "const double half_dt_m", "const double mass"))]
assert len(late) == 6, late
for l in late:
    src = src.replace(l, "", 1)
anchor = "    // Velocity update"
assert anchor in src
src = src.replace(anchor, "".join(late) + anchor, 1)
open(sys.argv[2], "w").write(src)
EOF
m "definitions sunk to first use" "$T/ll_sunk.hip"
restrict '[a-z_]+' <long_lived.hip >"$T/ll_r.hip"
m "restrict on every pointer (no sinking)" "$T/ll_r.hip"
wpe 8 <long_lived.hip >"$T/ll_w.hip"
m "waves_per_eu(8) instead of sinking" "$T/ll_w.hip"

echo "== private_array.hip ($arch)"
m "baseline" private_array.hip
lb256 <private_array.hip >"$T/pa_lb.hip"
m "__launch_bounds__(256)" "$T/pa_lb.hip"

echo "== launch_bounds_spill.hip ($arch)"
m "baseline (no bounds = 1024)" launch_bounds_spill.hip
lb256 <launch_bounds_spill.hip >"$T/lbs.hip"
m "__launch_bounds__(256)" "$T/lbs.hip"
m "no bounds, 7x7 block (-DNV=7)" launch_bounds_spill.hip -DNV=7
