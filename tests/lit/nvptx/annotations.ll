; RUN: %opt -passes='regtune-occupancy<32>' -S %s | FileCheck %s --check-prefixes=CHECK,%llvm
; RUN: %opt -passes='regtune-occupancy<32;block=64>' -S %s | FileCheck %s --check-prefix=BLOCK-%llvm
; RUN: %opt -passes='regtune-occupancy<32;block=64>' %s | llc -mcpu=sm_90 | FileCheck %s --check-prefix=PTX
; RUN: %opt -passes=regtune-inspect -disable-output %s | FileCheck %s --check-prefix=INSPECT
;
; IR written for LLVM before 20 marks NVPTX kernels in !nvvm.annotations,
; not with the ptx_kernel calling convention. LLVM 22 upgrades them when it
; reads the module (launch bounds become "nvvm.maxntid"); LLVM 19 keeps
; them and reads the launch limits from them, so there the passes write
; theirs into the annotations. Either way the passes recognise the kernel:
; it gets the register cap (replacing the block size it had, with block=),
; the backend emits both, regtune-inspect lists it, and the plain device
; function stays untouched.

target triple = "nvptx64-nvidia-cuda"

; LLVM22: define ptx_kernel void @old_style(ptr %p) [[KERNEL:#[0-9]+]]
; LLVM19: define void @old_style(ptr %p) {
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

; LLVM22: attributes [[KERNEL]] = { "nvvm.maxnreg"="64" "nvvm.maxntid"="128" }
; LLVM22: !nvvm.annotations = !{}

; LLVM19:      !nvvm.annotations = !{!0, !1, !2}
; LLVM19:      !0 = !{ptr @old_style, !"kernel", i32 1}
; LLVM19-NEXT: !1 = !{ptr @old_style, !"maxntidx", i32 128}
; LLVM19-NEXT: !2 = !{ptr @old_style, !"maxnreg", i32 64}
; LLVM19-NOT:  !{{[0-9]+}} = !{ptr

; BLOCK-LLVM22: attributes #0 = { "nvvm.maxnreg"="64" "nvvm.maxntid"="64" }

; BLOCK-LLVM19:      !nvvm.annotations = !{!0, !1, !2}
; BLOCK-LLVM19:      !0 = !{ptr @old_style, !"kernel", i32 1}
; BLOCK-LLVM19-NEXT: !1 = !{ptr @old_style, !"maxntidx", i32 64}
; BLOCK-LLVM19-NEXT: !2 = !{ptr @old_style, !"maxnreg", i32 64}
; BLOCK-LLVM19-NOT:  !{{[0-9]+}} = !{ptr

; PTX-LABEL: .visible .entry old_style(
; PTX:       .maxntid 64{{(, 1, 1)?$}}
; PTX:       .maxnreg 64
; PTX-NOT:   .entry

; INSPECT: {"kernel":"old_style",
; INSPECT-NOT: device_function
