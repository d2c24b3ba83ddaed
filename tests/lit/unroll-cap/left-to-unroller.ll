; RUN: %opt -passes='regtune-unroll-cap<4>' -S %s | FileCheck %s
;
; Under a cap of 4, what LoopUnroll decides itself is left to it: a loop
; with no pragma, `#pragma unroll` (llvm.loop.unroll.enable) and
; llvm.loop.unroll.full keep their loop IDs. Only the function is marked,
; so that the shim bounds LoopUnroll's decision (left-to-unroller-o3.ll).

target triple = "amdgcn-amd-amdhsa"

; CHECK-LABEL: define void @no_pragma(
; CHECK-SAME:    #[[CAPPED:[0-9]+]]
; CHECK:         br i1 %done, label %exit, label %loop{{$}}
define void @no_pragma(ptr %p, i32 %n) {
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

; CHECK-LABEL: define void @full(
; CHECK:         !llvm.loop !0
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
; CHECK:         !llvm.loop !3
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

; A tighter cap already on a function wins.
; CHECK-LABEL: define void @tighter(
; CHECK-SAME:    #[[TIGHTER:[0-9]+]]
define void @tighter() #0 {
  ret void
}

attributes #0 = { "regtune-unroll-cap"="2" }

!0 = distinct !{!0, !1, !2}
!1 = !{!"llvm.loop.mustprogress"}
!2 = !{!"llvm.loop.unroll.full"}
!3 = distinct !{!3, !4}
!4 = !{!"llvm.loop.unroll.enable"}

; CHECK-DAG: attributes #[[CAPPED]] = { "regtune-unroll-cap"="4" }
; CHECK-DAG: attributes #[[TIGHTER]] = { "regtune-unroll-cap"="2" }
; CHECK-DAG: !0 = distinct !{!0, !1, !2}
; CHECK-DAG: !2 = !{!"llvm.loop.unroll.full"}
; CHECK-DAG: !3 = distinct !{!3, !4}
; CHECK-DAG: !4 = !{!"llvm.loop.unroll.enable"}
; CHECK-NOT: llvm.loop.unroll.count
