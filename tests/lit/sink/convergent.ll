; RUN: %opt -passes=regtune-sink -S %s | FileCheck %s
;
; Verify that convergent calls are _not_ moved (sinking one into a branch
; would make it depend on more control flow than the program says), and
; that no load moves across one.

target triple = "amdgcn-amd-amdhsa"

; Control: with nothing in the way, the load moves into %then.
; CHECK-LABEL: define amdgpu_kernel void @control(
; CHECK:       then:
; CHECK-NEXT:    %v = load float, ptr addrspace(1) %a
define amdgpu_kernel void @control(ptr addrspace(1) noalias %a, ptr addrspace(1) noalias %out, i32 %n) {
entry:
  %v = load float, ptr addrspace(1) %a
  %c = icmp sgt i32 %n, 0
  br i1 %c, label %then, label %exit
then:
  store float %v, ptr addrspace(1) %out
  br label %exit
exit:
  ret void
}

; CHECK-LABEL: define amdgpu_kernel void @load_across_convergent(
; CHECK:       entry:
; CHECK-NEXT:    %v = load float, ptr addrspace(1) %a
; CHECK-NEXT:    %lane = call i32 @llvm.amdgcn.readfirstlane.i32(i32 %n)
define amdgpu_kernel void @load_across_convergent(ptr addrspace(1) noalias %a, ptr addrspace(1) noalias %out, i32 %n) {
entry:
  %v = load float, ptr addrspace(1) %a
  %lane = call i32 @llvm.amdgcn.readfirstlane.i32(i32 %n)
  %c = icmp sgt i32 %lane, 0
  br i1 %c, label %then, label %exit
then:
  store float %v, ptr addrspace(1) %out
  br label %exit
exit:
  ret void
}

; The convergent call's only use is in %then; it stays in %entry.
; CHECK-LABEL: define amdgpu_kernel void @convergent_stays(
; CHECK:       entry:
; CHECK-NEXT:    %lane = call i32 @llvm.amdgcn.readfirstlane.i32(i32 %x)
; CHECK:       then:
; CHECK-NEXT:    store i32 %lane
define amdgpu_kernel void @convergent_stays(ptr addrspace(1) %out, i32 %x, i32 %n) {
entry:
  %lane = call i32 @llvm.amdgcn.readfirstlane.i32(i32 %x)
  %c = icmp sgt i32 %n, 0
  br i1 %c, label %then, label %exit
then:
  store i32 %lane, ptr addrspace(1) %out
  br label %exit
exit:
  ret void
}

declare i32 @llvm.amdgcn.readfirstlane.i32(i32) convergent nounwind willreturn memory(none)
