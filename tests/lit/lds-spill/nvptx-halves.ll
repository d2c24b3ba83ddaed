; RUN: %opt -passes='regtune-lds-spill<6>' -S %s | FileCheck %s
; RUN: %opt -passes='regtune-lds-spill<6>' %s | llc -mcpu=sm_90 | FileCheck %s --check-prefix=PTX
;
; NVPTX: a 64-bit value's halves are split with llvm.nvvm.d2i.lo/hi and
; joined with llvm.nvvm.lohi.i2d (mov.b64 {lo, hi}: 32-bit registers), for
; a double, an i64 and a pointer alike. Through <2 x i32>, LLVM folded the
; low half into a truncating store of the 64-bit register
; (st.volatile.shared.b32 [a], %rd), which ptxas 12.9 compiles, for a
; register that holds a double from arithmetic (here %om = 1 - a, as the
; LBM example's 1 - omega/2), as F2I.U32.F64.TRUNC: the low word stored was
; the double's integer part, and every reload of it on the H100 was wrong.
; (This file through the old rewrite, llc-22 and ptxas 12.9: `DADD R18, -R18,
; 1; F2I.U32.F64.TRUNC R0, R18; STS [R27], R0`.)

target triple = "nvptx64-nvidia-cuda"

; CHECK-LABEL: define ptx_kernel void @halves(
; CHECK:         %om = fsub double 1.000000e+00, %a
; CHECK-NEXT:    [[OL:%.*]] = call i32 @llvm.nvvm.d2i.lo(double %om)
; CHECK-NEXT:    [[A0:%.*]] = getelementptr inbounds [256 x i32], ptr addrspace(3) %regtune.lds.slot0, i32 [[SLOT:[0-9]]]
; CHECK-NEXT:    store volatile i32 [[OL]], ptr addrspace(3) [[A0]], align 4
; CHECK-NEXT:    [[OH:%.*]] = call i32 @llvm.nvvm.d2i.hi(double %om)
; CHECK-NEXT:    [[A1:%.*]] = getelementptr inbounds [256 x i32], ptr addrspace(3) %regtune.lds.slot0, i32 {{[0-9]}}
; CHECK-NEXT:    store volatile i32 [[OH]], ptr addrspace(3) [[A1]], align 4
; CHECK-NEXT:    %k = fptosi double %b to i64
; CHECK-NEXT:    [[KD:%.*]] = bitcast i64 %k to double
; CHECK-NEXT:    [[KL:%.*]] = call i32 @llvm.nvvm.d2i.lo(double [[KD]])
; CHECK:         [[KH:%.*]] = call i32 @llvm.nvvm.d2i.hi(double [[KD]])
; CHECK:         %q = getelementptr inbounds double, ptr addrspace(1) %out, i32 %tid
; CHECK-NEXT:    [[QI:%.*]] = ptrtoint ptr addrspace(1) %q to i64
; CHECK-NEXT:    [[QD:%.*]] = bitcast i64 [[QI]] to double
; CHECK-NEXT:    [[QL:%.*]] = call i32 @llvm.nvvm.d2i.lo(double [[QD]])
; CHECK-NOT:     <2 x i32>
; CHECK:         %s7 = fadd double %s6, %x7
; CHECK-NEXT:    [[R0:%.*]] = getelementptr inbounds [256 x i32], ptr addrspace(3) %regtune.lds.slot0, i32 [[SLOT]]
; CHECK-NEXT:    [[W0:%.*]] = load volatile i32, ptr addrspace(3) [[R0]], align 4
; CHECK-NEXT:    [[R1:%.*]] = getelementptr inbounds [256 x i32], ptr addrspace(3) %regtune.lds.slot0, i32 {{[0-9]}}
; CHECK-NEXT:    [[W1:%.*]] = load volatile i32, ptr addrspace(3) [[R1]], align 4
; CHECK-NEXT:    %om.reload = call double @llvm.nvvm.lohi.i2d(i32 [[W0]], i32 [[W1]])
; CHECK-NEXT:    %c = fmul double %s7, %om.reload
; CHECK:         [[KJ:%.*]] = call double @llvm.nvvm.lohi.i2d(
; CHECK-NEXT:    %k.reload = bitcast double [[KJ]] to i64
; CHECK-NEXT:    %kd = sitofp i64 %k.reload to double
; CHECK:         [[QJ:%.*]] = call double @llvm.nvvm.lohi.i2d(
; CHECK-NEXT:    [[QB:%.*]] = bitcast double [[QJ]] to i64
; CHECK-NEXT:    %q.reload = inttoptr i64 [[QB]] to ptr addrspace(1)
; CHECK-NEXT:    store double %d, ptr addrspace(1) %q.reload, align 8
; CHECK-NOT:     <2 x i32>

; Every word stored comes from a 32-bit register, none from a 64-bit one.
; PTX-LABEL: .entry halves(
; LLVM 19's llc spells the 32-bit accesses .u32, LLVM 22's .b32.
; PTX-COUNT-6: st.volatile.shared.{{[bu]}}32 [{{%rd[0-9]+(\+[0-9]+)?}}], %r{{[0-9]+}};
; PTX-NOT:     st.volatile.shared.{{[bu]}}32 {{.*}}, %rd
; PTX-COUNT-6: ld.volatile.shared.{{[bu]}}32 %r{{[0-9]+}}, [{{%rd[0-9]+(\+[0-9]+)?}}];
; PTX-NOT:     .shared.{{[bu]}}32 {{.*}}%rd{{[0-9]+}};
define ptx_kernel void @halves(ptr addrspace(1) %in, ptr addrspace(1) %out) #0 {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %pa = getelementptr inbounds double, ptr addrspace(1) %in, i32 %tid
  %a = load double, ptr addrspace(1) %pa, align 8
  %pb = getelementptr inbounds double, ptr addrspace(1) %pa, i32 256
  %b = load double, ptr addrspace(1) %pb, align 8
  %om = fsub double 1.000000e+00, %a
  %k = fptosi double %b to i64
  %q = getelementptr inbounds double, ptr addrspace(1) %out, i32 %tid
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
  %c = fmul double %s7, %om
  %kd = sitofp i64 %k to double
  %d = fmul double %c, %kd
  store double %d, ptr addrspace(1) %q, align 8
  ret void
}

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()

attributes #0 = { nounwind "nvvm.maxntid"="256" "target-cpu"="sm_90" }
