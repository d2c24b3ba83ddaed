// A kernel with module variables, launched 100 times: `__constant__`
// weights the program sets, and a `__device__` counter every thread of
// every launch adds to. Under `regtune measure` the replay's choice runs
// on alternate launches from its own module: the counter must still count
// every launch, and the output be plain's. Built with -DFAST it computes
// the same without its busy work (build.py makes every candidate so, for
// the replay to choose one). Plain CUDA: no regtune in it.
#include "common.cuh"

constexpr int N = 1 << 16;
constexpr int BLOCK = 256;
constexpr int LAUNCHES = 100;
constexpr int ROUNDS = 20000;

__constant__ double weight[TERMS];
__device__ unsigned long long counter;

__global__ void v_count(double* out, const double* in, int n, int rounds)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    double r = mix(in, i, n) * weight[i % TERMS];
#ifndef FAST
    // Busy work whose result no store can see (it never reaches -1).
    double w = fabs(r);
    for (int k = 0; k < rounds; ++k)
        w = w * 0.999999 + 1e-7;
    if (w == -1.0)
        r = w;
#endif
    out[i] = r;
    atomicAdd(&counter, 1ull);
}

int main()
{
    std::vector<double> w(TERMS);
    for (int k = 0; k < TERMS; ++k)
        w[k] = 1.0 / (k + 1);
    CHECK(cudaMemcpyToSymbol(weight, w.data(), sizeof(double) * TERMS));
    unsigned long long start = 7, end = 0;
    CHECK(cudaMemcpyToSymbol(counter, &start, sizeof start));
    std::vector<double> in_h = inputs(N, 3);
    double* in = upload(in_h);
    double* out;
    CHECK(cudaMalloc(&out, sizeof(double) * N));
    for (int l = 0; l < LAUNCHES; ++l) {
        v_count<<<N / BLOCK, BLOCK>>>(out, in, N, ROUNDS);
        CHECK(cudaGetLastError());
    }
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpyFromSymbol(&end, counter, sizeof end));
    std::vector<double> got = download(out, N), want(N);
    for (int i = 0; i < N; ++i)
        want[i] = mix(in_h.data(), i, N) * w[i % TERMS];
    bool counted = end - start == (unsigned long long)LAUNCHES * N;
    printf("v_count: %d launches, counted %llu%s, output %s, digest %016llx\n", LAUNCHES, end - start, counted ? "" : " WRONG",
           close(got, want) ? "right" : "WRONG", digest(got));
    CHECK(cudaFree(in));
    CHECK(cudaFree(out));
    return counted ? 0 : 1;
}
