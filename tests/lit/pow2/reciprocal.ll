; RUN: %opt -passes='regtune-pow2<inexact>' -S %s | FileCheck %s --check-prefixes=CHECK,%llvm
;
; <inexact>: these are the formulas, for ocml's pows too, which without
; afn are rewritten only on the user's word (ocml.ll tests that part).
;
; pow(x, -1.0) -> 1.0 / x: one correctly rounded division, exact without
; fast-math flags (as LLVM's own optimizePow has it); the same for pown.

target triple = "amdgcn-amd-amdhsa"

; CHECK-LABEL: define double @pow_minus_one(
; CHECK-NEXT:    [[R:%.*]] = fdiv contract double 1.000000e+00, %x
; CHECK-NEXT:    ret double [[R]]
define double @pow_minus_one(double %x) {
  %r = call contract double @__ocml_pow_f64(double %x, double -1.0)
  ret double %r
}

; CHECK-LABEL: define float @pown_minus_one(
; CHECK-NEXT:    [[R:%.*]] = fdiv float 1.000000e+00, %x
; CHECK-NEXT:    ret float [[R]]
define float @pown_minus_one(float %x) {
  %r = call float @__ocml_pown_f32(float %x, i32 -1)
  ret float %r
}

; CHECK-LABEL: define <2 x float> @vector_minus_one(
; LLVM22-NEXT:   [[R:%.*]] = fdiv <2 x float> splat (float 1.000000e+00), %x
; LLVM19-NEXT:   [[R:%.*]] = fdiv <2 x float> <float 1.000000e+00, float 1.000000e+00>, %x
; CHECK-NEXT:    ret <2 x float> [[R]]
define <2 x float> @vector_minus_one(<2 x float> %x) {
  %r = call <2 x float> @llvm.pow.v2f32(<2 x float> %x, <2 x float> <float -1.0, float -1.0>)
  ret <2 x float> %r
}

declare double @__ocml_pow_f64(double, double)
declare float @__ocml_pown_f32(float, i32)
declare <2 x float> @llvm.pow.v2f32(<2 x float>, <2 x float>)
