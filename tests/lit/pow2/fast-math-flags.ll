; RUN: %opt -passes='regtune-pow2<inexact>' -S %s | FileCheck %s
;
; <inexact>: these are the formulas, for ocml's pows too, which without
; afn are rewritten only on the user's word (ocml.ll tests that part).
;
; The call's fast-math flags go onto the multiply. Through a forwarding
; wrapper, only the flags every call on the chain carries do.

target triple = "amdgcn-amd-amdhsa"

; CHECK-LABEL: define float @fast(
; CHECK-NEXT:    [[SQ:%.*]] = fmul fast float %x, %x
define float @fast(float %x) {
  %r = call fast float @llvm.pow.f32(float %x, float 2.0)
  ret float %r
}

; CHECK-LABEL: define float @some_flags(
; CHECK-NEXT:    [[SQ:%.*]] = fmul nnan ninf contract float %x, %x
define float @some_flags(float %x) {
  %r = call nnan ninf contract float @__ocml_pow_f32(float %x, float 2.0)
  ret float %r
}

; CHECK-LABEL: define float @no_flags(
; CHECK-NEXT:    [[SQ:%.*]] = fmul float %x, %x
define float @no_flags(float %x) {
  %r = call float @__ocml_pow_f32(float %x, float 2.0)
  ret float %r
}

; The outer call is fast, the wrapper's inner call only contract.
; CHECK-LABEL: define float @through_wrapper(
; CHECK-NEXT:    [[SQ:%.*]] = fmul contract float %x, %x
define float @through_wrapper(float %x) {
  %r = call fast float @wrapper(float %x, float 2.0)
  ret float %r
}

define internal float @wrapper(float %x, float %y) {
  %r = call contract float @__ocml_pow_f32(float %x, float %y)
  ret float %r
}

declare float @llvm.pow.f32(float, float)
declare float @__ocml_pow_f32(float, float)
