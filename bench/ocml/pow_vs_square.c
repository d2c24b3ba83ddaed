/* Counts how often ocml's pow(x, 2.0) and pown(x, 2) differ from x * x (see pow-rounding.sh). */
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
double __ocml_pow_f64(double, double);
double __ocml_pown_f64(double, int);
int rt_class(double x, int mask) {
  int c = 0; int s = signbit(x);
  switch (fpclassify(x)) {
    case FP_NAN: c = 3; break;          /* bits 0,1: snan,qnan */
    case FP_INFINITE: c = s ? 1<<2 : 1<<9; break;
    case FP_NORMAL: c = s ? 1<<3 : 1<<8; break;
    case FP_SUBNORMAL: c = s ? 1<<4 : 1<<7; break;
    case FP_ZERO: c = s ? 1<<5 : 1<<6; break;
  }
  return (c & mask) != 0;
}
double rt_fract(double x) { double f = x - floor(x); return f < 0x1.fffffffffffffp-1 ? f : 0x1.fffffffffffffp-1; }
int rt_frexp_exp(double x) { int e; frexp(x, &e); return e; }
double rt_frexp_mant(double x) { int e; return frexp(x, &e); }
double rt_rcp(double x) { return 1.0 / x; }
static uint64_t st = 88172645463325252ull;
static uint64_t rnd(void) { st ^= st << 13; st ^= st >> 7; st ^= st << 17; return st; }
int main(void) {
  long n = 1000000, diff = 0, ndiff = 0;
  for (long i = 0; i < n; i++) {
    double x = ((double)(rnd() >> 11) / 9007199254740992.0) * 2.0 - 1.0;
    double p = __ocml_pow_f64(x, 2.0), r = __ocml_pown_f64(x, 2), q = x * x;
    if (memcmp(&p, &q, 8)) diff++;
    if (memcmp(&r, &q, 8)) ndiff++;
  }
  printf("ocml pow(x,2.0) != x*x for %ld of %ld random x in [-1,1) (%.2f%%)\n", diff, n, 100.0 * diff / n);
  printf("ocml pown(x,2) != x*x for %ld of %ld random x in [-1,1) (%.2f%%)\n", ndiff, n, 100.0 * ndiff / n);
  printf("sanity: pow(3,2)=%.17g pow(2,0.5)=%.17g\n", __ocml_pow_f64(3.0, 2.0), __ocml_pow_f64(2.0, 0.5));
}
