; RUN: %opt -disable-output -passes=regtune-noalias-rank %s | FileCheck %s --match-full-lines
;
; Verify that parameters noalias cannot help are _not_ candidates: one only
; compared and passed around, one read before any store (nothing to move it
; past), one already noalias, and non-pointers.

target triple = "amdgcn-amd-amdhsa"

; CHECK: {"kernel":"k","candidates":[]}

define amdgpu_kernel void @k(ptr addrspace(1) %base, ptr addrspace(1) %end, ptr addrspace(1) %src, ptr addrspace(1) noalias %dst, i32 %n, <2 x ptr addrspace(1)> %pair) {
  %same = icmp eq ptr addrspace(1) %base, %end
  %x = load float, ptr addrspace(1) %src
  %y = select i1 %same, float 0.0, float %x
  store float %y, ptr addrspace(1) %dst
  ret void
}
