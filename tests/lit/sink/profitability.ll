; RUN: %opt -passes=regtune-sink -S %s | FileCheck %s
;
; Moving a definition down frees its register on the way but keeps its
; operands alive until the new place (LLVM Sink.cpp's FIXME). A move is
; made only when it extends the live ranges of fewer registers than it
; frees. (Parameters of a plain function are in VGPRs; of a kernel, in
; SGPRs, and free.)

target triple = "amdgcn-amd-amdhsa"

; Verify that %x = %a + %b is _not_ moved into %then: %a and %b die at %x,
; so the move would keep two values alive to free one.
; CHECK-LABEL: define float @operands_die(
; CHECK:       entry:
; CHECK-NEXT:    %x = fadd float %a, %b
; CHECK:       then:
; CHECK-NEXT:    %y = fmul float %x, %x
define float @operands_die(float %a, float %b, i1 %c) {
entry:
  %x = fadd float %a, %b
  br i1 %c, label %then, label %exit
then:
  %y = fmul float %x, %x
  br label %exit
exit:
  %r = phi float [ %y, %then ], [ 0.0, %entry ]
  ret float %r
}

; The same, but %a and %b are used after %x's use anyway: the move frees
; %x's register and costs nothing.
; CHECK-LABEL: define float @operands_live_on(
; CHECK:       then:
; CHECK-NEXT:    %x = fadd float %a, %b
; CHECK-NEXT:    %y = fmul float %x, %x
define float @operands_live_on(float %a, float %b, i1 %c) {
entry:
  %x = fadd float %a, %b
  br i1 %c, label %then, label %exit
then:
  %y = fmul float %x, %x
  br label %exit
exit:
  %r = phi float [ %y, %then ], [ 0.0, %entry ]
  %s = fadd float %r, %a
  %t = fadd float %s, %b
  ret float %t
}

; A 64-bit result computed from a 32-bit value that dies: one register
; extended, two freed.
; CHECK-LABEL: define double @wider_result(
; CHECK:       then:
; CHECK-NEXT:    %x = fpext float %a to double
define double @wider_result(float %a, i1 %c) {
entry:
  %x = fpext float %a to double
  br i1 %c, label %then, label %exit
then:
  %y = fmul double %x, %x
  br label %exit
exit:
  %r = phi double [ %y, %then ], [ 0.0, %entry ]
  ret double %r
}

; Verify that a reduction is _not_ reordered inside its block: sinking each
; link of h = h - f(x_k) down to its use would compute every f(x_k) first
; and hold them all at once. The block's register pressure would rise, so
; its reorderings are dropped. (The stores after it still rise to the loads
; of the same array, ending the pointers' live ranges.)
; CHECK-LABEL: define amdgpu_kernel void @reduction(
; CHECK:         %l0 = load float, ptr addrspace(5) %p0
; CHECK-NEXT:    %f0 = fmul float %l0, %inv
; CHECK-NEXT:    %h0 = fsub float 0.000000e+00, %f0
; CHECK-NEXT:    %l1 = load float, ptr addrspace(5) %p1
; CHECK-NEXT:    %f1 = fmul float %l1, %inv
; CHECK-NEXT:    %h1 = fsub float %h0, %f1
; CHECK-NEXT:    %l2 = load float, ptr addrspace(5) %p2
; CHECK-NEXT:    %f2 = fmul float %l2, %inv
; CHECK-NEXT:    %h2 = fsub float %h1, %f2
; CHECK-NEXT:    %l3 = load float, ptr addrspace(5) %p3
; CHECK:         %f3 = fmul float %l3, %inv
; CHECK-NEXT:    %h3 = fsub float %h2, %f3
define amdgpu_kernel void @reduction(ptr addrspace(1) %out, float %inv) {
  %hist = alloca [4 x float], addrspace(5)
  %p0 = getelementptr float, ptr addrspace(5) %hist, i32 0
  %p1 = getelementptr float, ptr addrspace(5) %hist, i32 1
  %p2 = getelementptr float, ptr addrspace(5) %hist, i32 2
  %p3 = getelementptr float, ptr addrspace(5) %hist, i32 3
  store float 1.0, ptr addrspace(5) %p0
  store float 2.0, ptr addrspace(5) %p1
  store float 3.0, ptr addrspace(5) %p2
  store float 4.0, ptr addrspace(5) %p3
  %l0 = load float, ptr addrspace(5) %p0
  %f0 = fmul float %l0, %inv
  %h0 = fsub float 0.0, %f0
  %l1 = load float, ptr addrspace(5) %p1
  %f1 = fmul float %l1, %inv
  %h1 = fsub float %h0, %f1
  %l2 = load float, ptr addrspace(5) %p2
  %f2 = fmul float %l2, %inv
  %h2 = fsub float %h1, %f2
  %l3 = load float, ptr addrspace(5) %p3
  %f3 = fmul float %l3, %inv
  %h3 = fsub float %h2, %f3
  store float %h3, ptr addrspace(1) %out
  store float 0.0, ptr addrspace(5) %p0
  store float 0.0, ptr addrspace(5) %p1
  store float 0.0, ptr addrspace(5) %p2
  store float 0.0, ptr addrspace(5) %p3
  ret void
}
