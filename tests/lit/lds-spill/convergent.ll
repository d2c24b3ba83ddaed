; RUN: %opt -passes='regtune-lds-spill<3>' -S %s | FileCheck %s
;
; Convergent calls. Verify that a barrier between a definition and its use
; does _not_ stop the spill: no other thread touches the slot, so the
; reload reads what this thread stored, barrier or not. Verify that a value
; a convergent call reads is _not_ spilled: the reload runs with the lanes
; active at the call, and a cross-lane operation may read the others.

target triple = "amdgcn-amd-amdhsa"

; CHECK-LABEL: define amdgpu_kernel void @across_barrier(
; CHECK:         store volatile float %a
; CHECK:         store volatile float %b
; CHECK:         call void @llvm.amdgcn.s.barrier()
; CHECK:         %a.reload = load volatile float
; CHECK:         %b.reload = load volatile float
define amdgpu_kernel void @across_barrier(ptr addrspace(1) %in, ptr addrspace(1) %out) #0 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
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
  call void @llvm.amdgcn.s.barrier()
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

; %k is as long-lived as %a and %b, but @cross_lane reads it.
; CHECK-LABEL: define amdgpu_kernel void @read_by_convergent_call(
; CHECK:         store volatile float %a
; CHECK:         store volatile float %b
; CHECK-NOT:     store volatile
; CHECK:         %lane = call i32 @cross_lane(i32 %k)
define amdgpu_kernel void @read_by_convergent_call(ptr addrspace(1) %in, ptr addrspace(1) %out) #0 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr inbounds float, ptr addrspace(1) %in, i32 %tid
  %a = load float, ptr addrspace(1) %pa, align 4
  %pb = getelementptr inbounds float, ptr addrspace(1) %pa, i32 256
  %b = load float, ptr addrspace(1) %pb, align 4
  %pk = getelementptr inbounds i32, ptr addrspace(1) %pa, i32 128
  %k = load i32, ptr addrspace(1) %pk, align 4
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
  %lane = call i32 @cross_lane(i32 %k)
  %lf = sitofp i32 %lane to float
  %e = fadd float %d, %lf
  %po = getelementptr inbounds float, ptr addrspace(1) %out, i32 %tid
  store float %e, ptr addrspace(1) %po, align 4
  ret void
}

declare i32 @llvm.amdgcn.workitem.id.x()
declare void @llvm.amdgcn.s.barrier()
declare i32 @cross_lane(i32) convergent

attributes #0 = { nounwind "amdgpu-flat-work-group-size"="1,256" "target-cpu"="gfx90a" }
