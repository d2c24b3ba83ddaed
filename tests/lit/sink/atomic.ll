; RUN: %opt -passes=regtune-sink -S %s | FileCheck %s
;
; Verify that atomic operations and fences are _not_ moved, and that no
; load moves across one: they order this thread's accesses against other
; threads'. (Without them the load moves into %then: see convergent.ll's
; control.)

target triple = "amdgcn-amd-amdhsa"

; CHECK-LABEL: define amdgpu_kernel void @atomic_load(
; CHECK:       entry:
; CHECK-NEXT:    %v = load atomic float, ptr addrspace(1) %a monotonic
define amdgpu_kernel void @atomic_load(ptr addrspace(1) noalias %a, ptr addrspace(1) noalias %out, i32 %n) {
entry:
  %v = load atomic float, ptr addrspace(1) %a monotonic, align 4
  %c = icmp sgt i32 %n, 0
  br i1 %c, label %then, label %exit
then:
  store float %v, ptr addrspace(1) %out
  br label %exit
exit:
  ret void
}

; CHECK-LABEL: define amdgpu_kernel void @across_atomicrmw(
; CHECK:       entry:
; CHECK-NEXT:    %v = load float, ptr addrspace(1) %a
; CHECK-NEXT:    %old = atomicrmw add ptr addrspace(1) %counter, i32 1 monotonic
define amdgpu_kernel void @across_atomicrmw(ptr addrspace(1) noalias %a, ptr addrspace(1) noalias %counter, ptr addrspace(1) noalias %out, i32 %n) {
entry:
  %v = load float, ptr addrspace(1) %a
  %old = atomicrmw add ptr addrspace(1) %counter, i32 1 monotonic
  %c = icmp sgt i32 %old, %n
  br i1 %c, label %then, label %exit
then:
  store float %v, ptr addrspace(1) %out
  br label %exit
exit:
  ret void
}

; CHECK-LABEL: define amdgpu_kernel void @across_cmpxchg(
; CHECK:       entry:
; CHECK-NEXT:    %v = load float, ptr addrspace(1) %a
; CHECK-NEXT:    %pair = cmpxchg ptr addrspace(1) %lock, i32 0, i32 1 acquire monotonic
define amdgpu_kernel void @across_cmpxchg(ptr addrspace(1) noalias %a, ptr addrspace(1) noalias %lock, ptr addrspace(1) noalias %out) {
entry:
  %v = load float, ptr addrspace(1) %a
  %pair = cmpxchg ptr addrspace(1) %lock, i32 0, i32 1 acquire monotonic
  %ok = extractvalue { i32, i1 } %pair, 1
  br i1 %ok, label %then, label %exit
then:
  store float %v, ptr addrspace(1) %out
  br label %exit
exit:
  ret void
}

; CHECK-LABEL: define amdgpu_kernel void @across_fence(
; CHECK:       entry:
; CHECK-NEXT:    %v = load float, ptr addrspace(1) %a
; CHECK-NEXT:    fence syncscope("agent") acquire
define amdgpu_kernel void @across_fence(ptr addrspace(1) noalias %a, ptr addrspace(1) noalias %out, i32 %n) {
entry:
  %v = load float, ptr addrspace(1) %a
  fence syncscope("agent") acquire
  %c = icmp sgt i32 %n, 0
  br i1 %c, label %then, label %exit
then:
  store float %v, ptr addrspace(1) %out
  br label %exit
exit:
  ret void
}
