// REQUIRES: hip
//
// The ranking on what the tuner gives it: clang's device IR before any
// optimisation (device libraries linked, value names kept). Each parameter
// goes through two stack slots, flat pointers and, for `in`, a helper; the
// thread index comes from the device library. `in[i]` is loaded, stores
// through `out` and `tmp` follow, and `in[i]` is loaded again by the
// helper: `in` is the one candidate, under its source name. `tmp` and `out`
// are only stored to, each one of two stores in the way; `unused` is never
// dereferenced.
//
// RUN: %hip-device -Xclang -disable-llvm-passes -fno-discard-value-names -emit-llvm -c %s -o %t.bc
// RUN: %opt -disable-output -passes=regtune-noalias-rank %t.bc | FileCheck %s --match-full-lines
//
// CHECK: {"kernel":"_Z6smoothPKfPfS1_S0_","candidates":[{"index":0,"name":"in","score":6,"reason":"1 reload reusable across stores through other pointers"}]}

// The ROCm 5 headers on Debian expect these from hipcc.
#define __AMDGCN_WAVEFRONT_SIZE 64
extern "C" __device__ _Float16 __llvm_amdgcn_rcp_f16(_Float16);
typedef _Float16 __rt_h2 __attribute__((ext_vector_type(2)));
extern "C" __device__ __rt_h2 __llvm_amdgcn_rcp_2f16(__rt_h2);
#include <hip/hip_runtime.h>

__device__ float at(const float* p, int i) { return p[i]; }

__global__ void smooth(const float* in, float* out, float* tmp, const float* unused)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float x = in[i];
    tmp[i] = 2.0f * x;
    out[i] = x;
    out[i + 1] = at(in, i);
}
