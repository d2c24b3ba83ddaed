// Molecular dynamics: Lennard-Jones force from a Verlet neighbour list fused
// with the velocity-Verlet velocity update
//   v(t+dt) = v(t) + dt/(2m) (f(t) + f(t+dt))
// and a Berendsen-style thermostat rescale.
//
// Register-pressure pattern: long-lived early definitions.  The kernel
// gathers the whole particle state at the top (velocity, old force, mass,
// thermostat factor, ...), but only the position is needed by the neighbour
// loop; the rest is used after it.  The loop writes no memory, so moving
// those loads below it is legal, but clang -O3 does not move code across a
// loop, so the values hold registers through the hottest part of the kernel.
// Moving each definition next to its first use, after the loop, frees them.
#include "regtune_gpu.h" // <hip/hip_runtime.h>, or CUDA with NVPTX

#include <cstdio>
#include <cstdlib>
#include <vector>

__global__ void md_lj_force_kick(
    const double* pos_x, const double* pos_y, const double* pos_z,
    double* vel_x, double* vel_y, double* vel_z,
    double* force_x, double* force_y, double* force_z,
    const double* inv_mass, const int* type, const double* lambda_thermo,
    const int* nbr_count, const int* nbr_list,
    const double* lj_eps, const double* lj_sig2, int ntypes,
    double* kinetic, double* potential,
    int n, double box, double rcut2, double dt)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;

    // Gather this particle's state.
    const double xi = pos_x[i], yi = pos_y[i], zi = pos_z[i];
    const double vxi = vel_x[i], vyi = vel_y[i], vzi = vel_z[i];
    const double fx_old = force_x[i], fy_old = force_y[i], fz_old = force_z[i];
    const double rmass = inv_mass[i];
    const double lambda = lambda_thermo[i];
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
        // Minimum image in a periodic cubic box.
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
            epot += 2.0 * eps * (s12 - s6); // half of 4 eps (...): each pair is seen twice
            fx += fmag * dx;
            fy += fmag * dy;
            fz += fmag * dz;
        }
    }

    // Velocity update with the old and new force, then thermostat rescale.
    const double vx = lambda * (vxi + half_dt_m * (fx_old + fx));
    const double vy = lambda * (vyi + half_dt_m * (fy_old + fy));
    const double vz = lambda * (vzi + half_dt_m * (fz_old + fz));
    vel_x[i] = vx;
    vel_y[i] = vy;
    vel_z[i] = vz;
    force_x[i] = fx;
    force_y[i] = fy;
    force_z[i] = fz;
    kinetic[i] = 0.5 * mass * (vx * vx + vy * vy + vz * vz);
    potential[i] = epot;
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
    // Simple cubic lattice, all pairs within the cut-off as neighbours.
    const int side = 32, n = side * side * side, max_nbr = 6;
    const double spacing = 1.12, box = side * spacing, rcut2 = 2.5 * 2.5;

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
    double *rm = (double*)upload(one.data(), db), *lam = (double*)upload(one.data(), db);
    int* ty = (int*)upload(typ.data(), ib);
    int* nc = (int*)upload(cnt.data(), ib);
    int* nl = (int*)upload(list.data(), ib * max_nbr);
    double* le = (double*)upload(&eps, sizeof(double));
    double* ls = (double*)upload(&sig2, sizeof(double));
    double *ke = (double*)upload(zero.data(), db), *pe = (double*)upload(zero.data(), db);

    hipLaunchKernelGGL(md_lj_force_kick, dim3((n + 255) / 256), dim3(256), 0, 0,
                       px, py, pz, vx, vy, vz, fx, fy, fz, rm, ty, lam, nc, nl,
                       le, ls, 1, ke, pe, n, box, rcut2, 0.005);
    HIP_CHECK(hipGetLastError());
    HIP_CHECK(hipDeviceSynchronize());

    std::vector<double> h(n);
    HIP_CHECK(hipMemcpy(h.data(), pe, db, hipMemcpyDeviceToHost));
    double sum = 0.0;
    for (double e : h)
        sum += e;
    printf("potential energy per particle = %.6f\n", sum / n);

    for (void* p : {(void*)px, (void*)py, (void*)pz, (void*)vx, (void*)vy, (void*)vz, (void*)fx,
                    (void*)fy, (void*)fz, (void*)rm, (void*)lam, (void*)ty, (void*)nc, (void*)nl,
                    (void*)le, (void*)ls, (void*)ke, (void*)pe})
        HIP_CHECK(hipFree(p));
    return 0;
}
