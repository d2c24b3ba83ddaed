// Point-implicit block-Jacobi update for a cell-centred ideal-MHD solver:
// each cell owns an NV x NV Jacobian block (8 conserved variables: rho,
// rho u, rho v, rho w, Bx, By, Bz, E) and solves  D_i dq_i = r_i  in
// registers, one thread per cell.
//
// Register-pressure pattern: the whole block (NV*NV doubles) plus the
// right-hand side is held in registers while it is factorised.  Without
// __launch_bounds__, the compiler must assume 1024-thread workgroups: 16
// waves on one CU, 4 per SIMD, which on gfx90a caps the kernel at 128 VGPRs,
// so it spills.  Every launch uses 256 threads; declaring that bound lets the
// kernel keep the block in registers.  The source deliberately carries no
// launch bounds.
#include "regtune_gpu.h" // <hip/hip_runtime.h>, or CUDA with NVPTX

#include <cstdio>
#include <cstdlib>
#include <vector>

#ifndef NV
#define NV 8 // conserved variables per cell
#endif

// Blocks are stored entry-major ("SoA of blocks"): entry (r, c) of every cell
// is contiguous, so neighbouring threads read neighbouring addresses.
__global__ void block_jacobi_solve(const double* jac, const double* rhs, double* dq,
                                   double* q, int ncell, double relax)
{
    const int cell = blockIdx.x * blockDim.x + threadIdx.x;
    if (cell >= ncell)
        return;

    double a[NV][NV], b[NV];
#pragma unroll
    for (int r = 0; r < NV; ++r) {
        b[r] = rhs[r * ncell + cell];
#pragma unroll
        for (int c = 0; c < NV; ++c)
            a[r][c] = jac[(r * NV + c) * ncell + cell];
    }

    // Gaussian elimination without pivoting: the implicit Jacobian blocks
    // are diagonally dominant.
#pragma unroll
    for (int p = 0; p < NV; ++p) {
        const double inv_piv = 1.0 / a[p][p];
#pragma unroll
        for (int r = p + 1; r < NV; ++r) {
            const double l = a[r][p] * inv_piv;
#pragma unroll
            for (int c = p + 1; c < NV; ++c)
                a[r][c] -= l * a[p][c];
            b[r] -= l * b[p];
        }
    }

    // Back substitution.
#pragma unroll
    for (int r = NV - 1; r >= 0; --r) {
        double s = b[r];
#pragma unroll
        for (int c = r + 1; c < NV; ++c)
            s -= a[r][c] * b[c];
        b[r] = s / a[r][r];
    }

#pragma unroll
    for (int r = 0; r < NV; ++r) {
        dq[r * ncell + cell] = b[r];
        q[r * ncell + cell] += relax * b[r];
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
    const int ncell = 1 << 20;
    const size_t nb = (size_t)NV * NV * ncell, nr = (size_t)NV * ncell;

    // Diagonally dominant blocks: 2 on the diagonal, 1/(4 NV) elsewhere.
    std::vector<double> h_jac(nb), h_rhs(nr, 1.0);
    for (int r = 0; r < NV; ++r)
        for (int c = 0; c < NV; ++c)
            for (int i = 0; i < ncell; ++i)
                h_jac[(size_t)(r * NV + c) * ncell + i] = (r == c) ? 2.0 : 0.25 / NV;

    double *jac, *rhs, *dq, *q;
    HIP_CHECK(hipMalloc(&jac, nb * sizeof(double)));
    HIP_CHECK(hipMalloc(&rhs, nr * sizeof(double)));
    HIP_CHECK(hipMalloc(&dq, nr * sizeof(double)));
    HIP_CHECK(hipMalloc(&q, nr * sizeof(double)));
    HIP_CHECK(hipMemcpy(jac, h_jac.data(), nb * sizeof(double), hipMemcpyHostToDevice));
    HIP_CHECK(hipMemcpy(rhs, h_rhs.data(), nr * sizeof(double), hipMemcpyHostToDevice));
    HIP_CHECK(hipMemset(q, 0, nr * sizeof(double)));

    block_jacobi_solve<<<(ncell + 255) / 256, 256>>>(jac, rhs, dq, q, ncell, 0.8);
    HIP_CHECK(hipGetLastError());
    HIP_CHECK(hipDeviceSynchronize());

    std::vector<double> h_dq(nr);
    HIP_CHECK(hipMemcpy(h_dq.data(), dq, nr * sizeof(double), hipMemcpyDeviceToHost));
    printf("dq[0] of cell 0 = %.6f\n", h_dq[0]);

    HIP_CHECK(hipFree(jac));
    HIP_CHECK(hipFree(rhs));
    HIP_CHECK(hipFree(dq));
    HIP_CHECK(hipFree(q));
    return 0;
}
