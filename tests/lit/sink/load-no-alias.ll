; RUN: %opt -passes=regtune-sink -S %s | FileCheck %s
;
; A load does move across a store that provably writes other memory:
; distinct `noalias` parameters, distinct stack objects, a stack object and
; a parameter, different AMDGPU address spaces (global, LDS, private), or a
; load from memory no store may change (`!invariant.load`, the constant
; address space).

target triple = "amdgcn-amd-amdhsa"

; Each load is used after a store and a stretch of unrelated arithmetic;
; each moves to just before its use, past the store.

; CHECK-LABEL: define amdgpu_kernel void @noalias_params(
; CHECK:         store float 1.000000e+00, ptr addrspace(1) %b
; CHECK:         %v = load float, ptr addrspace(1) %a
; CHECK-NEXT:    %r = fadd float %v, %t2
define amdgpu_kernel void @noalias_params(ptr addrspace(1) noalias %a, ptr addrspace(1) noalias %b, float %y) {
  %v = load float, ptr addrspace(1) %a
  store float 1.0, ptr addrspace(1) %b
  %t0 = fadd float %y, 1.0
  %t1 = fmul float %t0, %t0
  %t2 = fmul float %t1, %t0
  %r = fadd float %v, %t2
  store float %r, ptr addrspace(1) %b
  ret void
}

; CHECK-LABEL: define amdgpu_kernel void @lds_and_global(
; CHECK:         store float 1.000000e+00, ptr addrspace(3) %b
; CHECK:         %v = load float, ptr addrspace(1) %a
; CHECK-NEXT:    %r = fadd float %v, %t2
define amdgpu_kernel void @lds_and_global(ptr addrspace(1) %a, ptr addrspace(3) %b, float %y) {
  %v = load float, ptr addrspace(1) %a
  store float 1.0, ptr addrspace(3) %b
  %t0 = fadd float %y, 1.0
  %t1 = fmul float %t0, %t0
  %t2 = fmul float %t1, %t0
  %r = fadd float %v, %t2
  store float %r, ptr addrspace(1) %a
  ret void
}

; Flat pointers: the address space says nothing, the objects do.
; CHECK-LABEL: define amdgpu_kernel void @stack_and_param(
; CHECK:         store float 1.000000e+00, ptr %flat
; CHECK:         %v = load float, ptr %a
; CHECK-NEXT:    %r = fadd float %v, %t2
define amdgpu_kernel void @stack_and_param(ptr %a, float %y) {
  %slot = alloca float, addrspace(5)
  %flat = addrspacecast ptr addrspace(5) %slot to ptr
  %v = load float, ptr %a
  store float 1.0, ptr %flat
  %t0 = fadd float %y, 1.0
  %t1 = fmul float %t0, %t0
  %t2 = fmul float %t1, %t0
  %r = fadd float %v, %t2
  %s = load float, ptr %flat
  %q = fadd float %r, %s
  store float %q, ptr %a
  ret void
}

; CHECK-LABEL: define amdgpu_kernel void @distinct_allocas(
; CHECK:         store float 1.000000e+00, ptr %fb
; CHECK:         %v = load float, ptr %fa
; CHECK-NEXT:    %r = fadd float %v, %t2
define amdgpu_kernel void @distinct_allocas(ptr addrspace(1) %out, float %y) {
  %sa = alloca float, addrspace(5)
  %sb = alloca float, addrspace(5)
  %fa = addrspacecast ptr addrspace(5) %sa to ptr
  %fb = addrspacecast ptr addrspace(5) %sb to ptr
  store float 2.0, ptr %fa
  %v = load float, ptr %fa
  store float 1.0, ptr %fb
  %t0 = fadd float %y, 1.0
  %t1 = fmul float %t0, %t0
  %t2 = fmul float %t1, %t0
  %r = fadd float %v, %t2
  %s = load float, ptr %fb
  %u = load float, ptr %fa
  %q = fadd float %r, %s
  %q2 = fadd float %q, %u
  store float %q2, ptr addrspace(1) %out
  ret void
}

; CHECK-LABEL: define amdgpu_kernel void @invariant_load(
; CHECK:         store float 1.000000e+00, ptr addrspace(1) %b
; CHECK:         %v = load float, ptr addrspace(1) %a, align 4, !invariant.load
; CHECK-NEXT:    %r = fadd float %v, %t2
define amdgpu_kernel void @invariant_load(ptr addrspace(1) %a, ptr addrspace(1) %b, float %y) {
  %v = load float, ptr addrspace(1) %a, !invariant.load !0
  store float 1.0, ptr addrspace(1) %b
  %t0 = fadd float %y, 1.0
  %t1 = fmul float %t0, %t0
  %t2 = fmul float %t1, %t0
  %r = fadd float %v, %t2
  store float %r, ptr addrspace(1) %b
  ret void
}

; CHECK-LABEL: define amdgpu_kernel void @constant_address_space(
; CHECK:         store float 1.000000e+00, ptr addrspace(1) %b
; CHECK:         %v = load float, ptr addrspace(4) %a
; CHECK-NEXT:    %r = fadd float %v, %t2
define amdgpu_kernel void @constant_address_space(ptr addrspace(4) %a, ptr addrspace(1) %b, float %y) {
  %v = load float, ptr addrspace(4) %a
  store float 1.0, ptr addrspace(1) %b
  %t0 = fadd float %y, 1.0
  %t1 = fmul float %t0, %t0
  %t2 = fmul float %t1, %t0
  %r = fadd float %v, %t2
  store float %r, ptr addrspace(1) %b
  ret void
}

!0 = !{}
