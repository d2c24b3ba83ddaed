; RUN: %opt -passes=regtune-sink -S %s | FileCheck %s
;
; A store moves up, within its block, to just after the values it stores
; are ready, when that ends one of their live ranges earlier; it passes
; pure instructions and loads from memory it provably does not write.

target triple = "amdgcn-amd-amdhsa"

; %x dies at the store: the store moves up past the unrelated load and
; arithmetic, right after %x.
; CHECK-LABEL: define amdgpu_kernel void @hoisted(
; CHECK:         %x = fmul float %y, %y
; CHECK-NEXT:    store float %x, ptr addrspace(1) %a
; CHECK-NEXT:    %w = load float, ptr addrspace(1) %b
define amdgpu_kernel void @hoisted(ptr addrspace(1) noalias %a, ptr addrspace(1) noalias %b, ptr addrspace(1) noalias %out, float %y) {
  %x = fmul float %y, %y
  %w = load float, ptr addrspace(1) %b
  %w2 = fmul float %w, %w
  store float %x, ptr addrspace(1) %a
  store float %w2, ptr addrspace(1) %out
  ret void
}

; Verify that a store is _not_ moved above a load that may read what it
; writes (the parameters may alias).
; CHECK-LABEL: define amdgpu_kernel void @not_above_aliasing_load(
; CHECK:         %w = load float, ptr addrspace(1) %b
; CHECK-NEXT:    store float %x, ptr addrspace(1) %a
define amdgpu_kernel void @not_above_aliasing_load(ptr addrspace(1) %a, ptr addrspace(1) %b, ptr addrspace(1) noalias %out, float %y) {
  %x = fmul float %y, %y
  %w = load float, ptr addrspace(1) %b
  store float %x, ptr addrspace(1) %a
  store float %w, ptr addrspace(1) %out
  ret void
}

; Verify that a store is _not_ moved above another store that may write the
; same memory, nor above a call.
; CHECK-LABEL: define amdgpu_kernel void @not_above_store_or_call(
; CHECK:         store float 0.000000e+00, ptr addrspace(1) %b
; CHECK-NEXT:    store float %x, ptr addrspace(1) %a
; CHECK:         call void @effect()
; CHECK-NEXT:    store float %z, ptr addrspace(1) %out
define amdgpu_kernel void @not_above_store_or_call(ptr addrspace(1) %a, ptr addrspace(1) %b, ptr addrspace(1) noalias %out, float %y) {
  %x = fmul float %y, %y
  store float 0.0, ptr addrspace(1) %b
  store float %x, ptr addrspace(1) %a
  %z = fmul float %y, 3.0
  call void @effect()
  store float %z, ptr addrspace(1) %out
  ret void
}

; Verify that a store whose values live on anyway is _not_ moved: nothing
; would be gained.
; CHECK-LABEL: define amdgpu_kernel void @no_gain(
; CHECK:         %w = load float, ptr addrspace(1) %b
; CHECK-NEXT:    store float %x, ptr addrspace(1) %a
; CHECK-NEXT:    %r = fadd float %x, %w
define amdgpu_kernel void @no_gain(ptr addrspace(1) noalias %a, ptr addrspace(1) noalias %b, ptr addrspace(1) noalias %out, float %y) {
  %x = fmul float %y, %y
  %w = load float, ptr addrspace(1) %b
  store float %x, ptr addrspace(1) %a
  %r = fadd float %x, %w
  store float %r, ptr addrspace(1) %out
  ret void
}

declare void @effect()
