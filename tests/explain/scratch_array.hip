// Seed pattern: a private array indexed at run time lives in scratch.
#include <hip/hip_runtime.h>

__global__ __launch_bounds__(256) void bin_count(const int* keys, int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    int bins[64];
    for (int b = 0; b < 64; ++b)
        bins[b] = 0;
    for (int k = 0; k < 16; ++k)
        bins[keys[i * 16 + k] & 63] += 1;
    int best = 0;
    for (int b = 1; b < 64; ++b)
        best = bins[b] > bins[best] ? b : best;
    out[i] = best;
}
