; RUN: %opt -disable-output -passes=regtune-noalias-rank %s | FileCheck %s --match-full-lines
;
; The IR the tuner ranks is clang's before optimisation: parameters spilled
; to allocas (through flat casts) and loaded back, accesses through helper
; functions. The ranking follows %a.coerce through its two stack slots into
; @get, sees the same address a[i] loaded there twice around a store
; through %b, and reports the source name `a`.

target triple = "amdgcn-amd-amdhsa"

; CHECK: {"kernel":"k","candidates":[{"index":0,"name":"a","score":6,"reason":"1 reload reusable across stores through other pointers"},{"index":1,"name":"b","score":6,"reason":"its stores alone block 1 load through other pointers"}]}

define amdgpu_kernel void @k(ptr addrspace(1) %a.coerce, ptr addrspace(1) %b.coerce, ptr addrspace(1) %unused.coerce, i32 %n) {
entry:
  %a = alloca ptr, addrspace(5)
  %b = alloca ptr, addrspace(5)
  %a.addr = alloca ptr, addrspace(5)
  %b.addr = alloca ptr, addrspace(5)
  %i = alloca i32, addrspace(5)
  %a.ascast = addrspacecast ptr addrspace(5) %a to ptr
  %b.ascast = addrspacecast ptr addrspace(5) %b to ptr
  %a.addr.ascast = addrspacecast ptr addrspace(5) %a.addr to ptr
  %b.addr.ascast = addrspacecast ptr addrspace(5) %b.addr to ptr
  %i.ascast = addrspacecast ptr addrspace(5) %i to ptr
  store ptr addrspace(1) %a.coerce, ptr %a.ascast
  %a1 = load ptr, ptr %a.ascast
  store ptr addrspace(1) %b.coerce, ptr %b.ascast
  %b1 = load ptr, ptr %b.ascast
  store ptr %a1, ptr %a.addr.ascast
  store ptr %b1, ptr %b.addr.ascast
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  store i32 %tid, ptr %i.ascast
  %0 = load ptr, ptr %a.addr.ascast
  %1 = load i32, ptr %i.ascast
  %x = call float @get(ptr %0, i32 %1)
  %2 = load ptr, ptr %b.addr.ascast
  %3 = load i32, ptr %i.ascast
  %idx = sext i32 %3 to i64
  %pb = getelementptr inbounds float, ptr %2, i64 %idx
  store float %x, ptr %pb
  %4 = load ptr, ptr %a.addr.ascast
  %5 = load i32, ptr %i.ascast
  %y = call float @get(ptr %4, i32 %5)
  %6 = load ptr, ptr %b.addr.ascast
  %7 = load i32, ptr %i.ascast
  %idx2 = sext i32 %7 to i64
  %pb2 = getelementptr inbounds float, ptr %6, i64 %idx2
  store float %y, ptr %pb2
  ret void
}

define linkonce_odr float @get(ptr %p, i32 %i) {
entry:
  %p.addr = alloca ptr, addrspace(5)
  %i.addr = alloca i32, addrspace(5)
  %p.addr.ascast = addrspacecast ptr addrspace(5) %p.addr to ptr
  %i.addr.ascast = addrspacecast ptr addrspace(5) %i.addr to ptr
  store ptr %p, ptr %p.addr.ascast
  store i32 %i, ptr %i.addr.ascast
  %0 = load ptr, ptr %p.addr.ascast
  %1 = load i32, ptr %i.addr.ascast
  %idx = sext i32 %1 to i64
  %q = getelementptr inbounds float, ptr %0, i64 %idx
  %v = load float, ptr %q
  ret float %v
}

declare i32 @llvm.amdgcn.workitem.id.x()
