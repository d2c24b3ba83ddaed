; RUN: %opt -passes='regtune-lds-spill<12>' -S %s | FileCheck %s
; RUN: %opt -passes='regtune-lds-spill<12>' %s | llc -mcpu=sm_90 | FileCheck %s --check-prefix=PTX
; RUN: %opt -passes='regtune-lds-spill<13>' -S %s | FileCheck %s --check-prefix=LIMIT
; RUN: env REGTUNE_VERBOSE=1 %opt -passes='regtune-lds-spill<13>' -disable-output %s 2>&1 | FileCheck %s --check-prefix=NOTE
;
; NVPTX: the same spill into .shared memory. The block size is the product
; of "nvvm.maxntid"'s dimensions (32 x 4 = 128), the thread id
; tid.x + ntid.x * (tid.y + ntid.y * tid.z), and the bound 48 KiB, the most
; static shared memory a block has: with maxntid 1024, twelve slots fit
; (48 KiB) and thirteen do not.

target triple = "nvptx64-nvidia-cuda"

; CHECK: @__regtune_lds_spill.small_block = internal addrspace(3) global [2 x [128 x i32]] undef, align 4
; CHECK: @__regtune_lds_spill.big_block = internal addrspace(3) global [2 x [1024 x i32]] undef, align 4

; CHECK-LABEL: define ptx_kernel void @small_block(
; CHECK:       entry:
; CHECK-NEXT:    [[X:%.*]] = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
; CHECK-NEXT:    [[Y:%.*]] = call i32 @llvm.nvvm.read.ptx.sreg.tid.y()
; CHECK-NEXT:    [[Z:%.*]] = call i32 @llvm.nvvm.read.ptx.sreg.tid.z()
; CHECK-NEXT:    [[DX:%.*]] = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
; CHECK-NEXT:    [[DY:%.*]] = call i32 @llvm.nvvm.read.ptx.sreg.ntid.y()
; CHECK-NEXT:    [[DYZ:%.*]] = mul i32 [[DY]], [[Z]]
; CHECK-NEXT:    [[YZ:%.*]] = add i32 [[Y]], [[DYZ]]
; CHECK-NEXT:    [[DXYZ:%.*]] = mul i32 [[DX]], [[YZ]]
; CHECK-NEXT:    %regtune.lds.tid = add i32 [[X]], [[DXYZ]]
; CHECK-NEXT:    %regtune.lds.slot0 = getelementptr inbounds [2 x [128 x i32]], ptr addrspace(3) @__regtune_lds_spill.small_block, i32 0, i32 0, i32 %regtune.lds.tid
; CHECK:         %a = load float
; CHECK-NEXT:    [[SA:%.*]] = getelementptr inbounds [128 x i32], ptr addrspace(3) %regtune.lds.slot0, i32 0
; CHECK-NEXT:    store volatile float %a, ptr addrspace(3) [[SA]], align 4
; CHECK:         %a.reload = load volatile float
; CHECK-NEXT:    %c = fmul float %s7, %a.reload
define ptx_kernel void @small_block(ptr addrspace(1) %in, ptr addrspace(1) %out) #0 {
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

; CHECK-LABEL: define ptx_kernel void @big_block(
; CHECK:         store volatile float %a
define ptx_kernel void @big_block(ptr addrspace(1) %in, ptr addrspace(1) %out) #1 {
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

; PTX-LABEL: .entry small_block(
; PTX:       .shared .align 4 .b8 __regtune_lds_spill{{.*}}small_block[1024];
; PTX:       st.volatile.shared.{{[bf]}}32 [[[ADDR:%r[d]?[0-9]+]]],
; PTX:       st.volatile.shared.{{[bf]}}32 [[[ADDR]]+512],
; PTX:       ld.volatile.shared.{{[bf]}}32 {{%[rf][0-9]+}}, [[[ADDR]]];
; PTX:       ld.volatile.shared.{{[bf]}}32 {{%[rf][0-9]+}}, [[[ADDR]]+512];
; PTX-LABEL: .entry big_block(
; PTX:       .shared .align 4 .b8 __regtune_lds_spill{{.*}}big_block[8192];

; Verify that thirteen slots of 1024 threads are _not_ given (52 KiB).
; LIMIT:     @__regtune_lds_spill.small_block =
; LIMIT-NOT: @__regtune_lds_spill.big_block =
; NOTE: regtune: lds-spill<13> big_block: not applied: 53248 bytes of slots and 0 of other static shared memory exceed 49152

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()

attributes #0 = { nounwind "nvvm.maxntid"="32,4" "target-cpu"="sm_90" }
attributes #1 = { nounwind "nvvm.maxntid"="1024" "target-cpu"="sm_90" }
