; RUN: %opt -passes=regtune-sink -S %s | FileCheck %s
;
; Verify that volatile accesses are _not_ moved, and that no load moves
; across one, nor any store: each is an observable event in program order.

target triple = "amdgcn-amd-amdhsa"

; CHECK-LABEL: define amdgpu_kernel void @volatile_load(
; CHECK:       entry:
; CHECK-NEXT:    %v = load volatile float, ptr addrspace(1) %a
define amdgpu_kernel void @volatile_load(ptr addrspace(1) noalias %a, ptr addrspace(1) noalias %out, i32 %n) {
entry:
  %v = load volatile float, ptr addrspace(1) %a
  %c = icmp sgt i32 %n, 0
  br i1 %c, label %then, label %exit
then:
  store float %v, ptr addrspace(1) %out
  br label %exit
exit:
  ret void
}

; The volatile store is to another noalias object, yet the load stays.
; CHECK-LABEL: define amdgpu_kernel void @load_across_volatile_store(
; CHECK:       entry:
; CHECK-NEXT:    %v = load float, ptr addrspace(1) %a
; CHECK-NEXT:    store volatile i32 0, ptr addrspace(1) %flag
define amdgpu_kernel void @load_across_volatile_store(ptr addrspace(1) noalias %a, ptr addrspace(1) noalias %flag, ptr addrspace(1) noalias %out, i32 %n) {
entry:
  %v = load float, ptr addrspace(1) %a
  store volatile i32 0, ptr addrspace(1) %flag
  %c = icmp sgt i32 %n, 0
  br i1 %c, label %then, label %exit
then:
  store float %v, ptr addrspace(1) %out
  br label %exit
exit:
  ret void
}

; A volatile store is not hoisted towards the value it stores (an ordinary
; one would pass the load of %w: see hoist-store.ll), and an ordinary store
; does not pass a volatile load.
; CHECK-LABEL: define amdgpu_kernel void @stores_stay(
; CHECK:         %x = fmul float %y, %y
; CHECK-NEXT:    %w = load float, ptr addrspace(1) %b
; CHECK-NEXT:    store volatile float %x, ptr addrspace(1) %a
; CHECK-NEXT:    store float %w, ptr addrspace(1) %out
; CHECK-NEXT:    %z = load float, ptr addrspace(1) %c
; CHECK-NEXT:    %l = load volatile float, ptr addrspace(1) %flag
; CHECK-NEXT:    store float %z, ptr addrspace(1) %d
define amdgpu_kernel void @stores_stay(ptr addrspace(1) noalias %a, ptr addrspace(1) noalias %b, ptr addrspace(1) noalias %c, ptr addrspace(1) noalias %d, ptr addrspace(1) noalias %flag, ptr addrspace(1) noalias %out, float %y) {
  %x = fmul float %y, %y
  %w = load float, ptr addrspace(1) %b
  store volatile float %x, ptr addrspace(1) %a
  store float %w, ptr addrspace(1) %out
  %z = load float, ptr addrspace(1) %c
  %l = load volatile float, ptr addrspace(1) %flag
  store float %z, ptr addrspace(1) %d
  ret void
}
