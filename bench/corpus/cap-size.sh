#!/bin/bash
# Optimized device IR size (instructions in defined functions) of every
# corpus file and example: plain O3, then every kernel under unroll-cap=N
# for N = 1, 2, 4, 8, through clang with the plugin. One line per file:
#   PLAIN CAP1 CAP2 CAP4 CAP8 FILE
#
#   bench/corpus/corpus.sh && cargo build --release -p regtune-passes
#   bench/corpus/cap-size.sh [CORPUS]     # default: $REGTUNE_CORPUS, else /tmp/regtune-corpus
set -euo pipefail
CORPUS=${1:-${REGTUNE_CORPUS:-/tmp/regtune-corpus}}
REPO=$(cd "$(dirname "$0")/../.." && pwd)
PLUGIN=${REGTUNE_PLUGIN:-$REPO/target/release/libregtune_passes.so}
B=/usr/lib/x86_64-linux-gnu/amdgcn/bitcode
DL=$(ls -d ~/.cache/regtune/device-libs-* | head -1) # regtune's device-library overlay
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

count() { awk '/^define /{f=1; next} /^}$/{f=0} f && /^  / && !/^  *;/{n++} END{print n+0}' "$1"; }

# Each file and its flags beyond the device compile.
python3 - "$CORPUS/compile_commands.json" "$REPO/examples" > "$TMP/entries" <<'PY'
import glob, json, sys
for e in json.load(open(sys.argv[1])):
    f, flags, it = e["file"], [], iter(e["arguments"][1:])
    for a in it:
        if a in ("-x", "-o"): next(it); continue
        if a in ("-c", "-O3") or a.startswith("--offload-arch") or a == f: continue
        flags.append(a)
    print(f + "\t" + " ".join(flags))
for f in sorted(glob.glob(sys.argv[2] + "/*.hip")): print(f + "\t")
PY

while IFS=$'\t' read -r file flags; do
    # shellcheck disable=SC2086 # flags are words
    compile=(clang-22 -x hip --cuda-device-only --no-gpu-bundle-output -O3 --rocm-path=/usr --offload-arch=gfx90a
        --rocm-device-lib-path="$DL" -mcode-object-version=5 -Xclang -mlink-builtin-bitcode -Xclang "$B/hip.bc"
        -Xclang -mlink-builtin-bitcode -Xclang "$B/oclc_daz_opt_off.bc" -include "$DL/regtune-prelude-wave64.h" $flags
        -S -emit-llvm)
    "${compile[@]}" -o "$TMP/plain.ll" "$file"
    line=$(count "$TMP/plain.ll")
    kernels=$(grep -o '^define[^@]*amdgpu_kernel[^@]*@[A-Za-z0-9_]*' "$TMP/plain.ll" | sed 's/.*@//')
    for cap in 1 2 4 8; do
        python3 - "$cap" $kernels > "$TMP/db.json" <<'PY'
import json, sys
cap = int(sys.argv[1])
kernels = {f"gfx90a/{k}/any": {"symbol": k, "arch": "gfx90a", "input_hash": "any", "transforms": {"unroll_cap": cap}}
           for k in sys.argv[2:]}
print(json.dumps({"version": 1, "kernels": kernels}))
PY
        REGTUNE_DECISIONS="$TMP/db.json" "${compile[@]}" -fpass-plugin="$PLUGIN" -o "$TMP/cap.ll" "$file"
        line="$line $(count "$TMP/cap.ll")"
    done
    echo "$line ${file#"$CORPUS"/src/}"
done < "$TMP/entries"
