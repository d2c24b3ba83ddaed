; RUN: opt -passes='default<O3>' -S %s | FileCheck %s --check-prefix=O3
; RUN: %opt -passes='regtune-unroll-cap<1>,default<O3>' -S %s | FileCheck %s --check-prefix=CAP1
; RUN: %opt -passes='regtune-unroll-cap<2>,default<O3>' -S %s | FileCheck %s --check-prefix=CAP2
; RUN: %opt -passes='regtune-unroll-cap<4>,default<O3>' -S %s | FileCheck %s --check-prefix=CAP4
; RUN: %opt -passes='regtune-unroll-cap<16>,default<O3>' -S %s | FileCheck %s --check-prefix=CAP16
;
; A true cap: each loop is unrolled min(K, N) times, K being what plain
; O3 does (gfx90a). One fadd per copy of the loop body; the strict fadd chain
; keeps the vectorizer out of the way.

target triple = "amdgcn-amd-amdhsa"

; O3 unrolls 8 iterations fully: K = 8. Capped: min(8, N); a cap of 16
; leaves it as O3 has it.
; O3-LABEL: define amdgpu_kernel void @eight(
; O3-COUNT-8: fadd float
; O3-NOT: fadd float
; O3: {{^}}}
; CAP1-LABEL: define amdgpu_kernel void @eight(
; CAP1: fadd float
; CAP1-NOT: fadd float
; CAP1: {{^}}}
; CAP2-LABEL: define amdgpu_kernel void @eight(
; CAP2-COUNT-2: fadd float
; CAP2-NOT: fadd float
; CAP2: {{^}}}
; CAP4-LABEL: define amdgpu_kernel void @eight(
; CAP4-COUNT-4: fadd float
; CAP4-NOT: fadd float
; CAP4: {{^}}}
; CAP16-LABEL: define amdgpu_kernel void @eight(
; CAP16-COUNT-8: fadd float
; CAP16-NOT: fadd float
; CAP16: {{^}}}
define amdgpu_kernel void @eight(ptr addrspace(1) %p, ptr addrspace(1) %out) #0 {
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

; A runtime trip count and no pragma: O3 leaves the loop rolled (AMDGPU
; does no runtime unrolling), and so does every cap.
; O3-LABEL: define amdgpu_kernel void @runtime(
; O3: fadd float
; O3-NOT: fadd float
; O3: {{^}}}
; CAP1-LABEL: define amdgpu_kernel void @runtime(
; CAP1: fadd float
; CAP1-NOT: fadd float
; CAP1: {{^}}}
; CAP2-LABEL: define amdgpu_kernel void @runtime(
; CAP2: fadd float
; CAP2-NOT: fadd float
; CAP2: {{^}}}
; CAP4-LABEL: define amdgpu_kernel void @runtime(
; CAP4: fadd float
; CAP4-NOT: fadd float
; CAP4: {{^}}}
; CAP16-LABEL: define amdgpu_kernel void @runtime(
; CAP16: fadd float
; CAP16-NOT: fadd float
; CAP16: {{^}}}
define amdgpu_kernel void @runtime(ptr addrspace(1) %p, ptr addrspace(1) %out, i32 %n) #0 {
entry:
  %c = icmp sgt i32 %n, 0
  br i1 %c, label %loop, label %exit
loop:
  %i = phi i32 [ 0, %entry ], [ %next, %loop ]
  %acc = phi float [ 1.0, %entry ], [ %sum, %loop ]
  %a = getelementptr float, ptr addrspace(1) %p, i32 %i
  %v = load float, ptr addrspace(1) %a
  %sum = fadd float %acc, %v
  %next = add nuw nsw i32 %i, 1
  %done = icmp eq i32 %next, %n
  br i1 %done, label %exit, label %loop
exit:
  %r = phi float [ 1.0, %entry ], [ %sum, %loop ]
  store float %r, ptr addrspace(1) %out
  ret void
}

attributes #0 = { "target-cpu"="gfx90a" }
