; RUN: %opt -passes='regtune-lds-spill<8>' -S %s | FileCheck %s
; RUN: llc -O3 -mtriple=amdgcn-amd-amdhsa -mcpu=gfx90a %s -o %t.before.s
; RUN: %opt -passes='regtune-lds-spill<8>' %s | llc -O3 -mtriple=amdgcn-amd-amdhsa -mcpu=gfx90a -o %t.after.s
; RUN: FileCheck %s --check-prefix=ASM < %t.after.s
; RUN: sh %inputs/fewer-vgprs.sh %t.before.s %t.after.s | FileCheck %s --check-prefix=VGPRS
;
; A kernel whose register pressure peaks in a loop: 16 accumulators, the
; loop's load and the output address are live there, and so are eight
; values loaded before the loop and read only after it (%keep0..7). The
; pass moves the eight to LDS (slots 0..7: the keeps' store and reload cost
; less than the accumulators', which would be stored and reloaded every
; iteration), and the backend, at -O3 as clang runs it, keeps them there:
; ds_write before the loop, ds_read after it (plain loads and stores would
; be forwarded by codegen's GVN, and the spill undone: hence volatile), and
; the kernel needs fewer VGPRs.
;
; (Generated: 16 accumulators `acc = fma(x, c, acc)` over a loop, eight
; values `in[tid + 256 k]` multiplied into the sum after it.)

target triple = "amdgcn-amd-amdhsa"

; CHECK: @__regtune_lds_spill.pressure = internal addrspace(3) global [8 x [256 x i32]] undef, align 4
; CHECK-LABEL: define amdgpu_kernel void @pressure(
; CHECK:       entry:
; CHECK:         %keep0 = load float
; CHECK-NEXT:    [[S0:%.*]] = getelementptr inbounds [256 x i32], ptr addrspace(3) %regtune.lds.slot0, i32 0
; CHECK-NEXT:    store volatile float %keep0, ptr addrspace(3) [[S0]], align 4
; CHECK:         %keep7 = load float
; CHECK-NEXT:    [[S7:%.*]] = getelementptr inbounds [256 x i32], ptr addrspace(3) %regtune.lds.slot0, i32 7
; CHECK-NEXT:    store volatile float %keep7, ptr addrspace(3) [[S7]], align 4
; CHECK:       loop:
; CHECK-NOT:     volatile
; CHECK:       exit:
; CHECK:         %keep0.reload = load volatile float
; CHECK-NEXT:    %r0 = fmul float %s15, %keep0.reload
; CHECK:         %keep7.reload = load volatile float
; CHECK-NEXT:    %r7 = fmul float %r6, %keep7.reload

; ASM-LABEL: pressure:
; ASM-COUNT-8: ds_write_b32
; ASM-NOT:     ds_write
; ASM:         s_cbranch
; ASM-COUNT-8: ds_read_b32
; ASM-NOT:     ds_read
; ASM:         .amdhsa_group_segment_fixed_size 8192

; fewer-vgprs.sh fails unless AFTER < BEFORE (LLVM 22: 32 -> 24).
; VGPRS: vgprs: [[#BEFORE:]] -> [[#AFTER:]]

define amdgpu_kernel void @pressure(ptr addrspace(1) %in, ptr addrspace(1) %out, i32 %n) #0 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %kidx0 = add i32 %tid, 256
  %kp0 = getelementptr inbounds float, ptr addrspace(1) %in, i32 %kidx0
  %keep0 = load float, ptr addrspace(1) %kp0, align 4
  %kidx1 = add i32 %tid, 512
  %kp1 = getelementptr inbounds float, ptr addrspace(1) %in, i32 %kidx1
  %keep1 = load float, ptr addrspace(1) %kp1, align 4
  %kidx2 = add i32 %tid, 768
  %kp2 = getelementptr inbounds float, ptr addrspace(1) %in, i32 %kidx2
  %keep2 = load float, ptr addrspace(1) %kp2, align 4
  %kidx3 = add i32 %tid, 1024
  %kp3 = getelementptr inbounds float, ptr addrspace(1) %in, i32 %kidx3
  %keep3 = load float, ptr addrspace(1) %kp3, align 4
  %kidx4 = add i32 %tid, 1280
  %kp4 = getelementptr inbounds float, ptr addrspace(1) %in, i32 %kidx4
  %keep4 = load float, ptr addrspace(1) %kp4, align 4
  %kidx5 = add i32 %tid, 1536
  %kp5 = getelementptr inbounds float, ptr addrspace(1) %in, i32 %kidx5
  %keep5 = load float, ptr addrspace(1) %kp5, align 4
  %kidx6 = add i32 %tid, 1792
  %kp6 = getelementptr inbounds float, ptr addrspace(1) %in, i32 %kidx6
  %keep6 = load float, ptr addrspace(1) %kp6, align 4
  %kidx7 = add i32 %tid, 2048
  %kp7 = getelementptr inbounds float, ptr addrspace(1) %in, i32 %kidx7
  %keep7 = load float, ptr addrspace(1) %kp7, align 4
  %op = getelementptr inbounds float, ptr addrspace(1) %out, i32 %tid
  br label %loop

loop:
  %i = phi i32 [ 0, %entry ], [ %i.next, %loop ]
  %acc0 = phi float [ 0.0, %entry ], [ %acc0.next, %loop ]
  %acc1 = phi float [ 0.0, %entry ], [ %acc1.next, %loop ]
  %acc2 = phi float [ 0.0, %entry ], [ %acc2.next, %loop ]
  %acc3 = phi float [ 0.0, %entry ], [ %acc3.next, %loop ]
  %acc4 = phi float [ 0.0, %entry ], [ %acc4.next, %loop ]
  %acc5 = phi float [ 0.0, %entry ], [ %acc5.next, %loop ]
  %acc6 = phi float [ 0.0, %entry ], [ %acc6.next, %loop ]
  %acc7 = phi float [ 0.0, %entry ], [ %acc7.next, %loop ]
  %acc8 = phi float [ 0.0, %entry ], [ %acc8.next, %loop ]
  %acc9 = phi float [ 0.0, %entry ], [ %acc9.next, %loop ]
  %acc10 = phi float [ 0.0, %entry ], [ %acc10.next, %loop ]
  %acc11 = phi float [ 0.0, %entry ], [ %acc11.next, %loop ]
  %acc12 = phi float [ 0.0, %entry ], [ %acc12.next, %loop ]
  %acc13 = phi float [ 0.0, %entry ], [ %acc13.next, %loop ]
  %acc14 = phi float [ 0.0, %entry ], [ %acc14.next, %loop ]
  %acc15 = phi float [ 0.0, %entry ], [ %acc15.next, %loop ]
  %row = mul i32 %i, 256
  %xi = add i32 %row, %tid
  %xp = getelementptr inbounds float, ptr addrspace(1) %in, i32 %xi
  %x = load float, ptr addrspace(1) %xp, align 4
  %acc0.next = call float @llvm.fma.f32(float %x, float 2.000000e+00, float %acc0)
  %acc1.next = call float @llvm.fma.f32(float %x, float 3.000000e+00, float %acc1)
  %acc2.next = call float @llvm.fma.f32(float %x, float 4.000000e+00, float %acc2)
  %acc3.next = call float @llvm.fma.f32(float %x, float 5.000000e+00, float %acc3)
  %acc4.next = call float @llvm.fma.f32(float %x, float 6.000000e+00, float %acc4)
  %acc5.next = call float @llvm.fma.f32(float %x, float 7.000000e+00, float %acc5)
  %acc6.next = call float @llvm.fma.f32(float %x, float 8.000000e+00, float %acc6)
  %acc7.next = call float @llvm.fma.f32(float %x, float 9.000000e+00, float %acc7)
  %acc8.next = call float @llvm.fma.f32(float %x, float 1.000000e+01, float %acc8)
  %acc9.next = call float @llvm.fma.f32(float %x, float 1.100000e+01, float %acc9)
  %acc10.next = call float @llvm.fma.f32(float %x, float 1.200000e+01, float %acc10)
  %acc11.next = call float @llvm.fma.f32(float %x, float 1.300000e+01, float %acc11)
  %acc12.next = call float @llvm.fma.f32(float %x, float 1.400000e+01, float %acc12)
  %acc13.next = call float @llvm.fma.f32(float %x, float 1.500000e+01, float %acc13)
  %acc14.next = call float @llvm.fma.f32(float %x, float 1.600000e+01, float %acc14)
  %acc15.next = call float @llvm.fma.f32(float %x, float 1.700000e+01, float %acc15)
  store float %acc0.next, ptr addrspace(1) %op, align 4
  %i.next = add i32 %i, 1
  %more = icmp slt i32 %i.next, %n
  br i1 %more, label %loop, label %exit

exit:
  %s1 = fadd float %acc0.next, %acc1.next
  %s2 = fadd float %s1, %acc2.next
  %s3 = fadd float %s2, %acc3.next
  %s4 = fadd float %s3, %acc4.next
  %s5 = fadd float %s4, %acc5.next
  %s6 = fadd float %s5, %acc6.next
  %s7 = fadd float %s6, %acc7.next
  %s8 = fadd float %s7, %acc8.next
  %s9 = fadd float %s8, %acc9.next
  %s10 = fadd float %s9, %acc10.next
  %s11 = fadd float %s10, %acc11.next
  %s12 = fadd float %s11, %acc12.next
  %s13 = fadd float %s12, %acc13.next
  %s14 = fadd float %s13, %acc14.next
  %s15 = fadd float %s14, %acc15.next
  %r0 = fmul float %s15, %keep0
  %r1 = fmul float %r0, %keep1
  %r2 = fmul float %r1, %keep2
  %r3 = fmul float %r2, %keep3
  %r4 = fmul float %r3, %keep4
  %r5 = fmul float %r4, %keep5
  %r6 = fmul float %r5, %keep6
  %r7 = fmul float %r6, %keep7
  store float %r7, ptr addrspace(1) %op, align 4
  ret void
}

declare i32 @llvm.amdgcn.workitem.id.x()
declare float @llvm.fma.f32(float, float, float)

attributes #0 = { nounwind "amdgpu-flat-work-group-size"="1,256" "target-cpu"="gfx90a" }
