; RUN: %opt -passes='regtune-lds-spill<2>' -S %s | FileCheck %s
;
; IR written for LLVM before 20 marks NVPTX kernels and their launch
; bounds in !nvvm.annotations: LLVM 22 upgrades them when it reads the
; module ("nvvm.maxntid"="64,2"), LLVM 19 keeps them and the pass reads
; maxntidx and maxntidy there. Either way B = 64 x 2 = 128.

target triple = "nvptx64-nvidia-cuda"

; CHECK: @__regtune_lds_spill.old_style = internal addrspace(3) global [2 x [128 x i32]] undef, align 4
; CHECK-LABEL: void @old_style(
; CHECK:         store volatile float %a
; CHECK:         store volatile float %b
; CHECK:         %a.reload = load volatile float
; CHECK:         %b.reload = load volatile float
define void @old_style(ptr addrspace(1) %in, ptr addrspace(1) %out) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %pa = getelementptr inbounds float, ptr addrspace(1) %in, i32 %tid
  %a = load float, ptr addrspace(1) %pa, align 4
  %pb = getelementptr inbounds float, ptr addrspace(1) %pa, i32 256
  %b = load float, ptr addrspace(1) %pb, align 4
  %p0 = getelementptr inbounds float, ptr addrspace(1) %pa, i32 512
  %p1 = getelementptr inbounds float, ptr addrspace(1) %pa, i32 768
  %p2 = getelementptr inbounds float, ptr addrspace(1) %pa, i32 1024
  %p3 = getelementptr inbounds float, ptr addrspace(1) %pa, i32 1280
  %p4 = getelementptr inbounds float, ptr addrspace(1) %pa, i32 1536
  %p5 = getelementptr inbounds float, ptr addrspace(1) %pa, i32 1792
  %p6 = getelementptr inbounds float, ptr addrspace(1) %pa, i32 2048
  %p7 = getelementptr inbounds float, ptr addrspace(1) %pa, i32 2304
  %x0 = load float, ptr addrspace(1) %p0, align 4
  %x1 = load float, ptr addrspace(1) %p1, align 4
  %x2 = load float, ptr addrspace(1) %p2, align 4
  %x3 = load float, ptr addrspace(1) %p3, align 4
  %x4 = load float, ptr addrspace(1) %p4, align 4
  %x5 = load float, ptr addrspace(1) %p5, align 4
  %x6 = load float, ptr addrspace(1) %p6, align 4
  %x7 = load float, ptr addrspace(1) %p7, align 4
  %s1 = fadd float %x0, %x1
  %s2 = fadd float %s1, %x2
  %s3 = fadd float %s2, %x3
  %s4 = fadd float %s3, %x4
  %s5 = fadd float %s4, %x5
  %s6 = fadd float %s5, %x6
  %s7 = fadd float %s6, %x7
  %c = fmul float %s7, %a
  %d = fmul float %c, %b
  %po = getelementptr inbounds float, ptr addrspace(1) %out, i32 %tid
  store float %d, ptr addrspace(1) %po, align 4
  ret void
}

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()

!nvvm.annotations = !{!0, !1, !2}
!0 = !{ptr @old_style, !"kernel", i32 1}
!1 = !{ptr @old_style, !"maxntidx", i32 64}
!2 = !{ptr @old_style, !"maxntidy", i32 2}
