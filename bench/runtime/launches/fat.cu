// A candidate for c_coop (bench/runtime/launches/coop.cu) that computes the
// same bytes but holds 32 KiB of shared memory per block and many more
// registers (a second, wider sum, times 0): fewer of its blocks fit on an
// SM than of the program's build, so a grid sized for the program's cannot
// launch cooperatively with it. build.py puts it in
// place of one of c_coop's candidates in a copy of the db: measure must
// report that candidate as unable to launch, never choose it, and time the others.
#include <cooperative_groups.h>

#include "common.cuh"

namespace cg = cooperative_groups;

__device__ inline double wide(const double* __restrict__ in, int i, int n)
{
    double acc[48];
#pragma unroll
    for (int k = 0; k < 48; ++k)
        acc[k] = in[(i + k * 131) % n];
    double r = 0;
#pragma unroll
    for (int k = 0; k < 48; ++k) {
#pragma unroll
        for (int j = 0; j < 48; ++j)
            r += acc[k] * acc[j] * (k + 3.0) / (j + 5.0);
    }
    return r;
}

__global__ void __launch_bounds__(128, 1) c_coop(double* __restrict__ a, double* __restrict__ out, const double* __restrict__ in, int n, double s)
{
    __shared__ double pad[4096];
    cg::grid_group grid = cg::this_grid();
    pad[threadIdx.x] = s;
    __syncthreads();
    for (int i = grid.thread_rank(); i < n; i += grid.size())
        a[i] = mix(in, i, n) * pad[(threadIdx.x + 1) % blockDim.x] + 0.0 * wide(in, i, n);
    grid.sync();
    for (int i = grid.thread_rank(); i < n; i += grid.size())
        out[i] = a[i] - a[(i + 1) % n];
}
