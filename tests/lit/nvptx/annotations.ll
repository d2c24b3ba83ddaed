; RUN: %opt -passes='regtune-occupancy<32>' -S %s | FileCheck %s
; RUN: %opt -passes=regtune-inspect -disable-output %s | FileCheck %s --check-prefix=INSPECT
;
; IR written for LLVM before 20 marks NVPTX kernels in !nvvm.annotations,
; not with the ptx_kernel calling convention. LLVM 22 upgrades them when it
; reads the module (launch bounds become "nvvm.maxntid"), and the passes
; recognise the kernel: it gets the register cap, regtune-inspect lists it,
; and the plain device function stays untouched.

target triple = "nvptx64-nvidia-cuda"

; CHECK: define ptx_kernel void @old_style(ptr %p) [[KERNEL:#[0-9]+]]
define void @old_style(ptr %p) {
  store i32 1, ptr %p
  ret void
}

; CHECK: define void @device_function(ptr %p) {
define void @device_function(ptr %p) {
  store i32 2, ptr %p
  ret void
}

!nvvm.annotations = !{!0, !1}
!0 = !{ptr @old_style, !"kernel", i32 1}
!1 = !{ptr @old_style, !"maxntidx", i32 128}

; CHECK: attributes [[KERNEL]] = { "nvvm.maxnreg"="64" "nvvm.maxntid"="128" }

; INSPECT: {"kernel":"old_style",
; INSPECT-NOT: device_function
