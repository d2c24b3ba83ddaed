// The few pieces of the CUDA SDK 2.x cutil library (cutil.h, long gone from
// CUDA) that the GPGPU-Sim ISPASS 2009 benchmarks use: error-check macros and
// a wall-clock timer.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include <sys/time.h>
#include <vector>
#define CUDA_SAFE_CALL_NO_SYNC(call)                                                           \
  do {                                                                                          \
    cudaError_t err_ = (call);                                                                  \
    if (err_ != cudaSuccess) {                                                                  \
      fprintf(stderr, "Cuda error in file '%s' in line %i : %s.\n", __FILE__, __LINE__,        \
              cudaGetErrorString(err_));                                                        \
      exit(EXIT_FAILURE);                                                                       \
    }                                                                                           \
  } while (0)
#define CUDA_SAFE_CALL(call) CUDA_SAFE_CALL_NO_SYNC(call)
#define CUT_CHECK_ERROR(msg)                                                                   \
  do {                                                                                          \
    cudaError_t err_ = cudaDeviceSynchronize();                                                 \
    if (err_ == cudaSuccess) err_ = cudaGetLastError();                                         \
    if (err_ != cudaSuccess) {                                                                  \
      fprintf(stderr, "Cuda error: %s in file '%s' in line %i : %s.\n", msg, __FILE__, __LINE__, \
              cudaGetErrorString(err_));                                                        \
      exit(EXIT_FAILURE);                                                                       \
    }                                                                                           \
  } while (0)
typedef bool CUTBoolean;
#define CUTTrue true
#define CUTFalse false
#define CUT_SAFE_CALL(call)                                                                    \
  do {                                                                                          \
    if (!(call)) {                                                                              \
      fprintf(stderr, "Cut error in file '%s' in line %i.\n", __FILE__, __LINE__);              \
      exit(EXIT_FAILURE);                                                                       \
    }                                                                                           \
  } while (0)
#define CUT_DEVICE_INIT(argc, argv) cudaSetDevice(0)
#define CUT_EXIT(argc, argv) exit(EXIT_SUCCESS)
struct cutTimer_ { double start = 0, total = 0; bool running = false; };
static inline std::vector<cutTimer_> &cutTimers_() { static std::vector<cutTimer_> t; return t; }
static inline double cutNow_() { timeval tv; gettimeofday(&tv, nullptr); return tv.tv_sec * 1e3 + tv.tv_usec * 1e-3; }
static inline CUTBoolean cutCreateTimer(unsigned int *name) { cutTimers_().push_back({}); *name = cutTimers_().size() - 1; return true; }
static inline CUTBoolean cutDeleteTimer(unsigned int) { return true; }
static inline CUTBoolean cutStartTimer(unsigned int t) { cutTimers_()[t].start = cutNow_(); cutTimers_()[t].running = true; return true; }
static inline CUTBoolean cutStopTimer(unsigned int t) { auto &x = cutTimers_()[t]; if (x.running) x.total += cutNow_() - x.start; x.running = false; return true; }
static inline CUTBoolean cutResetTimer(unsigned int t) { auto &x = cutTimers_()[t]; x.total = 0; x.start = cutNow_(); return true; }
static inline float cutGetTimerValue(unsigned int t) { auto &x = cutTimers_()[t]; return x.total + (x.running ? cutNow_() - x.start : 0); }
static inline float cutGetAverageTimerValue(unsigned int t) { return cutGetTimerValue(t); }
