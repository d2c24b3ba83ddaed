; RUN: %opt -passes='default<O3>' -S %s | FileCheck %s --check-prefix=DEFAULT
; RUN: %opt -passes='default<O3>' -unroll-max-count=2 -S %s | FileCheck %s --check-prefix=USER
;
; The shim bounds LoopUnroll per function: @capped (marked by
; regtune-unroll-cap<4>) gets at most 4 copies while @plain, in the same
; module, gets exactly what O3 gives it (8). A maximum the command line
; already sets is kept, and the tighter of the two applies to capped
; functions: -unroll-max-count=2 bounds @capped's partial unrolling to 2,
; and leaves @plain's full unrolling alone, as in plain O3.

target triple = "amdgcn-amd-amdhsa"

; DEFAULT-LABEL: define amdgpu_kernel void @plain(
; DEFAULT-COUNT-8: fadd float
; DEFAULT-NOT: fadd float
; DEFAULT: {{^}}}
; USER-LABEL: define amdgpu_kernel void @plain(
; USER-COUNT-8: fadd float
; USER-NOT: fadd float
; USER: {{^}}}
define amdgpu_kernel void @plain(ptr addrspace(1) %p, ptr addrspace(1) %out) #0 {
entry:
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %next, %loop ]
  %acc = phi float [ 1.0, %entry ], [ %sum, %loop ]
  %a = getelementptr float, ptr addrspace(1) %p, i32 %i
  %v = load float, ptr addrspace(1) %a
  %sum = fadd float %acc, %v
  %next = add nuw nsw i32 %i, 1
  %done = icmp eq i32 %next, 8
  br i1 %done, label %exit, label %loop
exit:
  store float %sum, ptr addrspace(1) %out
  ret void
}

; DEFAULT-LABEL: define amdgpu_kernel void @capped(
; DEFAULT-COUNT-4: fadd float
; DEFAULT-NOT: fadd float
; DEFAULT: {{^}}}
; USER-LABEL: define amdgpu_kernel void @capped(
; USER-COUNT-2: fadd float
; USER-NOT: fadd float
; USER: {{^}}}
define amdgpu_kernel void @capped(ptr addrspace(1) %p, ptr addrspace(1) %out) #1 {
entry:
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %next, %loop ]
  %acc = phi float [ 1.0, %entry ], [ %sum, %loop ]
  %a = getelementptr float, ptr addrspace(1) %p, i32 %i
  %v = load float, ptr addrspace(1) %a
  %sum = fadd float %acc, %v
  %next = add nuw nsw i32 %i, 1
  %done = icmp eq i32 %next, 8
  br i1 %done, label %exit, label %loop
exit:
  store float %sum, ptr addrspace(1) %out
  ret void
}

; After @capped, the next function is back to O3's own decision.
; DEFAULT-LABEL: define amdgpu_kernel void @plain_again(
; DEFAULT-COUNT-8: fadd float
; DEFAULT-NOT: fadd float
; DEFAULT: {{^}}}
define amdgpu_kernel void @plain_again(ptr addrspace(1) %p, ptr addrspace(1) %out) #0 {
entry:
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %next, %loop ]
  %acc = phi float [ 1.0, %entry ], [ %sum, %loop ]
  %a = getelementptr float, ptr addrspace(1) %p, i32 %i
  %v = load float, ptr addrspace(1) %a
  %sum = fadd float %acc, %v
  %next = add nuw nsw i32 %i, 1
  %done = icmp eq i32 %next, 8
  br i1 %done, label %exit, label %loop
exit:
  store float %sum, ptr addrspace(1) %out
  ret void
}

attributes #0 = { "target-cpu"="gfx90a" }
attributes #1 = { "target-cpu"="gfx90a" "regtune-unroll-cap"="4" }
