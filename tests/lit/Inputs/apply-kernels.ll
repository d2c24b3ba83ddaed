; Two gfx90a kernels for the regtune-apply tests: @tuned, which the
; decisions db tunes, and @plain, which it leaves plain. @shared is reached
; from both, @tuned_only from @tuned alone.
target triple = "amdgcn-amd-amdhsa"

define amdgpu_kernel void @tuned(ptr addrspace(1) %out, double %x, i32 %n) #0 {
entry:
  %sq = call contract double @__ocml_pow_f64(double %x, double 2.0)
  store double %sq, ptr addrspace(1) %out
  %h = call double @tuned_only(double %x)
  %s = call double @shared(double %x)
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %next, %loop ]
  %next = add nuw nsw i32 %i, 1
  %done = icmp eq i32 %next, %n
  br i1 %done, label %exit, label %loop, !llvm.loop !0
exit:
  ret void
}

define amdgpu_kernel void @plain(ptr addrspace(1) %out, double %x) #0 {
  %s = call double @shared(double %x)
  %sq = call contract double @__ocml_pow_f64(double %x, double 2.0)
  store double %sq, ptr addrspace(1) %out
  ret void
}

define internal double @tuned_only(double %x) #1 {
  %r = call contract double @__ocml_pow_f64(double %x, double 2.0)
  ret double %r
}

define internal double @shared(double %x) #1 {
  %r = call contract double @__ocml_pow_f64(double %x, double 2.0)
  ret double %r
}

declare double @__ocml_pow_f64(double, double) #1

attributes #0 = { nounwind "amdgpu-flat-work-group-size"="1,1024" "target-cpu"="gfx90a" }
attributes #1 = { nounwind "target-cpu"="gfx90a" }

!0 = distinct !{!0, !1, !2}
!1 = !{!"llvm.loop.mustprogress"}
!2 = !{!"llvm.loop.unroll.full"}
