#!/usr/bin/env bash
# The test command: installs what is missing, builds everything, runs the
# Rust unit and integration tests, then the lit suite for the passes, once
# with the plugin built for LLVM 22 and once with the one for LLVM 19.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -eq 0 ]; then ci/bootstrap.sh; else ci/bootstrap.sh || true; fi

# Every program the build and the tests run must come from a package that
# bootstrap installs: a package installed by hand on this machine fails here.
traced=()
if command -v strace >/dev/null 2>&1 && [ "${REGTUNE_TRACE:-1}" != 0 ]; then traced=(ci/check-spawned.sh); fi

# The plugin for LLVM 19 (ROCm compiles with its own LLVM, usually a version
# or two behind): regtune-passes alone, in a target dir of its own so the two
# plugins do not overwrite each other. Built first: the integration tests use
# it too (clang-19 builds, and a plugin of the wrong LLVM under clang-22).
llvm19=(-p regtune-passes --no-default-features --features llvm19 --target-dir target/llvm19)
"${traced[@]}" cargo build "${llvm19[@]}"

"${traced[@]}" cargo build --workspace --all-targets
# README.md and docs/: every relative link and #anchor resolves.
"${traced[@]}" python3 ci/check-links.py
# Formatting (rustfmt.toml) and lints, for both plugins' features: no
# difference and no warning passes.
"${traced[@]}" cargo fmt --all --check
"${traced[@]}" cargo clippy --workspace --all-targets -- -D warnings
"${traced[@]}" cargo clippy "${llvm19[@]}" --all-targets -- -D warnings
# Includes tests/modules.rs: the driver's module graph has no cycles but
# the known ones it lists, which only shrink.
"${traced[@]}" cargo test --workspace
"${traced[@]}" cargo test "${llvm19[@]}"
if [ -f tests/lit/lit.cfg.py ]; then
  # lit.cfg.py takes opt, clang and FileCheck from the LLVM the plugin was
  # built for. llvm-19-tools ships lit as a script, not as a lit-19 command.
  REGTUNE_PLUGIN="$PWD/target/debug/libregtune_passes.so" "${traced[@]}" lit-22 -sv tests/lit
  REGTUNE_PLUGIN="$PWD/target/llvm19/debug/libregtune_passes.so" \
    "${traced[@]}" python3 /usr/lib/llvm-19/build/utils/lit/lit.py -sv tests/lit
fi
