; RUN: %opt -passes='regtune-occupancy<5>' -S %s | FileCheck %s
;
; regtune-occupancy<W> sets "amdgpu-waves-per-eu"="W" on AMDGPU kernels
; (replacing a value already there), and on nothing else.

target triple = "amdgcn-amd-amdhsa"

; CHECK: define amdgpu_kernel void @kernel() [[KERNEL:#[0-9]+]]
define amdgpu_kernel void @kernel() #0 {
  call void @helper()
  ret void
}

; The old "2,4" is replaced: both kernels end up with the same attributes.
; CHECK: define amdgpu_kernel void @kernel_with_bounds() [[KERNEL]]
define amdgpu_kernel void @kernel_with_bounds() #1 {
  ret void
}

; Verify that a device function called by the kernel does _not_ get it.
; CHECK: define void @helper() [[HELPER:#[0-9]+]]
define void @helper() #0 {
  ret void
}

attributes #0 = { nounwind "target-cpu"="gfx90a" }
attributes #1 = { nounwind "amdgpu-waves-per-eu"="2,4" "target-cpu"="gfx90a" }

; CHECK-DAG: attributes [[KERNEL]] = { nounwind "amdgpu-waves-per-eu"="5" "target-cpu"="gfx90a" }
; CHECK-DAG: attributes [[HELPER]] = { nounwind "target-cpu"="gfx90a" }
