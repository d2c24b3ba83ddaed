; RUN: %opt -passes='regtune-occupancy<40;block=256>,regtune-spill-to-shared' -S %s | FileCheck %s --check-prefix=DYNAMIC
;
; Verify that regtune-spill-to-shared does _not_ add the pragma beside
; dynamic shared memory (an extern array in address space 3, CUDA's
; `extern __shared__`), which ptxas refuses it next to.

target triple = "nvptx64-nvidia-cuda"

@dyn = external addrspace(3) global [0 x float]

; DYNAMIC-NOT: enable_smem_spilling
define ptx_kernel void @kernel(ptr %p, i32 %i) #0 {
  %a = getelementptr [0 x float], ptr addrspace(3) @dyn, i32 0, i32 %i
  %v = load float, ptr addrspace(3) %a
  store float %v, ptr %p
  ret void
}

attributes #0 = { nounwind "target-cpu"="sm_90" }
