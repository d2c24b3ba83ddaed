// D3Q19 lattice-Boltzmann step: pull-streaming + BGK collision with a Guo
// body-force term, structure-of-arrays layout (one array per direction).
//
// Register-pressure pattern: one big straight-line double-precision kernel
// with 28 pointer parameters.  All 19 populations stay live until density and
// velocity are known, and the equilibrium squares its terms with
// pow(x, 2.0), the way much scientific code writes it.  pow() is inlined as
// the whole ocml routine (log/exp in double-double plus special cases), so
// each call adds temporaries and 64-bit constants.  No pointer is
// __restrict__, so loads cannot be moved past the stores to other arrays.
//
// Each distribution array holds two time levels: [parity * ncell + cell].
// The kernel reads level `src` and writes level `dst` (A-B pattern).  Wall
// and outer-layer cells are never updated: they keep the rest equilibrium
// that fluid neighbours pull from them (equilibrium no-slip wall).
#include "regtune_gpu.h" // <hip/hip_runtime.h>, or CUDA with NVPTX

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <vector>

enum CellType : int { FLUID = 0, WALL = 1, OUTSIDE = 2 };

// D3Q19 weights.
#define W0 (1.0 / 3.0)
#define WS (1.0 / 18.0) // axis directions 1..6
#define WD (1.0 / 36.0) // diagonal directions 7..18

// Velocity set (pull: population i at x comes from x - c_i):
//  1:(+1,0,0)  2:(-1,0,0)  3:(0,+1,0)  4:(0,-1,0)  5:(0,0,+1)  6:(0,0,-1)
//  7:(+1,+1,0) 8:(-1,-1,0) 9:(+1,-1,0) 10:(-1,+1,0)
// 11:(+1,0,+1) 12:(-1,0,-1) 13:(+1,0,-1) 14:(-1,0,+1)
// 15:(0,+1,+1) 16:(0,-1,-1) 17:(0,+1,-1) 18:(0,-1,+1)

