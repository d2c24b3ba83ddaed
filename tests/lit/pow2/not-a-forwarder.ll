; RUN: %opt -passes=regtune-pow2 -S %s | FileCheck %s
;
; Verify that calls to functions that only look like pow wrappers are _not_
; rewritten: one that swaps its arguments, one that does more than forward,
; and one whose body another module may replace (weak).

target triple = "amdgcn-amd-amdhsa"

; CHECK-LABEL: define double @callers(
; CHECK-NEXT:    %a = call double @swapped(double %x, double 2.000000e+00)
; CHECK-NEXT:    %b = call double @side_effect(double %x, double 2.000000e+00)
; CHECK-NEXT:    %c = call double @weak_wrapper(double %x, double 2.000000e+00)
define double @callers(double %x, ptr %p) {
  %a = call double @swapped(double %x, double 2.0)
  %b = call double @side_effect(double %x, double 2.0)
  %c = call double @weak_wrapper(double %x, double 2.0)
  %ab = fadd double %a, %b
  %abc = fadd double %ab, %c
  ret double %abc
}

define internal double @swapped(double %x, double %y) {
  %r = call double @__ocml_pow_f64(double %y, double %x)
  ret double %r
}

@g = global double 0.0

define internal double @side_effect(double %x, double %y) {
  store double %x, ptr @g
  %r = call double @__ocml_pow_f64(double %x, double %y)
  ret double %r
}

define weak double @weak_wrapper(double %x, double %y) {
  %r = call double @__ocml_pow_f64(double %x, double %y)
  ret double %r
}

declare double @__ocml_pow_f64(double, double)
