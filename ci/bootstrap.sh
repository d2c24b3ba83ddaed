#!/usr/bin/env bash
# Install what regtune needs on Debian 12, and nothing that is already there.
# Idempotent: a second run checks and exits. A real ROCm install is used as is.
set -euo pipefail

packages=(clang-22 llvm-22-dev llvm-22-tools lld-22 libamdhip64-dev rocm-device-libs cmake chromium)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ! command -v cargo >/dev/null 2>&1; then
  echo "regtune bootstrap: cargo not found; install Rust (https://rustup.rs) and re-run" >&2
  exit 1
fi

if [ ${#missing[@]} -eq 0 ]; then
  echo "regtune bootstrap: toolchain present (${packages[*]})"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "regtune bootstrap: missing ${missing[*]}; run as root: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi

echo "regtune bootstrap: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
