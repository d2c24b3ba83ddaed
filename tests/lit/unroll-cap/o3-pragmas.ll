; RUN: opt -passes='default<O3>' -S %s | FileCheck %s --check-prefix=O3
; RUN: %opt -passes='regtune-unroll-cap<2>,default<O3>' -S %s | FileCheck %s --check-prefix=CAP2
; RUN: %opt -passes='regtune-unroll-cap<4>,default<O3>' -S %s | FileCheck %s --check-prefix=CAP4
; RUN: %opt -passes='regtune-unroll-cap<32>,default<O3>' -S %s | FileCheck %s --check-prefix=CAP32
;
; Loops with an unroll pragma under a cap (gfx90a): `#pragma unroll`
; (llvm.loop.unroll.enable), unroll(full) and `#pragma unroll 16` are
; unrolled at most N times, and never where O3 does not unroll them.
; One fadd per copy of the loop body (a runtime remainder adds one).

target triple = "amdgcn-amd-amdhsa"

; `#pragma unroll`, 16 iterations: O3 unrolls fully.
; O3-LABEL: define amdgpu_kernel void @enable16(
; O3-COUNT-16: fadd float
; O3-NOT: fadd float
; O3: {{^}}}
; CAP2-LABEL: define amdgpu_kernel void @enable16(
; CAP2-COUNT-2: fadd float
; CAP2-NOT: fadd float
; CAP2: {{^}}}
; CAP4-LABEL: define amdgpu_kernel void @enable16(
; CAP4-COUNT-4: fadd float
; CAP4-NOT: fadd float
; CAP4: {{^}}}
; CAP32-LABEL: define amdgpu_kernel void @enable16(
; CAP32-COUNT-16: fadd float
; CAP32-NOT: fadd float
; CAP32: {{^}}}
define amdgpu_kernel void @enable16(ptr addrspace(1) %p, ptr addrspace(1) %out) #0 {
entry:
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %next, %loop ]
  %acc = phi float [ 1.0, %entry ], [ %sum, %loop ]
  %a = getelementptr float, ptr addrspace(1) %p, i32 %i
  %v = load float, ptr addrspace(1) %a
  %sum = fadd float %acc, %v
  %next = add nuw nsw i32 %i, 1
  %done = icmp eq i32 %next, 16
  br i1 %done, label %exit, label %loop, !llvm.loop !0
exit:
  store float %sum, ptr addrspace(1) %out
  ret void
}

; unroll(full), 32 iterations: O3 unrolls fully; capped, LoopUnroll falls
; back to partial unrolling by at most N.
; O3-LABEL: define amdgpu_kernel void @full32(
; O3-COUNT-32: fadd float
; O3-NOT: fadd float
; O3: {{^}}}
; CAP2-LABEL: define amdgpu_kernel void @full32(
; CAP2-COUNT-2: fadd float
; CAP2-NOT: fadd float
; CAP2: {{^}}}
; CAP4-LABEL: define amdgpu_kernel void @full32(
; CAP4-COUNT-4: fadd float
; CAP4-NOT: fadd float
; CAP4: {{^}}}
; CAP32-LABEL: define amdgpu_kernel void @full32(
; CAP32-COUNT-32: fadd float
; CAP32-NOT: fadd float
; CAP32: {{^}}}
define amdgpu_kernel void @full32(ptr addrspace(1) %p, ptr addrspace(1) %out) #0 {
entry:
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %next, %loop ]
  %acc = phi float [ 1.0, %entry ], [ %sum, %loop ]
  %a = getelementptr float, ptr addrspace(1) %p, i32 %i
  %v = load float, ptr addrspace(1) %a
  %sum = fadd float %acc, %v
  %next = add nuw nsw i32 %i, 1
  %done = icmp eq i32 %next, 32
  br i1 %done, label %exit, label %loop, !llvm.loop !2
exit:
  store float %sum, ptr addrspace(1) %out
  ret void
}

