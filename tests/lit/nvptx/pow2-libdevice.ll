; RUN: %opt -passes=regtune-pow2 -S %s | FileCheck %s
;
; NVIDIA's libdevice pow, as a CUDA call reaches it: pow(x, 2.0) -> x * x
; through __nv_pow and __nv_powf when approximate functions are allowed
; (afn: those two are not correctly rounded, see pow2-negative.ll), and
; pow(x, 2) through __nv_powi and __nv_powif always (they square exactly as
; the rewrite does). The library routines, internal once libdevice is
; linked, are deleted when nothing calls them any more.

target triple = "nvptx64-nvidia-cuda"

; CHECK-NOT: define internal double @__nv_pow(

; CHECK-LABEL: define double @nv_pow(
; CHECK-NEXT:    [[SQ:%.*]] = fmul contract afn double %x, %x
; CHECK-NEXT:    ret double [[SQ]]
define double @nv_pow(double %x) {
  %r = call contract afn double @__nv_pow(double %x, double 2.0)
  ret double %r
}

; CHECK-LABEL: define float @nv_powf(
; CHECK-NEXT:    [[SQ:%.*]] = fmul fast float %x, %x
; CHECK-NEXT:    ret float [[SQ]]
define float @nv_powf(float %x) {
  %r = call fast float @__nv_powf(float %x, float 2.0)
  ret float %r
}

; CHECK-LABEL: define double @nv_powi(
; CHECK-NEXT:    [[SQ:%.*]] = fmul double %x, %x
; CHECK-NEXT:    ret double [[SQ]]
define double @nv_powi(double %x) {
  %r = call double @__nv_powi(double %x, i32 2)
  ret double %r
}

; pow(x, -1) -> 1 / x.
; CHECK-LABEL: define float @nv_powif(
; CHECK-NEXT:    [[R:%.*]] = fdiv float 1.000000e+00, %x
; CHECK-NEXT:    ret float [[R]]
define float @nv_powif(float %x) {
  %r = call float @__nv_powif(float %x, i32 -1)
  ret float %r
}

; A stand-in for the library body: big enough not to be a forwarder.
define internal double @__nv_pow(double %x, double %y) {
  %l = call double @llvm.log2.f64(double %x)
  %m = fmul double %l, %y
  %e = call double @llvm.exp2.f64(double %m)
  ret double %e
}

declare float @__nv_powf(float, float)
declare double @__nv_powi(double, i32)
declare float @__nv_powif(float, i32)
declare double @llvm.log2.f64(double)
declare double @llvm.exp2.f64(double)
