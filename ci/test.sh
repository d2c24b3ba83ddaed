#!/usr/bin/env bash
# The test command: installs what is missing, builds everything, runs the
# Rust unit and integration tests, then the lit suite for the passes.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -eq 0 ]; then ci/bootstrap.sh; else ci/bootstrap.sh || true; fi

# Every program the build and the tests run must come from a package that
# bootstrap installs: a package installed by hand on this machine fails here.
traced=()
if command -v strace >/dev/null 2>&1 && [ "${REGTUNE_TRACE:-1}" != 0 ]; then traced=(ci/check-spawned.sh); fi

"${traced[@]}" cargo build --workspace --all-targets
"${traced[@]}" cargo test --workspace
if [ -f tests/lit/lit.cfg.py ]; then
  REGTUNE_PLUGIN="$PWD/target/debug/libregtune_passes.so" "${traced[@]}" lit-22 -sv tests/lit
fi
