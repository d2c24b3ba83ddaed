#!/usr/bin/env bash
# Do ocml's pow(x, 2.0) and pown(x, 2) give the bits of x * x? Runs the ROCm
# device library's own __ocml_pow_f64 and __ocml_pown_f64 on the CPU: the bitcode is extracted from
# ocml.bc, retargeted to x86-64, and its five AMDGPU intrinsics are given C
# stand-ins (rcp is exact here, the hardware's is refined by ocml anyway).
# An emulation, not the GPU: a difference rate far from 0 is the finding.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
llvm-extract-22 --recursive -func=__ocml_pow_f64 -func=__ocml_pown_f64 /usr/lib/x86_64-linux-gnu/amdgcn/bitcode/ocml.bc -o "$work/pow.bc"
llvm-dis-22 "$work/pow.bc" -o "$work/pow.ll"
python3 - "$work/pow.ll" <<'PY'
import re, sys
p = sys.argv[1]
s = open(p).read()
s = re.sub(r'target datalayout = ".*"', 'target datalayout = "e-m:e-i64:64-f80:128-n8:16:32:64-S128"', s)
s = s.replace('target triple = "amdgcn-amd-amdhsa"', 'target triple = "x86_64-pc-linux-gnu"')
s = s.replace('@__oclc_finite_only_opt = external local_unnamed_addr addrspace(4) constant i8, align 1',
              '@__oclc_finite_only_opt = constant i8 0, align 1')
s = s.replace('ptr addrspace(4) @__oclc_finite_only_opt', 'ptr @__oclc_finite_only_opt')
for a, b in [('class.f64', 'rt_class'), ('fract.f64', 'rt_fract'), ('frexp.exp.i32.f64', 'rt_frexp_exp'),
             ('frexp.mant.f64', 'rt_frexp_mant'), ('rcp.f64', 'rt_rcp')]:
    s = s.replace('@llvm.amdgcn.' + a, '@' + b)
s = re.sub(r'attributes #\d+ = \{[^}]*\}\n', '', s)
s = re.sub(r' #\d+', ' ', s)
s = s.replace('protected ', '')
open(p, 'w').write(s)
PY
clang-22 -O1 -ffp-contract=off "$work/pow.ll" "$here/pow_vs_square.c" -lm -o "$work/pow_vs_square" 2>/dev/null
"$work/pow_vs_square"
