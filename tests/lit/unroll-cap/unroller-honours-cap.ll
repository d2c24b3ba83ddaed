; RUN: %opt -passes='regtune-unroll-cap<4>,function(loop-unroll<O3>)' -S %s | FileCheck %s
;
; What the cap is for: a fully unrollable loop marked `#pragma unroll`
; (64 iterations) is unrolled by 4 and no further once capped.

target triple = "amdgcn-amd-amdhsa"

; CHECK-LABEL: define void @full(
; CHECK-COUNT-4: store float 0.000000e+00
; CHECK-NOT:     store float
; CHECK:         ret void
define void @full(ptr %p) {
entry:
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %next, %loop ]
  %a = getelementptr float, ptr %p, i32 %i
  store float 0.0, ptr %a
  %next = add nuw nsw i32 %i, 1
  %done = icmp eq i32 %next, 64
  br i1 %done, label %exit, label %loop, !llvm.loop !0
exit:
  ret void
}

!0 = distinct !{!0, !1, !2}
!1 = !{!"llvm.loop.mustprogress"}
!2 = !{!"llvm.loop.unroll.full"}
