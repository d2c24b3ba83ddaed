; RUN: %opt -passes=regtune-pow2 -S %s | FileCheck %s
;
; clang's CUDA headers wrap libdevice in forwarding functions, which reach
; the passes (before any optimisation) in this form: each argument spilled
; to an alloca, loaded back, and passed on. pow(double, double) is
; _ZL3powdd -> __nv_pow (rewritten here because the call allows
; approximate functions, as under -ffast-math); std::pow(float, int) is
; _ZL3powfi -> _ZL5powiffi -> __nv_powif. A call with a constant 2 is
; rewritten at the call site and the chain it leaves unused is deleted.

target triple = "nvptx64-nvidia-cuda"

; CHECK-LABEL: define ptx_kernel void @kernel(
; CHECK:         [[X:%.*]] = load double, ptr %in
; CHECK-NEXT:    [[SQ:%.*]] = fmul contract afn double [[X]], [[X]]
; CHECK-NEXT:    store double [[SQ]], ptr %out
; CHECK:         [[F:%.*]] = load float, ptr %fin
; CHECK-NEXT:    [[FSQ:%.*]] = fmul contract float [[F]], [[F]]
; CHECK-NEXT:    store float [[FSQ]], ptr %fout
; CHECK-NEXT:    ret void
define ptx_kernel void @kernel(ptr %out, ptr %in, ptr %fout, ptr %fin) {
  %x = load double, ptr %in
  %r = call contract afn noundef double @_ZL3powdd(double noundef %x, double noundef 2.0)
  store double %r, ptr %out
  %f = load float, ptr %fin
  %s = call contract noundef float @_ZL3powfi(float noundef %f, i32 noundef 2)
  store float %s, ptr %fout
  ret void
}

; CHECK-NOT: @_ZL3powdd
; CHECK-NOT: @__nv_pow(
; CHECK-NOT: @_ZL3powfi
; CHECK-NOT: @_ZL5powiffi

define internal noundef double @_ZL3powdd(double noundef %__a, double noundef %__b) {
entry:
  %__a.addr = alloca double, align 8
  %__b.addr = alloca double, align 8
  store double %__a, ptr %__a.addr, align 8
  store double %__b, ptr %__b.addr, align 8
  %0 = load double, ptr %__a.addr, align 8
  %1 = load double, ptr %__b.addr, align 8
  %call = call contract afn double @__nv_pow(double noundef %0, double noundef %1)
  ret double %call
}

define internal noundef float @_ZL3powfi(float noundef %__base, i32 noundef %__iexp) {
entry:
  %__base.addr = alloca float, align 4
  %__iexp.addr = alloca i32, align 4
  store float %__base, ptr %__base.addr, align 4
  store i32 %__iexp, ptr %__iexp.addr, align 4
  %0 = load float, ptr %__base.addr, align 4
  %1 = load i32, ptr %__iexp.addr, align 4
  %call = call contract noundef float @_ZL5powiffi(float noundef %0, i32 noundef %1)
  ret float %call
}

define internal noundef float @_ZL5powiffi(float noundef %__a, i32 noundef %__b) {
entry:
  %__a.addr = alloca float, align 4
  %__b.addr = alloca i32, align 4
  store float %__a, ptr %__a.addr, align 4
  store i32 %__b, ptr %__b.addr, align 4
  %0 = load float, ptr %__a.addr, align 4
  %1 = load i32, ptr %__b.addr, align 4
  %call = call contract float @__nv_powif(float noundef %0, i32 noundef %1)
  ret float %call
}

define internal double @__nv_pow(double %a, double %b) {
  %l = call double @llvm.log2.f64(double %a)
  %m = fmul double %l, %b
  %e = call double @llvm.exp2.f64(double %m)
  ret double %e
}

declare float @__nv_powif(float, i32)
declare double @llvm.log2.f64(double)
declare double @llvm.exp2.f64(double)
