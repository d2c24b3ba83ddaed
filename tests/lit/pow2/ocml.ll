; RUN: %opt -passes=regtune-pow2 -S %s | FileCheck %s
;
; The ROCm device library's pow, as a HIP call reaches it: pow(x, 2.0) ->
; x * x for f16, f32 and f64. The ocml routine, internal once the device
; library is linked, is deleted when nothing calls it any more.

target triple = "amdgcn-amd-amdhsa"

; CHECK-NOT: @__ocml_pow_f64

; CHECK-LABEL: define double @ocml_f64(
; CHECK-NEXT:    [[SQ:%.*]] = fmul contract double %x, %x
; CHECK-NEXT:    ret double [[SQ]]
define double @ocml_f64(double %x) {
  %r = call contract double @__ocml_pow_f64(double noundef %x, double noundef 2.0) #1
  ret double %r
}

; CHECK-LABEL: define float @ocml_f32(
; CHECK-NEXT:    [[SQ:%.*]] = fmul contract float %x, %x
; CHECK-NEXT:    ret float [[SQ]]
define float @ocml_f32(float %x) {
  %r = call contract float @__ocml_pow_f32(float noundef %x, float noundef 2.0) #1
  ret float %r
}

; CHECK-LABEL: define half @ocml_f16(
; CHECK-NEXT:    [[SQ:%.*]] = fmul contract half %x, %x
; CHECK-NEXT:    ret half [[SQ]]
define half @ocml_f16(half %x) {
  %r = call contract half @__ocml_pow_f16(half noundef %x, half noundef 0xH4000) #1
  ret half %r
}

; A stand-in for the library body: big enough not to be a forwarder.
define internal double @__ocml_pow_f64(double noundef %x, double noundef %y) #0 {
  %l = call double @llvm.log2.f64(double %x)
  %m = fmul double %l, %y
  %e = call double @llvm.exp2.f64(double %m)
  ret double %e
}

declare float @__ocml_pow_f32(float noundef, float noundef) #0
declare half @__ocml_pow_f16(half noundef, half noundef) #0
declare double @llvm.log2.f64(double)
declare double @llvm.exp2.f64(double)

attributes #0 = { convergent mustprogress nofree norecurse nounwind willreturn memory(none) }
attributes #1 = { convergent nounwind willreturn memory(read) }
