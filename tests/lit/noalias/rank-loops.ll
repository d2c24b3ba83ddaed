; RUN: %opt -disable-output -passes=regtune-noalias-rank %s | FileCheck %s --match-full-lines
;
; Loads in a loop that stores through another pointer: %coef[k] has a
; uniform address (k is the same in every lane), so once nothing can
; clobber it, it can become a scalar load (4 + 4); %u[i + k] can be hoisted
; or reordered (4); both are read-only and loaded at loop depth 1 (+1).
; %v's stores are all that is in the way of both loads (4 + 4 + 4).

target triple = "amdgcn-amd-amdhsa"

; CHECK: {"kernel":"stencil","candidates":[{"index":1,"name":"v","score":12,"reason":"its stores alone block 2 loads through other pointers"},{"index":2,"name":"coef","score":9,"reason":"1 load in loops that store through other pointers; 1 uniform load could become scalar; read-only, loaded in loops"},{"index":0,"name":"u","score":5,"reason":"1 load in loops that store through other pointers; read-only, loaded in loops"}]}

define amdgpu_kernel void @stencil(ptr addrspace(1) %u, ptr addrspace(1) %v, ptr addrspace(1) %coef, i32 %n) {
entry:
  %i = call i32 @llvm.amdgcn.workitem.id.x()
  br label %loop

loop:
  %k = phi i32 [ 0, %entry ], [ %k.next, %loop ]
  %pc = getelementptr double, ptr addrspace(1) %coef, i32 %k
  %c = load double, ptr addrspace(1) %pc
  %j = add i32 %i, %k
  %pu = getelementptr double, ptr addrspace(1) %u, i32 %j
  %x = load double, ptr addrspace(1) %pu
  %y = fmul double %c, %x
  %pv = getelementptr double, ptr addrspace(1) %v, i32 %j
  store double %y, ptr addrspace(1) %pv
  %k.next = add i32 %k, 1
  %done = icmp eq i32 %k.next, %n
  br i1 %done, label %exit, label %loop

exit:
  ret void
}

declare i32 @llvm.amdgcn.workitem.id.x()
