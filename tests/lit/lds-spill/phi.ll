; RUN: %opt -passes='regtune-lds-spill<2>' -S %s | FileCheck %s
;
; PHIs: a value a PHI takes along an edge is reloaded at the end of that
; edge's block (where the PHI reads it), and a value a PHI defines is stored
; after all the PHIs of its block.

target triple = "amdgcn-amd-amdhsa"

; %a reaches the PHI from %neg, %b from %entry.
; CHECK-LABEL: define amdgpu_kernel void @phi_use(
; CHECK:         %b = load float
; CHECK-NEXT:    getelementptr inbounds [256 x i32], ptr addrspace(3) %regtune.lds.slot0, i32 1
; CHECK-NEXT:    store volatile float %b
; CHECK:         %neg.s = fcmp olt float %s7, 0.000000e+00
; CHECK-NEXT:    [[RB:%.*]] = getelementptr inbounds [256 x i32], ptr addrspace(3) %regtune.lds.slot0, i32 1
; CHECK-NEXT:    %b.reload = load volatile float, ptr addrspace(3) [[RB]], align 4
; CHECK-NEXT:    br i1 %neg.s, label %neg, label %join
; CHECK:       neg:
; CHECK-NEXT:    %m = fneg float %s7
; CHECK-NEXT:    [[RA:%.*]] = getelementptr inbounds [256 x i32], ptr addrspace(3) %regtune.lds.slot0, i32 0
; CHECK-NEXT:    %a.reload = load volatile float, ptr addrspace(3) [[RA]], align 4
; CHECK-NEXT:    br label %join
; CHECK:       join:
; CHECK-NEXT:    %v = phi float [ %a.reload, %neg ], [ %b.reload, %entry ]
define amdgpu_kernel void @phi_use(ptr addrspace(1) %in, ptr addrspace(1) %out) #0 {
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
  %neg.s = fcmp olt float %s7, 0.0
  br i1 %neg.s, label %neg, label %join

neg:
  %m = fneg float %s7
  br label %join

join:
  %v = phi float [ %a, %neg ], [ %b, %entry ]
  %t = phi float [ %m, %neg ], [ %s7, %entry ]
  %w = fmul float %v, %t
  %po = getelementptr inbounds float, ptr addrspace(1) %out, i32 %tid
  store float %w, ptr addrspace(1) %po, align 4
  ret void
}

; %p and %q are PHIs live across the sum: both stores follow both PHIs.
; CHECK-LABEL: define amdgpu_kernel void @phi_def(
; CHECK:       join:
; CHECK-NEXT:    %p = phi float [ %x, %left ], [ %y, %right ]
; CHECK-NEXT:    %q = phi float [ %y, %left ], [ %x, %right ]
; CHECK-NEXT:    [[SP:%.*]] = getelementptr inbounds [256 x i32], ptr addrspace(3) %regtune.lds.slot0, i32 0
; CHECK-NEXT:    store volatile float %p, ptr addrspace(3) [[SP]], align 4
; CHECK-NEXT:    [[SQ:%.*]] = getelementptr inbounds [256 x i32], ptr addrspace(3) %regtune.lds.slot0, i32 1
; CHECK-NEXT:    store volatile float %q, ptr addrspace(3) [[SQ]], align 4
; CHECK:         %p.reload = load volatile float
; CHECK-NEXT:    %u = fmul float %s7, %p.reload
; CHECK:         %q.reload = load volatile float
; CHECK-NEXT:    %w = fmul float %u, %q.reload
define amdgpu_kernel void @phi_def(ptr addrspace(1) %in, ptr addrspace(1) %out, i32 %n) #0 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %pc = getelementptr inbounds float, ptr addrspace(1) %in, i32 %tid
  %x = load float, ptr addrspace(1) %pc, align 4
  %y = fmul float %x, 2.0
  %c = icmp slt i32 %tid, %n
  br i1 %c, label %left, label %right

left:
  br label %join

right:
  br label %join

join:
  %p = phi float [ %x, %left ], [ %y, %right ]
  %q = phi float [ %y, %left ], [ %x, %right ]
  %pp0 = getelementptr inbounds float, ptr addrspace(1) %pc, i32 512
  %pp1 = getelementptr inbounds float, ptr addrspace(1) %pc, i32 768
  %pp2 = getelementptr inbounds float, ptr addrspace(1) %pc, i32 1024
  %pp3 = getelementptr inbounds float, ptr addrspace(1) %pc, i32 1280
  %pp4 = getelementptr inbounds float, ptr addrspace(1) %pc, i32 1536
  %pp5 = getelementptr inbounds float, ptr addrspace(1) %pc, i32 1792
  %pp6 = getelementptr inbounds float, ptr addrspace(1) %pc, i32 2048
  %pp7 = getelementptr inbounds float, ptr addrspace(1) %pc, i32 2304
  %x0 = load float, ptr addrspace(1) %pp0, align 4
  %x1 = load float, ptr addrspace(1) %pp1, align 4
  %x2 = load float, ptr addrspace(1) %pp2, align 4
  %x3 = load float, ptr addrspace(1) %pp3, align 4
  %x4 = load float, ptr addrspace(1) %pp4, align 4
  %x5 = load float, ptr addrspace(1) %pp5, align 4
  %x6 = load float, ptr addrspace(1) %pp6, align 4
  %x7 = load float, ptr addrspace(1) %pp7, align 4
  %s1 = fadd float %x0, %x1
  %s2 = fadd float %s1, %x2
  %s3 = fadd float %s2, %x3
  %s4 = fadd float %s3, %x4
  %s5 = fadd float %s4, %x5
  %s6 = fadd float %s5, %x6
  %s7 = fadd float %s6, %x7
  %u = fmul float %s7, %p
  %w = fmul float %u, %q
  %po = getelementptr inbounds float, ptr addrspace(1) %out, i32 %tid
  store float %w, ptr addrspace(1) %po, align 4
  ret void
}

declare i32 @llvm.amdgcn.workitem.id.x()

attributes #0 = { nounwind "amdgpu-flat-work-group-size"="1,256" "target-cpu"="gfx90a" }
