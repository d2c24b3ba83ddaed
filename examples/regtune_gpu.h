// regtune_gpu.h: write a kernel once in HIP, build it for AMDGPU (HIP) and
// for NVPTX (CUDA).
//
// Include this instead of <hip/hip_runtime.h>. Compiled as HIP (hipcc, or
// clang -x hip) it is exactly <hip/hip_runtime.h>, so AMDGPU builds and their
// register counts do not change. Compiled as CUDA (nvcc, or clang -x cuda,
// which is how `regtune report/tune --offload-arch sm_XX` compiles a file)
// it includes <cuda_runtime.h> and maps the HIP runtime names the examples
// use onto CUDA's. Device code needs no mapping: __global__, __shared__,
// threadIdx/blockIdx/blockDim, __syncthreads() and the <cmath> functions
// are spelled the same in both.
//
// Covered: hipMalloc, hipFree, hipMemcpy, hipMemset, hipMemcpyHostToDevice,
// hipMemcpyDeviceToHost, hipMemcpyDeviceToDevice, hipDeviceSynchronize,
// hipGetLastError, hipGetErrorString, hipError_t, hipSuccess, hipStream_t,
// and hipLaunchKernelGGL(kernel, grid, block, shared_bytes, stream, args...).
// Not covered: anything wave64-specific (__shfl with 64 lanes, ballots into
// 64-bit masks), which does not port by renaming.
#pragma once

#if defined(__CUDACC__) && !defined(__HIP__)

#include <cuda_runtime.h>

#define hipError_t cudaError_t
#define hipSuccess cudaSuccess
#define hipStream_t cudaStream_t
#define hipGetErrorString cudaGetErrorString
#define hipGetLastError cudaGetLastError
#define hipDeviceSynchronize cudaDeviceSynchronize
#define hipMalloc cudaMalloc
#define hipFree cudaFree
#define hipMemcpy cudaMemcpy
#define hipMemset cudaMemset
#define hipMemcpyHostToDevice cudaMemcpyHostToDevice
#define hipMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define hipMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define hipLaunchKernelGGL(kernel, grid, block, shared_bytes, stream, ...) \
    kernel<<<(grid), (block), (shared_bytes), (stream)>>>(__VA_ARGS__)

#else

#include <hip/hip_runtime.h>

#endif
