; RUN: %opt -passes='regtune-pow2<inexact>' -S %s | FileCheck %s
;
; <inexact>: these are the formulas, for ocml's pows too, which without
; afn are rewritten only on the user's word (ocml.ll tests that part).
;
; pow(x, 0.5) and sqrt(x) differ at x = -0 (+0 vs -0) and x = -inf (+inf vs
; NaN): the rewrite needs nsz and ninf. 1/sqrt(x) also rounds twice, so
; pow(x, -0.5) needs afn or reassoc on top.

target triple = "amdgcn-amd-amdhsa"

; Verify that pow(x, 0.5) without fast-math flags is _not_ rewritten.
; CHECK-LABEL: define double @half_strict(
; CHECK-NEXT:    %r = call double @__ocml_pow_f64(double %x, double 5.000000e-01)
define double @half_strict(double %x) {
  %r = call double @__ocml_pow_f64(double %x, double 0.5)
  ret double %r
}

; Verify that nsz alone (or afn alone) is not enough.
; CHECK-LABEL: define double @half_nsz(
; CHECK-NEXT:    %r = call nsz double @__ocml_pow_f64(double %x, double 5.000000e-01)
define double @half_nsz(double %x) {
  %r = call nsz double @__ocml_pow_f64(double %x, double 0.5)
  ret double %r
}

; CHECK-LABEL: define double @half_afn(
; CHECK-NEXT:    %r = call afn double @__ocml_pow_f64(double %x, double 5.000000e-01)
define double @half_afn(double %x) {
  %r = call afn double @__ocml_pow_f64(double %x, double 0.5)
  ret double %r
}

; pow(x, 0.5) -> sqrt(x) with nsz and ninf.
; CHECK-LABEL: define double @half_nsz_ninf(
; CHECK-NEXT:    [[S:%.*]] = call ninf nsz double @llvm.sqrt.f64(double %x)
; CHECK-NEXT:    ret double [[S]]
define double @half_nsz_ninf(double %x) {
  %r = call ninf nsz double @__ocml_pow_f64(double %x, double 0.5)
  ret double %r
}

; Verify that pow(x, -0.5) with nsz and ninf only is _not_ rewritten.
; CHECK-LABEL: define float @minus_half_no_afn(
; CHECK-NEXT:    %r = call ninf nsz float @llvm.pow.f32(float %x, float -5.000000e-01)
define float @minus_half_no_afn(float %x) {
  %r = call ninf nsz float @llvm.pow.f32(float %x, float -0.5)
  ret float %r
}

; pow(x, -0.5) -> 1.0 / sqrt(x) under fast.
; CHECK-LABEL: define float @minus_half_fast(
; CHECK-NEXT:    [[S:%.*]] = call fast float @llvm.sqrt.f32(float %x)
; CHECK-NEXT:    [[R:%.*]] = fdiv fast float 1.000000e+00, [[S]]
; CHECK-NEXT:    ret float [[R]]
define float @minus_half_fast(float %x) {
  %r = call fast float @llvm.pow.f32(float %x, float -0.5)
  ret float %r
}

declare double @__ocml_pow_f64(double, double)
declare float @llvm.pow.f32(float, float)
