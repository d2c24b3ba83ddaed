; RUN: %opt -passes='regtune-unroll-cap<4>' -S %s | FileCheck %s
;
; `#pragma unroll 16` under a cap of 4 becomes `#pragma unroll 4`; a count
; at or below the cap is kept as it is.

target triple = "amdgcn-amd-amdhsa"

; CHECK-LABEL: define void @above(
; CHECK:         !llvm.loop [[ABOVE:![0-9]+]]
define void @above(ptr %p, i32 %n) {
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

; Verify that a count below the cap is _not_ changed.
; CHECK-LABEL: define void @below(
; CHECK:         !llvm.loop [[BELOW:![0-9]+]]
define void @below(ptr %p, i32 %n) {
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
!2 = !{!"llvm.loop.unroll.count", i32 16}
!3 = distinct !{!3, !1, !4}
!4 = !{!"llvm.loop.unroll.count", i32 2}

; CHECK-NOT: !{!"llvm.loop.unroll.count", i32 16}
; CHECK-DAG: [[ABOVE]] = distinct !{[[ABOVE]], [[MP:![0-9]+]], [[COUNT4:![0-9]+]]}
; CHECK-DAG: [[COUNT4]] = !{!"llvm.loop.unroll.count", i32 4}
; CHECK-DAG: [[BELOW]] = distinct !{[[BELOW]], [[MP]], [[COUNT2:![0-9]+]]}
; CHECK-DAG: [[COUNT2]] = !{!"llvm.loop.unroll.count", i32 2}
