; RUN: %opt -disable-output -passes=regtune-inspect %s | FileCheck %s --match-full-lines
; RUN: %opt -S -passes=regtune-inspect %s | FileCheck %s --check-prefix=SAME
;
; regtune-inspect says, per kernel, whether pow2 and an unroll cap would
; change anything in the kernel's scope (the kernel and what it calls), so
; the tuner skips variants identical to the plain build, and whether
; regtune-pow2<inexact> would change more than regtune-pow2 (a library pow
; that is not correctly rounded, called without afn).

target triple = "amdgcn-amd-amdhsa"

declare double @llvm.pow.f64(double, double)

; A pow(x, 2.0) in a helper the kernel calls; no loop.
; CHECK: {"kernel":"squares","pow2":true,"pow2_inexact":false,"unroll_cap":false,"noalias_candidates":[]}
define amdgpu_kernel void @squares(double %x) {
  %y = call double @square(double %x)
  ret void
}

define internal double @square(double %x) {
  %p = call double @llvm.pow.f64(double %x, double 2.0)
  ret double %p
}

; A loop and no pow.
; CHECK: {"kernel":"counts","pow2":false,"pow2_inexact":false,"unroll_cap":true,"noalias_candidates":[]}
define amdgpu_kernel void @counts(i32 %n) {
entry:
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %next, %loop ]
  %next = add i32 %i, 1
  %done = icmp eq i32 %next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}

; Nothing for either: pow(x, 3.0) without fast-math is not rewritten.
; CHECK: {"kernel":"cubes","pow2":false,"pow2_inexact":false,"unroll_cap":false,"noalias_candidates":[]}
define amdgpu_kernel void @cubes(double %x) {
  %p = call double @llvm.pow.f64(double %x, double 3.0)
  ret void
}

; Inspecting changes nothing.
; SAME: call double @llvm.pow.f64(double %x, double 2.000000e+00)
; SAME: br i1 %done, label %exit, label %loop{{$}}

; Pointer parameters: the ranked ones first (none here: neither pointer is
; dereferenced), then every other pointer without noalias, in order; one
; already noalias is not a candidate.
; CHECK: {"kernel":"pointers","pow2":false,"pow2_inexact":false,"unroll_cap":false,"noalias_candidates":[{"index":0,"name":"a","score":0,"reason":"no access pattern noalias helps"},{"index":2,"name":"c","score":0,"reason":"no access pattern noalias helps"}]}
define amdgpu_kernel void @pointers(ptr addrspace(1) %a, ptr addrspace(1) noalias %b, ptr addrspace(1) %c, i32 %n) {
  ret void
}

; ocml's pow without afn: only the inexact rewrite touches it. With an
; exact pow next to it, each rewrite has something to do.
; CHECK: {"kernel":"ocml","pow2":false,"pow2_inexact":true,"unroll_cap":false,"noalias_candidates":[]}
; CHECK: {"kernel":"both","pow2":true,"pow2_inexact":true,"unroll_cap":false,"noalias_candidates":[]}
; CHECK: {"kernel":"ocml_afn","pow2":true,"pow2_inexact":false,"unroll_cap":false,"noalias_candidates":[]}
define amdgpu_kernel void @ocml(double %x) {
  %p = call double @__ocml_pow_f64(double %x, double 2.0)
  ret void
}

define amdgpu_kernel void @both(double %x) {
  %p = call double @__ocml_pow_f64(double %x, double 2.0)
  %q = call double @square(double %x)
  ret void
}

define amdgpu_kernel void @ocml_afn(double %x) {
  %p = call afn double @__ocml_pow_f64(double %x, double 2.0)
  ret void
}

declare double @__ocml_pow_f64(double, double)
