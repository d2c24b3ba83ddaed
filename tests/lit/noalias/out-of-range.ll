; RUN: %opt -passes='regtune-noalias<2;7;4294967295>' -S %s | FileCheck %s
; RUN: %opt -passes='regtune-noalias<nosuch>' -S %s | FileCheck %s
;
; Verify that a parameter the kernel does not have (an index past its last
; parameter, or a name none of them has) is _not_ an error: nothing
; changes, and opt succeeds.

target triple = "amdgcn-amd-amdhsa"

; CHECK-LABEL: define amdgpu_kernel void @copy(
; CHECK-SAME:    ptr addrspace(1) %dst, ptr addrspace(1) %src)
; CHECK-NOT:   noalias
define amdgpu_kernel void @copy(ptr addrspace(1) %dst, ptr addrspace(1) %src) {
  %x = load float, ptr addrspace(1) %src
  store float %x, ptr addrspace(1) %dst
  ret void
}
