; RUN: %opt -passes=regtune-sink -S %s | FileCheck %s
;
; A definition whose only use is at the end of its block moves down to just
; before that use, so that it holds no register while the block computes
; something else. Its operand %x is used at the end anyway, so the move
; extends no other live range.

target triple = "amdgcn-amd-amdhsa"

; CHECK-LABEL: define void @first_use_in_block(
; CHECK:         %t2 = mul i32 %t1, %t1
; CHECK-NEXT:    store i32 %t2, ptr %q
; CHECK-NEXT:    %early = mul i32 %x, 3
; CHECK-NEXT:    %sum = add i32 %early, %x
define void @first_use_in_block(ptr %p, ptr %q, i32 %x, i32 %y) {
  %early = mul i32 %x, 3
  %t0 = add i32 %y, 1
  %t1 = mul i32 %t0, %t0
  %t2 = mul i32 %t1, %t1
  store i32 %t2, ptr %q
  %sum = add i32 %early, %x
  store i32 %sum, ptr %p
  ret void
}

; A chain moves as one: the load moves along with the multiply that uses
; it. (The kernel's pointer parameters sit in SGPRs: the load extends no
; VGPR live range.)
; CHECK-LABEL: define amdgpu_kernel void @chain(
; CHECK:         %t2 = fmul float %t1, %t0
; CHECK-NEXT:    store float %t2, ptr addrspace(1) %out
; CHECK-NEXT:    %v = load float, ptr addrspace(1) %in
; CHECK-NEXT:    %w = fmul float %v, 2.000000e+00
; CHECK-NEXT:    %r = fadd float %w, %t2
define amdgpu_kernel void @chain(ptr addrspace(1) noalias %in, ptr addrspace(1) noalias %out, float %y) {
  %v = load float, ptr addrspace(1) %in
  %w = fmul float %v, 2.0
  %t0 = fadd float %y, 1.0
  %t1 = fmul float %t0, %t0
  %t2 = fmul float %t1, %t0
  store float %t2, ptr addrspace(1) %out
  %r = fadd float %w, %t2
  store float %r, ptr addrspace(1) %in
  ret void
}
