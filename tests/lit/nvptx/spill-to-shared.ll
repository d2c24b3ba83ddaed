; RUN: %opt -passes='regtune-occupancy<40;block=256>,regtune-spill-to-shared' -S %s | FileCheck %s
; RUN: %opt -passes='regtune-occupancy<40;block=256>,regtune-spill-to-shared,regtune-spill-to-shared' -S %s | FileCheck %s --check-prefix=ONCE
; RUN: %opt -passes='regtune-occupancy<40>,regtune-spill-to-shared' -S %s | FileCheck %s --check-prefix=NOBLOCK
; RUN: %opt -passes='regtune-occupancy<40;block=256>,regtune-spill-to-shared' %s | llc -mcpu=sm_90 | FileCheck %s --check-prefix=PTX
;
; regtune-spill-to-shared puts ptxas's `.pragma "enable_smem_spilling";` at
; the start of every NVPTX kernel that promises a block size (here the one
; regtune-occupancy<40;block=256> promised), as inline assembly: ptxas then
; spills to shared memory before local memory.

target triple = "nvptx64-nvidia-cuda"

; CHECK-LABEL: define ptx_kernel void @kernel(ptr %p)
; CHECK-NEXT:  call void asm sideeffect ".pragma \22enable_smem_spilling\22;", ""()
; CHECK-NEXT:  call void @helper(ptr %p)
define ptx_kernel void @kernel(ptr %p) #0 {
  call void @helper(ptr %p)
  ret void
}

; Verify that a device function does _not_ get it: the pragma is the entry's.
; CHECK-LABEL: define void @helper(ptr %p)
; CHECK-NOT:   asm
define void @helper(ptr %p) #0 {
  store i32 1, ptr %p
  ret void
}

; Verify that without a promised block size (ptxas sizes the spill area
; by it) the kernel does _not_ get it.
; NOBLOCK-NOT: enable_smem_spilling

; Twice is once.
; ONCE-COUNT-1: enable_smem_spilling
; ONCE-NOT:     enable_smem_spilling

; PTX-LABEL: .visible .entry kernel(
; PTX:       .maxntid 256
; PTX:       .pragma "enable_smem_spilling";

attributes #0 = { nounwind "target-cpu"="sm_90" }
