; RUN: %opt -passes='regtune-pow2<inexact>' -S %s | FileCheck %s
;
; <inexact>: these are the formulas, for ocml's pows too, which without
; afn are rewritten only on the user's word (ocml.ll tests that part).
;
; powr(x, y) is NaN for x < 0 where x * x is not: powr(x, 2.0) -> x * x
; needs nnan.

target triple = "amdgcn-amd-amdhsa"

; Verify that powr(x, 2.0) without nnan is _not_ rewritten.
; CHECK-LABEL: define float @powr_strict(
; CHECK-NEXT:    %r = call float @__ocml_powr_f32(float %x, float 2.000000e+00)
define float @powr_strict(float %x) {
  %r = call float @__ocml_powr_f32(float %x, float 2.0)
  ret float %r
}

; CHECK-LABEL: define float @powr_nnan(
; CHECK-NEXT:    [[SQ:%.*]] = fmul nnan float %x, %x
; CHECK-NEXT:    ret float [[SQ]]
define float @powr_nnan(float %x) {
  %r = call nnan float @__ocml_powr_f32(float %x, float 2.0)
  ret float %r
}

; powr(-0, -1.0) is +inf where 1.0 / -0 is -inf: the reciprocal needs nsz
; on top of nnan.
; CHECK-LABEL: define float @powr_reciprocal_nnan(
; CHECK-NEXT:    %r = call nnan float @__ocml_powr_f32(float %x, float -1.000000e+00)
define float @powr_reciprocal_nnan(float %x) {
  %r = call nnan float @__ocml_powr_f32(float %x, float -1.0)
  ret float %r
}

; CHECK-LABEL: define float @powr_reciprocal_nnan_nsz(
; CHECK-NEXT:    [[R:%.*]] = fdiv nnan nsz float 1.000000e+00, %x
; CHECK-NEXT:    ret float [[R]]
define float @powr_reciprocal_nnan_nsz(float %x) {
  %r = call nnan nsz float @__ocml_powr_f32(float %x, float -1.0)
  ret float %r
}

declare float @__ocml_powr_f32(float, float)
