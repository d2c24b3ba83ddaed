; RUN: %opt -passes='regtune-occupancy<4;block=256>' -S %s | FileCheck %s
; RUN: %opt -passes='regtune-occupancy<block=128>' -S %s | FileCheck %s --check-prefix=BLOCK-ONLY
;
; With block=N the kernel also promises at most N work-items per block:
; "amdgpu-flat-work-group-size"="1,N" (over clang's default "1,1024").

target triple = "amdgcn-amd-amdhsa"

; CHECK: define amdgpu_kernel void @kernel() [[KERNEL:#[0-9]+]]
; BLOCK-ONLY: define amdgpu_kernel void @kernel() [[KERNEL:#[0-9]+]]
define amdgpu_kernel void @kernel() #0 {
  ret void
}

attributes #0 = { nounwind "amdgpu-flat-work-group-size"="1,1024" "target-cpu"="gfx90a" }

; CHECK: attributes [[KERNEL]] = { nounwind "amdgpu-flat-work-group-size"="1,256" "amdgpu-waves-per-eu"="4" "target-cpu"="gfx90a" }
; BLOCK-ONLY: attributes [[KERNEL]] = { nounwind "amdgpu-flat-work-group-size"="1,128" "target-cpu"="gfx90a" }
