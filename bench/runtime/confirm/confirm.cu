// bench/runtime/confirm: a replay's figure against the program's own launches
// (issue 39, item 2). Built twice from this one file: plainly (the program,
// and regtune's plain cubin), and with -DFAST=1 (the cubin that stands in for
// a tuned build: the same bytes out, less work in). `FAST` leaves out K rounds
// of an identity (bit reversal twice), so the fast build gains what K rounds
// cost: much where the kernel's data sits in L2 (the replay restores memory
// just before each run), little where it comes from HBM (in the program a
// kernel that writes 512 MiB runs before each of them).
//
//   small_k1 .. small_k8  16 MiB in, 16 MiB out, ~10 µs: replay and program may disagree
//   win                   4 MiB in and out, 64 rounds: compute-bound, a clear win either way
//   few                   launched 12 times: too few launches left to confirm
//   drift                 as small_k8, but its rounds are an argument: 8 at the first two
//                         launches (those the replay copies), 0 after: the replay sees a
//                         gain the program's later launches never have
//
// Output: a checksum of every kernel's output (the same plainly and measured).
// With CONFIRM_TIME=1, the program's own timer: each planned launch (but
// `few`'s) between two events, each kernel's median on stderr ("timer NAME
// MS"), what a rebuilt program shows.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#ifndef FAST
#define FAST 0
#endif

template <int K>
__device__ __forceinline__ unsigned spin(unsigned v) {
#if !FAST
#pragma unroll 1
  for (int i = 0; i < K; ++i) {
    v = __brev(v);
    asm volatile("" : "+r"(v));
    v = __brev(v);
    asm volatile("" : "+r"(v));
  }
#endif
  return v;
}

// Rounds given at run time: the fast build leaves them out too.
__device__ __forceinline__ unsigned spin_n(unsigned v, int k) {
#if !FAST
  for (int i = 0; i < k; ++i) {
    v = __brev(v);
    asm volatile("" : "+r"(v));
    v = __brev(v);
    asm volatile("" : "+r"(v));
  }
#endif
  return v;
}

__global__ void drift(const unsigned* __restrict__ in, unsigned* __restrict__ out, unsigned n, int rounds) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = spin_n(in[i], rounds) * 2654435761u + 1u;
}

#define KERNEL(NAME, K)                                                                 \
  __global__ void NAME(const unsigned* __restrict__ in, unsigned* __restrict__ out, unsigned n) { \
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;                                 \
    if (i < n) out[i] = spin<K>(in[i]) * 2654435761u + 1u;                              \
  }

KERNEL(small_k1, 1)
KERNEL(small_k2, 2)
KERNEL(small_k4, 4)
KERNEL(small_k8, 8)
KERNEL(win, 64)
KERNEL(few, 16)

// Not planned: evicts L2 (50 MiB on an H200) before each small kernel.
__global__ void thrash(unsigned* big, size_t n, unsigned it) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) big[i] = (unsigned)i + it;
}

#define CHECK(x)                                                              \
  do {                                                                        \
    cudaError_t err_ = (x);                                                    \
    if (err_ != cudaSuccess) {                                                \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(err_)); \
      exit(1);                                                                \
    }                                                                         \
  } while (0)

int main(int argc, char** argv) {
  int iters = argc > 1 ? atoi(argv[1]) : 600;
  const unsigned small_n = 4u << 20, win_n = 1u << 20;
  const size_t big_n = (512u << 20) / sizeof(unsigned);
  void (*smalls[])(const unsigned*, unsigned*, unsigned) = {small_k1, small_k2, small_k4, small_k8};
  const int S = 4;
  unsigned *in, *big, *outs[S + 3];
  CHECK(cudaMalloc(&in, small_n * sizeof(unsigned)));
  CHECK(cudaMalloc(&big, big_n * sizeof(unsigned)));
  for (int s = 0; s < S + 3; ++s) CHECK(cudaMalloc(&outs[s], small_n * sizeof(unsigned)));
  unsigned* host = (unsigned*)malloc(small_n * sizeof(unsigned));
  for (unsigned i = 0; i < small_n; ++i) host[i] = i * 2246822519u ^ (i >> 7);
  CHECK(cudaMemcpy(in, host, small_n * sizeof(unsigned), cudaMemcpyHostToDevice));
  const bool timed = getenv("CONFIRM_TIME") != nullptr;
  const int T = S + 2;  // timed kernels: the small ones, win, drift
  std::vector<cudaEvent_t> events(timed ? 2 * T * iters : 0);
  for (auto& e : events) CHECK(cudaEventCreate(&e));
  auto mark = [&](int it, int k, int end) {
    if (timed) CHECK(cudaEventRecord(events[2 * ((size_t)it * T + k) + end]));
  };
  for (int it = 0; it < iters; ++it) {
    for (int s = 0; s < S; ++s) {
      thrash<<<1056, 512>>>(big, big_n, it);
      mark(it, s, 0);
      smalls[s]<<<small_n / 256, 256>>>(in, outs[s], small_n);
      mark(it, s, 1);
    }
    // The launch API the runtime turns into cuLaunchKernelEx.
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(win_n / 256);
    config.blockDim = dim3(256);
    mark(it, S, 0);
    CHECK(cudaLaunchKernelEx(&config, win, (const unsigned*)in, outs[S], win_n));
    mark(it, S, 1);
    if (it < 12) few<<<win_n / 256, 256>>>(in, outs[S + 1], win_n);
    thrash<<<1056, 512>>>(big, big_n, it);
    mark(it, S + 1, 0);
    drift<<<small_n / 256, 256>>>(in, outs[S + 2], small_n, it < 2 ? 8 : 0);
    mark(it, S + 1, 1);
  }
  CHECK(cudaDeviceSynchronize());
  const char* names[] = {"small_k1", "small_k2", "small_k4", "small_k8", "win", "drift"};
  for (int k = 0; timed && k < T; ++k) {
    std::vector<float> ms;
    for (int it = 0; it < iters; ++it) {
      float t = 0;
      CHECK(cudaEventElapsedTime(&t, events[2 * ((size_t)it * T + k)], events[2 * ((size_t)it * T + k) + 1]));
      ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    fprintf(stderr, "timer %s %.5f\n", names[k], ms[ms.size() / 2]);
  }
  unsigned long long sum = 0;
  for (int s = 0; s < S + 3; ++s) {
    CHECK(cudaMemcpy(host, outs[s], small_n * sizeof(unsigned), cudaMemcpyDeviceToHost));
    unsigned n = s < S || s == S + 2 ? small_n : win_n;
    for (unsigned i = 0; i < n; ++i) sum = sum * 1099511628211ull + host[i];
  }
  printf("checksum %016llx after %d iterations\n", sum, iters);
  return 0;
}
