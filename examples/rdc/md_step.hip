// Molecular dynamics with relocatable device code (-fgpu-rdc): a
// Lennard-Jones force kernel fused with the velocity update, whose
// thermostat (thermostat_scale) is defined in thermostat.hip.
//
// Register-pressure pattern: long-lived early definitions, as in
// ../long_lived.hip. The velocity, old force and mass are loaded at the top
// but used only after the neighbour loop; moving them below it (sink) frees
// their registers. Built alone, the kernel calls an undefined function, so
// its registers are not known: `regtune tune md_step.hip thermostat.hip --
// -fgpu-rdc` links both, as the build does.
#include "md_rdc.h"

#include <cstdio>
#include <cstdlib>
#include <vector>

__global__ void md_rdc_force_kick(
    const double* pos_x, const double* pos_y, const double* pos_z,
    double* vel_x, double* vel_y, double* vel_z,
    double* force_x, double* force_y, double* force_z,
    const double* inv_mass, const int* type, const double* ekin_target,
    const int* nbr_count, const int* nbr_list,
    const double* lj_eps, const double* lj_sig2, int ntypes,
    double* kinetic, double* potential,
    int n, double box, double rcut2, double dt, double tau)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;

    // Gather this particle's state: only the position is needed in the loop.
    const double xi = pos_x[i], yi = pos_y[i], zi = pos_z[i];
    const double vxi = vel_x[i], vyi = vel_y[i], vzi = vel_z[i];
    const double fx_old = force_x[i], fy_old = force_y[i], fz_old = force_z[i];
    const double rmass = inv_mass[i];
    const double target = ekin_target[i];
    const double half_dt_m = 0.5 * dt * rmass;
    const double mass = 1.0 / rmass;
    const int ti = type[i];
    const int nn = nbr_count[i];
    const double inv_box = 1.0 / box;

    double fx = 0.0, fy = 0.0, fz = 0.0, epot = 0.0;
    for (int k = 0; k < nn; ++k) {
        const int j = nbr_list[k * n + i]; // column-major list: coalesced
        double dx = xi - pos_x[j];
        double dy = yi - pos_y[j];
        double dz = zi - pos_z[j];
        dx -= box * rint(dx * inv_box);
        dy -= box * rint(dy * inv_box);
        dz -= box * rint(dz * inv_box);
        const double r2 = dx * dx + dy * dy + dz * dz;
        if (r2 < rcut2) {
            const int tp = ti * ntypes + type[j];
            const double eps = lj_eps[tp];
            const double s2 = lj_sig2[tp] / r2;
            const double s6 = s2 * s2 * s2;
            const double s12 = s6 * s6;
            const double fmag = 24.0 * eps * (2.0 * s12 - s6) / r2;
            epot += 2.0 * eps * (s12 - s6);
            fx += fmag * dx;
            fy += fmag * dy;
            fz += fmag * dz;
        }
    }

    // Velocity update with the old and new force; thermostat.hip's
    // thermostat then rescales it.
    const double vx = vxi + half_dt_m * (fx_old + fx);
    const double vy = vyi + half_dt_m * (fy_old + fy);
    const double vz = vzi + half_dt_m * (fz_old + fz);
    const double ekin = 0.5 * mass * (vx * vx + vy * vy + vz * vz);
    const double s = thermostat_scale(ekin, target, dt, tau);
    vel_x[i] = s * vx;
    vel_y[i] = s * vy;
    vel_z[i] = s * vz;
    force_x[i] = fx;
    force_y[i] = fy;
    force_z[i] = fz;
    kinetic[i] = s * s * ekin;
    potential[i] = epot;
}

