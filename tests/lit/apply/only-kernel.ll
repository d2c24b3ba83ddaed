; RUN: env REGTUNE_DECISIONS=%inputs/only-kernel.json REGTUNE_ONLY_KERNEL=sinks \
; RUN:   %opt -passes='regtune-apply<early>' -S %s | FileCheck %s --check-prefix=EARLY
; RUN: env REGTUNE_DECISIONS=%inputs/only-kernel.json REGTUNE_ONLY_KERNEL=sinks \
; RUN:   %opt -passes='regtune-apply' -S %s | FileCheck %s --check-prefix=BOTH
; RUN: env REGTUNE_DECISIONS=%inputs/only-kernel.json REGTUNE_ONLY_KERNEL=no_such_kernel \
; RUN:   %opt -passes='regtune-apply<early>' -S %s | FileCheck %s --check-prefix=NONE
; RUN: env REGTUNE_DECISIONS=%inputs/only-kernel.json \
; RUN:   %opt -passes='regtune-apply' -S %s | FileCheck %s --check-prefix=WHOLE
;
; A one-kernel build (the tuner's variants): with REGTUNE_ONLY_KERNEL, the
; other kernels become declarations once the decisions are applied. @sinks
; decided sink and @plain did not; @shared, which both reach, is therefore
; not sunk in the whole file, and stays unsunk in @sinks's one-kernel build
; (regtune-no-sink); @sinks_only is sunk in both. A symbol that names no
; kernel drops nothing.

target triple = "amdgcn-amd-amdhsa"

; EARLY-LABEL: define amdgpu_kernel void @sinks(
; EARLY-LABEL: declare amdgpu_kernel void @plain(
; EARLY-LABEL: define internal void @sinks_only(
; EARLY-NOT:   regtune-no-sink
; EARLY-LABEL: define internal void @shared(
; EARLY-SAME:    #[[NOSINK:[0-9]+]]
; EARLY: attributes #[[NOSINK]] = { noinline nounwind "regtune-no-sink" "target-cpu"="gfx90a" }

; Sunk: the load moves into the block of its only use.
; BOTH-LABEL: define internal void @sinks_only(
; BOTH:       then:
; BOTH-NEXT:    %v = load float
; BOTH-LABEL: define internal void @shared(
; BOTH-NEXT:  entry:
; BOTH-NEXT:    %v = load float
; WHOLE-LABEL: define internal void @sinks_only(
; WHOLE:       then:
; WHOLE-NEXT:    %v = load float
; WHOLE-LABEL: define internal void @shared(
; WHOLE-NEXT:  entry:
; WHOLE-NEXT:    %v = load float

; NONE: define amdgpu_kernel void @sinks(
; NONE: define amdgpu_kernel void @plain(
; NONE-NOT: regtune-no-sink

define amdgpu_kernel void @sinks(ptr addrspace(1) %in, ptr addrspace(1) %out, i32 %n) #0 {
  call void @sinks_only(ptr addrspace(1) %in, ptr addrspace(1) %out, i32 %n)
  call void @shared(ptr addrspace(1) %in, ptr addrspace(1) %out, i32 %n)
  ret void
}

define amdgpu_kernel void @plain(ptr addrspace(1) %in, ptr addrspace(1) %out, i32 %n) #0 {
  call void @shared(ptr addrspace(1) %in, ptr addrspace(1) %out, i32 %n)
  ret void
}

define internal void @sinks_only(ptr addrspace(1) %in, ptr addrspace(1) %out, i32 %n) #1 {
entry:
  %v = load float, ptr addrspace(1) %in
  %w = fmul float %v, 3.0
  %c = icmp sgt i32 %n, 0
  br i1 %c, label %then, label %exit
then:
  store float %w, ptr addrspace(1) %out
  br label %exit
exit:
  store float 0.0, ptr addrspace(1) %in
  ret void
}

define internal void @shared(ptr addrspace(1) %in, ptr addrspace(1) %out, i32 %n) #1 {
entry:
  %v = load float, ptr addrspace(1) %in
  %w = fmul float %v, 3.0
  %c = icmp sgt i32 %n, 0
  br i1 %c, label %then, label %exit
then:
  store float %w, ptr addrspace(1) %out
  br label %exit
exit:
  store float 0.0, ptr addrspace(1) %in
  ret void
}

attributes #0 = { nounwind "target-cpu"="gfx90a" }
attributes #1 = { noinline nounwind "target-cpu"="gfx90a" }
