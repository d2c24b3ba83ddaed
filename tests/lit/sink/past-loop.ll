; RUN: %opt -passes=regtune-sink -S %s | FileCheck %s
;
; The pattern regtune-sink is for: state loaded at the top of a kernel but
; needed only after a loop that does not write memory. The loads and the
; arithmetic on them move below the loop, into the exit block that
; dominates their uses, so they hold no registers while the loop runs. The
; loop's own loads stay where they are.

target triple = "amdgcn-amd-amdhsa"

; CHECK-LABEL: define amdgpu_kernel void @past_loop(
; CHECK:       entry:
; CHECK-NEXT:    br label %loop
; CHECK:       loop:
; CHECK:         %x = load float, ptr addrspace(1) %xa
; CHECK:       exit:
; CHECK-NEXT:    %acc.lcssa = phi float
; CHECK-NEXT:    %mass = load float, ptr addrspace(1) %mp
; CHECK-NEXT:    %half = fmul float %mass, 5.000000e-01
; CHECK-NEXT:    %kick = fmul float %half, %acc.lcssa
; CHECK-NEXT:    %vel = load float, ptr addrspace(1) %vp
; CHECK-NEXT:    %v1 = fadd float %vel, %kick
; CHECK-NEXT:    store float %v1, ptr addrspace(1) %vp
define amdgpu_kernel void @past_loop(ptr addrspace(1) %vp, ptr addrspace(1) %mp, ptr addrspace(1) %xp, i32 %n) {
entry:
  %vel = load float, ptr addrspace(1) %vp
  %mass = load float, ptr addrspace(1) %mp
  %half = fmul float %mass, 0.5
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %i.next, %loop ]
  %acc = phi float [ 0.0, %entry ], [ %acc.next, %loop ]
  %xa = getelementptr float, ptr addrspace(1) %xp, i32 %i
  %x = load float, ptr addrspace(1) %xa
  %acc.next = fadd float %acc, %x
  %i.next = add nuw nsw i32 %i, 1
  %done = icmp eq i32 %i.next, %n
  br i1 %done, label %exit, label %loop
exit:
  %acc.lcssa = phi float [ %acc.next, %loop ]
  %kick = fmul float %half, %acc.lcssa
  %v1 = fadd float %vel, %kick
  store float %v1, ptr addrspace(1) %vp
  ret void
}
