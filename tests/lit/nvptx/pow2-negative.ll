; RUN: %opt -passes=regtune-pow2 -S %s | FileCheck %s --check-prefixes=CHECK,EXACT
; RUN: %opt -passes='regtune-pow2<inexact>' -S %s | FileCheck %s --check-prefixes=CHECK,INEXACT
;
; Verify that what pow2 must not touch on NVPTX is _not_ rewritten:
; __nv_pow and __nv_powf without afn (libdevice's pow is not correctly
; rounded, so x * x would change the result's last bit for some x),
; __nv_fast_powf (CUDA's __powf, an approximation x * x would not equal),
; an exponent that is no small integer, and a variable exponent. With
; `<inexact>` (the user's opt-in, as on AMDGPU) the __nv_pow calls are
; rewritten; the rest stays.

target triple = "nvptx64-nvidia-cuda"

; CHECK-LABEL: define float @fast(
; CHECK-NEXT:    call float @__nv_fast_powf(float %x, float 2.000000e+00)
define float @fast(float %x) {
  %r = call float @__nv_fast_powf(float %x, float 2.0)
  ret float %r
}

; CHECK-LABEL: define double @exact_call(
; EXACT-NEXT:    call contract double @__nv_pow(double %x, double 2.000000e+00)
; INEXACT-NEXT:  fmul contract double %x, %x
define double @exact_call(double %x) {
  %r = call contract double @__nv_pow(double %x, double 2.0)
  ret double %r
}

; CHECK-LABEL: define float @exact_call_f32(
; EXACT-NEXT:    call nnan ninf nsz float @__nv_powf(float %x, float 2.000000e+00)
; INEXACT-NEXT:  fmul nnan ninf nsz float %x, %x
define float @exact_call_f32(float %x) {
  %r = call nnan ninf nsz float @__nv_powf(float %x, float 2.0)
  ret float %r
}

; CHECK-LABEL: define double @fractional(
; CHECK-NEXT:    call double @__nv_pow(double %x, double 2.500000e+00)
define double @fractional(double %x) {
  %r = call double @__nv_pow(double %x, double 2.5)
  ret double %r
}

; CHECK-LABEL: define double @variable(
; CHECK-NEXT:    call double @__nv_powi(double %x, i32 %n)
define double @variable(double %x, i32 %n) {
  %r = call double @__nv_powi(double %x, i32 %n)
  ret double %r
}

declare float @__nv_fast_powf(float, float)
declare float @__nv_powf(float, float)
declare double @__nv_pow(double, double)
declare double @__nv_powi(double, i32)
