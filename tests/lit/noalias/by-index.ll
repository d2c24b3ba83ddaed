; RUN: %opt -passes='regtune-noalias<0;2>' -S %s | FileCheck %s
;
; regtune-noalias<0;2> marks parameters 0 and 2 of every kernel noalias, by
; position, and leaves the others as they were.

target triple = "amdgcn-amd-amdhsa"

; CHECK-LABEL: define amdgpu_kernel void @copy(
; CHECK-SAME:    ptr addrspace(1) noalias %dst, ptr addrspace(1) %src, ptr addrspace(1) noalias %flag)
define amdgpu_kernel void @copy(ptr addrspace(1) %dst, ptr addrspace(1) %src, ptr addrspace(1) %flag) {
  %x = load float, ptr addrspace(1) %src
  store float %x, ptr addrspace(1) %dst
  store i32 1, ptr addrspace(1) %flag
  ret void
}

; CHECK-LABEL: define amdgpu_kernel void @scale(
; CHECK-SAME:    ptr addrspace(1) noalias %v, float %s, ptr addrspace(1) noalias %out)
define amdgpu_kernel void @scale(ptr addrspace(1) %v, float %s, ptr addrspace(1) %out) {
  %x = load float, ptr addrspace(1) %v
  %y = fmul float %x, %s
  store float %y, ptr addrspace(1) %out
  ret void
}
