#!/bin/sh
# fewer-vgprs.sh <before.s> <after.s>: the AMDGPU assembly of the same
# kernels, before and after a transform; prints "vgprs: <before> -> <after>"
# per kernel (.vgpr_count in the metadata) and fails unless every kernel
# uses fewer VGPRs after.
set -u
before=$(grep '\.vgpr_count:' "$1" | awk '{print $2}')
after=$(grep '\.vgpr_count:' "$2" | awk '{print $2}')
[ -n "$before" ] && [ -n "$after" ] || { echo "fewer-vgprs: no .vgpr_count in $1 or $2" >&2; exit 1; }
status=0
set -- $after
for b in $before; do
  a=$1
  shift
  echo "vgprs: $b -> $a"
  [ "$a" -lt "$b" ] || status=1
done
exit $status
