; RUN: %opt -disable-output -passes=regtune-noalias-rank %s | FileCheck %s --match-full-lines
;
; Verify that a store a fence already separates from a load does _not_
; count: nothing moves a load above a fence (__syncthreads() is one), with
; or without noalias. In @before_fence the reload of %a[i] comes after the
; fence, so the store through %b gives nothing to win; in @after_fence the
; store through %b comes after the fence, and noalias on %a (or %b) lets
; GVN reuse the value loaded after the fence.

target triple = "amdgcn-amd-amdhsa"

; CHECK: {"kernel":"before_fence","candidates":[]}
; CHECK: {"kernel":"after_fence","candidates":[{"index":0,"name":"a","score":6,"reason":"1 reload reusable across stores through other pointers"},{"index":1,"name":"b","score":6,"reason":"its stores alone block 1 load through other pointers"}]}

define amdgpu_kernel void @before_fence(ptr addrspace(1) %a, ptr addrspace(1) %b) {
  %i = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr float, ptr addrspace(1) %a, i32 %i
  %pb = getelementptr float, ptr addrspace(1) %b, i32 %i
  %x = load float, ptr addrspace(1) %pa
  store float %x, ptr addrspace(1) %pb
  fence syncscope("workgroup") release
  call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire
  %y = load float, ptr addrspace(1) %pa
  store float %y, ptr addrspace(1) %pb
  ret void
}

define amdgpu_kernel void @after_fence(ptr addrspace(1) %a, ptr addrspace(1) %b) {
  %i = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr float, ptr addrspace(1) %a, i32 %i
  %pb = getelementptr float, ptr addrspace(1) %b, i32 %i
  fence syncscope("workgroup") release
  call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire
  %x = load float, ptr addrspace(1) %pa
  store float %x, ptr addrspace(1) %pb
  %y = load float, ptr addrspace(1) %pa
  store float %y, ptr addrspace(1) %pb
  ret void
}

declare i32 @llvm.amdgcn.workitem.id.x()
declare void @llvm.amdgcn.s.barrier()
