; RUN: %opt -passes='regtune-noalias<1;2>' -S %s | FileCheck %s
;
; Verify that parameters that are not pointers are _not_ touched: noalias
; is only valid on a pointer, not on an integer, nor on a vector of
; pointers. The pass skips them quietly.

target triple = "amdgcn-amd-amdhsa"

; CHECK-LABEL: define amdgpu_kernel void @gather(
; CHECK-SAME:    ptr addrspace(1) %out, i32 %n, <2 x ptr addrspace(1)> %v)
; CHECK-NOT:   noalias
define amdgpu_kernel void @gather(ptr addrspace(1) %out, i32 %n, <2 x ptr addrspace(1)> %v) {
  %p = extractelement <2 x ptr addrspace(1)> %v, i32 0
  %x = load i32, ptr addrspace(1) %p
  %y = add i32 %x, %n
  store i32 %y, ptr addrspace(1) %out
  ret void
}
