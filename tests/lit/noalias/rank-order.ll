; RUN: %opt -disable-output -passes=regtune-noalias-rank %s | FileCheck %s --match-full-lines
;
; The ranking of a small kernel's pointer parameters, best first:
;   - %in is loaded, stored through %out and %log, and loaded again: noalias
;     on %in lets GVN reuse the first load (6);
;   - %out is only stored to, but its store is all that keeps the load of
;     %lut in place (1), as is that load itself (1); equal scores go by index;
;   - %log is only stored to, and never alone in anyone's way: absent;
;   - %unused is never dereferenced: absent.

target triple = "amdgcn-amd-amdhsa"

; CHECK: {"kernel":"k","candidates":[{"index":0,"name":"in","score":6,"reason":"1 reload reusable across stores through other pointers"},{"index":1,"name":"out","score":1,"reason":"its stores alone block 1 load through other pointers"},{"index":4,"name":"lut","score":1,"reason":"1 load could move above stores through other pointers"}]}

define amdgpu_kernel void @k(ptr addrspace(1) %in, ptr addrspace(1) %out, ptr addrspace(1) %log, ptr addrspace(1) %unused, ptr addrspace(1) %lut) {
  %i = call i32 @llvm.amdgcn.workitem.id.x()
  %pin = getelementptr float, ptr addrspace(1) %in, i32 %i
  %pout = getelementptr float, ptr addrspace(1) %out, i32 %i
  %plog = getelementptr float, ptr addrspace(1) %log, i32 %i
  %plut = getelementptr float, ptr addrspace(1) %lut, i32 %i
  %x = load float, ptr addrspace(1) %pin
  store float %x, ptr addrspace(1) %pout
  %w = load float, ptr addrspace(1) %plut
  store float %w, ptr addrspace(1) %plog
  %y = load float, ptr addrspace(1) %pin
  %z = fadd float %y, %w
  store float %z, ptr addrspace(1) %pout
  ret void
}

declare i32 @llvm.amdgcn.workitem.id.x()
