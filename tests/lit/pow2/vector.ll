; RUN: %opt -passes='regtune-pow2<inexact>' -S %s | FileCheck %s
;
; <inexact>: these are the formulas, for ocml's pows too, which without
; afn are rewritten only on the user's word (ocml.ll tests that part).
;
; Vector forms: llvm.pow on vectors and the device library's packed-half
; pow, with the same exponent in every lane.

target triple = "amdgcn-amd-amdhsa"

; CHECK-LABEL: define <2 x float> @splat_v2f32(
; CHECK-NEXT:    [[SQ:%.*]] = fmul <2 x float> %x, %x
; CHECK-NEXT:    ret <2 x float> [[SQ]]
define <2 x float> @splat_v2f32(<2 x float> %x) {
  %r = call <2 x float> @llvm.pow.v2f32(<2 x float> %x, <2 x float> <float 2.0, float 2.0>)
  ret <2 x float> %r
}

; CHECK-LABEL: define <4 x double> @splat_v4f64(
; CHECK-NEXT:    [[SQ:%.*]] = fmul fast <4 x double> %x, %x
; CHECK-NEXT:    ret <4 x double> [[SQ]]
define <4 x double> @splat_v4f64(<4 x double> %x) {
  %r = call fast <4 x double> @llvm.pow.v4f64(<4 x double> %x, <4 x double> splat (double 2.0))
  ret <4 x double> %r
}

; CHECK-LABEL: define <2 x half> @ocml_2f16(
; CHECK-NEXT:    [[SQ:%.*]] = fmul contract <2 x half> %x, %x
; CHECK-NEXT:    ret <2 x half> [[SQ]]
define <2 x half> @ocml_2f16(<2 x half> %x) {
  %r = call contract <2 x half> @__ocml_pow_2f16(<2 x half> %x, <2 x half> <half 0xH4000, half 0xH4000>)
  ret <2 x half> %r
}

; CHECK-LABEL: define <2 x half> @ocml_pown_2f16(
; CHECK-NEXT:    [[SQ:%.*]] = fmul <2 x half> %x, %x
; CHECK-NEXT:    ret <2 x half> [[SQ]]
define <2 x half> @ocml_pown_2f16(<2 x half> %x) {
  %r = call <2 x half> @__ocml_pown_2f16(<2 x half> %x, <2 x i32> <i32 2, i32 2>)
  ret <2 x half> %r
}

; Verify that different exponents per lane are _not_ rewritten.
; CHECK-LABEL: define <2 x float> @mixed_lanes(
; CHECK-NEXT:    call <2 x float> @llvm.pow.v2f32(<2 x float> %x, <2 x float> <float 2.000000e+00, float 3.000000e+00>)
define <2 x float> @mixed_lanes(<2 x float> %x) {
  %r = call <2 x float> @llvm.pow.v2f32(<2 x float> %x, <2 x float> <float 2.0, float 3.0>)
  ret <2 x float> %r
}

declare <2 x float> @llvm.pow.v2f32(<2 x float>, <2 x float>)
declare <4 x double> @llvm.pow.v4f64(<4 x double>, <4 x double>)
declare <2 x half> @__ocml_pow_2f16(<2 x half>, <2 x half>)
declare <2 x half> @__ocml_pown_2f16(<2 x half>, <2 x i32>)
