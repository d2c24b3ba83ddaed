; RUN: %opt -passes=regtune-pow2 -S %s | FileCheck %s
;
; Verify that calls in strict floating-point code are _not_ rewritten: an
; fmul would ignore the dynamic rounding mode the function may set.

target triple = "amdgcn-amd-amdhsa"

; CHECK-LABEL: define double @strict(
; CHECK-NEXT:    %r = call double @__ocml_pow_f64(double %x, double 2.000000e+00) #
define double @strict(double %x) strictfp {
  %r = call double @__ocml_pow_f64(double %x, double 2.0) strictfp
  ret double %r
}

declare double @__ocml_pow_f64(double, double)
