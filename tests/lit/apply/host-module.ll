; RUN: env REGTUNE_DECISIONS=%inputs/apply-decisions.json \
; RUN:   %opt -passes=regtune-apply -S %s | FileCheck %s
;
; Verify that a host module is _not_ touched, even where a function carries
; the name, calling convention and target-cpu of a tuned kernel: under
; clang -fpass-plugin the host job runs the same pipeline.

target triple = "x86_64-unknown-linux-gnu"

; CHECK-LABEL: define amdgpu_kernel void @tuned(
; CHECK-NEXT:    call contract double @pow(double %x, double 2.000000e+00)
; CHECK-NOT:   amdgpu-waves-per-eu
define amdgpu_kernel void @tuned(ptr %out, double %x) #0 {
  %sq = call contract double @pow(double %x, double 2.0)
  store double %sq, ptr %out
  ret void
}

declare double @pow(double, double)

attributes #0 = { nounwind "target-cpu"="gfx90a" }
