// A template for tests/fix.rs whose instantiations decide differently: the
// double one holds twice the registers of the float one (a 9-point window
// of a z-column kept in registers over a fully unrolled tile, after
// examples/laplacian3d.hip), so a cap or an occupancy target that suits
// one need not suit the other, and one edit of the template serves both.
#include <hip/hip_runtime.h>

#define TILE 16

template <typename T>
__global__ void ztile(T* __restrict__ lap, const T* __restrict__ u, int nx, int ny, T inv_h2)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x + 4;
    const size_t sx = 1, sy = nx, sz = (size_t)nx * ny;
    size_t pos = i + sy * (blockIdx.y + 4) + sz * (4 + blockIdx.z * TILE);
    T zm4 = u[pos - 4 * sz], zm3 = u[pos - 3 * sz], zm2 = u[pos - 2 * sz];
    T zm1 = u[pos - sz], z0 = u[pos], zp1 = u[pos + sz];
    T zp2 = u[pos + 2 * sz], zp3 = u[pos + 3 * sz];

#pragma unroll
    for (int t = 0; t < TILE; ++t) {
        T zp4 = u[pos + 4 * sz];
        T d2 = T(-205.0 / 24.0) * z0
             + T(8.0 / 5.0) * (u[pos - sx] + u[pos + sx] + u[pos - sy] + u[pos + sy] + zm1 + zp1)
             + T(-1.0 / 5.0) * (u[pos - 2 * sx] + u[pos + 2 * sx] + u[pos - 2 * sy] + u[pos + 2 * sy] + zm2 + zp2)
             + T(8.0 / 315.0) * (u[pos - 3 * sx] + u[pos + 3 * sx] + u[pos - 3 * sy] + u[pos + 3 * sy] + zm3 + zp3)
             + T(-1.0 / 560.0) * (u[pos - 4 * sx] + u[pos + 4 * sx] + u[pos - 4 * sy] + u[pos + 4 * sy] + zm4 + zp4);
        lap[pos] = inv_h2 * d2;
        zm4 = zm3; zm3 = zm2; zm2 = zm1; zm1 = z0;
        z0 = zp1; zp1 = zp2; zp2 = zp3; zp3 = zp4;
        pos += sz;
    }
}
template __global__ void ztile<float>(float*, const float*, int, int, float);
template __global__ void ztile<double>(double*, const double*, int, int, double);
