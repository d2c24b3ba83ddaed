; RUN: %opt -passes=regtune-sink -S %s | FileCheck %s
;
; Verify that calls are _not_ moved unless they are pure intrinsics
; (memory(none), speculatable, not convergent), and that no load moves
; across a call that may write memory or have other effects.

target triple = "amdgcn-amd-amdhsa"

declare void @log_event(i32)
declare float @opaque(float) memory(none)
declare float @llvm.sqrt.f32(float)

; CHECK-LABEL: define amdgpu_kernel void @load_across_call(
; CHECK:       entry:
; CHECK-NEXT:    %v = load float, ptr addrspace(1) %a
; CHECK-NEXT:    call void @log_event(i32 %n)
define amdgpu_kernel void @load_across_call(ptr addrspace(1) noalias %a, ptr addrspace(1) noalias %out, i32 %n) {
entry:
  %v = load float, ptr addrspace(1) %a
  call void @log_event(i32 %n)
  %c = icmp sgt i32 %n, 0
  br i1 %c, label %then, label %exit
then:
  store float %v, ptr addrspace(1) %out
  br label %exit
exit:
  ret void
}

; A call to a function that reads no memory still is not speculatable (it
; may not return): it stays. A pure intrinsic moves to its use.
; CHECK-LABEL: define amdgpu_kernel void @which_calls_move(
; CHECK:       entry:
; CHECK-NEXT:    %o = call float @opaque(float %x)
; CHECK-NEXT:    %c = icmp sgt i32 %n, 0
; CHECK:       then:
; CHECK-NEXT:    %s = call float @llvm.sqrt.f32(float %x)
; CHECK-NEXT:    %r = fadd float %o, %s
define amdgpu_kernel void @which_calls_move(ptr addrspace(1) %out, float %x, i32 %n) {
entry:
  %o = call float @opaque(float %x)
  %s = call float @llvm.sqrt.f32(float %x)
  %c = icmp sgt i32 %n, 0
  br i1 %c, label %then, label %exit
then:
  %r = fadd float %o, %s
  store float %r, ptr addrspace(1) %out
  br label %exit
exit:
  ret void
}
