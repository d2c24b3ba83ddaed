; RUN: %opt -passes='regtune-unroll-cap<8>' -S %s | FileCheck %s
;
; Loops without an unroll pragma get llvm.loop.unroll.count 8: one with
; only mustprogress keeps it, one with no loop ID at all gets a fresh one,
; and every latch of a loop with two back edges gets the same ID.

target triple = "amdgcn-amd-amdhsa"

; CHECK-LABEL: define void @mustprogress_only(
; CHECK:         !llvm.loop [[MP_LOOP:![0-9]+]]
define void @mustprogress_only(ptr %p, i32 %n) {
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

; CHECK-LABEL: define void @no_loop_id(
; CHECK:         br i1 %done, label %exit, label %loop, !llvm.loop [[FRESH:![0-9]+]]
define void @no_loop_id(ptr %p, i32 %n) {
entry:
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %next, %loop ]
  %a = getelementptr float, ptr %p, i32 %i
  store float 0.0, ptr %a
  %next = add nuw nsw i32 %i, 1
  %done = icmp eq i32 %next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}

; CHECK-LABEL: define void @two_latches(
; CHECK:         br i1 %odd, label %loop, label %even, !llvm.loop [[TWO:![0-9]+]]
; CHECK:         br i1 %done, label %exit, label %loop, !llvm.loop [[TWO]]
define void @two_latches(ptr %p, i32 %n) {
entry:
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %next, %loop ], [ %next, %even ]
  %a = getelementptr float, ptr %p, i32 %i
  store float 0.0, ptr %a
  %next = add nuw nsw i32 %i, 1
  %bit = and i32 %i, 1
  %odd = icmp eq i32 %bit, 1
  br i1 %odd, label %loop, label %even
even:
  %done = icmp eq i32 %next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}

; Verify that straight-line code gets _no_ loop metadata.
; CHECK-LABEL: define void @no_loop(
; CHECK-NOT:     !llvm.loop
; CHECK:         ret void
define void @no_loop(ptr %p, i1 %c) {
entry:
  br i1 %c, label %a, label %b
a:
  store float 1.0, ptr %p
  br label %b
b:
  ret void
}

!0 = distinct !{!0, !1}
!1 = !{!"llvm.loop.mustprogress"}

; CHECK-DAG: [[MP_LOOP]] = distinct !{[[MP_LOOP]], [[MP:![0-9]+]], [[COUNT8:![0-9]+]]}
; CHECK-DAG: [[MP]] = !{!"llvm.loop.mustprogress"}
; CHECK-DAG: [[COUNT8]] = !{!"llvm.loop.unroll.count", i32 8}
; CHECK-DAG: [[FRESH]] = distinct !{[[FRESH]], [[COUNT8]]}
; CHECK-DAG: [[TWO]] = distinct !{[[TWO]], [[COUNT8]]}
