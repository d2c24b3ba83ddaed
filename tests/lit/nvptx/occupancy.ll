; RUN: %opt -passes='regtune-occupancy<48;block=256>' -S %s | FileCheck %s --check-prefixes=CHECK,%llvm
; RUN: %opt -passes='regtune-occupancy<64>' -S %s | FileCheck %s --check-prefixes=CAP32,CAP32-%llvm
; RUN: %opt -passes='regtune-occupancy<8>' -S %s | FileCheck %s --check-prefixes=CAP255,CAP255-%llvm
; RUN: %opt -passes='regtune-occupancy<48;block=256>' %s | llc -mcpu=sm_90 | FileCheck %s --check-prefix=PTX
;
; On NVPTX kernels W is warps per SM: regtune-occupancy<W> caps the
; registers at the count that lets W warps share the SM's register file
; ("nvvm.maxnreg"; 48 warps -> 40 registers, 64 -> 32, 8 -> the maximum
; 255), and block=N is CUDA's __launch_bounds__(N) ("nvvm.maxntid"). The
; NVPTX backend writes them as .maxnreg and .maxntid for ptxas. (LLVM 19
; reads them from !nvvm.annotations, maxnreg and maxntidx, instead.)

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

; LLVM22-DAG: attributes [[KERNEL]] = { nounwind "nvvm.maxnreg"="40" "nvvm.maxntid"="256" "target-cpu"="sm_90" }
; LLVM22-DAG: attributes [[HELPER]] = { nounwind "target-cpu"="sm_90" }
; CAP32-LLVM22: attributes [[KERNEL]] = { nounwind "nvvm.maxnreg"="32" "target-cpu"="sm_90" }
; CAP255-LLVM22: attributes [[KERNEL]] = { nounwind "nvvm.maxnreg"="255" "target-cpu"="sm_90" }

; LLVM19:      attributes [[KERNEL]] = { nounwind "target-cpu"="sm_90" }
; LLVM19:      !nvvm.annotations = !{!0, !1}
; LLVM19:      !0 = !{ptr @kernel, !"maxnreg", i32 40}
; LLVM19-NEXT: !1 = !{ptr @kernel, !"maxntidx", i32 256}
; LLVM19-NOT:  @helper
; CAP32-LLVM19: !0 = !{ptr @kernel, !"maxnreg", i32 32}
; CAP255-LLVM19: !0 = !{ptr @kernel, !"maxnreg", i32 255}

; PTX-LABEL: .visible .entry kernel(
; PTX: .maxntid 256{{(, 1, 1)?$}}
; PTX: .maxnreg 40
; PTX-NOT: amdgpu
