; RUN: %opt -passes=regtune-sink -S %s | FileCheck %s
;
; Verify that nothing is sunk _into_ a loop: a value defined before a loop
; and used inside it stays out (inside, it would be recomputed on every
; iteration), even when its only use is in the loop body.

target triple = "amdgcn-amd-amdhsa"

; CHECK-LABEL: define amdgpu_kernel void @used_in_loop(
; CHECK:       entry:
; CHECK-NEXT:    %scale = load float, ptr addrspace(1) %sp
; CHECK-NEXT:    %s2 = fmul float %scale, %scale
; CHECK-NEXT:    br label %loop
; CHECK:       loop:
; CHECK-NOT:     %s2 = fmul
; CHECK:         %y = fmul float %x, %s2
define amdgpu_kernel void @used_in_loop(ptr addrspace(1) %sp, ptr addrspace(1) %xp, i32 %n) {
entry:
  %scale = load float, ptr addrspace(1) %sp
  %s2 = fmul float %scale, %scale
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %i.next, %loop ]
  %xa = getelementptr float, ptr addrspace(1) %xp, i32 %i
  %x = load float, ptr addrspace(1) %xa
  %y = fmul float %x, %s2
  store float %y, ptr addrspace(1) %xa
  %i.next = add nuw nsw i32 %i, 1
  %done = icmp eq i32 %i.next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}

; Nor into an inner loop from the outer loop's body: %t is computed once
; per outer iteration and stays there.
; CHECK-LABEL: define amdgpu_kernel void @nested(
; CHECK:       outer:
; CHECK:         %t = fmul float %o, %o
; CHECK-NEXT:    br label %inner
; CHECK:       inner:
; CHECK-NOT:     %t = fmul
; CHECK:         %y = fadd float %x, %t
define amdgpu_kernel void @nested(ptr addrspace(1) %op, ptr addrspace(1) %xp, i32 %n) {
entry:
  br label %outer
outer:
  %j = phi i32 [ 0, %entry ], [ %j.next, %outer.latch ]
  %oa = getelementptr float, ptr addrspace(1) %op, i32 %j
  %o = load float, ptr addrspace(1) %oa
  %t = fmul float %o, %o
  br label %inner
inner:
  %i = phi i32 [ 0, %outer ], [ %i.next, %inner ]
  %xa = getelementptr float, ptr addrspace(1) %xp, i32 %i
  %x = load float, ptr addrspace(1) %xa
  %y = fadd float %x, %t
  store float %y, ptr addrspace(1) %xa
  %i.next = add nuw nsw i32 %i, 1
  %idone = icmp eq i32 %i.next, %n
  br i1 %idone, label %outer.latch, label %inner
outer.latch:
  %j.next = add nuw nsw i32 %j, 1
  %odone = icmp eq i32 %j.next, %n
  br i1 %odone, label %exit, label %outer
exit:
  ret void
}
