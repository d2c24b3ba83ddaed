#!/bin/sh
# What regtune prints for the examples, per target, into one folder, so a
# refactoring that must not change behaviour can be checked byte for byte:
#
#   ci/golden.sh /tmp/before        # on the old code
#   ci/golden.sh /tmp/after         # on the new code
#   diff -r /tmp/before /tmp/after  # nothing
#
# Per target (default gfx90a gfx1100 sm_90; others as arguments after DIR):
# `report` as JSON and as a table, `tune --diff` as JSON (the IR and
# assembly/PTX listings are in it) and as a table, the db tune wrote, and
# each command's stderr and exit status; a tune with every class proven,
# `explain` as JSON and the patch `fix` makes from its db; `predict` on
# the first example; with an sm_ arch, `tune --compiler nvcc` (its db and
# candidates); `measure --from` decides a recorded GPU run again
# (tests/fixtures/measure-run-sm90.tar.xz): its report and db. `report`
# also reads back a built
# object: the code object of the first example (AMDGPU), or the NVPTX error
# for a built object (report reads NVPTX usage from its own compile only).
#
# The examples are copied to one fixed place first (REGTUNE_GOLDEN_SRC,
# default /tmp/regtune-golden-src): the input hash covers the preprocessed
# source, whose line markers name the file's path, so two checkouts would
# otherwise differ. `tune` runs with limits far above what the examples
# need: its default time budget scales with how long the plain compile
# took, so on a loaded machine a search would stop at another variant.
# Debug build; a few minutes per target on 2 cores.
set -eu

out=${1:?usage: ci/golden.sh OUT_DIR [ARCH...]}
shift
archs=${*:-gfx90a gfx1100 sm_90}
repo=$(cd "$(dirname "$0")/.." && pwd)
src=${REGTUNE_GOLDEN_SRC:-/tmp/regtune-golden-src}

cargo build --quiet --manifest-path "$repo/Cargo.toml" -p regtune -p regtune-passes
# Where cargo put them (CARGO_TARGET_DIR): two runs that both find no
# regtune would compare two lists of "not found" and call them equal.
target=${CARGO_TARGET_DIR:-$repo/target}
regtune=$target/debug/regtune
[ -x "$regtune" ] || { echo "golden: no $regtune after the build" >&2; exit 1; }

rm -rf "$src"
mkdir -p "$src" "$out"
cp "$repo"/examples/*.hip "$repo"/examples/regtune_gpu.h "$src"/
out=$(cd "$out" && pwd)
cd "$src"
examples=$(ls ./*.hip)

# run NAME COMMAND...: stdout to NAME, stderr to NAME.stderr, status to NAME.status.
run() {
    name=$1
    shift
    status=0
    "$@" >"$out/$name" 2>"$out/$name.stderr" || status=$?
    echo "$status" >"$out/$name.status"
    # A slow machine's progress line says how long it took, not what it did.
    sed -i '/^regtune: still tuning /d' "$out/$name.stderr"
}

for arch in $archs; do
    echo "golden: $arch" >&2
    # shellcheck disable=SC2086 # one word per example
    run "report-$arch.json" "$regtune" report --format json --offload-arch "$arch" $examples
    # shellcheck disable=SC2086
    run "report-$arch.txt" "$regtune" report --format table --offload-arch "$arch" $examples
    for format in json table; do
        db=$out/db-$arch-$format.json
        rm -f "$db"
        # shellcheck disable=SC2086
        run "tune-$arch.$format" "$regtune" tune --format "$format" --diff --db "$db" \
            --time-budget 3600 --variant-timeout 600 --offload-arch "$arch" $examples
    done
    # Every class proven (the shipped default applies nothing unasked), so
    # that explain and fix have decisions to show and patch.
    proven=$out/db-$arch-proven.json
    rm -f "$proven"
    # shellcheck disable=SC2086
    run "tune-$arch.proven.json" "$regtune" tune --format json --db "$proven" \
        --evidence "$repo/tests/fixtures/evidence-all-proven.json" \
        --time-budget 3600 --variant-timeout 600 --offload-arch "$arch" $examples
    # explain (its own compiles, and what tune measured), fix (the patch
    # that db makes, every unit rebuilt to verify it), predict (the cost
    # model over every variant) on the first example.
    # shellcheck disable=SC2086
    run "explain-$arch.json" "$regtune" explain --format json --db "$proven" --offload-arch "$arch" $examples
    # shellcheck disable=SC2086
    run "fix-$arch.patch" "$regtune" fix --db "$proven" --offload-arch "$arch" $examples
    run "predict-$arch.json" "$regtune" predict --time-budget 3600 --variant-timeout 600 --offload-arch "$arch" \
        "$(echo "$examples" | head -n 1)"
    # A built object, read back.
    first=$(echo "$examples" | head -n 1)
    case $arch in
    sm_*)
        cuda=
        for c in "${CUDA_PATH:-}" /usr/local/cuda /opt/regtune-cuda "$HOME/.cache/regtune/cuda"; do
            if [ -n "$c" ] && [ -x "$c/bin/ptxas" ]; then cuda=$c && break; fi
        done
        flags="-x cuda --cuda-device-only -Wno-unknown-cuda-version --cuda-path=$cuda --cuda-gpu-arch=$arch -c"
        ;;
    *) flags="" ;;
    esac
    object=$src/built-$arch.o
    if [ -n "$flags" ]; then
        # shellcheck disable=SC2086
        clang-22 $flags -o "$object" "$first" 2>/dev/null || true
    else
        REGTUNE_MODE=off "$target/debug/regtune-hipcc" --offload-arch="$arch" -c -o "$object" "$first" 2>/dev/null || true
    fi
    if [ -f "$object" ]; then
        run "report-object-$arch.json" "$regtune" report --format json --offload-arch "$arch" "$object"
    fi
done

# nvcc's builds (tune --compiler nvcc, sm_90): the db, its candidates'
# cubins beside it, and the report, where an sm_ arch was asked for.
case " $archs " in
*" sm_"*)
    echo "golden: nvcc" >&2
    db=$out/db-nvcc/decisions.json
    rm -rf "$out/db-nvcc"
    # shellcheck disable=SC2086
    run "tune-nvcc.json" "$regtune" tune --compiler nvcc --format json --db "$db" \
        --time-budget 3600 --variant-timeout 600 --offload-arch sm_90 $examples -- -x cu -O3
    ;;
esac

# measure's report and db from a recorded run (the examples built by nvcc,
# measured on an H200: bench/nvcc/results/examples-every-step-h200-2026-11-28),
# decided again by this regtune's rule: `measure --from`, nothing runs.
echo "golden: measure --from" >&2
rm -rf "$src/measured" && mkdir -p "$src/measured"
tar -xJf "$repo/tests/fixtures/measure-run-sm90.tar.xz" -C "$src/measured"
for format in json table; do
    cp "$src/measured/db/decisions.json" "$src/measured/db/$format.json"
    cp -r "$src/measured/db/decisions.code" "$src/measured/db/$format.code"
    run "measure-from.$format" "$regtune" measure --db "$src/measured/db/$format.json" --from "$src/measured/run" \
        --format "$format"
    # The report goes to stderr (the program's stdout is its own): keep it as the output.
    mv "$out/measure-from.$format.stderr" "$out/measure-from.$format"
    sed -i "s#$src#SRC#g" "$out/measure-from.$format"
    cp "$src/measured/db/$format.json" "$out/db-measured-$format.json"
done
echo "golden: $out" >&2
