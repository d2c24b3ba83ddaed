// A multi-kernel CUDA program made of the examples' own hosts: each
// examples/*.hip is compiled as CUDA with its main() renamed (build.py),
// and this main runs them in turn, as one application would run its
// phases; then one more MD step at production size (the example's host
// runs a 32^3 lattice with 6 neighbours, a 9 us kernel; bench/gpu and
// real MD codes run 2^20 particles with 24 neighbours each). Built
// plainly: no regtune anywhere in it.
//
//   app                   run all seven phases
//   app NAME...           run these (laplacian3d, launch_bounds_spill, lbm_d3q19, long_lived, private_array, kalman_private, md_production)
//   app --exit-early      run laplacian3d, then exit with status 3 before the rest
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

// The MD kernel and its example host, here so the production-size step can launch it too.
#define main example_long_lived
#include "../../examples/long_lived.hip"
#undef main

int example_laplacian3d();
int example_launch_bounds_spill();
int example_lbm_d3q19();
int example_private_array();
int example_kalman_private();

// One MD step on 2^20 particles in a periodic box, 0..24 neighbours each
// drawn at random (as bench/gpu/run.py's case), from a fixed seed.
static int md_production()
{
    const int n = 1 << 20, max_nbr = 24, ntypes = 2;
    const double box = 100.0, rcut2 = 30.0 * 30.0;
    uint64_t state = 12345;
    auto next = [&state]() {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        return state >> 11;
    };
    auto uniform = [&next](double lo, double hi) { return lo + (hi - lo) * (double)next() * 0x1.0p-53; };

    std::vector<double> x(n), y(n), z(n), v(n), f(n), rm(n), lam(n), zero(n, 0.0);
    std::vector<int> typ(n), cnt(n), list((size_t)max_nbr * n);
    for (int i = 0; i < n; ++i) {
        x[i] = uniform(0, box), y[i] = uniform(0, box), z[i] = uniform(0, box);
        v[i] = uniform(-1, 1), f[i] = uniform(-1, 1), rm[i] = uniform(0.5, 2.0), lam[i] = uniform(0.9, 1.1);
        typ[i] = (int)(next() % ntypes);
        cnt[i] = (int)(next() % (max_nbr + 1));
        for (int k = 0; k < max_nbr; ++k)
            list[(size_t)k * n + i] = (int)((i + 1 + next() % (n - 1)) % n); // never i itself
    }
    const double eps[4] = {1.0, 0.8, 0.8, 1.2}, sig2[4] = {1.0, 1.1, 1.1, 1.3};

    auto upload = [](const void* src, size_t bytes) {
        void* p;
        HIP_CHECK(hipMalloc(&p, bytes));
        HIP_CHECK(hipMemcpy(p, src, bytes, hipMemcpyHostToDevice));
        return p;
    };
    const size_t db = n * sizeof(double), ib = n * sizeof(int);
    double *px = (double*)upload(x.data(), db), *py = (double*)upload(y.data(), db), *pz = (double*)upload(z.data(), db);
    double *vx = (double*)upload(v.data(), db), *vy = (double*)upload(v.data(), db), *vz = (double*)upload(v.data(), db);
    double *fx = (double*)upload(f.data(), db), *fy = (double*)upload(f.data(), db), *fz = (double*)upload(f.data(), db);
    double *prm = (double*)upload(rm.data(), db), *plam = (double*)upload(lam.data(), db);
    int* ty = (int*)upload(typ.data(), ib);
    int* nc = (int*)upload(cnt.data(), ib);
    int* nl = (int*)upload(list.data(), ib * max_nbr);
    double* le = (double*)upload(eps, sizeof eps);
    double* ls = (double*)upload(sig2, sizeof sig2);
    double *ke = (double*)upload(zero.data(), db), *pe = (double*)upload(zero.data(), db);

    md_lj_force_kick<<<(n + 255) / 256, 256>>>(px, py, pz, vx, vy, vz, fx, fy, fz, prm, ty, plam, nc, nl, le, ls, ntypes,
                                                ke, pe, n, box, rcut2, 0.005);
    HIP_CHECK(hipGetLastError());
    HIP_CHECK(hipDeviceSynchronize());

    std::vector<double> h(n);
    HIP_CHECK(hipMemcpy(h.data(), pe, db, hipMemcpyDeviceToHost));
    double sum = 0.0;
    for (double e : h)
        sum += e;
    printf("md at production size: potential energy per particle = %.6f\n", sum / n);
    for (void* p : {(void*)px, (void*)py, (void*)pz, (void*)vx, (void*)vy, (void*)vz, (void*)fx, (void*)fy, (void*)fz,
                    (void*)prm, (void*)plam, (void*)ty, (void*)nc, (void*)nl, (void*)le, (void*)ls, (void*)ke, (void*)pe})
        HIP_CHECK(hipFree(p));
    return 0;
}

static const struct {
    const char* name;
    int (*run)();
} examples[] = {
    {"laplacian3d", example_laplacian3d},
    {"launch_bounds_spill", example_launch_bounds_spill},
    {"lbm_d3q19", example_lbm_d3q19},
    {"long_lived", example_long_lived},
    {"private_array", example_private_array},
    {"kalman_private", example_kalman_private},
    {"md_production", md_production},
};

int main(int argc, char** argv)
{
    if (argc == 2 && strcmp(argv[1], "--exit-early") == 0) {
        example_laplacian3d();
        fflush(stdout);
        exit(3);
    }
    for (const auto& e : examples) {
        bool wanted = argc == 1;
        for (int i = 1; i < argc; ++i)
            wanted |= strcmp(argv[i], e.name) == 0;
        if (!wanted)
            continue;
        printf("== %s\n", e.name);
        if (int rc = e.run())
            return rc;
    }
    return 0;
}
