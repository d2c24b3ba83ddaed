// Included first (-include) in every CUDA translation unit that
// bench/calibrate/corpus.py builds with clang.
//
// nvcc's CUDA headers declare min() and max() for host code as well as for
// device code (crt/math_functions.hpp, `static inline __host__ __device__`).
// clang's CUDA wrapper reads that header with __host__ poisoned, so under
// clang only the device overloads exist and host code that calls min or max
// on integers or floats fails to compile ("no matching function for call to
// 'min'"). These are nvcc's host overloads (same argument and result types);
// clang tells host from device overloads by their attributes (spelled out:
// regtune recompiles device bitcode with the same flags, without the CUDA
// wrapper that defines __host__).
#pragma once
#if defined(__clang__) && defined(__CUDA__) && defined(__cplusplus)
#define REGTUNE_COMPAT_MINMAX(T, U, R)                                                                  \
  static inline __attribute__((host)) R min(const T a, const U b) { return (R)a < (R)b ? (R)a : (R)b; } \
  static inline __attribute__((host)) R max(const T a, const U b) { return (R)a > (R)b ? (R)a : (R)b; }
REGTUNE_COMPAT_MINMAX(int, int, int)
REGTUNE_COMPAT_MINMAX(unsigned int, unsigned int, unsigned int)
REGTUNE_COMPAT_MINMAX(int, unsigned int, unsigned int)
REGTUNE_COMPAT_MINMAX(unsigned int, int, unsigned int)
REGTUNE_COMPAT_MINMAX(long int, long int, long int)
REGTUNE_COMPAT_MINMAX(unsigned long int, unsigned long int, unsigned long int)
REGTUNE_COMPAT_MINMAX(long int, unsigned long int, unsigned long int)
REGTUNE_COMPAT_MINMAX(unsigned long int, long int, unsigned long int)
REGTUNE_COMPAT_MINMAX(long long int, long long int, long long int)
REGTUNE_COMPAT_MINMAX(unsigned long long int, unsigned long long int, unsigned long long int)
REGTUNE_COMPAT_MINMAX(long long int, unsigned long long int, unsigned long long int)
REGTUNE_COMPAT_MINMAX(unsigned long long int, long long int, unsigned long long int)
REGTUNE_COMPAT_MINMAX(float, float, float)
REGTUNE_COMPAT_MINMAX(double, double, double)
REGTUNE_COMPAT_MINMAX(float, double, double)
REGTUNE_COMPAT_MINMAX(double, float, double)
#undef REGTUNE_COMPAT_MINMAX
#endif
