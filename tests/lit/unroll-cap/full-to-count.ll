; RUN: %opt -passes='regtune-unroll-cap<4>' -S %s | FileCheck %s
;
; A bare `#pragma unroll` (llvm.loop.unroll.full, or .enable) becomes
; llvm.loop.unroll.count 4; mustprogress stays, and the loop ID stays a
; distinct node that refers to itself.

target triple = "amdgcn-amd-amdhsa"

; CHECK-LABEL: define void @full(
; CHECK:         br i1 %done, label %exit, label %loop, !llvm.loop [[FULL:![0-9]+]]
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

; CHECK-LABEL: define void @enable(
; CHECK:         br i1 %done, label %exit, label %loop, !llvm.loop [[ENABLE:![0-9]+]]
define void @enable(ptr %p, i32 %n) {
entry:
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %next, %loop ]
  %a = getelementptr float, ptr %p, i32 %i
  store float 0.0, ptr %a
  %next = add nuw nsw i32 %i, 1
  %done = icmp eq i32 %next, %n
  br i1 %done, label %exit, label %loop, !llvm.loop !3
exit:
  ret void
}

!0 = distinct !{!0, !1, !2}
!1 = !{!"llvm.loop.mustprogress"}
!2 = !{!"llvm.loop.unroll.full"}
!3 = distinct !{!3, !4}
!4 = !{!"llvm.loop.unroll.enable"}

; CHECK-NOT: llvm.loop.unroll.full
; CHECK-NOT: llvm.loop.unroll.enable
; CHECK-DAG: [[FULL]] = distinct !{[[FULL]], [[MUSTPROGRESS:![0-9]+]], [[COUNT4:![0-9]+]]}
; CHECK-DAG: [[MUSTPROGRESS]] = !{!"llvm.loop.mustprogress"}
; CHECK-DAG: [[COUNT4]] = !{!"llvm.loop.unroll.count", i32 4}
; CHECK-DAG: [[ENABLE]] = distinct !{[[ENABLE]], [[COUNT4]]}
