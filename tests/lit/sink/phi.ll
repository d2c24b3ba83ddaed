; RUN: %opt -passes=regtune-sink -S %s | FileCheck %s
;
; Verify that a PHI is _not_ moved, even when its only use is in a
; successor block: a PHI belongs to the head of its block.

target triple = "amdgcn-amd-amdhsa"

; CHECK-LABEL: define amdgpu_kernel void @phi_stays(
; CHECK:       join:
; CHECK-NEXT:    %p = phi float [ 1.000000e+00, %entry ], [ 2.000000e+00, %else ]
; CHECK:       then:
; CHECK-NEXT:    store float %p
define amdgpu_kernel void @phi_stays(ptr addrspace(1) %out, i32 %n, i32 %m) {
entry:
  %c = icmp sgt i32 %n, 0
  br i1 %c, label %join, label %else
else:
  br label %join
join:
  %p = phi float [ 1.0, %entry ], [ 2.0, %else ]
  %d = icmp sgt i32 %m, 0
  br i1 %d, label %then, label %exit
then:
  store float %p, ptr addrspace(1) %out
  br label %exit
exit:
  ret void
}
