; RUN: %opt -passes='regtune-noalias<0;1>' -S %s | FileCheck %s
;
; Verify that functions other than kernels are _not_ touched: noalias is a
; promise about how the host launches a kernel, and says nothing about the
; callers of a device function. The kernel that calls it gets the attribute.

target triple = "amdgcn-amd-amdhsa"

; CHECK-LABEL: define void @store_sum(
; CHECK-SAME:    ptr addrspace(1) %dst, ptr addrspace(1) %src)
define void @store_sum(ptr addrspace(1) %dst, ptr addrspace(1) %src) {
  %x = load float, ptr addrspace(1) %src
  %y = fadd float %x, %x
  store float %y, ptr addrspace(1) %dst
  ret void
}

; CHECK-LABEL: define amdgpu_kernel void @k(
; CHECK-SAME:    ptr addrspace(1) noalias %dst, ptr addrspace(1) noalias %src)
define amdgpu_kernel void @k(ptr addrspace(1) %dst, ptr addrspace(1) %src) {
  call void @store_sum(ptr addrspace(1) %dst, ptr addrspace(1) %src)
  ret void
}

; A declaration stays a declaration.
; CHECK-LABEL: declare void @external(
; CHECK-SAME:    ptr addrspace(1), ptr addrspace(1))
declare void @external(ptr addrspace(1), ptr addrspace(1))
