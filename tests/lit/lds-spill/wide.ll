; RUN: %opt -passes='regtune-lds-spill<6>' -S %s | FileCheck %s
; RUN: %opt -passes='regtune-lds-spill<5>' -S %s | FileCheck %s --check-prefix=FIVE
;
; A 64-bit value takes two consecutive slots, its low half in the first:
; a double and an i64 are stored as <2 x i32>, a 64-bit pointer through
; ptrtoint, and put back together the same way before the use.

target triple = "amdgcn-amd-amdhsa"

; CHECK: @__regtune_lds_spill.wide = internal addrspace(3) global [6 x [256 x i32]] undef, align 4

; CHECK-LABEL: define amdgpu_kernel void @wide(
; CHECK:         %q = getelementptr inbounds float, ptr addrspace(1) %out, i32 %tid
; CHECK-NEXT:    [[QI:%.*]] = ptrtoint ptr addrspace(1) %q to i64
; CHECK-NEXT:    [[QV:%.*]] = bitcast i64 [[QI]] to <2 x i32>
; CHECK-NEXT:    [[Q0:%.*]] = extractelement <2 x i32> [[QV]], i32 0
; CHECK-NEXT:    [[S0:%.*]] = getelementptr inbounds [256 x i32], ptr addrspace(3) %regtune.lds.slot0, i32 0
; CHECK-NEXT:    store volatile i32 [[Q0]], ptr addrspace(3) [[S0]], align 4
; CHECK-NEXT:    [[Q1:%.*]] = extractelement <2 x i32> [[QV]], i32 1
; CHECK-NEXT:    [[S1:%.*]] = getelementptr inbounds [256 x i32], ptr addrspace(3) %regtune.lds.slot0, i32 1
; CHECK-NEXT:    store volatile i32 [[Q1]], ptr addrspace(3) [[S1]], align 4
; CHECK:         %a = load double, ptr addrspace(1) %pd, align 8
; CHECK-NEXT:    [[AV:%.*]] = bitcast double %a to <2 x i32>
; CHECK-NEXT:    [[A0:%.*]] = extractelement <2 x i32> [[AV]], i32 0
; CHECK-NEXT:    [[S2:%.*]] = getelementptr inbounds [256 x i32], ptr addrspace(3) %regtune.lds.slot0, i32 2
; CHECK-NEXT:    store volatile i32 [[A0]], ptr addrspace(3) [[S2]], align 4
; CHECK-NEXT:    [[A1:%.*]] = extractelement <2 x i32> [[AV]], i32 1
; CHECK-NEXT:    [[S3:%.*]] = getelementptr inbounds [256 x i32], ptr addrspace(3) %regtune.lds.slot0, i32 3
; CHECK-NEXT:    store volatile i32 [[A1]], ptr addrspace(3) [[S3]], align 4
; CHECK:         %k = load i64, ptr addrspace(1) %pk, align 8
; CHECK-NEXT:    [[KV:%.*]] = bitcast i64 %k to <2 x i32>
; CHECK:         store volatile i32 {{%.*}}, ptr addrspace(3) {{%.*}}, align 4
; CHECK:         store volatile i32 {{%.*}}, ptr addrspace(3) {{%.*}}, align 4
; CHECK-NOT:     store volatile
; The reloads: two words, one vector, one bitcast (and inttoptr).
; CHECK:         [[L2:%.*]] = getelementptr inbounds [256 x i32], ptr addrspace(3) %regtune.lds.slot0, i32 2
; CHECK-NEXT:    [[W2:%.*]] = load volatile i32, ptr addrspace(3) [[L2]], align 4
; CHECK-NEXT:    [[V0:%.*]] = insertelement <2 x i32> poison, i32 [[W2]], i32 0
; CHECK-NEXT:    [[L3:%.*]] = getelementptr inbounds [256 x i32], ptr addrspace(3) %regtune.lds.slot0, i32 3
; CHECK-NEXT:    [[W3:%.*]] = load volatile i32, ptr addrspace(3) [[L3]], align 4
; CHECK-NEXT:    [[V1:%.*]] = insertelement <2 x i32> [[V0]], i32 [[W3]], i32 1
; CHECK-NEXT:    %a.reload = bitcast <2 x i32> [[V1]] to double
; CHECK-NEXT:    %sa = fmul double %ext, %a.reload
; CHECK:         %k.reload = bitcast <2 x i32> {{%.*}} to i64
; CHECK-NEXT:    %sk = add i64 %bits, %k.reload
; CHECK:         [[QB:%.*]] = bitcast <2 x i32> {{%.*}} to i64
; CHECK-NEXT:    %q.reload = inttoptr i64 [[QB]] to ptr addrspace(1)
; CHECK-NEXT:    store i64 %sk, ptr addrspace(1) %q.reload, align 8
define amdgpu_kernel void @wide(ptr addrspace(1) %in, ptr addrspace(1) %out, ptr addrspace(1) %dbl, ptr addrspace(1) %int) #0 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %q = getelementptr inbounds float, ptr addrspace(1) %out, i32 %tid
  %pd = getelementptr inbounds double, ptr addrspace(1) %dbl, i32 %tid
  %a = load double, ptr addrspace(1) %pd, align 8
  %pk = getelementptr inbounds i64, ptr addrspace(1) %int, i32 %tid
  %k = load i64, ptr addrspace(1) %pk, align 8
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
  %ext = fpext float %s7 to double
  %sa = fmul double %ext, %a
  %bits = bitcast double %sa to i64
  %sk = add i64 %bits, %k
  store i64 %sk, ptr addrspace(1) %q, align 8
  ret void
}

; Verify that a 64-bit value does _not_ go into the one slot left: with
; five, the pointer and the double take four, the i64 stays in registers.
; FIVE: @__regtune_lds_spill.wide = internal addrspace(3) global [4 x [256 x i32]] undef
; FIVE-LABEL: define amdgpu_kernel void @wide(
; FIVE:       %k = load i64, ptr addrspace(1) %pk, align 8
; FIVE-NEXT:  %pa = getelementptr
; FIVE:       %sk = add i64 %bits, %k{{$}}

declare i32 @llvm.amdgcn.workitem.id.x()

attributes #0 = { nounwind "amdgpu-flat-work-group-size"="1,256" "target-cpu"="gfx90a" }
