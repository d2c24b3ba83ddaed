// D3Q19 lattice-Boltzmann step with a two-relaxation-time (TRT) collision,
// pull-streaming and Guo forcing, structure-of-arrays layout: the shape of
// the seed's lattice-Boltzmann code (issue 10), with 30 pointer parameters.
// The lattice weights and the TRT rates come from device arrays the host
// fills, as codes do that pick the lattice or the model at run time.
//
// Register-pressure pattern: as lbm_d3q19.hip (19 populations live until
// the moments are known, one straight-line block), without pow(), and with
// no pointer __restrict__. The weights and rates are read after the first
// stores, so without noalias they are vector loads the compiler must repeat
// after every store to another array; with noalias they become scalar loads
// (SGPRs), issued early. That is what takes the kernel from 88 VGPRs
// (occupancy 5 on gfx90a) to what waves-per-eu 6 can hold without a spill.
#include "regtune_gpu.h" // <hip/hip_runtime.h>, or CUDA with NVPTX

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <vector>

enum CellType : int { FLUID = 0, WALL = 1, OUTSIDE = 2 };

// Velocity set (pull: population i at x comes from x - c_i):
//  1:(+1,0,0)  2:(-1,0,0)  3:(0,+1,0)  4:(0,-1,0)  5:(0,0,+1)  6:(0,0,-1)
//  7:(+1,+1,0) 8:(-1,-1,0) 9:(+1,-1,0) 10:(-1,+1,0)
// 11:(+1,0,+1) 12:(-1,0,-1) 13:(+1,0,-1) 14:(-1,0,+1)
// 15:(0,+1,+1) 16:(0,-1,-1) 17:(0,+1,-1) 18:(0,-1,+1)

