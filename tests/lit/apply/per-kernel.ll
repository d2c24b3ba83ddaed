; RUN: env REGTUNE_DECISIONS=%inputs/apply-decisions.json \
; RUN:   %opt -passes=regtune-apply -S %inputs/apply-kernels.ll | FileCheck %s
;
; regtune-apply gives each kernel what the db decided for it on its target
; (gfx90a here; the gfx1100 entry is another target's), confirmed
; suggestions included: @tuned gets pow2 (inexact allowed: ocml's pow is
; not correctly rounded, see pow2-exact.test), an unroll cap of 2 (it and
; @tuned_only are marked for the shim; the loop's unroll(full) is left to
; LoopUnroll under that cap), 4 waves per EU and the confirmed block size
; of 256. @plain is left plain, and so is @shared, which both kernels reach.

; CHECK-LABEL: define amdgpu_kernel void @tuned(
; CHECK:         [[SQ:%.*]] = fmul contract double %x, %x
; CHECK-NEXT:    store double [[SQ]]
; CHECK:         br i1 %done, label %exit, label %loop, !llvm.loop [[LOOP:![0-9]+]]

; CHECK-LABEL: define amdgpu_kernel void @plain(
; CHECK:         call contract double @__ocml_pow_f64(double %x, double 2.000000e+00)

; CHECK-LABEL: define internal double @tuned_only(
; CHECK-SAME:    #[[CAPPED:[0-9]+]]
; CHECK-NEXT:    [[SQ:%.*]] = fmul contract double %x, %x

; CHECK-LABEL: define internal double @shared(
; CHECK-SAME:    #[[SHARED:[0-9]+]]
; CHECK-NEXT:    call contract double @__ocml_pow_f64(double %x, double 2.000000e+00)

; CHECK-DAG: attributes #0 = { nounwind "amdgpu-flat-work-group-size"="1,256" "amdgpu-waves-per-eu"="4" "regtune-unroll-cap"="2" "target-cpu"="gfx90a" }
; CHECK-DAG: attributes #1 = { nounwind "amdgpu-flat-work-group-size"="1,1024" "target-cpu"="gfx90a" }
; CHECK-DAG: attributes #[[CAPPED]] = { nounwind "regtune-unroll-cap"="2" "target-cpu"="gfx90a" }
; CHECK-DAG: attributes #[[SHARED]] = { nounwind "target-cpu"="gfx90a" }
; CHECK-DAG: [[LOOP]] = distinct !{[[LOOP]], {{![0-9]+}}, [[FULL:![0-9]+]]}
; CHECK-DAG: [[FULL]] = !{!"llvm.loop.unroll.full"}