__global__ void lbm_d3q19_collide_stream(
    const int* flags,
    double* f0, double* f1, double* f2, double* f3, double* f4, double* f5,
    double* f6, double* f7, double* f8, double* f9, double* f10, double* f11,
    double* f12, double* f13, double* f14, double* f15, double* f16,
    double* f17, double* f18,
    double* rho_out, double* ux_out, double* uy_out, double* uz_out,
    const double* force_x, const double* force_y, const double* force_z,
    const double* omega_cell, // per-cell relaxation rate (turbulence model)
    int nx, int ny, int nz, int src, int dst)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y;
    int z = blockIdx.z;
    if (x < 1 || x >= nx - 1 || y < 1 || y >= ny - 1 || z < 1 || z >= nz - 1)
        return; // outer layer: fixed

    const int sx = 1, sy = nx, sz = nx * ny;
    const int cell = x + sy * y + sz * z;
    const int c = cell + src; // this cell, source time level
    const int o = cell + dst; // this cell, destination time level

    if (flags[cell] != FLUID)
        return;

    // Pull the post-collision populations of the upstream neighbours.
    double p0 = f0[c];
    double p1 = f1[c - sx];
    double p2 = f2[c + sx];
    double p3 = f3[c - sy];
    double p4 = f4[c + sy];
    double p5 = f5[c - sz];
    double p6 = f6[c + sz];
    double p7 = f7[c - sx - sy];
    double p8 = f8[c + sx + sy];
    double p9 = f9[c - sx + sy];
    double p10 = f10[c + sx - sy];
    double p11 = f11[c - sx - sz];
    double p12 = f12[c + sx + sz];
    double p13 = f13[c - sx + sz];
    double p14 = f14[c + sx - sz];
    double p15 = f15[c - sy - sz];
    double p16 = f16[c + sy + sz];
    double p17 = f17[c - sy + sz];
    double p18 = f18[c + sy - sz];

    // Macroscopic moments.
    double rho = p0 + p1 + p2 + p3 + p4 + p5 + p6 + p7 + p8 + p9 + p10 + p11 +
                 p12 + p13 + p14 + p15 + p16 + p17 + p18;
    double inv_rho = 1.0 / rho;

    double Fx = force_x[cell];
    double Fy = force_y[cell];
    double Fz = force_z[cell];

    // Guo: the physical velocity includes half the force impulse.
    double ux = (p1 - p2 + p7 - p8 + p9 - p10 + p11 - p12 + p13 - p14 + 0.5 * Fx) * inv_rho;
    double uy = (p3 - p4 + p7 - p8 - p9 + p10 + p15 - p16 + p17 - p18 + 0.5 * Fy) * inv_rho;
    double uz = (p5 - p6 + p11 - p12 - p13 + p14 + p15 - p16 - p17 + p18 + 0.5 * Fz) * inv_rho;

    rho_out[cell] = rho;
    ux_out[cell] = ux;
    uy_out[cell] = uy;
    uz_out[cell] = uz;

    double omega = omega_cell[cell];
    double usq = 1.5 * (pow(ux, 2.0) + pow(uy, 2.0) + pow(uz, 2.0));
    double uF = ux * Fx + uy * Fy + uz * Fz;
    double fpre = 1.0 - 0.5 * omega; // Guo forcing prefactor

    // Rest population.
    double feq0 = W0 * rho * (1.0 - usq);
    f0[o] = p0 + omega * (feq0 - p0) - fpre * W0 * 3.0 * uF;

    // Opposite directions i / i' (c_i' = -c_i) share c.u squared, so each pair
    // is relaxed from its even and odd parts:
    //   feq_i,i' = w rho (1 + 4.5 (c.u)^2 - 1.5 u^2)  +/-  w rho 3 c.u
    //   F_i,i'   = (1 - omega/2) w (9 (c.u)(c.F) - 3 u.F)  +/-  (1 - omega/2) w 3 c.F
    double cu, cF, even, odd, feven, fodd;

    cu = ux; cF = Fx;
    even = WS * rho * (1.0 + 4.5 * pow(cu, 2.0) - usq);
    odd = WS * rho * 3.0 * cu;
    feven = fpre * WS * (9.0 * cu * cF - 3.0 * uF);
    fodd = fpre * WS * 3.0 * cF;
    f1[o] = p1 + omega * (even + odd - p1) + feven + fodd;
    f2[o] = p2 + omega * (even - odd - p2) + feven - fodd;

    cu = uy; cF = Fy;
    even = WS * rho * (1.0 + 4.5 * pow(cu, 2.0) - usq);
    odd = WS * rho * 3.0 * cu;
    feven = fpre * WS * (9.0 * cu * cF - 3.0 * uF);
    fodd = fpre * WS * 3.0 * cF;
    f3[o] = p3 + omega * (even + odd - p3) + feven + fodd;
    f4[o] = p4 + omega * (even - odd - p4) + feven - fodd;

    cu = uz; cF = Fz;
    even = WS * rho * (1.0 + 4.5 * pow(cu, 2.0) - usq);
    odd = WS * rho * 3.0 * cu;
    feven = fpre * WS * (9.0 * cu * cF - 3.0 * uF);
    fodd = fpre * WS * 3.0 * cF;
    f5[o] = p5 + omega * (even + odd - p5) + feven + fodd;
    f6[o] = p6 + omega * (even - odd - p6) + feven - fodd;

    cu = ux + uy; cF = Fx + Fy;
    even = WD * rho * (1.0 + 4.5 * pow(cu, 2.0) - usq);
    odd = WD * rho * 3.0 * cu;
    feven = fpre * WD * (9.0 * cu * cF - 3.0 * uF);
    fodd = fpre * WD * 3.0 * cF;
    f7[o] = p7 + omega * (even + odd - p7) + feven + fodd;
    f8[o] = p8 + omega * (even - odd - p8) + feven - fodd;

    cu = ux - uy; cF = Fx - Fy;
    even = WD * rho * (1.0 + 4.5 * pow(cu, 2.0) - usq);
    odd = WD * rho * 3.0 * cu;
    feven = fpre * WD * (9.0 * cu * cF - 3.0 * uF);
    fodd = fpre * WD * 3.0 * cF;
    f9[o] = p9 + omega * (even + odd - p9) + feven + fodd;
    f10[o] = p10 + omega * (even - odd - p10) + feven - fodd;

    cu = ux + uz; cF = Fx + Fz;
    even = WD * rho * (1.0 + 4.5 * pow(cu, 2.0) - usq);
    odd = WD * rho * 3.0 * cu;
    feven = fpre * WD * (9.0 * cu * cF - 3.0 * uF);
    fodd = fpre * WD * 3.0 * cF;
    f11[o] = p11 + omega * (even + odd - p11) + feven + fodd;
    f12[o] = p12 + omega * (even - odd - p12) + feven - fodd;

    cu = ux - uz; cF = Fx - Fz;
    even = WD * rho * (1.0 + 4.5 * pow(cu, 2.0) - usq);
    odd = WD * rho * 3.0 * cu;
    feven = fpre * WD * (9.0 * cu * cF - 3.0 * uF);
    fodd = fpre * WD * 3.0 * cF;
    f13[o] = p13 + omega * (even + odd - p13) + feven + fodd;
    f14[o] = p14 + omega * (even - odd - p14) + feven - fodd;

    cu = uy + uz; cF = Fy + Fz;
    even = WD * rho * (1.0 + 4.5 * pow(cu, 2.0) - usq);
    odd = WD * rho * 3.0 * cu;
    feven = fpre * WD * (9.0 * cu * cF - 3.0 * uF);
    fodd = fpre * WD * 3.0 * cF;
    f15[o] = p15 + omega * (even + odd - p15) + feven + fodd;
    f16[o] = p16 + omega * (even - odd - p16) + feven - fodd;

    cu = uy - uz; cF = Fy - Fz;
    even = WD * rho * (1.0 + 4.5 * pow(cu, 2.0) - usq);
    odd = WD * rho * 3.0 * cu;
    feven = fpre * WD * (9.0 * cu * cF - 3.0 * uF);
    fodd = fpre * WD * 3.0 * cF;
    f17[o] = p17 + omega * (even + odd - p17) + feven + fodd;
    f18[o] = p18 + omega * (even - odd - p18) + feven - fodd;
}

