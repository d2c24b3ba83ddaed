#!/usr/bin/env bash
# Run a command under strace and check that every program it (or anything it
# starts) executes comes from a package a fresh Debian 12 machine gets from
# ci/bootstrap.sh: a package bootstrap names, one of their dependencies, or
# the base system. A package installed by hand on this machine fails the
# check even though the command itself passed here.
#
#   ci/check-spawned.sh cargo test --workspace
#
# Programs outside dpkg's knowledge are allowed when they are the Rust
# toolchain, this checkout's own build, temporary files, or the CUDA subset
# bootstrap assembles from PyPI wheels.
set -euo pipefail
cd "$(dirname "$0")/.."

log=$(mktemp)
trap 'rm -f "$log" "$log".*' EXIT
# --seccomp-bpf stops only on execve: the traced run keeps its speed.
# A fresh machine's PATH: the system's, and Rust's (wherever cargo is).
# /usr/local is empty on a fresh Debian: what is there was put by hand.
cargo_bin=$(dirname "$(command -v cargo)")
fresh_path="$cargo_bin:/usr/sbin:/usr/bin:/sbin:/bin"
status=0
PATH="$fresh_path" strace -f --seccomp-bpf -qq -e trace=execve -e signal=none -o "$log" "$@" || status=$?

# Successful execs only: `execve("/path", ...) = 0`.
grep -h 'execve("' "$log" | grep -E '= 0$' | sed -E 's/^[0-9]+ +execve\("([^"]*)".*/\1/' | sort -u >"$log.programs"

# What a fresh machine has after bootstrap: the packages it names, their
# dependencies (as installed here: alternatives and virtual packages
# resolved the way dpkg did), and the base system (Priority: required).
python3 - "$log.allowed" <<'PY'
import re, subprocess, sys
named = re.search(r"^packages=\((.*)\)$", open("ci/bootstrap.sh").read(), re.M).group(1).split()
rows = subprocess.run(["dpkg-query", "-W", "-f=${Package}\t${Priority}\t${Depends}, ${Pre-Depends}\t${Provides}\n"],
                      capture_output=True, text=True, check=True).stdout.splitlines()
deps, providers, base = {}, {}, set()
for row in rows:
    pkg, prio, dep, prov = (row.split("\t") + [""] * 4)[:4]
    deps[pkg] = [re.sub(r"[ :(].*", "", alt.strip()) for d in dep.split(",") for alt in d.split("|") if alt.strip()]
    for p in prov.split(","):
        if p.strip():
            providers.setdefault(re.sub(r"[ (].*", "", p.strip()), []).append(pkg)
    if prio == "required":
        base.add(pkg)
seen, todo = set(), list(named) + list(base)
while todo:
    p = todo.pop()
    for q in [p] + providers.get(p, []):
        if q in deps and q not in seen:
            seen.add(q)
            todo.extend(deps[q])
open(sys.argv[1], "w").write("\n".join(sorted(seen)) + "\n")
PY

cuda_dir=/opt/regtune-cuda
nvcc_dir=/opt/regtune-nvcc
[ "$(id -u)" -eq 0 ] || cuda_dir="${XDG_CACHE_HOME:-$HOME/.cache}/regtune/cuda"
[ "$(id -u)" -eq 0 ] || nvcc_dir="${XDG_CACHE_HOME:-$HOME/.cache}/regtune/nvcc"
bad=0
checked=0
while read -r program; do
  real=$(readlink -f "$program" 2>/dev/null || echo "$program")
  case "$real" in
    "$PWD"/* | /tmp/* | "${CARGO_HOME:-$HOME/.cargo}"/* | "${RUSTUP_HOME:-$HOME/.rustup}"/* | "$cuda_dir"/* | "$nvcc_dir"/*) continue ;;
  esac
  checked=$((checked + 1))
  owner=""
  # dpkg knows a file by the path its package shipped: /bin/ls is /usr/bin/ls on a merged /usr.
  for p in "$real" "$program" "${real#/usr}" "${program#/usr}"; do
    [ -n "$owner" ] || owner=$(dpkg -S "$p" 2>/dev/null | grep -v '^diversion' | head -1 | cut -d: -f1) || true
  done
  owner=${owner%%,*}
  if [ -z "$owner" ]; then
    echo "check-spawned: $program ($real) belongs to no Debian package and is not built here" >&2
    bad=1
  elif ! grep -qx "$owner" "$log.allowed"; then
    echo "check-spawned: $program comes from $owner, which ci/bootstrap.sh does not install" >&2
    bad=1
  fi
done <"$log.programs"
echo "check-spawned: $checked programs from Debian packages checked against ci/bootstrap.sh"
[ "$bad" -eq 0 ] || exit 1
exit "$status"