__global__ void lbm_d3q19_trt(
    const int* flags,
    double* f0, double* f1, double* f2, double* f3, double* f4, double* f5,
    double* f6, double* f7, double* f8, double* f9, double* f10, double* f11,
    double* f12, double* f13, double* f14, double* f15, double* f16,
    double* f17, double* f18,
    double* rho_out, double* ux_out, double* uy_out, double* uz_out,
    const double* force_x, const double* force_y, const double* force_z,
    const double* omega_cell, // per-cell relaxation rate (turbulence model)
    const double* weight, // lattice weights w_0..w_18, set by the host
    const double* rate,   // TRT: even and odd relaxation factors per direction pair
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
    double usq = 1.5 * (ux * ux + uy * uy + uz * uz);
    double uF = ux * Fx + uy * Fy + uz * Fz;
    double fpre = 1.0 - 0.5 * omega; // Guo forcing prefactor

    // Rest population.
    double feq0 = weight[0] * rho * (1.0 - usq);
    f0[o] = p0 + omega * (feq0 - p0) - fpre * weight[0] * 3.0 * uF;

    // Two-relaxation-time collision: opposite directions i / i' (c_i' = -c_i)
    // relax their even part f+ = (f_i + f_i')/2 and odd part f- = (f_i - f_i')/2
    // towards feq+ and feq- at their own rates (rate[2k], rate[2k+1]):
    //   feq+ = w rho (1 + 4.5 (c.u)^2 - 1.5 u^2),  feq- = w rho 3 c.u
    //   F_i,i' = (1 - omega/2) w (9 (c.u)(c.F) - 3 u.F)  +/-  (1 - omega/2) w 3 c.F
    double cu, cF, even, odd, feven, fodd;

    cu = ux; cF = Fx;
    even = weight[1] * rho * (1.0 + 4.5 * cu * cu - usq);
    odd = weight[1] * rho * 3.0 * cu;
    feven = fpre * weight[1] * (9.0 * cu * cF - 3.0 * uF);
    fodd = fpre * weight[1] * 3.0 * cF;
    f1[o] = p1 + omega * (rate[0] * (even - 0.5 * (p1 + p2)) + rate[1] * (odd - 0.5 * (p1 - p2))) + feven + fodd;
    f2[o] = p2 + omega * (rate[0] * (even - 0.5 * (p1 + p2)) - rate[1] * (odd - 0.5 * (p1 - p2))) + feven - fodd;

    cu = uy; cF = Fy;
    even = weight[3] * rho * (1.0 + 4.5 * cu * cu - usq);
    odd = weight[3] * rho * 3.0 * cu;
    feven = fpre * weight[3] * (9.0 * cu * cF - 3.0 * uF);
    fodd = fpre * weight[3] * 3.0 * cF;
    f3[o] = p3 + omega * (rate[2] * (even - 0.5 * (p3 + p4)) + rate[3] * (odd - 0.5 * (p3 - p4))) + feven + fodd;
    f4[o] = p4 + omega * (rate[2] * (even - 0.5 * (p3 + p4)) - rate[3] * (odd - 0.5 * (p3 - p4))) + feven - fodd;

    cu = uz; cF = Fz;
    even = weight[5] * rho * (1.0 + 4.5 * cu * cu - usq);
    odd = weight[5] * rho * 3.0 * cu;
    feven = fpre * weight[5] * (9.0 * cu * cF - 3.0 * uF);
    fodd = fpre * weight[5] * 3.0 * cF;
    f5[o] = p5 + omega * (rate[4] * (even - 0.5 * (p5 + p6)) + rate[5] * (odd - 0.5 * (p5 - p6))) + feven + fodd;
    f6[o] = p6 + omega * (rate[4] * (even - 0.5 * (p5 + p6)) - rate[5] * (odd - 0.5 * (p5 - p6))) + feven - fodd;

    cu = ux + uy; cF = Fx + Fy;
    even = weight[7] * rho * (1.0 + 4.5 * cu * cu - usq);
    odd = weight[7] * rho * 3.0 * cu;
    feven = fpre * weight[7] * (9.0 * cu * cF - 3.0 * uF);
    fodd = fpre * weight[7] * 3.0 * cF;
    f7[o] = p7 + omega * (rate[6] * (even - 0.5 * (p7 + p8)) + rate[7] * (odd - 0.5 * (p7 - p8))) + feven + fodd;
    f8[o] = p8 + omega * (rate[6] * (even - 0.5 * (p7 + p8)) - rate[7] * (odd - 0.5 * (p7 - p8))) + feven - fodd;

    cu = ux - uy; cF = Fx - Fy;
    even = weight[9] * rho * (1.0 + 4.5 * cu * cu - usq);
    odd = weight[9] * rho * 3.0 * cu;
    feven = fpre * weight[9] * (9.0 * cu * cF - 3.0 * uF);
    fodd = fpre * weight[9] * 3.0 * cF;
    f9[o] = p9 + omega * (rate[8] * (even - 0.5 * (p9 + p10)) + rate[9] * (odd - 0.5 * (p9 - p10))) + feven + fodd;
    f10[o] = p10 + omega * (rate[8] * (even - 0.5 * (p9 + p10)) - rate[9] * (odd - 0.5 * (p9 - p10))) + feven - fodd;

    cu = ux + uz; cF = Fx + Fz;
    even = weight[11] * rho * (1.0 + 4.5 * cu * cu - usq);
    odd = weight[11] * rho * 3.0 * cu;
    feven = fpre * weight[11] * (9.0 * cu * cF - 3.0 * uF);
    fodd = fpre * weight[11] * 3.0 * cF;
    f11[o] = p11 + omega * (rate[10] * (even - 0.5 * (p11 + p12)) + rate[11] * (odd - 0.5 * (p11 - p12))) + feven + fodd;
    f12[o] = p12 + omega * (rate[10] * (even - 0.5 * (p11 + p12)) - rate[11] * (odd - 0.5 * (p11 - p12))) + feven - fodd;

    cu = ux - uz; cF = Fx - Fz;
    even = weight[13] * rho * (1.0 + 4.5 * cu * cu - usq);
    odd = weight[13] * rho * 3.0 * cu;
    feven = fpre * weight[13] * (9.0 * cu * cF - 3.0 * uF);
    fodd = fpre * weight[13] * 3.0 * cF;
    f13[o] = p13 + omega * (rate[12] * (even - 0.5 * (p13 + p14)) + rate[13] * (odd - 0.5 * (p13 - p14))) + feven + fodd;
    f14[o] = p14 + omega * (rate[12] * (even - 0.5 * (p13 + p14)) - rate[13] * (odd - 0.5 * (p13 - p14))) + feven - fodd;

    cu = uy + uz; cF = Fy + Fz;
    even = weight[15] * rho * (1.0 + 4.5 * cu * cu - usq);
    odd = weight[15] * rho * 3.0 * cu;
    feven = fpre * weight[15] * (9.0 * cu * cF - 3.0 * uF);
    fodd = fpre * weight[15] * 3.0 * cF;
    f15[o] = p15 + omega * (rate[14] * (even - 0.5 * (p15 + p16)) + rate[15] * (odd - 0.5 * (p15 - p16))) + feven + fodd;
    f16[o] = p16 + omega * (rate[14] * (even - 0.5 * (p15 + p16)) - rate[15] * (odd - 0.5 * (p15 - p16))) + feven - fodd;

    cu = uy - uz; cF = Fy - Fz;
    even = weight[17] * rho * (1.0 + 4.5 * cu * cu - usq);
    odd = weight[17] * rho * 3.0 * cu;
    feven = fpre * weight[17] * (9.0 * cu * cF - 3.0 * uF);
    fodd = fpre * weight[17] * 3.0 * cF;
    f17[o] = p17 + omega * (rate[16] * (even - 0.5 * (p17 + p18)) + rate[17] * (odd - 0.5 * (p17 - p18))) + feven + fodd;
    f18[o] = p18 + omega * (rate[16] * (even - 0.5 * (p17 + p18)) - rate[17] * (odd - 0.5 * (p17 - p18))) + feven - fodd;
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
    const double tau = 0.6, gx = 1e-6, magic = 3.0 / 16.0;
    const double w0 = 1.0 / 3.0, ws = 1.0 / 18.0, wd = 1.0 / 36.0;
    const std::vector<double> w = {w0, ws, ws, ws, ws, ws, ws, wd, wd, wd, wd, wd, wd, wd, wd, wd, wd, wd, wd};
    // TRT: the odd rate follows from the even one and the "magic" parameter
    // Lambda = (1/le - 1/2)(1/lo - 1/2); rates are relative to omega = 1/tau.
    const double le = 1.0, lo = 1.0 / (magic / (tau - 0.5) + 0.5) * tau;
    std::vector<double> r;
    for (int k = 0; k < 9; ++k) {
        r.push_back(le);
        r.push_back(lo);
    }

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

    double *rho, *ux, *uy, *uz, *fx, *fy, *fz, *omega, *weight, *rate;
    for (double** p : {&rho, &ux, &uy, &uz, &fx, &fy, &fz, &omega})
        HIP_CHECK(hipMalloc(p, ncell * sizeof(double)));
    HIP_CHECK(hipMalloc(&weight, w.size() * sizeof(double)));
    HIP_CHECK(hipMemcpy(weight, w.data(), w.size() * sizeof(double), hipMemcpyHostToDevice));
    HIP_CHECK(hipMalloc(&rate, r.size() * sizeof(double)));
    HIP_CHECK(hipMemcpy(rate, r.data(), r.size() * sizeof(double), hipMemcpyHostToDevice));
    std::vector<double> h(ncell, gx);
    HIP_CHECK(hipMemcpy(fx, h.data(), ncell * sizeof(double), hipMemcpyHostToDevice));
    HIP_CHECK(hipMemset(fy, 0, ncell * sizeof(double)));
    HIP_CHECK(hipMemset(fz, 0, ncell * sizeof(double)));
    std::fill(h.begin(), h.end(), 1.0 / tau);
    HIP_CHECK(hipMemcpy(omega, h.data(), ncell * sizeof(double), hipMemcpyHostToDevice));

    for (int t = 0; t < steps; ++t) {
        int src = (t & 1) * ncell, dst = ncell - src;
        hipLaunchKernelGGL(lbm_d3q19_trt, dim3((nx + 255) / 256, ny, nz), dim3(256), 0, 0,
                           flags, f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8], f[9],
                           f[10], f[11], f[12], f[13], f[14], f[15], f[16], f[17], f[18],
                           rho, ux, uy, uz, fx, fy, fz, omega, weight, rate, nx, ny, nz, src, dst);
        HIP_CHECK(hipGetLastError());
    }
    HIP_CHECK(hipDeviceSynchronize());

    // Centre-line velocity of the channel.
    HIP_CHECK(hipMemcpy(h.data(), ux, ncell * sizeof(double), hipMemcpyDeviceToHost));
    printf("ux(centre) = %.6e\n", h[nx / 2 + nx * (ny / 2 + ny * (nz / 2))]);

    for (int i = 0; i < 19; ++i)
        HIP_CHECK(hipFree(f[i]));
    for (double* p : {rho, ux, uy, uz, fx, fy, fz, omega, weight, rate})
        HIP_CHECK(hipFree(p));
    HIP_CHECK(hipFree(flags));
    return 0;
}
