#!/usr/bin/env bash
# Install what regtune needs on Debian 12, and nothing that is already there.
# Idempotent: a second run checks and exits. A real ROCm install is used as is.
#
# NVPTX targets (sm_XX) also need CUDA: a real toolkit ($CUDA_PATH or
# /usr/local/cuda) is used as is; otherwise this script assembles the part
# clang needs (bin/ptxas, nvvm/libdevice, include/, version.json) from
# NVIDIA's PyPI wheels into /opt/regtune-cuda (as root) or
# ${XDG_CACHE_HOME:-~/.cache}/regtune/cuda, once; and, for `regtune
# measure` and building CUDA programs, CUPTI (include/cupti*.h,
# lib64/libcupti.so.12), the CUDA runtime libraries (lib64/libcudart*) and
# bin/fatbinary (from CUDA 13.0's nvcc wheel: 12.9's has only ptxas), which
# clang runs to link CUDA programs; and bin/nvdisasm (CUDA 13.2's wheel, the
# oldest on PyPI; it reads 12.9's cubins), from which regtune counts the
# local-memory loads and stores of the final code.
set -euo pipefail

# LLVM 19 besides 22: ci/test.sh also builds and tests the pass plugin for
# it (ROCm compiles with its own LLVM, usually a version or two behind).
# One line: ci/check-spawned.sh and a test read it.
packages=(clang-22 clang-tools-22 llvm-22 llvm-22-dev llvm-22-tools lld-22 libamdhip64-dev rocm-device-libs cmake chromium python3-pip strace g++ make git clang-19 llvm-19-dev llvm-19-tools)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ! command -v cargo >/dev/null 2>&1; then
  echo "regtune bootstrap: cargo not found; install Rust (https://rustup.rs) and re-run" >&2
  exit 1
fi
# ci/test.sh lints with clippy and checks rustfmt's formatting (both in
# rustup's default profile, not in every other).
if command -v rustup >/dev/null 2>&1; then
  cargo clippy --version >/dev/null 2>&1 || rustup component add clippy
  cargo fmt --version >/dev/null 2>&1 || rustup component add rustfmt
fi

# CUDA 12.9 from PyPI: ptxas and libdevice, the runtime headers, and the
# CCCL and cuRAND headers that clang's CUDA wrapper includes.
cuda_version=12.9.86
cuda_wheels=(
  "nvidia-cuda-nvcc-cu12==12.9.86"
  "nvidia-cuda-runtime-cu12==12.9.79"
  "nvidia-cuda-cccl-cu12==12.9.27"
  "nvidia-curand-cu12==10.3.10.19"
)
if [ "$(id -u)" -eq 0 ]; then
  cuda_dir=/opt/regtune-cuda
else
  cuda_dir="${XDG_CACHE_HOME:-$HOME/.cache}/regtune/cuda"
fi

cuda_complete() {
  [ -x "$1/bin/ptxas" ] && [ -f "$1/nvvm/libdevice/libdevice.10.bc" ] && [ -f "$1/include/cuda_runtime.h" ] &&
    { [ -f "$1/version.json" ] || [ -f "$1/version.txt" ]; }
}

cuda_present() {
  for d in "${CUDA_PATH:-}" /usr/local/cuda "$cuda_dir"; do
    if [ -n "$d" ] && cuda_complete "$d"; then
      echo "$d"
      return 0
    fi
  done
  return 1
}

