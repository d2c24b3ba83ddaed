; RUN: %opt -disable-output -passes=regtune-noalias-rank %s | FileCheck %s --match-full-lines
;
; regtune-noalias-rank prints one JSON line per kernel, in module order, for
; the driver to read; functions that are not kernels get none. (These
; kernels have no pointer parameters, so nothing to rank.)

target triple = "amdgcn-amd-amdhsa"

; CHECK:      {"kernel":"first","candidates":[]}
; CHECK-NEXT: {"kernel":"_Z6secondi","candidates":[]}
; CHECK-NOT:  helper

define amdgpu_kernel void @first() {
  ret void
}

define void @helper(i32 %n) {
  ret void
}

define amdgpu_kernel void @_Z6secondi(i32 %n) {
  ret void
}
