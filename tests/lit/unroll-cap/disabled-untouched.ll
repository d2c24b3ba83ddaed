; RUN: %opt -passes='regtune-unroll-cap<4>' -S %s | FileCheck %s
;
; Verify that a loop whose unrolling is already disabled (`#pragma unroll 1`,
; `#pragma nounroll`) is _not_ touched: same loop ID, same properties.

target triple = "amdgcn-amd-amdhsa"

; CHECK-LABEL: define void @disabled(
; CHECK:         br i1 %done, label %exit, label %loop, !llvm.loop !0
define void @disabled(ptr %p, i32 %n) {
entry:
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %next, %loop ]
  %a = getelementptr float, ptr %p, i32 %i
  store float 0.0, ptr %a
  %next = add nuw nsw i32 %i, 1
  %done = icmp eq i32 %next, %n
  br i1 %done, label %exit, label %loop, !llvm.loop !0
exit:
  ret void
}

!0 = distinct !{!0, !1, !2}
!1 = !{!"llvm.loop.mustprogress"}
!2 = !{!"llvm.loop.unroll.disable"}

; CHECK: !0 = distinct !{!0, !1, !2}
; CHECK: !1 = !{!"llvm.loop.mustprogress"}
; CHECK: !2 = !{!"llvm.loop.unroll.disable"}
; CHECK-NOT: llvm.loop.unroll.count
