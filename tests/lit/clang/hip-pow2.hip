// REQUIRES: hip
//
// clang -fpass-plugin applies the decisions db to the device compile: the
// tuned kernel's pow(x, 2.0) is one multiply, with no call to the device
// library's __ocml_pow_f64 left; the kernel the db leaves plain keeps it.
// ocml's pow is not correctly rounded, so a plain `pow2` decision (what
// `regtune tune` applies by default) rewrites it only under -ffast-math
// (afn); `pow2_inexact` (`tune --pow2 apply`) rewrites it always.
// The host compile runs the same plugin and comes out byte for byte as it
// does without it.
//
// -O0 keeps the device library's routines as calls, so their absence shows.
// RUN: %hip-device -O0 -emit-llvm -S %s -o - | FileCheck %s --check-prefix=PLAIN
// RUN: env REGTUNE_DECISIONS=%S/Inputs/decisions.json \
// RUN:   %hip-device -O0 -fpass-plugin=%plugin -emit-llvm -S %s -o - | FileCheck %s --check-prefix=EXACT
// RUN: env REGTUNE_DECISIONS=%S/Inputs/decisions.json \
// RUN:   %hip-device -O0 -ffast-math -fpass-plugin=%plugin -emit-llvm -S %s -o - | FileCheck %s --check-prefix=FAST
// RUN: env REGTUNE_DECISIONS=%S/Inputs/decisions-inexact.json \
// RUN:   %hip-device -O0 -fpass-plugin=%plugin -emit-llvm -S %s -o - | FileCheck %s --check-prefix=TUNED
//
// At -O3 the tuned kernel is a load, a multiply and a store.
// RUN: env REGTUNE_DECISIONS=%S/Inputs/decisions-inexact.json \
// RUN:   %hip-device -fpass-plugin=%plugin -emit-llvm -S %s -o - | FileCheck %s --check-prefix=O3
//
// RUN: %hip-host -emit-llvm -S %s -o %t.host.plain.ll
// RUN: env REGTUNE_DECISIONS=%S/Inputs/decisions-inexact.json \
// RUN:   %hip-host -fpass-plugin=%plugin -emit-llvm -S %s -o %t.host.tuned.ll
// RUN: diff %t.host.plain.ll %t.host.tuned.ll

// The ROCm 5 headers on Debian expect these from hipcc.
#define __AMDGCN_WAVEFRONT_SIZE 64
extern "C" __device__ _Float16 __llvm_amdgcn_rcp_f16(_Float16);
typedef _Float16 __rt_h2 __attribute__((ext_vector_type(2)));
extern "C" __device__ __rt_h2 __llvm_amdgcn_rcp_2f16(__rt_h2);
#include <hip/hip_runtime.h>

// PLAIN-LABEL: define {{.*}} amdgpu_kernel void @_Z6squarePdPKd(
// PLAIN:         call {{.*}} @__ocml_pow_f64(
// EXACT-LABEL: define {{.*}} amdgpu_kernel void @_Z6squarePdPKd(
// EXACT:         call {{.*}} @__ocml_pow_f64(
// FAST-LABEL: define {{.*}} amdgpu_kernel void @_Z6squarePdPKd(
// FAST-NOT:      @__ocml_pow_f64
// FAST:          fmul fast double
// FAST:          ret void
// TUNED-LABEL: define {{.*}} amdgpu_kernel void @_Z6squarePdPKd(
// TUNED-NOT:     @__ocml_pow_f64
// TUNED:         fmul contract double
// TUNED:         ret void
// O3-LABEL: define {{.*}} amdgpu_kernel void @_Z6squarePdPKd(
// O3:         [[X:%.*]] = load double
// O3-NEXT:    [[SQ:%.*]] = fmul contract double [[X]], [[X]]
// O3-NOT:     call
// O3:         store double [[SQ]]
__global__ void square(double *out, const double *in) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = pow(in[i], 2.0);
}

// TUNED-LABEL: define {{.*}} amdgpu_kernel void @_Z5plainPdPKd(
// TUNED:         call {{.*}} @__ocml_pow_f64(
__global__ void plain(double *out, const double *in) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = pow(in[i], 2.0);
}
