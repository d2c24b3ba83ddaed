; RUN: %opt -passes='regtune-lds-spill<4>' -S %s | FileCheck %s
; RUN: %opt -passes='regtune-lds-spill<4>,regtune-lds-spill<4>' -S %s | FileCheck %s --check-prefix=ONCE
; RUN: env REGTUNE_VERBOSE=1 %opt -passes='regtune-lds-spill<4>,regtune-lds-spill<4>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=NOTE
;
; regtune-lds-spill<N> keeps values that are live across the kernel's point
; of highest register pressure in per-thread LDS slots: %a and %b are
; loaded first and read last, around eight loads that are all live at once.
; Each is stored once, right after its definition, into its slot of a new
; [slots x [B x i32]] addrspace(3) array (B = 256, the promised block
; size), at word slot*B + tid, and loaded back right before its one use.

target triple = "amdgcn-amd-amdhsa"

; CHECK: @__regtune_lds_spill.two_values = internal addrspace(3) global [2 x [256 x i32]] undef, align 4

; CHECK-LABEL: define amdgpu_kernel void @two_values(
; The flat thread id x + dimx * (y + dimy * z), dims from the dispatch packet.
; CHECK:       entry:
; CHECK-NEXT:    [[X:%.*]] = call i32 @llvm.amdgcn.workitem.id.x()
; CHECK-NEXT:    [[Y:%.*]] = call i32 @llvm.amdgcn.workitem.id.y()
; CHECK-NEXT:    [[Z:%.*]] = call i32 @llvm.amdgcn.workitem.id.z()
; CHECK-NEXT:    [[PACKET:%.*]] = call ptr addrspace(4) @llvm.amdgcn.dispatch.ptr()
; CHECK-NEXT:    [[PDX:%.*]] = getelementptr inbounds i8, ptr addrspace(4) [[PACKET]], i64 4
; CHECK-NEXT:    [[DX16:%.*]] = load i16, ptr addrspace(4) [[PDX]], align 4, !invariant.load
; CHECK-NEXT:    [[DX:%.*]] = zext i16 [[DX16]] to i32
; CHECK-NEXT:    [[PDY:%.*]] = getelementptr inbounds i8, ptr addrspace(4) [[PACKET]], i64 6
; CHECK-NEXT:    [[DY16:%.*]] = load i16, ptr addrspace(4) [[PDY]], align 2, !invariant.load
; CHECK-NEXT:    [[DY:%.*]] = zext i16 [[DY16]] to i32
; CHECK-NEXT:    [[DYZ:%.*]] = mul i32 [[DY]], [[Z]]
; CHECK-NEXT:    [[YZ:%.*]] = add i32 [[Y]], [[DYZ]]
; CHECK-NEXT:    [[DXYZ:%.*]] = mul i32 [[DX]], [[YZ]]
; CHECK-NEXT:    %regtune.lds.tid = add i32 [[X]], [[DXYZ]]
; CHECK-NEXT:    %regtune.lds.slot0 = getelementptr inbounds [2 x [256 x i32]], ptr addrspace(3) @__regtune_lds_spill.two_values, i32 0, i32 0, i32 %regtune.lds.tid
; CHECK-NEXT:    %tid = call i32 @llvm.amdgcn.workitem.id.x()
; Stored once, right after the definition: slot 0 at tid, slot 1 at B + tid.
; CHECK:         %a = load float, ptr addrspace(1) %pa, align 4
; CHECK-NEXT:    [[SA:%.*]] = getelementptr inbounds [256 x i32], ptr addrspace(3) %regtune.lds.slot0, i32 0
; CHECK-NEXT:    store volatile float %a, ptr addrspace(3) [[SA]], align 4
; CHECK:         %b = load float, ptr addrspace(1) %pb, align 4
; CHECK-NEXT:    [[SB:%.*]] = getelementptr inbounds [256 x i32], ptr addrspace(3) %regtune.lds.slot0, i32 1
; CHECK-NEXT:    store volatile float %b, ptr addrspace(3) [[SB]], align 4
; The eight values of the peak are not touched.
; CHECK-NOT:     store volatile
; Loaded back right before each use, and only there.
; CHECK:         [[RA:%.*]] = getelementptr inbounds [256 x i32], ptr addrspace(3) %regtune.lds.slot0, i32 0
; CHECK-NEXT:    %a.reload = load volatile float, ptr addrspace(3) [[RA]], align 4
; CHECK-NEXT:    %c = fmul float %s7, %a.reload
; CHECK-NEXT:    [[RB:%.*]] = getelementptr inbounds [256 x i32], ptr addrspace(3) %regtune.lds.slot0, i32 1
; CHECK-NEXT:    %b.reload = load volatile float, ptr addrspace(3) [[RB]], align 4
; CHECK-NEXT:    %d = fmul float %c, %b.reload
; CHECK-NOT:     load volatile
; CHECK:         ret void
define amdgpu_kernel void @two_values(ptr addrspace(1) %in, ptr addrspace(1) %out) #0 {
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
  %c = fmul float %s7, %a
  %d = fmul float %c, %b
  %po = getelementptr inbounds float, ptr addrspace(1) %out, i32 %tid
  store float %d, ptr addrspace(1) %po, align 4
  ret void
}

; The attributes that say the kernel reads no thread id y, z or dispatch
; packet (the AMDGPU attributor's, at -O3) go: the thread id reads them.
; CHECK: attributes #0 = { nounwind "amdgpu-flat-work-group-size"="1,256" "target-cpu"="gfx90a" }

; Twice is once: the kernel already has its array.
; ONCE-COUNT-1: addrspace(3) global
; ONCE-NOT:     addrspace(3) global
; ONCE-COUNT-2: store volatile
; ONCE-NOT:     store volatile
; NOTE:      regtune: lds-spill<4> two_values: 2 values (%a, %b) in 2 slots of 256 threads (2048 bytes of shared memory); estimated peak {{[0-9]+}} -> {{[0-9]+}} registers
; NOTE-NEXT: regtune: lds-spill<4> two_values: not applied: already has its spill array

declare i32 @llvm.amdgcn.workitem.id.x()

attributes #0 = { nounwind "amdgpu-flat-work-group-size"="1,256" "amdgpu-no-dispatch-ptr" "amdgpu-no-workitem-id-y" "amdgpu-no-workitem-id-z" "target-cpu"="gfx90a" }
