; RUN: %opt -passes=regtune-sink -S %s | FileCheck %s
;
; Verify that no load moves across a workgroup barrier, alone or as HIP's
; __syncthreads() emits it (release fence, s_barrier, acquire fence): other
; threads' writes before the barrier must be visible to it. (Without the
; barrier the load moves into %then: see convergent.ll's control.)

target triple = "amdgcn-amd-amdhsa"

; CHECK-LABEL: define amdgpu_kernel void @s_barrier(
; CHECK:       entry:
; CHECK-NEXT:    %v = load float, ptr addrspace(3) %tile
; CHECK-NEXT:    call void @llvm.amdgcn.s.barrier()
; CHECK:       then:
; CHECK-NEXT:    store float %v
define amdgpu_kernel void @s_barrier(ptr addrspace(3) %tile, ptr addrspace(1) %out, i32 %n) {
entry:
  %v = load float, ptr addrspace(3) %tile
  call void @llvm.amdgcn.s.barrier()
  %c = icmp sgt i32 %n, 0
  br i1 %c, label %then, label %exit
then:
  store float %v, ptr addrspace(1) %out
  br label %exit
exit:
  ret void
}

; CHECK-LABEL: define amdgpu_kernel void @syncthreads(
; CHECK:       entry:
; CHECK-NEXT:    %v = load float, ptr addrspace(3) %tile
; CHECK-NEXT:    fence syncscope("workgroup") release
define amdgpu_kernel void @syncthreads(ptr addrspace(3) %tile, ptr addrspace(1) %out, i32 %n) {
entry:
  %v = load float, ptr addrspace(3) %tile
  fence syncscope("workgroup") release
  call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire
  %c = icmp sgt i32 %n, 0
  br i1 %c, label %then, label %exit
then:
  store float %v, ptr addrspace(1) %out
  br label %exit
exit:
  ret void
}

declare void @llvm.amdgcn.s.barrier()
