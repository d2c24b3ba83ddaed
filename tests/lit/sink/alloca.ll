; RUN: %opt -passes=regtune-sink -S %s | FileCheck %s
;
; Verify that an alloca is _not_ moved, even when its only uses are far
; below: a static alloca must stay at the top of the entry block (codegen
; treats any other alloca as a dynamic stack allocation).

target triple = "amdgcn-amd-amdhsa"

; CHECK-LABEL: define amdgpu_kernel void @alloca_stays(
; CHECK:       entry:
; CHECK-NEXT:    %slot = alloca float, align 4, addrspace(5)
; CHECK:       then:
; CHECK-NOT:     alloca
; CHECK:         ret void
define amdgpu_kernel void @alloca_stays(ptr addrspace(1) %out, float %x, i32 %n) {
entry:
  %slot = alloca float, addrspace(5)
  %c = icmp sgt i32 %n, 0
  br i1 %c, label %then, label %exit
then:
  store float %x, ptr addrspace(5) %slot
  %v = load float, ptr addrspace(5) %slot
  store float %v, ptr addrspace(1) %out
  br label %exit
exit:
  ret void
}
