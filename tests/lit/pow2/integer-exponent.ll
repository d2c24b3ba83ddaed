; RUN: %opt -passes='regtune-pow2<inexact>' -S %s | FileCheck %s
;
; <inexact>: these are the formulas, for ocml's pows too, which without
; afn are rewritten only on the user's word (ocml.ll tests that part).
;
; pow(x, 1.0) -> x and pow(x, 0.0) -> 1.0 are exact. Other integer
; exponents become a chain of multiplies only under afn: x * x * x rounds
; twice where pow rounds once.

target triple = "amdgcn-amd-amdhsa"

; Verify that pow(x, 3.0) without fast-math flags is _not_ rewritten.
; CHECK-LABEL: define double @cube_strict(
; CHECK-NEXT:    %r = call double @__ocml_pow_f64(double %x, double 3.000000e+00)
define double @cube_strict(double %x) {
  %r = call double @__ocml_pow_f64(double %x, double 3.0)
  ret double %r
}

; Verify that contract alone is not enough either.
; CHECK-LABEL: define double @cube_contract(
; CHECK-NEXT:    %r = call contract double @__ocml_pow_f64(double %x, double 3.000000e+00)
define double @cube_contract(double %x) {
  %r = call contract double @__ocml_pow_f64(double %x, double 3.0)
  ret double %r
}

; pow(x, 3.0) -> (x * x) * x under afn.
; CHECK-LABEL: define double @cube_afn(
; CHECK-NEXT:    [[SQ:%.*]] = fmul afn double %x, %x
; CHECK-NEXT:    [[CU:%.*]] = fmul afn double %x, [[SQ]]
; CHECK-NEXT:    ret double [[CU]]
define double @cube_afn(double %x) {
  %r = call afn double @__ocml_pow_f64(double %x, double 3.0)
  ret double %r
}

; pow(x, -4.0) -> 1.0 / ((x * x) * (x * x)) under afn.
; CHECK-LABEL: define float @inverse_fourth(
; CHECK-NEXT:    [[SQ:%.*]] = fmul fast float %x, %x
; CHECK-NEXT:    [[P4:%.*]] = fmul fast float [[SQ]], [[SQ]]
; CHECK-NEXT:    [[R:%.*]] = fdiv fast float 1.000000e+00, [[P4]]
; CHECK-NEXT:    ret float [[R]]
define float @inverse_fourth(float %x) {
  %r = call fast float @llvm.pow.f32(float %x, float -4.0)
  ret float %r
}

; Verify that a large exponent is _not_ expanded, even with afn.
; CHECK-LABEL: define float @too_large(
; CHECK-NEXT:    %r = call afn float @llvm.pow.f32(float %x, float 1.000000e+02)
define float @too_large(float %x) {
  %r = call afn float @llvm.pow.f32(float %x, float 100.0)
  ret float %r
}

; CHECK-LABEL: define float @one(
; CHECK-NEXT:    ret float %x
define float @one(float %x) {
  %r = call float @__ocml_pow_f32(float %x, float 1.0)
  ret float %r
}

; CHECK-LABEL: define float @zero(
; CHECK-NEXT:    ret float 1.000000e+00
define float @zero(float %x) {
  %r = call float @__ocml_pow_f32(float %x, float 0.0)
  ret float %r
}

; Verify that a non-integer exponent is _not_ rewritten.
; CHECK-LABEL: define float @two_and_a_half(
; CHECK-NEXT:    %r = call fast float @__ocml_pow_f32(float %x, float 2.500000e+00)
define float @two_and_a_half(float %x) {
  %r = call fast float @__ocml_pow_f32(float %x, float 2.5)
  ret float %r
}

declare double @__ocml_pow_f64(double, double)
declare float @__ocml_pow_f32(float, float)
declare float @llvm.pow.f32(float, float)
