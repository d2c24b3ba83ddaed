; RUN: %opt -passes=regtune-sink -S %s | FileCheck %s
;
; A definition used on one side of a branch only moves into that side, the
; block that dominates all its uses; a load goes along when nothing on the
; way may write its memory. Off that path the values no longer hold
; registers, and nothing computes them.

target triple = "amdgcn-amd-amdhsa"

; CHECK-LABEL: define amdgpu_kernel void @one_side(
; CHECK:       entry:
; CHECK-NEXT:    %c = icmp sgt i32 %n, 0
; CHECK-NEXT:    br i1 %c, label %then, label %exit
; CHECK:       then:
; CHECK-NEXT:    %v = load float, ptr addrspace(1) %in
; CHECK-NEXT:    %w = fmul float %v, 3.000000e+00
; CHECK-NEXT:    store float %w, ptr addrspace(1) %out
define amdgpu_kernel void @one_side(ptr addrspace(1) %in, ptr addrspace(1) %out, i32 %n) {
entry:
  %v = load float, ptr addrspace(1) %in
  %w = fmul float %v, 3.0
  %c = icmp sgt i32 %n, 0
  br i1 %c, label %then, label %exit
then:
  store float %w, ptr addrspace(1) %out
  br label %exit
exit:
  ret void
}

; Verify that a value used on both sides is _not_ moved into either: the
; nearest common dominator of its uses is its own block.
; CHECK-LABEL: define amdgpu_kernel void @both_sides(
; CHECK:       entry:
; CHECK-NEXT:    %v = load float, ptr addrspace(1) %in
; CHECK:       left:
; CHECK-NEXT:    store float %v, ptr addrspace(1) %out
; CHECK:       right:
; CHECK-NEXT:    %w = fadd float %v, 1.000000e+00
define amdgpu_kernel void @both_sides(ptr addrspace(1) %in, ptr addrspace(1) %out, i32 %n) {
entry:
  %v = load float, ptr addrspace(1) %in
  %c = icmp sgt i32 %n, 0
  br i1 %c, label %left, label %right
left:
  store float %v, ptr addrspace(1) %out
  br label %exit
right:
  %w = fadd float %v, 1.0
  store float %w, ptr addrspace(1) %out
  br label %exit
exit:
  ret void
}

; A use by a PHI is a use at the end of the incoming block: the definition
; moves to the end of %then, not into %exit.
; CHECK-LABEL: define amdgpu_kernel void @phi_use(
; CHECK:       then:
; CHECK-NEXT:    %w = fmul float %x, 3.000000e+00
; CHECK-NEXT:    br label %exit
; CHECK:       exit:
; CHECK-NEXT:    %r = phi float [ %w, %then ], [ 0.000000e+00, %entry ]
define amdgpu_kernel void @phi_use(ptr addrspace(1) %out, float %x, i32 %n) {
entry:
  %w = fmul float %x, 3.0
  %c = icmp sgt i32 %n, 0
  br i1 %c, label %then, label %exit
then:
  br label %exit
exit:
  %r = phi float [ %w, %then ], [ 0.0, %entry ]
  store float %r, ptr addrspace(1) %out
  ret void
}
