; RUN: %opt -passes='regtune-noalias<out;in>' -S %s | FileCheck %s
;
; regtune-noalias<out;in> marks the parameters of those IR names noalias in
; each kernel that has them (the tuner's IR keeps value names); a kernel
; without them is left as it was.

target triple = "amdgcn-amd-amdhsa"

; CHECK-LABEL: define amdgpu_kernel void @axpy(
; CHECK-SAME:    float %a, ptr addrspace(1) noalias %in, ptr addrspace(1) noalias %out, ptr addrspace(1) %log)
define amdgpu_kernel void @axpy(float %a, ptr addrspace(1) %in, ptr addrspace(1) %out, ptr addrspace(1) %log) {
  %x = load float, ptr addrspace(1) %in
  %y = load float, ptr addrspace(1) %out
  %z = call float @llvm.fma.f32(float %a, float %x, float %y)
  store float %z, ptr addrspace(1) %out
  store float %z, ptr addrspace(1) %log
  ret void
}

; CHECK-LABEL: define amdgpu_kernel void @other(
; CHECK-SAME:    ptr addrspace(1) %src, ptr addrspace(1) %dst)
define amdgpu_kernel void @other(ptr addrspace(1) %src, ptr addrspace(1) %dst) {
  %x = load float, ptr addrspace(1) %src
  store float %x, ptr addrspace(1) %dst
  ret void
}

declare float @llvm.fma.f32(float, float, float)
