; RUN: %opt -passes='regtune-pow2<inexact>' -S %s | FileCheck %s
;
; <inexact>: these are the formulas, for ocml's pows too, which without
; afn are rewritten only on the user's word (ocml.ll tests that part).
;
; clang's HIP headers wrap the device library in forwarding overloads,
; which reach the passes (before any optimisation) in this form: each
; argument spilled to an alloca, loaded back, and passed on. A call to such
; a wrapper with a constant 2 is rewritten at the call site, and a wrapper
; left unused is deleted, down the whole chain
; (pow(float, int) -> powif -> __ocml_pown_f32).

target triple = "amdgcn-amd-amdhsa"

; CHECK-LABEL: define void @kernel(
; CHECK:         [[X:%.*]] = load double, ptr %in
; CHECK-NEXT:    [[SQ:%.*]] = fmul contract double [[X]], [[X]]
; CHECK-NEXT:    store double [[SQ]], ptr %out
; CHECK:         [[F:%.*]] = load float, ptr %fin
; CHECK-NEXT:    [[FSQ:%.*]] = fmul contract float [[F]], [[F]]
; CHECK-NEXT:    store float [[FSQ]], ptr %fout
; CHECK-NEXT:    ret void
define void @kernel(ptr %out, ptr %in, ptr %fout, ptr %fin) {
  %x = load double, ptr %in
  %r = call contract noundef double @_ZL3powdd(double noundef %x, double noundef 2.0) #2
  store double %r, ptr %out
  %f = load float, ptr %fin
  %s = call contract noundef float @_ZL3powfi(float noundef %f, i32 noundef 2) #2
  store float %s, ptr %fout
  ret void
}

; The pow(float, int) chain had no other caller: all of it is gone.
; CHECK-NOT: @_ZL3powfi
; CHECK-NOT: @_ZL5powiffi
; CHECK-NOT: @__ocml_pown_f32

; Verify that a wrapper still called with a variable exponent is _not_
; deleted, nor its call rewritten.
; CHECK-LABEL: define double @variable(
; CHECK-NEXT:    call contract noundef double @_ZL3powdd(double noundef %x, double noundef %y)
define double @variable(double %x, double %y) {
  %r = call contract noundef double @_ZL3powdd(double noundef %x, double noundef %y) #2
  ret double %r
}

; CHECK-LABEL: define internal noundef double @_ZL3powdd(
; CHECK:         call contract double @__ocml_pow_f64(
define internal noundef double @_ZL3powdd(double noundef %0, double noundef %1) #0 {
  %3 = alloca double, align 8, addrspace(5)
  %4 = alloca double, align 8, addrspace(5)
  %5 = alloca double, align 8, addrspace(5)
  %6 = addrspacecast ptr addrspace(5) %3 to ptr
  %7 = addrspacecast ptr addrspace(5) %4 to ptr
  %8 = addrspacecast ptr addrspace(5) %5 to ptr
  store double %0, ptr %7, align 8
  store double %1, ptr %8, align 8
  %9 = load double, ptr %7, align 8
  %10 = load double, ptr %8, align 8
  %11 = call contract double @__ocml_pow_f64(double noundef %9, double noundef %10) #3
  ret double %11
}

define internal noundef float @_ZL3powfi(float noundef %0, i32 noundef %1) #0 {
  %3 = alloca float, align 4, addrspace(5)
  %4 = alloca float, align 4, addrspace(5)
  %5 = alloca i32, align 4, addrspace(5)
  %6 = addrspacecast ptr addrspace(5) %3 to ptr
  %7 = addrspacecast ptr addrspace(5) %4 to ptr
  %8 = addrspacecast ptr addrspace(5) %5 to ptr
  store float %0, ptr %7, align 4
  store i32 %1, ptr %8, align 4
  %9 = load float, ptr %7, align 4
  %10 = load i32, ptr %8, align 4
  %11 = call contract noundef float @_ZL5powiffi(float noundef %9, i32 noundef %10) #2
  ret float %11
}

define internal noundef float @_ZL5powiffi(float noundef %0, i32 noundef %1) #0 {
  %3 = alloca float, align 4, addrspace(5)
  %4 = alloca float, align 4, addrspace(5)
  %5 = alloca i32, align 4, addrspace(5)
  %6 = addrspacecast ptr addrspace(5) %3 to ptr
  %7 = addrspacecast ptr addrspace(5) %4 to ptr
  %8 = addrspacecast ptr addrspace(5) %5 to ptr
  store float %0, ptr %7, align 4
  store i32 %1, ptr %8, align 4
  %9 = load float, ptr %7, align 4
  %10 = load i32, ptr %8, align 4
  %11 = call contract float @__ocml_pown_f32(float noundef %9, i32 noundef %10) #3
  ret float %11
}

define internal double @__ocml_pow_f64(double noundef %x, double noundef %y) #1 {
  %l = call double @llvm.log2.f64(double %x)
  %m = fmul double %l, %y
  %e = call double @llvm.exp2.f64(double %m)
  ret double %e
}

define internal float @__ocml_pown_f32(float noundef %x, i32 noundef %n) #1 {
  %y = sitofp i32 %n to float
  %l = call float @llvm.log2.f32(float %x)
  %m = fmul float %l, %y
  %e = call float @llvm.exp2.f32(float %m)
  ret float %e
}

declare double @llvm.log2.f64(double)
declare double @llvm.exp2.f64(double)
declare float @llvm.log2.f32(float)
declare float @llvm.exp2.f32(float)

attributes #0 = { alwaysinline convergent mustprogress nounwind }
attributes #1 = { convergent mustprogress nofree norecurse nounwind willreturn memory(none) }
attributes #2 = { convergent nounwind }
attributes #3 = { convergent nounwind willreturn memory(read) }
