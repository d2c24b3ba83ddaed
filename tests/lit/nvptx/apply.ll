; RUN: env REGTUNE_DECISIONS=%S/Inputs/decisions.json %opt -passes=regtune-apply -S %s | FileCheck %s --check-prefixes=CHECK,%llvm
;
; regtune-apply matches NVPTX kernels by symbol and by "target-cpu"="sm_90":
; @tuned gets pow2 (its pow allows approximate functions), the register cap
; for 48 warps per SM and the block size 256. @plain's entry is for gfx90a,
; another target: it stays plain. (LLVM 19 reads the register cap and the
; block size from !nvvm.annotations: they go there.)

target triple = "nvptx64-nvidia-cuda"

; CHECK-LABEL: define ptx_kernel void @tuned(
; CHECK-NEXT:    [[SQ:%.*]] = fmul contract afn double %x, %x
; CHECK-NEXT:    store double [[SQ]], ptr %p
define ptx_kernel void @tuned(ptr %p, double %x) #0 {
  %r = call contract afn double @__nv_pow(double %x, double 2.0)
  store double %r, ptr %p
  ret void
}

; CHECK-LABEL: define ptx_kernel void @plain(
; CHECK-NEXT:    call contract double @__nv_pow(double %x, double 2.000000e+00)
define ptx_kernel void @plain(ptr %p, double %x) #0 {
  %r = call contract double @__nv_pow(double %x, double 2.0)
  store double %r, ptr %p
  ret void
}

declare double @__nv_pow(double, double)

attributes #0 = { nounwind "target-cpu"="sm_90" }

; LLVM22-DAG: attributes {{#[0-9]+}} = { nounwind "nvvm.maxnreg"="40" "nvvm.maxntid"="256" "target-cpu"="sm_90" }
; LLVM22-DAG: attributes {{#[0-9]+}} = { nounwind "target-cpu"="sm_90" }

; LLVM19:      attributes #0 = { nounwind "target-cpu"="sm_90" }
; LLVM19-NOT:  attributes
; LLVM19:      !nvvm.annotations = !{!0, !1}
; LLVM19:      !0 = !{ptr @tuned, !"maxnreg", i32 40}
; LLVM19-NEXT: !1 = !{ptr @tuned, !"maxntidx", i32 256}
; LLVM19-NOT:  @plain