; unroll(full) on a runtime trip count: O3 cannot and leaves it rolled; a
; cap must not turn the pragma into a count that forces runtime unrolling.
; O3-LABEL: define amdgpu_kernel void @full_runtime(
; O3: fadd float
; O3-NOT: fadd float
; O3: {{^}}}
; CAP2-LABEL: define amdgpu_kernel void @full_runtime(
; CAP2: fadd float
; CAP2-NOT: fadd float
; CAP2: {{^}}}
; CAP4-LABEL: define amdgpu_kernel void @full_runtime(
; CAP4: fadd float
; CAP4-NOT: fadd float
; CAP4: {{^}}}
; CAP32-LABEL: define amdgpu_kernel void @full_runtime(
; CAP32: fadd float
; CAP32-NOT: fadd float
; CAP32: {{^}}}
define amdgpu_kernel void @full_runtime(ptr addrspace(1) %p, ptr addrspace(1) %out, i32 %n) #0 {
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
  br i1 %done, label %exit, label %loop, !llvm.loop !4
exit:
  %r = phi float [ 1.0, %entry ], [ %sum, %loop ]
  store float %r, ptr addrspace(1) %out
  ret void
}

; `#pragma unroll 16` on a runtime trip count: 16 copies and a remainder;
; capped, N copies and a remainder.
; O3-LABEL: define amdgpu_kernel void @count16_runtime(
; O3-COUNT-17: fadd float
; O3-NOT: fadd float
; O3: {{^}}}
; CAP2-LABEL: define amdgpu_kernel void @count16_runtime(
; CAP2-COUNT-3: fadd float
; CAP2-NOT: fadd float
; CAP2: {{^}}}
; CAP4-LABEL: define amdgpu_kernel void @count16_runtime(
; CAP4-COUNT-5: fadd float
; CAP4-NOT: fadd float
; CAP4: {{^}}}
; CAP32-LABEL: define amdgpu_kernel void @count16_runtime(
; CAP32-COUNT-17: fadd float
; CAP32-NOT: fadd float
; CAP32: {{^}}}
define amdgpu_kernel void @count16_runtime(ptr addrspace(1) %p, ptr addrspace(1) %out, i32 %n) #0 {
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
  br i1 %done, label %exit, label %loop, !llvm.loop !5
exit:
  %r = phi float [ 1.0, %entry ], [ %sum, %loop ]
  store float %r, ptr addrspace(1) %out
  ret void
}

; `#pragma unroll` on a loop of at most 6 iterations (unknown count): O3
; unrolls it by the bound; capped, by N with a remainder.
; O3-LABEL: define amdgpu_kernel void @enable_bounded(
; O3-COUNT-6: fadd float
; O3-NOT: fadd float
; O3: {{^}}}
; CAP2-LABEL: define amdgpu_kernel void @enable_bounded(
; CAP2-COUNT-3: fadd float
; CAP2-NOT: fadd float
; CAP2: {{^}}}
; CAP4-LABEL: define amdgpu_kernel void @enable_bounded(
; CAP4-COUNT-5: fadd float
; CAP4-NOT: fadd float
; CAP4: {{^}}}
; CAP32-LABEL: define amdgpu_kernel void @enable_bounded(
; CAP32-COUNT-6: fadd float
; CAP32-NOT: fadd float
; CAP32: {{^}}}
define amdgpu_kernel void @enable_bounded(ptr addrspace(1) %p, ptr addrspace(1) %out, i32 %n) #0 {
entry:
  %m = call i32 @llvm.umin.i32(i32 %n, i32 6)
  %c = icmp ugt i32 %m, 0
  br i1 %c, label %loop, label %exit
loop:
  %i = phi i32 [ 0, %entry ], [ %next, %loop ]
  %acc = phi float [ 1.0, %entry ], [ %sum, %loop ]
  %a = getelementptr float, ptr addrspace(1) %p, i32 %i
  %v = load float, ptr addrspace(1) %a
  %sum = fadd float %acc, %v
  %next = add nuw nsw i32 %i, 1
  %done = icmp eq i32 %next, %m
  br i1 %done, label %exit, label %loop, !llvm.loop !7
exit:
  %r = phi float [ 1.0, %entry ], [ %sum, %loop ]
  store float %r, ptr addrspace(1) %out
  ret void
}

declare i32 @llvm.umin.i32(i32, i32)

attributes #0 = { "target-cpu"="gfx90a" }

!0 = distinct !{!0, !1}
!1 = !{!"llvm.loop.unroll.enable"}
!2 = distinct !{!2, !3}
!3 = !{!"llvm.loop.unroll.full"}
!4 = distinct !{!4, !3}
!5 = distinct !{!5, !6}
!6 = !{!"llvm.loop.unroll.count", i32 16}
!7 = distinct !{!7, !1}
