#!/usr/bin/env python3
"""How often libdevice's pow(x, 2.0) differs from the correctly rounded x * x
(and powf(x, 2.0f) from x * x), on the GPU, for uniform random x in
[-2, 2): why regtune's pow2 rewrites __nv_pow/__nv_powf only under afn.
The kernel is compiled by NVRTC, i.e. with libdevice's pow, and with
--fmad=false so that x * x stays a rounded product."""
import cupy as cp
import numpy as np

SRC = r"""
extern "C" __global__ void sq(const double* x, double* p, double* m, const float* xf, float* pf, float* mf, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { p[i] = pow(x[i], 2.0); m[i] = x[i] * x[i]; pf[i] = powf(xf[i], 2.0f); mf[i] = xf[i] * xf[i]; }
}
"""
n = 1 << 24
rng = np.random.default_rng(1)
x = cp.asarray(rng.uniform(-2, 2, n))
xf = cp.asarray(rng.uniform(-2, 2, n).astype(np.float32))
p, m = cp.empty_like(x), cp.empty_like(x)
pf, mf = cp.empty_like(xf), cp.empty_like(xf)
k = cp.RawKernel(SRC, "sq", options=("--fmad=false",))
k(((n + 255) // 256,), (256,), (x, p, m, xf, pf, mf, np.int32(n)))
d = int((p.view(cp.uint64) != m.view(cp.uint64)).sum())
df = int((pf.view(cp.uint32) != mf.view(cp.uint32)).sum())
print(f"pow(x, 2.0) != x*x for {d} of {n} doubles ({100.0 * d / n:.3f}%); powf(x, 2.0f) != x*x for {df} of {n} floats ({100.0 * df / n:.3f}%)")
