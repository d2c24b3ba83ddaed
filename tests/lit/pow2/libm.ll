; RUN: %opt -passes=regtune-pow2 -S %s | FileCheck %s
;
; The C library's pow and powf: pow(x, 2.0) -> x * x, unless the call is
; marked nobuiltin (-fno-builtin), which says the name is not the library's.

target triple = "amdgcn-amd-amdhsa"

; CHECK-LABEL: define double @libm_pow(
; CHECK-NEXT:    [[SQ:%.*]] = fmul double %x, %x
; CHECK-NEXT:    ret double [[SQ]]
define double @libm_pow(double %x) {
  %r = call double @pow(double %x, double 2.0)
  ret double %r
}

; CHECK-LABEL: define float @libm_powf(
; CHECK-NEXT:    [[SQ:%.*]] = fmul float %x, %x
; CHECK-NEXT:    ret float [[SQ]]
define float @libm_powf(float %x) {
  %r = call float @powf(float %x, float 2.0)
  ret float %r
}

; Verify that a nobuiltin call is _not_ rewritten.
; CHECK-LABEL: define float @nobuiltin_powf(
; CHECK-NEXT:    call float @powf(float %x, float 2.000000e+00) #0
define float @nobuiltin_powf(float %x) {
  %r = call float @powf(float %x, float 2.0) nobuiltin
  ret float %r
}

declare double @pow(double, double)
declare float @powf(float, float)
