; RUN: %opt -passes=regtune-pow2 -S %s | FileCheck %s
;
; llvm.pow(x, 2.0) becomes x * x for every floating-point type, with the
; call's fast-math flags, and the unused intrinsic declaration goes away.

target triple = "amdgcn-amd-amdhsa"

; CHECK-NOT: declare {{.*}} @llvm.pow

; CHECK-LABEL: define double @pow_f64(
; CHECK-NEXT:    [[SQ:%.*]] = fmul double %x, %x
; CHECK-NEXT:    ret double [[SQ]]
define double @pow_f64(double %x) {
  %r = call double @llvm.pow.f64(double %x, double 2.0)
  ret double %r
}

; CHECK-LABEL: define float @pow_f32(
; CHECK-NEXT:    [[SQ:%.*]] = fmul contract float %x, %x
; CHECK-NEXT:    ret float [[SQ]]
define float @pow_f32(float %x) {
  %r = call contract float @llvm.pow.f32(float %x, float 2.0)
  ret float %r
}

; CHECK-LABEL: define half @pow_f16(
; CHECK-NEXT:    [[SQ:%.*]] = fmul half %x, %x
; CHECK-NEXT:    ret half [[SQ]]
define half @pow_f16(half %x) {
  %r = call half @llvm.pow.f16(half %x, half 2.0)
  ret half %r
}

declare double @llvm.pow.f64(double, double)
declare float @llvm.pow.f32(float, float)
declare half @llvm.pow.f16(half, half)
