// Included first (-include) in every CUDA translation unit that
// bench/nvcc/corpus.py builds with nvcc: what nvcc 13 needs of the corpus's
// older sources, and of ci/bootstrap.sh's assembled toolkit. Without effect
// on code that needs neither.
#pragma once
#if defined(__CUDACC__) && defined(__CUDACC_VER_MAJOR__)
#include <cuda_runtime_api.h>

// bootstrap's nvcc is 13.5 (nvcc, cicc and the crt headers of one version)
// with CUDA 13.0's runtime and CCCL, which the GPU machine's 580 driver
// runs. CCCL refuses a compiler whose minor version is not its toolkit's
// (cuda/std/__cccl/cuda_toolkit.h: "CUDA compiler and CUDA toolkit headers
// are incompatible"), so every file that includes cooperative_groups.h,
// Thrust, CUB or cuda/std fails. Here CCCL sees the compiler version its
// own toolkit has; a toolkit of one version is left alone.
#if __CUDACC_VER_MAJOR__ == CUDART_VERSION / 1000 && __CUDACC_VER_MINOR__ != (CUDART_VERSION % 1000) / 10
#undef __CUDACC_VER_MINOR__
#if CUDART_VERSION % 1000 / 10 == 0
#define __CUDACC_VER_MINOR__ 0
#elif CUDART_VERSION % 1000 / 10 == 1
#define __CUDACC_VER_MINOR__ 1
#elif CUDART_VERSION % 1000 / 10 == 2
#define __CUDACC_VER_MINOR__ 2
#elif CUDART_VERSION % 1000 / 10 == 3
#define __CUDACC_VER_MINOR__ 3
#elif CUDART_VERSION % 1000 / 10 == 4
#define __CUDACC_VER_MINOR__ 4
#else
#define __CUDACC_VER_MINOR__ 5
#endif
#endif

// CUDA 13 removed what CUDA 10 deprecated; Rodinia still calls it.
#if CUDART_VERSION >= 13000
#define cudaThreadSynchronize cudaDeviceSynchronize
#endif
#endif