install_cuda() {
  if found=$(cuda_present); then
    echo "regtune bootstrap: CUDA present ($found)"
    return 0
  fi
  if ! python3 -m pip --version >/dev/null 2>&1; then
    if [ "$(id -u)" -ne 0 ]; then
      echo "regtune bootstrap: NVPTX targets need CUDA, and fetching it needs pip; run as root or: sudo apt-get install -y python3-pip" >&2
      return 1
    fi
    echo "regtune bootstrap: installing python3-pip (to fetch CUDA's wheels)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends python3-pip
  fi
  echo "regtune bootstrap: assembling CUDA $cuda_version for NVPTX targets in $cuda_dir"
  local work
  work=$(mktemp -d)
  trap 'rm -rf "$work"' RETURN
  python3 -m pip download -q --no-deps --only-binary=:all: -d "$work/wheels" "${cuda_wheels[@]}"
  python3 - "$work/wheels" "$work/cuda" "$cuda_version" <<'PY'
import json, os, shutil, sys, zipfile
wheels, out, version = sys.argv[1:4]
unpacked = os.path.join(out, "..", "unpacked")
for w in sorted(os.listdir(wheels)):
    zipfile.ZipFile(os.path.join(wheels, w)).extractall(unpacked)
nv = os.path.join(unpacked, "nvidia")
os.makedirs(os.path.join(out, "bin"))
shutil.copy(os.path.join(nv, "cuda_nvcc", "bin", "ptxas"), os.path.join(out, "bin", "ptxas"))
os.chmod(os.path.join(out, "bin", "ptxas"), 0o755)
os.makedirs(os.path.join(out, "nvvm", "libdevice"))
shutil.copy(os.path.join(nv, "cuda_nvcc", "nvvm", "libdevice", "libdevice.10.bc"), os.path.join(out, "nvvm", "libdevice"))
include = os.path.join(out, "include")
for part in ["cuda_runtime", "cuda_nvcc", "curand", "cuda_cccl"]:
    shutil.copytree(os.path.join(nv, part, "include"), include, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__init__.py", "__pycache__"))
# clang looks for a lib64 directory next to bin.
os.makedirs(os.path.join(out, "lib64"))
with open(os.path.join(out, "version.json"), "w") as f:
    json.dump({"cuda": {"name": "CUDA SDK", "version": version}}, f)
PY
  mkdir -p "$(dirname "$cuda_dir")"
  rm -rf "$cuda_dir.partial"
  mv "$work/cuda" "$cuda_dir.partial"
  rm -rf "$cuda_dir"
  mv "$cuda_dir.partial" "$cuda_dir"
  echo "regtune bootstrap: CUDA ready in $cuda_dir"
}

# CUPTI (regtune measure's interposer subscribes to its launch callbacks),
# cudart and fatbinary (to build CUDA programs), nvdisasm (the final code's
# local-memory accesses), into an assembled CUDA directory.
cuda_extras_wheels=(
  "nvidia-cuda-cupti-cu12==12.9.79"
  "nvidia-cuda-runtime-cu12==12.9.79"
  "nvidia-cuda-nvcc==13.0.88"
  "nvidia-cuda-nvdisasm==13.2.86"
)

install_cuda_extras() {
  local dir
  dir=$(cuda_present) || return 0
  # A real toolkit has its own (extras/CUPTI, lib64).
  [ "$dir" = "$cuda_dir" ] || return 0
  if [ -f "$dir/lib64/libcupti.so.12" ] && [ -f "$dir/include/cupti.h" ] && [ -f "$dir/lib64/libcudart_static.a" ] &&
    [ -x "$dir/bin/fatbinary" ] && [ -x "$dir/bin/nvdisasm" ]; then
    echo "regtune bootstrap: CUPTI, cudart, fatbinary and nvdisasm present ($dir)"
    return 0
  fi
  echo "regtune bootstrap: adding CUPTI, cudart, fatbinary and nvdisasm to $dir"
  local work
  work=$(mktemp -d)
  trap 'rm -rf "$work"' RETURN
  python3 -m pip download -q --no-deps --only-binary=:all: -d "$work/wheels" "${cuda_extras_wheels[@]}"
  python3 - "$work/wheels" "$work/unpacked" "$dir" <<'PY'
import os, shutil, sys, zipfile
wheels, unpacked, out = sys.argv[1:4]
for w in sorted(os.listdir(wheels)):
    zipfile.ZipFile(os.path.join(wheels, w)).extractall(unpacked)
nv = os.path.join(unpacked, "nvidia")
shutil.copytree(os.path.join(nv, "cuda_cupti", "include"), os.path.join(out, "include"), dirs_exist_ok=True,
                ignore=shutil.ignore_patterns("__init__.py", "__pycache__"))
os.makedirs(os.path.join(out, "lib64"), exist_ok=True)
for lib in ["cuda_cupti/lib/libcupti.so.12", "cuda_runtime/lib/libcudart.so.12", "cuda_runtime/lib/libcudart_static.a"]:
    shutil.copy(os.path.join(nv, lib), os.path.join(out, "lib64"))
for tool in ["fatbinary", "nvdisasm"]:
    shutil.copy(os.path.join(nv, "cu13", "bin", tool), os.path.join(out, "bin"))
    os.chmod(os.path.join(out, "bin", tool), 0o755)
for name, target in [("libcupti.so", "libcupti.so.12"), ("libcudart.so", "libcudart.so.12")]:
    link = os.path.join(out, "lib64", name)
    if not os.path.lexists(link):
        os.symlink(target, link)
PY
}

# nvcc 13 for CUDA code built with nvcc (`regtune tune --compiler nvcc`,
# regtune-nvcc): nvcc, cudafe++, ptxas, nvlink and fatbinary, cicc, the crt
# headers, the runtime and CCCL, unpacked as one toolkit tree (the wheels
# share nvidia/cu13/) into /opt/regtune-nvcc (as root) or
# ${XDG_CACHE_HOME:-~/.cache}/regtune/nvcc. nvcc and cicc must be of one
# version (13.0's nvcc cannot read 13.5's PTX 9.5); the runtime and CCCL are
# 13.0's, whose programs the 580 driver (CUDA 13.0) runs. A real toolkit's
# nvcc ($CUDA_PATH/bin, /usr/local/cuda/bin, PATH) is used as is.
nvcc_wheels=(
  "nvidia-cuda-nvcc==13.5.37"
  "nvidia-nvvm==13.5.37"
  "nvidia-cuda-crt==13.5.37"
  # The runtime's headers must name nvcc's version (CUDART_VERSION 13050):
  # CCCL (Thrust, CUB, cuda/std, cooperative groups) refuses a mismatch.
  # Programs linked with it run on 13.0 drivers (580), minor-version
  # compatibility. No CCCL wheel is 13.5; 13.0's builds with these.
  "nvidia-cuda-runtime==13.5.37"
  "nvidia-cuda-cccl==13.0.85"
)
if [ "$(id -u)" -eq 0 ]; then
  nvcc_dir=/opt/regtune-nvcc
else
  nvcc_dir="${XDG_CACHE_HOME:-$HOME/.cache}/regtune/nvcc"
fi

install_nvcc() {
  # The wheel list is written into the tree: a tree assembled from other
  # wheels (an earlier bootstrap's) is assembled again.
  local marker="$nvcc_dir/regtune-wheels.txt"
  if [ -x "$nvcc_dir/bin/nvcc" ] && [ -x "$nvcc_dir/nvvm/bin/cicc" ] && [ -f "$nvcc_dir/include/crt/host_config.h" ] &&
    [ -f "$nvcc_dir/include/cuda_runtime.h" ] && [ -f "$nvcc_dir/lib/libcudart_static.a" ] &&
    [ "$(cat "$marker" 2>/dev/null)" = "$(printf '%s\n' "${nvcc_wheels[@]}")" ]; then
    echo "regtune bootstrap: nvcc present ($nvcc_dir)"
    return 0
  fi
  echo "regtune bootstrap: assembling nvcc 13.5 in $nvcc_dir"
  local work
  work=$(mktemp -d)
  trap 'rm -rf "$work"' RETURN
  python3 -m pip download -q --no-deps --only-binary=:all: -d "$work/wheels" "${nvcc_wheels[@]}"
  python3 - "$work/wheels" "$work/unpacked" <<'PY'
import os, sys, zipfile
wheels, unpacked = sys.argv[1:3]
for w in sorted(os.listdir(wheels)):
    z = zipfile.ZipFile(os.path.join(wheels, w))
    z.extractall(unpacked)
    # zipfile drops the executable bits.
    for info in z.infolist():
        if (info.external_attr >> 16) & 0o111:
            os.chmod(os.path.join(unpacked, info.filename), 0o755)
PY
  # cudart's libraries are named for the wheel; a toolkit also has lib64.
  ln -sfn lib "$work/unpacked/nvidia/cu13/lib64"
  [ -e "$work/unpacked/nvidia/cu13/lib/libcudart.so" ] || ln -s libcudart.so.13 "$work/unpacked/nvidia/cu13/lib/libcudart.so"
  mkdir -p "$(dirname "$nvcc_dir")"
  rm -rf "$nvcc_dir.partial"
  mv "$work/unpacked/nvidia/cu13" "$nvcc_dir.partial"
  printf '%s\n' "${nvcc_wheels[@]}" > "$nvcc_dir.partial/regtune-wheels.txt"
  rm -rf "$nvcc_dir"
  mv "$nvcc_dir.partial" "$nvcc_dir"
  echo "regtune bootstrap: nvcc ready in $nvcc_dir"
}

if [ ${#missing[@]} -eq 0 ]; then
  echo "regtune bootstrap: toolchain present (${packages[*]})"
elif [ "$(id -u)" -ne 0 ]; then
  echo "regtune bootstrap: missing ${missing[*]}; run as root: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
else
  echo "regtune bootstrap: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

install_cuda
install_cuda_extras
install_nvcc