// Positions advance with the new velocities; no call leaves this file.
__global__ void md_rdc_drift(double* pos_x, double* pos_y, double* pos_z,
                             const double* vel_x, const double* vel_y, const double* vel_z, int n, double dt)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    pos_x[i] += dt * vel_x[i];
    pos_y[i] += dt * vel_y[i];
    pos_z[i] += dt * vel_z[i];
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
    // Simple cubic lattice, the six nearest sites as neighbours.
    const int side = 32, n = side * side * side, max_nbr = 6;
    const double spacing = 1.12, box = side * spacing, rcut2 = 2.5 * 2.5, dt = 0.005;

    std::vector<double> x(n), y(n), z(n), zero(n, 0.0), one(n, 1.0);
    std::vector<int> cnt(n, max_nbr), list((size_t)max_nbr * n), typ(n, 0);
    for (int c = 0; c < n; ++c) {
        int a = c % side, b = (c / side) % side, d = c / (side * side);
        x[c] = a * spacing;
        y[c] = b * spacing;
        z[c] = d * spacing;
        int nb[max_nbr] = {
            (a + 1) % side + side * (b + side * d), (a + side - 1) % side + side * (b + side * d),
            a + side * ((b + 1) % side + side * d), a + side * ((b + side - 1) % side + side * d),
            a + side * (b + side * ((d + 1) % side)), a + side * (b + side * ((d + side - 1) % side))};
        for (int k = 0; k < max_nbr; ++k)
            list[(size_t)k * n + c] = nb[k];
    }
    const double eps = 1.0, sig2 = 1.0;

    auto upload = [](const void* src, size_t bytes) {
        void* p;
        HIP_CHECK(hipMalloc(&p, bytes));
        HIP_CHECK(hipMemcpy(p, src, bytes, hipMemcpyHostToDevice));
        return p;
    };
    const size_t db = n * sizeof(double), ib = n * sizeof(int);
    double *px = (double*)upload(x.data(), db), *py = (double*)upload(y.data(), db), *pz = (double*)upload(z.data(), db);
    double *vx = (double*)upload(zero.data(), db), *vy = (double*)upload(zero.data(), db), *vz = (double*)upload(zero.data(), db);
    double *fx = (double*)upload(zero.data(), db), *fy = (double*)upload(zero.data(), db), *fz = (double*)upload(zero.data(), db);
    double *rm = (double*)upload(one.data(), db), *target = (double*)upload(one.data(), db);
    int* ty = (int*)upload(typ.data(), ib);
    int* nc = (int*)upload(cnt.data(), ib);
    int* nl = (int*)upload(list.data(), ib * max_nbr);
    double* le = (double*)upload(&eps, sizeof(double));
    double* ls = (double*)upload(&sig2, sizeof(double));
    double *ke = (double*)upload(zero.data(), db), *pe = (double*)upload(zero.data(), db);

    hipLaunchKernelGGL(md_rdc_force_kick, dim3((n + 255) / 256), dim3(256), 0, 0,
                       px, py, pz, vx, vy, vz, fx, fy, fz, rm, ty, target, nc, nl,
                       le, ls, 1, ke, pe, n, box, rcut2, dt, 0.1);
    HIP_CHECK(hipGetLastError());
    hipLaunchKernelGGL(md_rdc_drift, dim3((n + 255) / 256), dim3(256), 0, 0, px, py, pz, vx, vy, vz, n, dt);
    HIP_CHECK(hipGetLastError());
    HIP_CHECK(hipDeviceSynchronize());

    std::vector<double> h(n);
    HIP_CHECK(hipMemcpy(h.data(), ke, db, hipMemcpyDeviceToHost));
    double sum = 0.0;
    for (double e : h)
        sum += e;
    printf("kinetic energy per particle = %.6f\n", sum / n);

    for (void* p : {(void*)px, (void*)py, (void*)pz, (void*)vx, (void*)vy, (void*)vz, (void*)fx,
                    (void*)fy, (void*)fz, (void*)rm, (void*)target, (void*)ty, (void*)nc, (void*)nl,
                    (void*)le, (void*)ls, (void*)ke, (void*)pe})
        HIP_CHECK(hipFree(p));
    return 0;
}
