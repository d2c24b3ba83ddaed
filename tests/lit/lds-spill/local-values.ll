; RUN: %opt -passes='regtune-lds-spill<8>' -S %s | FileCheck %s
; RUN: env REGTUNE_VERBOSE=1 %opt -passes='regtune-lds-spill<8>' -disable-output %s 2>&1 | FileCheck %s --check-prefix=NOTE
;
; Verify that values that are _not_ live across the peak from far away are
; left in registers: values read soon after they are made (the backend's
; scheduler can shorten those ranges itself), and a single long-lived
; value (it frees one register, and its slot address costs one).

target triple = "amdgcn-amd-amdhsa"

; CHECK-NOT: addrspace(3)

; %a and %b are loaded right before their uses; the eight loads of the peak
; are read at the peak, and each lives across fewer than 16 instructions.
; CHECK-LABEL: define amdgpu_kernel void @local_values(
; CHECK-NOT: volatile
define amdgpu_kernel void @local_values(ptr addrspace(1) %in, ptr addrspace(1) %out) #0 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr inbounds float, ptr addrspace(1) %in, i32 %tid
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
  %a = load float, ptr addrspace(1) %pa, align 4
  %pb = getelementptr inbounds float, ptr addrspace(1) %pa, i32 256
  %b = load float, ptr addrspace(1) %pb, align 4
  %c = fmul float %s7, %a
  %d = fmul float %c, %b
  %po = getelementptr inbounds float, ptr addrspace(1) %out, i32 %tid
  store float %d, ptr addrspace(1) %po, align 4
  ret void
}

; Only %a lives across the peak.
; CHECK-LABEL: define amdgpu_kernel void @one_value(
; CHECK-NOT: volatile
define amdgpu_kernel void @one_value(ptr addrspace(1) %in, ptr addrspace(1) %out) #0 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr inbounds float, ptr addrspace(1) %in, i32 %tid
  %a = load float, ptr addrspace(1) %pa, align 4
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
  %po = getelementptr inbounds float, ptr addrspace(1) %out, i32 %tid
  store float %c, ptr addrspace(1) %po, align 4
  ret void
}

; NOTE: regtune: lds-spill<8> local_values: no change: no values lower the estimated peak of {{[0-9]+}} registers by 2
; NOTE: regtune: lds-spill<8> one_value: no change: no values lower the estimated peak of {{[0-9]+}} registers by 2

declare i32 @llvm.amdgcn.workitem.id.x()

attributes #0 = { nounwind "amdgpu-flat-work-group-size"="1,256" "target-cpu"="gfx90a" }
