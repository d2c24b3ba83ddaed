; RUN: %opt -passes='regtune-pow2<inexact>' -S %s | FileCheck %s
;
; <inexact>: these are the formulas, for ocml's pows too, which without
; afn are rewritten only on the user's word (ocml.ll tests that part).
;
; pown(x, n) takes an integer exponent: pown(x, 2) -> x * x is exact;
; pown(x, 3) would round twice, so it stays without afn.

target triple = "amdgcn-amd-amdhsa"

; CHECK-LABEL: define float @pown_two(
; CHECK-NEXT:    [[SQ:%.*]] = fmul contract float %x, %x
; CHECK-NEXT:    ret float [[SQ]]
define float @pown_two(float %x) {
  %r = call contract float @__ocml_pown_f32(float %x, i32 2)
  ret float %r
}

; CHECK-LABEL: define double @pown_two_f64(
; CHECK-NEXT:    [[SQ:%.*]] = fmul double %x, %x
; CHECK-NEXT:    ret double [[SQ]]
define double @pown_two_f64(double %x) {
  %r = call double @__ocml_pown_f64(double %x, i32 2)
  ret double %r
}

; Verify that pown(x, 3) without fast-math flags is _not_ rewritten.
; CHECK-LABEL: define float @pown_three(
; CHECK-NEXT:    call contract float @__ocml_pown_f32(float %x, i32 3)
define float @pown_three(float %x) {
  %r = call contract float @__ocml_pown_f32(float %x, i32 3)
  ret float %r
}

; Verify that a variable exponent is _not_ rewritten.
; CHECK-LABEL: define float @pown_variable(
; CHECK-NEXT:    call float @__ocml_pown_f32(float %x, i32 %n)
define float @pown_variable(float %x, i32 %n) {
  %r = call float @__ocml_pown_f32(float %x, i32 %n)
  ret float %r
}

declare float @__ocml_pown_f32(float, i32)
declare double @__ocml_pown_f64(double, i32)
