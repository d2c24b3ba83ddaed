; RUN: %opt -passes=regtune-sink -S %s | FileCheck %s
;
; Verify that a load is _not_ moved across a store that may write its
; location: two pointer parameters without `noalias` may point at the same
; memory, in the same block or in a loop on the way to the use.

target triple = "amdgcn-amd-amdhsa"

; CHECK-LABEL: define amdgpu_kernel void @store_between(
; CHECK:         %v = load float, ptr addrspace(1) %a
; CHECK-NEXT:    store float 1.000000e+00, ptr addrspace(1) %b
define amdgpu_kernel void @store_between(ptr addrspace(1) %a, ptr addrspace(1) %b, float %y) {
  %v = load float, ptr addrspace(1) %a
  store float 1.0, ptr addrspace(1) %b
  %t0 = fadd float %y, 1.0
  %t1 = fmul float %t0, %t0
  %t2 = fmul float %t1, %t0
  %r = fadd float %v, %t2
  store float %r, ptr addrspace(1) %a
  ret void
}

; The loop writes through %b: %v stays above it.
; CHECK-LABEL: define amdgpu_kernel void @store_in_loop(
; CHECK:       entry:
; CHECK-NEXT:    %v = load float, ptr addrspace(1) %a
; CHECK-NEXT:    br label %loop
; CHECK:       exit:
; CHECK-NOT:     load
; CHECK:         ret void
define amdgpu_kernel void @store_in_loop(ptr addrspace(1) %a, ptr addrspace(1) %b, i32 %n) {
entry:
  %v = load float, ptr addrspace(1) %a
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %i.next, %loop ]
  %p = getelementptr float, ptr addrspace(1) %b, i32 %i
  store float 0.0, ptr addrspace(1) %p
  %i.next = add nuw nsw i32 %i, 1
  %done = icmp eq i32 %i.next, %n
  br i1 %done, label %exit, label %loop
exit:
  %w = fmul float %v, 2.0
  store float %w, ptr addrspace(1) %a
  ret void
}

; A store on the other path into the use's block also counts: the load may
; move into %then (the only path there is store-free) but not to %join,
; which is reached through %else's store.
; CHECK-LABEL: define amdgpu_kernel void @store_on_other_path(
; CHECK:       entry:
; CHECK-NEXT:    %v = load float, ptr addrspace(1) %a
; CHECK-NEXT:    %c = icmp
; CHECK:       join:
; CHECK-NOT:     load
; CHECK:         ret void
define amdgpu_kernel void @store_on_other_path(ptr addrspace(1) %a, ptr addrspace(1) %b, i32 %n) {
entry:
  %v = load float, ptr addrspace(1) %a
  %c = icmp sgt i32 %n, 0
  br i1 %c, label %then, label %else
then:
  br label %join
else:
  store float 0.0, ptr addrspace(1) %b
  br label %join
join:
  %w = fmul float %v, 2.0
  store float %w, ptr addrspace(1) %a
  ret void
}

; The store sits in the block of the use, before it: the load still moves
; into %then, but no further than the store.
; CHECK-LABEL: define amdgpu_kernel void @store_before_use(
; CHECK:       entry:
; CHECK-NEXT:    %c = icmp
; CHECK:       then:
; CHECK-NEXT:    %v = load float, ptr addrspace(1) %a
; CHECK-NEXT:    store float 0.000000e+00, ptr addrspace(1) %b
; CHECK-NEXT:    %w = fmul float %v, 2.000000e+00
define amdgpu_kernel void @store_before_use(ptr addrspace(1) %a, ptr addrspace(1) %b, ptr addrspace(1) noalias %out, i32 %n) {
entry:
  %v = load float, ptr addrspace(1) %a
  %c = icmp sgt i32 %n, 0
  br i1 %c, label %then, label %exit
then:
  store float 0.0, ptr addrspace(1) %b
  %w = fmul float %v, 2.0
  store float %w, ptr addrspace(1) %out
  br label %exit
exit:
  ret void
}
