; RUN: %opt -passes='regtune-lds-spill<32>' -S %s | FileCheck %s --check-prefix=FITS
; RUN: %opt -passes='regtune-lds-spill<33>' -S %s | FileCheck %s --check-prefix=TOO-MANY
; RUN: env REGTUNE_VERBOSE=1 %opt -passes='regtune-lds-spill<33>' -disable-output %s 2>&1 | FileCheck %s --check-prefix=NOTE
;
; The slots must fit in LDS beside the module's other static LDS: 64 KiB
; on AMDGPU. Here 32 KiB are taken, and each slot costs B x 4 = 1 KiB. The
; bound is on the N asked for (what the tuner chose), not on the slots the
; pass ends up using.

target triple = "amdgcn-amd-amdhsa"

@tile = internal addrspace(3) global [8192 x float] undef, align 4

; 32 KiB + 32 x 1 KiB is exactly 64 KiB.
; FITS: @__regtune_lds_spill.lds_limit = internal addrspace(3) global [2 x [256 x i32]] undef
; FITS-LABEL: define amdgpu_kernel void @lds_limit(
; FITS: store volatile float %a

; Verify that one slot more is _not_ applied.
; TOO-MANY-NOT: @__regtune_lds_spill
; TOO-MANY-LABEL: define amdgpu_kernel void @lds_limit(
; TOO-MANY-NOT: volatile
; NOTE: regtune: lds-spill<33> lds_limit: not applied: 33792 bytes of slots and 32768 of other static shared memory exceed 65536
define amdgpu_kernel void @lds_limit(ptr addrspace(1) %in, ptr addrspace(1) %out) #0 {
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
  %pt = getelementptr inbounds [8192 x float], ptr addrspace(3) @tile, i32 0, i32 %tid
  store float %d, ptr addrspace(3) %pt, align 4
  %po = getelementptr inbounds float, ptr addrspace(1) %out, i32 %tid
  store float %d, ptr addrspace(1) %po, align 4
  ret void
}

declare i32 @llvm.amdgcn.workitem.id.x()

attributes #0 = { nounwind "amdgpu-flat-work-group-size"="1,256" "target-cpu"="gfx90a" }
