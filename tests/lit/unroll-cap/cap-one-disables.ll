; RUN: %opt -passes='regtune-unroll-cap<1>' -S %s | FileCheck %s
;
; A cap of 1 means no unrolling: llvm.loop.unroll.disable, for pragma and
; pragma-free loops alike.

target triple = "amdgcn-amd-amdhsa"

; CHECK-LABEL: define void @full(
; CHECK:         !llvm.loop [[FULL:![0-9]+]]
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

; CHECK-LABEL: define void @plain(
; CHECK:         !llvm.loop [[PLAIN:![0-9]+]]
define void @plain(ptr %p, i32 %n) {
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

; Every latch of a loop with two back edges gets the same ID.
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

; Straight-line code gets no loop metadata.
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

!0 = distinct !{!0, !1, !2}
!1 = !{!"llvm.loop.mustprogress"}
!2 = !{!"llvm.loop.unroll.full"}

; CHECK-NOT: llvm.loop.unroll.count
; CHECK-DAG: [[FULL]] = distinct !{[[FULL]], [[MP:![0-9]+]], [[DISABLE:![0-9]+]]}
; CHECK-DAG: [[DISABLE]] = !{!"llvm.loop.unroll.disable"}
; CHECK-DAG: [[PLAIN]] = distinct !{[[PLAIN]], [[DISABLE]]}
; CHECK-DAG: [[TWO]] = distinct !{[[TWO]], [[DISABLE]]}
