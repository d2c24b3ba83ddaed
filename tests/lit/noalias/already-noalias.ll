; RUN: %opt -passes='regtune-noalias<0;1>,regtune-noalias<0;1>' -S %s | FileCheck %s
;
; A parameter that is already noalias (a HIP __restrict__) stays as it is,
; and running the pass again changes nothing: the attribute appears once.

target triple = "amdgcn-amd-amdhsa"

; CHECK-LABEL: define amdgpu_kernel void @copy(
; CHECK-SAME:    ptr addrspace(1) noalias %dst, ptr addrspace(1) noalias %src)
define amdgpu_kernel void @copy(ptr addrspace(1) noalias %dst, ptr addrspace(1) %src) {
  %x = load float, ptr addrspace(1) %src
  store float %x, ptr addrspace(1) %dst
  ret void
}
