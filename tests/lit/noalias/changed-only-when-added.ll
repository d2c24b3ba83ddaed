; RUN: echo '{"version": 1, "kernels": {' > %t.json
; RUN: echo '"gfx90a/fresh/h": {"symbol": "fresh", "arch": "gfx90a", "input_hash": "h", "transforms": {"noalias": [{"index": 0}, {"index": 1}]}},' >> %t.json
; RUN: echo '"gfx90a/done/h": {"symbol": "done", "arch": "gfx90a", "input_hash": "h", "transforms": {"noalias": [{"index": 0}, {"index": 1}]}}}}' >> %t.json
; RUN: env REGTUNE_DECISIONS=%t.json REGTUNE_VERBOSE=1 %opt -passes=regtune-apply -S %s 2>&1 | FileCheck %s
;
; The noalias transform reports a change only when it added an attribute:
; through regtune-apply (which notes each change under REGTUNE_VERBOSE),
; @fresh gets noalias on both parameters and is reported; @done, whose
; pointer parameters are already noalias and whose parameter 1 is not a
; pointer, is not.

target triple = "amdgcn-amd-amdhsa"

; CHECK-NOT:   noalias changed done
; CHECK:       regtune: noalias changed fresh
; CHECK-NOT:   noalias changed done

; CHECK-LABEL: define amdgpu_kernel void @fresh(
; CHECK-SAME:    ptr addrspace(1) noalias %dst, ptr addrspace(1) noalias %src)
define amdgpu_kernel void @fresh(ptr addrspace(1) %dst, ptr addrspace(1) %src) #0 {
  %x = load float, ptr addrspace(1) %src
  store float %x, ptr addrspace(1) %dst
  ret void
}

; CHECK-LABEL: define amdgpu_kernel void @done(
; CHECK-SAME:    ptr addrspace(1) noalias %dst, i32 %n)
define amdgpu_kernel void @done(ptr addrspace(1) noalias %dst, i32 %n) #0 {
  store i32 %n, ptr addrspace(1) %dst
  ret void
}

attributes #0 = { "target-cpu"="gfx90a" }
