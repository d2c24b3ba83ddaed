; RUN: %opt -passes=regtune-sink -S %s | FileCheck %s
;
; Verify that functions the pass does not reason about are left alone:
; `optnone` ones, ones with exception handling (`invoke`), and moves out of
; a block in a function with an irreducible cycle (natural loops do not
; describe it, so "never into a loop" could not be checked).

target triple = "amdgcn-amd-amdhsa"

; CHECK-LABEL: define float @optnone(
; CHECK:       entry:
; CHECK-NEXT:    %x = fmul float %a, %a
define float @optnone(float %a, i1 %c) noinline optnone {
entry:
  %x = fmul float %a, %a
  br i1 %c, label %then, label %exit
then:
  %y = fadd float %x, %a
  ret float %y
exit:
  ret float %a
}

; CHECK-LABEL: define float @with_invoke(
; CHECK:       entry:
; CHECK-NEXT:    %x = fmul float %a, %a
define float @with_invoke(float %a, i1 %c) personality ptr @personality {
entry:
  %x = fmul float %a, %a
  invoke void @may_throw() to label %next unwind label %pad
next:
  br i1 %c, label %then, label %exit
then:
  %y = fadd float %x, %a
  ret float %y
exit:
  ret float %a
pad:
  %lp = landingpad { ptr, i32 } cleanup
  resume { ptr, i32 } %lp
}

; %a and %b enter the cycle through two different blocks.
; CHECK-LABEL: define float @irreducible(
; CHECK:       entry:
; CHECK-NEXT:    %x = fmul float %v, %v
; CHECK:       exit:
; CHECK-NEXT:    %y = fadd float %x, %v
define float @irreducible(float %v, i1 %c, i1 %d) {
entry:
  %x = fmul float %v, %v
  br i1 %c, label %a, label %b
a:
  br i1 %d, label %b, label %exit
b:
  br i1 %d, label %a, label %exit
exit:
  %y = fadd float %x, %v
  ret float %y
}

declare void @may_throw()
declare i32 @personality(...)
