#!/usr/bin/env bash
# The test command: installs what is missing, builds everything, runs the
# Rust unit and integration tests, then the lit suite for the passes.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -eq 0 ]; then ci/bootstrap.sh; else ci/bootstrap.sh || true; fi

cargo build --workspace --all-targets
cargo test --workspace
if [ -f tests/lit/lit.cfg.py ]; then
  REGTUNE_PLUGIN="$PWD/target/debug/libregtune_passes.so" lit-22 -sv tests/lit
fi
