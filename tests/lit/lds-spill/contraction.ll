; RUN: %opt -passes='regtune-lds-spill<8>' -S %s | FileCheck %s
; RUN: env REGTUNE_VERBOSE=1 %opt -passes='regtune-lds-spill<8>' -disable-output %s 2>&1 | FileCheck %s --check-prefix=NOTE
;
; Values the backend folds into a user stay in registers: a reload would hide
; the definition and change the bits.
;   - %prod, an fmul that an fadd reads: fused into one fma (CUDA's
;     -ffp-contract=fast: LLVM's DAG combiner, and ptxas on mul.f64/add.f64
;     without .rn), which rounds once; the reloaded product is rounded before
;     the add. So is %np, the product negated, and %twice, which reaches its
;     add through a select. The LBM example's `even` (WD * rho * (...), read
;     by `even + odd` and `even - odd`) was such a value: spilled, f1 and f2
;     differed from plain on the H100 in a fifth of the cells.
;   - %fast (nnan on its definition) and %loose (read by an fmul reassoc):
;     fast-math flags other than contract let the backend fold on what it
;     sees of the definition.
; %diff, read by a multiply, may go: the multiply still fuses with its add.

target triple = "nvptx64-nvidia-cuda"

; CHECK-LABEL: define ptx_kernel void @contract(
; CHECK:         %prod = fmul contract double %a, %b
; CHECK-NEXT:    %twice = fmul double %b, 2.000000e+00
; CHECK-NEXT:    %np = fneg double %twice
; CHECK-NEXT:    %diff = fsub double %a, %b
; CHECK-NEXT:    [[DL:%.*]] = call i32 @llvm.nvvm.d2i.lo(double %diff)
; CHECK:         [[DH:%.*]] = call i32 @llvm.nvvm.d2i.hi(double %diff)
; CHECK:         store volatile i32 [[DH]]
; CHECK-NEXT:    %fast = fsub nnan double %b, %a
; CHECK-NEXT:    %loose = fadd double %a, 1.000000e+00
; CHECK-NEXT:    %pick = select i1 %odd, double %twice, double %a
; CHECK-NOT:     store volatile
; CHECK:         %t = fadd contract double %prod, %s7
; CHECK:         %diff.reload = call double @llvm.nvvm.lohi.i2d(
; CHECK-NEXT:    %u = fmul contract double %t, %diff.reload
; CHECK-NEXT:    %v = fadd double %u, %np
; CHECK-NEXT:    %v2 = fadd double %v, %pick
; CHECK-NEXT:    %w = fmul double %v2, %fast
; CHECK-NEXT:    %y = fmul reassoc double %w, %loose
; CHECK-NOT:     .reload
; NOTE: regtune: lds-spill<8> contract: 1 values (%diff) in 2 slots of 256 threads (2048 bytes of shared memory)
define ptx_kernel void @contract(ptr addrspace(1) %in, ptr addrspace(1) %out) #0 {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %odd = trunc i32 %tid to i1
  %pa = getelementptr inbounds double, ptr addrspace(1) %in, i32 %tid
  %a = load double, ptr addrspace(1) %pa, align 8
  %pb = getelementptr inbounds double, ptr addrspace(1) %pa, i32 256
  %b = load double, ptr addrspace(1) %pb, align 8
  %prod = fmul contract double %a, %b
  %twice = fmul double %b, 2.000000e+00
  %np = fneg double %twice
  %diff = fsub double %a, %b
  %fast = fsub nnan double %b, %a
  %loose = fadd double %a, 1.000000e+00
  %pick = select i1 %odd, double %twice, double %a
  %p0 = getelementptr inbounds double, ptr addrspace(1) %pa, i32 512
  %p1 = getelementptr inbounds double, ptr addrspace(1) %pa, i32 768
  %p2 = getelementptr inbounds double, ptr addrspace(1) %pa, i32 1024
  %p3 = getelementptr inbounds double, ptr addrspace(1) %pa, i32 1280
  %p4 = getelementptr inbounds double, ptr addrspace(1) %pa, i32 1536
  %p5 = getelementptr inbounds double, ptr addrspace(1) %pa, i32 1792
  %p6 = getelementptr inbounds double, ptr addrspace(1) %pa, i32 2048
  %p7 = getelementptr inbounds double, ptr addrspace(1) %pa, i32 2304
  %x0 = load double, ptr addrspace(1) %p0, align 8
  %x1 = load double, ptr addrspace(1) %p1, align 8
  %x2 = load double, ptr addrspace(1) %p2, align 8
  %x3 = load double, ptr addrspace(1) %p3, align 8
  %x4 = load double, ptr addrspace(1) %p4, align 8
  %x5 = load double, ptr addrspace(1) %p5, align 8
  %x6 = load double, ptr addrspace(1) %p6, align 8
  %x7 = load double, ptr addrspace(1) %p7, align 8
  %s1 = fadd double %x0, %x1
  %s2 = fadd double %s1, %x2
  %s3 = fadd double %s2, %x3
  %s4 = fadd double %s3, %x4
  %s5 = fadd double %s4, %x5
  %s6 = fadd double %s5, %x6
  %s7 = fadd double %s6, %x7
  %t = fadd contract double %prod, %s7
  %u = fmul contract double %t, %diff
  %v = fadd double %u, %np
  %v2 = fadd double %v, %pick
  %w = fmul double %v2, %fast
  %y = fmul reassoc double %w, %loose
  %po = getelementptr inbounds double, ptr addrspace(1) %out, i32 %tid
  store double %y, ptr addrspace(1) %po, align 8
  ret void
}

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()

attributes #0 = { nounwind "nvvm.maxntid"="256" "target-cpu"="sm_90" }
