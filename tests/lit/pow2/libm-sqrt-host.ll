; RUN: %opt -passes=regtune-pow2 -S %s | FileCheck %s
;
; Verify that C's pow(x, 0.5) is _not_ made llvm.sqrt on a host, even with
; nsz and ninf: pow(x < 0, 0.5) sets errno there and llvm.sqrt does not.
; (Device code has no errno; see sqrt.ll.) pow(x, 2.0) -> x * x still holds.

target triple = "x86_64-unknown-linux-gnu"

; CHECK-LABEL: define double @host_sqrt(
; CHECK-NEXT:    %r = call ninf nsz double @pow(double %x, double 5.000000e-01)
define double @host_sqrt(double %x) {
  %r = call ninf nsz double @pow(double %x, double 0.5)
  ret double %r
}

; CHECK-LABEL: define double @host_square(
; CHECK-NEXT:    [[SQ:%.*]] = fmul double %x, %x
define double @host_square(double %x) {
  %r = call double @pow(double %x, double 2.0)
  ret double %r
}

declare double @pow(double, double)
