; RUN: %opt -passes='regtune-occupancy<4;block=256>' -S %s | FileCheck %s
;
; Verify that functions that are not AMDGPU kernels are _not_ given AMDGPU
; attributes: an NVPTX kernel, a plain function.

target triple = "nvptx64-nvidia-cuda"

; CHECK-NOT: amdgpu-
define ptx_kernel void @kernel() {
  ret void
}

define void @function() {
  ret void
}