// ---------------------------------------------------------------------------
// Host driver: channel flow driven by a constant body force.

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
    const int nx = 256, ny = 64, nz = 64, steps = 100;
    const int ncell = nx * ny * nz;
    const double tau = 0.6, gx = 1e-6;
    const double w[19] = {W0, WS, WS, WS, WS, WS, WS, WD, WD, WD,
                          WD, WD, WD, WD, WD, WD, WD, WD, WD};

    std::vector<int> h_flags(ncell, FLUID);
    for (int z = 0; z < nz; ++z)
        for (int y = 0; y < ny; ++y)
            for (int x = 0; x < nx; ++x)
                if (y == 0 || y == ny - 1 || z == 0 || z == nz - 1)
                    h_flags[x + nx * (y + ny * z)] = WALL;

    int* flags;
    HIP_CHECK(hipMalloc(&flags, ncell * sizeof(int)));
    HIP_CHECK(hipMemcpy(flags, h_flags.data(), ncell * sizeof(int), hipMemcpyHostToDevice));

    // Fluid at rest, unit density: both time levels hold the equilibrium.
    double* f[19];
    std::vector<double> h_f(2 * (size_t)ncell);
    for (int i = 0; i < 19; ++i) {
        std::fill(h_f.begin(), h_f.end(), w[i]);
        HIP_CHECK(hipMalloc(&f[i], h_f.size() * sizeof(double)));
        HIP_CHECK(hipMemcpy(f[i], h_f.data(), h_f.size() * sizeof(double), hipMemcpyHostToDevice));
    }

    double *rho, *ux, *uy, *uz, *fx, *fy, *fz, *omega;
    for (double** p : {&rho, &ux, &uy, &uz, &fx, &fy, &fz, &omega})
        HIP_CHECK(hipMalloc(p, ncell * sizeof(double)));
    std::vector<double> h(ncell, gx);
    HIP_CHECK(hipMemcpy(fx, h.data(), ncell * sizeof(double), hipMemcpyHostToDevice));
    HIP_CHECK(hipMemset(fy, 0, ncell * sizeof(double)));
    HIP_CHECK(hipMemset(fz, 0, ncell * sizeof(double)));
    std::fill(h.begin(), h.end(), 1.0 / tau);
    HIP_CHECK(hipMemcpy(omega, h.data(), ncell * sizeof(double), hipMemcpyHostToDevice));

    for (int t = 0; t < steps; ++t) {
        int src = (t & 1) * ncell, dst = ncell - src;
        hipLaunchKernelGGL(lbm_d3q19_collide_stream, dim3((nx + 255) / 256, ny, nz), dim3(256), 0, 0,
                           flags, f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8], f[9],
                           f[10], f[11], f[12], f[13], f[14], f[15], f[16], f[17], f[18],
                           rho, ux, uy, uz, fx, fy, fz, omega, nx, ny, nz, src, dst);
        HIP_CHECK(hipGetLastError());
    }
    HIP_CHECK(hipDeviceSynchronize());

    // Centre-line velocity of the channel.
    HIP_CHECK(hipMemcpy(h.data(), ux, ncell * sizeof(double), hipMemcpyDeviceToHost));
    printf("ux(centre) = %.6e\n", h[nx / 2 + nx * (ny / 2 + ny * (nz / 2))]);

    for (int i = 0; i < 19; ++i)
        HIP_CHECK(hipFree(f[i]));
    for (double* p : {rho, ux, uy, uz, fx, fy, fz, omega})
        HIP_CHECK(hipFree(p));
    HIP_CHECK(hipFree(flags));
    return 0;
}
