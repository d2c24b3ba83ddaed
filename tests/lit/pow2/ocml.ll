; RUN: %opt -passes=regtune-pow2 -S %s | FileCheck %s --check-prefixes=CHECK,EXACT
; RUN: %opt -passes='regtune-pow2<inexact>' -S %s | FileCheck %s --check-prefixes=CHECK,INEXACT
;
; The ROCm device library's pow, as a HIP call reaches it: pow(x, 2.0) ->
; x * x for f16, f32 and f64. ocml's pow, powr and pown are not correctly
; rounded (pown(x, 2) runs the same log/exp routine): `x * x` differs from
; them in the last bit for ~21% of doubles (bench/ocml). So the plain pass
; rewrites them only where the call allows approximate functions (afn:
; -ffast-math, -fapprox-func); `<inexact>` (the user's opt-in) always.
; The ocml routine, internal once the device library is linked, is deleted
; when nothing calls it any more.

target triple = "amdgcn-amd-amdhsa"

; INEXACT-NOT: @__ocml_pow_f64

; CHECK-LABEL: define double @ocml_f64(
; EXACT-NEXT:    %r = call contract double @__ocml_pow_f64(double noundef %x, double noundef 2.000000e+00)
; INEXACT-NEXT:  [[SQ:%.*]] = fmul contract double %x, %x
; INEXACT-NEXT:  ret double [[SQ]]
define double @ocml_f64(double %x) {
  %r = call contract double @__ocml_pow_f64(double noundef %x, double noundef 2.0) #1
  ret double %r
}

; CHECK-LABEL: define float @ocml_f32(
; EXACT-NEXT:    %r = call contract float @__ocml_pow_f32(
; INEXACT-NEXT:  [[SQ:%.*]] = fmul contract float %x, %x
; INEXACT-NEXT:  ret float [[SQ]]
define float @ocml_f32(float %x) {
  %r = call contract float @__ocml_pow_f32(float noundef %x, float noundef 2.0) #1
  ret float %r
}

; CHECK-LABEL: define half @ocml_f16(
; EXACT-NEXT:    %r = call contract half @__ocml_pow_f16(
; INEXACT-NEXT:  [[SQ:%.*]] = fmul contract half %x, %x
; INEXACT-NEXT:  ret half [[SQ]]
define half @ocml_f16(half %x) {
  %r = call contract half @__ocml_pow_f16(half noundef %x, half noundef 0xH4000) #1
  ret half %r
}

; pown is no exception: ocml computes it with pow's routine.
; CHECK-LABEL: define double @ocml_pown_f64(
; EXACT-NEXT:    %r = call double @__ocml_pown_f64(double %x, i32 2)
; INEXACT-NEXT:  [[SQ:%.*]] = fmul double %x, %x
define double @ocml_pown_f64(double %x) {
  %r = call double @__ocml_pown_f64(double %x, i32 2) #1
  ret double %r
}

; afn on the call (-ffast-math, -fapprox-func): both rewrite.
; CHECK-LABEL: define double @ocml_afn(
; CHECK-NEXT:    [[SQ:%.*]] = fmul contract afn double %x, %x
; CHECK-NEXT:    ret double [[SQ]]
define double @ocml_afn(double %x) {
  %r = call contract afn double @__ocml_pow_f64(double noundef %x, double noundef 2.0) #1
  ret double %r
}

; afn on the call but not on the forwarder's inner call (clang's HIP
; headers are compiled with the user's flags, so both carry it under
; -ffast-math): the chain does not allow approximation.
; CHECK-LABEL: define double @ocml_afn_outer_only(
; EXACT-NEXT:    %r = call afn double @forward(
; INEXACT-NEXT:  [[SQ:%.*]] = fmul double %x, %x
define double @ocml_afn_outer_only(double %x) {
  %r = call afn double @forward(double %x, double 2.0)
  ret double %r
}

define internal double @forward(double %x, double %y) {
  %r = call double @__ocml_pow_f64(double %x, double %y) #1
  ret double %r
}

; llvm.pow promises a correctly rounded pow (O3 itself squares it): exact.
; CHECK-LABEL: define double @llvm_pow(
; CHECK-NEXT:    [[SQ:%.*]] = fmul double %x, %x
define double @llvm_pow(double %x) {
  %r = call double @llvm.pow.f64(double %x, double 2.0)
  ret double %r
}

; EXACT:       define internal double @__ocml_pow_f64(

; A stand-in for the library body: big enough not to be a forwarder.
define internal double @__ocml_pow_f64(double noundef %x, double noundef %y) #0 {
  %l = call double @llvm.log2.f64(double %x)
  %m = fmul double %l, %y
  %e = call double @llvm.exp2.f64(double %m)
  ret double %e
}

declare float @__ocml_pow_f32(float noundef, float noundef) #0
declare half @__ocml_pow_f16(half noundef, half noundef) #0
declare double @__ocml_pown_f64(double, i32) #0
declare double @llvm.pow.f64(double, double)
declare double @llvm.log2.f64(double)
declare double @llvm.exp2.f64(double)

attributes #0 = { convergent mustprogress nofree norecurse nounwind willreturn memory(none) }
attributes #1 = { convergent nounwind willreturn memory(read) }
