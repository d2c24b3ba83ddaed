; RUN: opt -passes='default<O3>' -S %s | FileCheck %s --check-prefixes=O3,O3-%llvm
; RUN: %opt -passes='regtune-unroll-cap<1>,default<O3>' -S %s | FileCheck %s --check-prefix=CAP1
; RUN: %opt -passes='regtune-unroll-cap<2>,default<O3>' -S %s | FileCheck %s --check-prefix=CAP2
; RUN: %opt -passes='regtune-unroll-cap<4>,default<O3>' -S %s | FileCheck %s --check-prefix=CAP4
; RUN: %opt -passes='regtune-unroll-cap<8>,default<O3>' -S %s | FileCheck %s --check-prefix=CAP8
;
; Triply nested loops under a cap (gfx90a): no loop is unrolled more
; than N times or more than O3 does, and the nest never holds more copies
; of the body than under O3. A loop that still contains a loop is unrolled
; fully within N or not at all (shim/unroll_cap.cpp: keepOuterLoopWhole).

target triple = "amdgcn-amd-amdhsa"

; for i < 4: for j < 4: for k < 4: acc += p[16i + 4j + k]
; 4 x 4 x 4: O3 unrolls all three fully (64 copies). Under a cap of 2 the
; inner loop is unrolled by 2 and the outer two, which still hold a loop,
; stay rolled (2 copies); with N >= 4 every loop is within the cap.
; O3-LABEL: define amdgpu_kernel void @nest444(
; O3-COUNT-64: fadd float
; O3-NOT: fadd float
; O3: {{^}}}
; CAP1-LABEL: define amdgpu_kernel void @nest444(
; CAP1: fadd float
; CAP1-NOT: fadd float
; CAP1: {{^}}}
; CAP2-LABEL: define amdgpu_kernel void @nest444(
; CAP2-COUNT-2: fadd float
; CAP2-NOT: fadd float
; CAP2: {{^}}}
; CAP4-LABEL: define amdgpu_kernel void @nest444(
; CAP4-COUNT-64: fadd float
; CAP4-NOT: fadd float
; CAP4: {{^}}}
; CAP8-LABEL: define amdgpu_kernel void @nest444(
; CAP8-COUNT-64: fadd float
; CAP8-NOT: fadd float
; CAP8: {{^}}}
define amdgpu_kernel void @nest444(ptr addrspace(1) %p, ptr addrspace(1) %out) #0 {
entry:
  br label %outer
outer:
  %i = phi i32 [ 0, %entry ], [ %i.next, %outer.latch ]
  %acc.o = phi float [ 1.0, %entry ], [ %acc.m.out, %outer.latch ]
  br label %middle
middle:
  %j = phi i32 [ 0, %outer ], [ %j.next, %middle.latch ]
  %acc.m = phi float [ %acc.o, %outer ], [ %acc.k.out, %middle.latch ]
  br label %inner
inner:
  %k = phi i32 [ 0, %middle ], [ %k.next, %inner ]
  %acc = phi float [ %acc.m, %middle ], [ %sum, %inner ]
  %i16 = shl i32 %i, 4
  %j4 = shl i32 %j, 2
  %ij = add i32 %i16, %j4
  %idx = add i32 %ij, %k
  %a = getelementptr float, ptr addrspace(1) %p, i32 %idx
  %v = load float, ptr addrspace(1) %a
  %sum = fadd float %acc, %v
  %k.next = add nuw nsw i32 %k, 1
  %k.done = icmp eq i32 %k.next, 4
  br i1 %k.done, label %middle.latch, label %inner
middle.latch:
  %acc.k.out = phi float [ %sum, %inner ]
  %j.next = add nuw nsw i32 %j, 1
  %j.done = icmp eq i32 %j.next, 4
  br i1 %j.done, label %outer.latch, label %middle
outer.latch:
  %acc.m.out = phi float [ %acc.k.out, %middle.latch ]
  %i.next = add nuw nsw i32 %i, 1
  %i.done = icmp eq i32 %i.next, 4
  br i1 %i.done, label %exit, label %outer
exit:
  store float %acc.m.out, ptr addrspace(1) %out
  ret void
}

; for i < n: for j < 16: for k < 16: acc += p[256i + 16j + k]
; n x 16 x 16: O3 unrolls the inner loop fully and (LLVM 22) the middle
; one by 2: 32 copies, 16 under LLVM 19. Capped, the inner one by N and the
; outer two not at all.
; O3-LABEL: define amdgpu_kernel void @nest_n_16_16(
; O3-LLVM22-COUNT-32: fadd float
; O3-LLVM19-COUNT-16: fadd float
; O3-NOT: fadd float
; O3: {{^}}}
; CAP1-LABEL: define amdgpu_kernel void @nest_n_16_16(
; CAP1: fadd float
; CAP1-NOT: fadd float
; CAP1: {{^}}}
; CAP2-LABEL: define amdgpu_kernel void @nest_n_16_16(
; CAP2-COUNT-2: fadd float
; CAP2-NOT: fadd float
; CAP2: {{^}}}
; CAP4-LABEL: define amdgpu_kernel void @nest_n_16_16(
; CAP4-COUNT-4: fadd float
; CAP4-NOT: fadd float
; CAP4: {{^}}}
; CAP8-LABEL: define amdgpu_kernel void @nest_n_16_16(
; CAP8-COUNT-8: fadd float
; CAP8-NOT: fadd float
; CAP8: {{^}}}
define amdgpu_kernel void @nest_n_16_16(ptr addrspace(1) %p, ptr addrspace(1) %out, i32 %n) #0 {
entry:
  %c = icmp sgt i32 %n, 0
  br i1 %c, label %outer, label %exit
outer:
  %i = phi i32 [ 0, %entry ], [ %i.next, %outer.latch ]
  %acc.o = phi float [ 1.0, %entry ], [ %acc.m.out, %outer.latch ]
  br label %middle
middle:
  %j = phi i32 [ 0, %outer ], [ %j.next, %middle.latch ]
  %acc.m = phi float [ %acc.o, %outer ], [ %acc.k.out, %middle.latch ]
  br label %inner
inner:
  %k = phi i32 [ 0, %middle ], [ %k.next, %inner ]
  %acc = phi float [ %acc.m, %middle ], [ %sum, %inner ]
  %i256 = shl i32 %i, 8
  %j16 = shl i32 %j, 4
  %ij = add i32 %i256, %j16
  %idx = add i32 %ij, %k
  %a = getelementptr float, ptr addrspace(1) %p, i32 %idx
  %v = load float, ptr addrspace(1) %a
  %sum = fadd float %acc, %v
  %k.next = add nuw nsw i32 %k, 1
  %k.done = icmp eq i32 %k.next, 16
  br i1 %k.done, label %middle.latch, label %inner
middle.latch:
  %acc.k.out = phi float [ %sum, %inner ]
  %j.next = add nuw nsw i32 %j, 1
  %j.done = icmp eq i32 %j.next, 16
  br i1 %j.done, label %outer.latch, label %middle
outer.latch:
  %acc.m.out = phi float [ %acc.k.out, %middle.latch ]
  %i.next = add nuw nsw i32 %i, 1
  %i.done = icmp eq i32 %i.next, %n
  br i1 %i.done, label %exit, label %outer
exit:
  %r = phi float [ 1.0, %entry ], [ %acc.m.out, %outer.latch ]
  store float %r, ptr addrspace(1) %out
  ret void
}
attributes #0 = { "target-cpu"="gfx90a" }
