// A cooperative kernel under `regtune measure`: c_coop computes a[i] for
// every i, waits for the whole grid (grid.sync()), then reads its
// neighbours' a: wrong without the grid barrier, which needs a cooperative
// launch (every block resident at once). The grid is as large as the
// plain build allows (blocks per SM x SMs); it is launched twice, through
// cudaLaunchCooperativeKernel and through cudaLaunchKernelEx with the
// cooperative attribute.
//
//   coop     two launches; one line each (checksum, ok/WRONG); status 1 when wrong
#include <cooperative_groups.h>

#include "common.cuh"

namespace cg = cooperative_groups;

static const int BLOCK = 128;

__global__ void c_coop(double* __restrict__ a, double* __restrict__ out, const double* __restrict__ in, int n, double s)
{
    cg::grid_group grid = cg::this_grid();
    for (int i = grid.thread_rank(); i < n; i += grid.size())
        a[i] = mix(in, i, n) * s;
    grid.sync();
    for (int i = grid.thread_rank(); i < n; i += grid.size())
        out[i] = a[i] - a[(i + 1) % n];
}

int main()
{
    int device = 0, sms = 0, per_sm = 0, cooperative = 0;
    CHECK(cudaGetDevice(&device));
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    CHECK(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, device));
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, c_coop, BLOCK, 0));
    if (!cooperative || per_sm == 0) {
        fprintf(stderr, "no cooperative launch here\n");
        return 2;
    }
    const int blocks = sms * per_sm, n = blocks * BLOCK * 3;
    fprintf(stderr, "c_coop: %d blocks of %d (%d per SM)\n", blocks, BLOCK, per_sm);
    int failures = 0;
    for (int launch = 0; launch < 2; ++launch) {
        std::vector<double> x = inputs(n, 40 + launch);
        double* in = upload(x);
        double *a, *out;
        CHECK(cudaMalloc(&a, n * sizeof(double)));
        CHECK(cudaMalloc(&out, n * sizeof(double)));
        CHECK(cudaMemset(a, 0, n * sizeof(double)));
        int nn = n;
        double s = 0.5 + launch;
        void* args[] = {&a, &out, &in, &nn, &s};
        if (launch == 0) {
            CHECK(cudaLaunchCooperativeKernel((void*)c_coop, dim3(blocks), dim3(BLOCK), args, 0, 0));
        } else {
            cudaLaunchConfig_t config = {};
            config.gridDim = dim3(blocks);
            config.blockDim = dim3(BLOCK);
            cudaLaunchAttribute attr[1];
            attr[0].id = cudaLaunchAttributeCooperative;
            attr[0].val.cooperative = 1;
            config.attrs = attr;
            config.numAttrs = 1;
            CHECK(cudaLaunchKernelExC(&config, (void*)c_coop, args));
        }
        CHECK(cudaDeviceSynchronize());
        std::vector<double> av(n), want(n);
        for (int i = 0; i < n; ++i)
            av[i] = mix(x.data(), i, n) * s;
        for (int i = 0; i < n; ++i)
            want[i] = av[i] - av[(i + 1) % n];
        std::vector<double> got = download(out, n);
        bool ok = close(got, want);
        failures += !ok;
        printf("coop launch %d (%s): %016llx %s\n", launch, launch ? "cudaLaunchKernelEx" : "cudaLaunchCooperativeKernel", digest(got),
               ok ? "ok" : "WRONG");
        CHECK(cudaFree(in));
        CHECK(cudaFree(a));
        CHECK(cudaFree(out));
    }
    return failures ? 1 : 0;
}
