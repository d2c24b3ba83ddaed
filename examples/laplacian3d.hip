// 8th-order (25-point star) Laplacian on a 3D grid, register-tiled along z:
// each thread computes TILE consecutive points of one z-column and keeps a
// 9-point sliding window of that column in registers, so every column value
// is loaded once instead of nine times.
//
// Register-pressure pattern: the tile loop is fully unrolled (#pragma unroll)
// and the pointers are __restrict__, so the compiler is free to hoist loads
// of later tile points above the stores of earlier ones.  Registers grow
// with TILE: at TILE >= 8 the kernel hits the 128-VGPR ceiling of the default
// 1024-thread bound and spills.  Capping the unroll factor of the tile loop
// (not the tiling) brings it back to full occupancy.
//
// -DTILE_UNROLL=N unrolls the tile loop N times instead of fully, as one
// might write for "some unrolling". N = 8 is worse than either: on gfx90a
// the kernel spills 22 VGPRs (76 B of scratch) and 276 SGPRs, and a cap of
// 4 or 1 removes every spill.
#include "regtune_gpu.h" // <hip/hip_runtime.h>, or CUDA with NVPTX

#include <cstdio>
#include <cstdlib>
#include <vector>

#ifndef TILE
#define TILE 16 // z-points per thread
#endif
#define RADIUS 4 // stencil half-width
#define STRINGIFY(x) #x
#define PRAGMA(x) _Pragma(STRINGIFY(x)) // expands macros in x, as #pragma does not

// 8th-order central second-derivative weights (multiply by 1/h^2).
#define C0 (-205.0 / 72.0)
#define C1 (8.0 / 5.0)
#define C2 (-1.0 / 5.0)
#define C3 (8.0 / 315.0)
#define C4 (-1.0 / 560.0)

__global__ void laplacian3d_o8_ztile(double* __restrict__ lap, const double* __restrict__ u,
                                     int nx, int ny, double inv_h2)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x + RADIUS;
    const int j = blockIdx.y + RADIUS;
    const int k0 = RADIUS + blockIdx.z * TILE;
    // The host sizes the grid so that y and z need no bounds check.
    if (i >= nx - RADIUS)
        return;

    const size_t sx = 1, sy = nx, sz = (size_t)nx * ny;
    size_t pos = i + sy * j + sz * k0;

    // Column window: zm4 .. zp4 = u(i, j, k-4 .. k+4).
    double zm4 = u[pos - 4 * sz], zm3 = u[pos - 3 * sz], zm2 = u[pos - 2 * sz];
    double zm1 = u[pos - sz], z0 = u[pos], zp1 = u[pos + sz];
    double zp2 = u[pos + 2 * sz], zp3 = u[pos + 3 * sz];

#ifdef TILE_UNROLL
    PRAGMA(unroll TILE_UNROLL)
#else
#pragma unroll
#endif
    for (int t = 0; t < TILE; ++t) {
        double zp4 = u[pos + 4 * sz];

        double d2 = 3.0 * C0 * z0
                  + C1 * (u[pos - sx] + u[pos + sx] + u[pos - sy] + u[pos + sy] + zm1 + zp1)
                  + C2 * (u[pos - 2 * sx] + u[pos + 2 * sx] + u[pos - 2 * sy] + u[pos + 2 * sy] + zm2 + zp2)
                  + C3 * (u[pos - 3 * sx] + u[pos + 3 * sx] + u[pos - 3 * sy] + u[pos + 3 * sy] + zm3 + zp3)
                  + C4 * (u[pos - 4 * sx] + u[pos + 4 * sx] + u[pos - 4 * sy] + u[pos + 4 * sy] + zm4 + zp4);
        lap[pos] = inv_h2 * d2;

        // Slide the window one point up the column.
        zm4 = zm3; zm3 = zm2; zm2 = zm1; zm1 = z0;
        z0 = zp1; zp1 = zp2; zp2 = zp3; zp3 = zp4;
        pos += sz;
    }
}

#define HIP_CHECK(call)                                                        \
    do {                                                                       \
        hipError_t err_ = (call);                                              \
        if (err_ != hipSuccess) {                                              \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__,                 \
                    hipGetErrorString(err_));                                  \
            exit(1);                                                           \
        }                                                                      \
    } while (0)

int main()
{
    // Interior: 256 x 256 x 32*TILE points, plus a RADIUS-wide halo.
    const int nx = 256 + 2 * RADIUS, ny = 256 + 2 * RADIUS, nz = 32 * TILE + 2 * RADIUS;
    const size_t n = (size_t)nx * ny * nz;
    const double h = 1.0 / (nx - 1);

    // u = x^2 + y^2 + z^2 has a Laplacian of exactly 6.
    std::vector<double> hu(n);
    for (int k = 0; k < nz; ++k)
        for (int j = 0; j < ny; ++j)
            for (int i = 0; i < nx; ++i)
                hu[i + (size_t)nx * (j + (size_t)ny * k)] =
                    h * h * ((double)i * i + (double)j * j + (double)k * k);

    double *u, *lap;
    HIP_CHECK(hipMalloc(&u, n * sizeof(double)));
    HIP_CHECK(hipMalloc(&lap, n * sizeof(double)));
    HIP_CHECK(hipMemcpy(u, hu.data(), n * sizeof(double), hipMemcpyHostToDevice));
    HIP_CHECK(hipMemset(lap, 0, n * sizeof(double)));

    dim3 grid((nx - 2 * RADIUS + 255) / 256, ny - 2 * RADIUS, (nz - 2 * RADIUS) / TILE);
    laplacian3d_o8_ztile<<<grid, 256>>>(lap, u, nx, ny, 1.0 / (h * h));
    HIP_CHECK(hipGetLastError());
    HIP_CHECK(hipDeviceSynchronize());

    HIP_CHECK(hipMemcpy(hu.data(), lap, n * sizeof(double), hipMemcpyDeviceToHost));
    size_t mid = nx / 2 + (size_t)nx * (ny / 2 + (size_t)ny * (nz / 2));
    printf("laplacian at centre = %.6f (expected 6)\n", hu[mid]);

    HIP_CHECK(hipFree(u));
    HIP_CHECK(hipFree(lap));
    return 0;
}
