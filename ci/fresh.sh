#!/usr/bin/env bash
# The README's two commands on a brand-new Debian 12 root, as a new user runs
# them: a minimal bookworm made with debootstrap (packages from the Debian
# mirror, nothing else), this commit cloned into it, Rust lent read-only from
# this machine (a fresh machine "with only Rust installed"), then
# `ci/demo.sh` and `ci/test.sh` inside a chroot, each timed.
#
#   sudo ci/fresh.sh [DIR]      # DIR: where the root goes (default /var/tmp/regtune-fresh)
#
# Not part of CI (it downloads and builds everything: about half an hour on
# two cores); ci/check-spawned.sh is CI's cheap form of the same guarantee.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
root=${1:-/var/tmp/regtune-fresh}
[ "$(id -u)" -eq 0 ] || { echo "fresh: run as root (debootstrap and chroot need it)" >&2; exit 1; }

command -v debootstrap >/dev/null || { apt-get update -q && apt-get install -y -q --no-install-recommends debootstrap; }

rustup_home=${RUSTUP_HOME:-$HOME/.rustup}
cargo_home=${CARGO_HOME:-$HOME/.cargo}
[ -d "$rustup_home" ] && [ -d "$cargo_home" ] || { echo "fresh: no rustup install to lend ($rustup_home, $cargo_home)" >&2; exit 1; }

mounts=()
cleanup() {
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount -l "${mounts[i]}" 2>/dev/null || true; done
}
trap cleanup EXIT
bind() { # bind SRC DST [ro]
  mkdir -p "$2"
  mount --bind "$1" "$2"
  mounts+=("$2")
  if [ "${3:-}" = ro ]; then mount -o remount,bind,ro "$2"; fi
}

if [ ! -x "$root/usr/bin/apt-get" ]; then
  echo "fresh: debootstrap bookworm into $root"
  start=$(date +%s)
  debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian >/dev/null
  echo "fresh: debootstrap took $(($(date +%s) - start)) s"
fi
cp /etc/resolv.conf "$root/etc/resolv.conf"
# This network's own certificate authorities (an egress proxy, say), which
# any machine on it has; ca-certificates picks them up when it installs.
if [ -d /usr/local/share/ca-certificates ]; then
  mkdir -p "$root/usr/local/share/ca-certificates"
  cp -a /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/"
fi
# The sources a Debian 12 install has (debootstrap writes only bookworm).
rm -f "$root/etc/apt/sources.list"
cat >"$root/etc/apt/sources.list.d/debian.sources" <<'EOF'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
bind /proc "$root/proc"
bind /sys "$root/sys"
bind /dev "$root/dev"
bind /dev/pts "$root/dev/pts"
# Rust (and the C linker Rust needs, which comes with it on a real machine:
# rustup asks for one) is the only thing the README assumes.
bind "$rustup_home" "$root/opt/rust/rustup" ro
mkdir -p "$root/opt/rust/cargo"
cp -a "$cargo_home/bin" "$root/opt/rust/cargo/"
chroot "$root" /bin/sh -c 'command -v cc >/dev/null || { apt-get update -q && apt-get install -y -q --no-install-recommends gcc libc6-dev ca-certificates; }' >/dev/null

rm -rf "$root/work/regtune"
mkdir -p "$root/work"
git clone -q "$repo" "$root/work/regtune"
env_in=(env -i HOME=/root PATH=/opt/rust/cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
  RUSTUP_HOME=/opt/rust/rustup CARGO_HOME=/opt/rust/cargo LANG=C.UTF-8 CI=true)

for step in demo test; do
  start=$(date +%s)
  status=0
  chroot "$root" "${env_in[@]}" /bin/bash -c "cd /work/regtune && ci/$step.sh" >"$root/work/$step.log" 2>&1 || status=$?
  took=$(($(date +%s) - start))
  echo "fresh: ci/$step.sh exited $status after ${took} s on $(date -u +%F) (log: $root/work/$step.log)"
  tail -3 "$root/work/$step.log"
  [ "$status" -eq 0 ] || exit "$status"
done
