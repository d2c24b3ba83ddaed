; RUN: %opt -passes='regtune-occupancy<48;block=256>' -S %s | FileCheck %s
; RUN: %opt -passes='regtune-occupancy<64>' -S %s | FileCheck %s --check-prefix=CAP32
; RUN: %opt -passes='regtune-occupancy<8>' -S %s | FileCheck %s --check-prefix=CAP255
; RUN: %opt -passes='regtune-occupancy<48;block=256>' %s | llc -mcpu=sm_90 | FileCheck %s --check-prefix=PTX
;
; On NVPTX kernels W is warps per SM: regtune-occupancy<W> caps the
; registers at the count that lets W warps share the SM's register file
; ("nvvm.maxnreg"; 48 warps -> 40 registers, 64 -> 32, 8 -> the maximum
; 255), and block=N is CUDA's __launch_bounds__(N) ("nvvm.maxntid"). The
; NVPTX backend writes them as .maxnreg and .maxntid for ptxas.

target triple = "nvptx64-nvidia-cuda"

; CHECK: define ptx_kernel void @kernel(ptr %p) [[KERNEL:#[0-9]+]]
; CAP32: define ptx_kernel void @kernel(ptr %p) [[KERNEL:#[0-9]+]]
; CAP255: define ptx_kernel void @kernel(ptr %p) [[KERNEL:#[0-9]+]]
define ptx_kernel void @kernel(ptr %p) #0 {
  call void @helper(ptr %p)
  ret void
}

; Verify that a device function the kernel calls does _not_ get them.
; CHECK: define void @helper(ptr %p) [[HELPER:#[0-9]+]]
define void @helper(ptr %p) #0 {
  store i32 1, ptr %p
  ret void
}

attributes #0 = { nounwind "target-cpu"="sm_90" }

; CHECK-DAG: attributes [[KERNEL]] = { nounwind "nvvm.maxnreg"="40" "nvvm.maxntid"="256" "target-cpu"="sm_90" }
; CHECK-DAG: attributes [[HELPER]] = { nounwind "target-cpu"="sm_90" }
; CAP32: attributes [[KERNEL]] = { nounwind "nvvm.maxnreg"="32" "target-cpu"="sm_90" }
; CAP255: attributes [[KERNEL]] = { nounwind "nvvm.maxnreg"="255" "target-cpu"="sm_90" }

; PTX-LABEL: .visible .entry kernel(
; PTX: .maxntid 256
; PTX: .maxnreg 40
; PTX-NOT: amdgpu
