// Seed pattern: values loaded before a loop and used only after it.
#include <hip/hip_runtime.h>

__global__ __launch_bounds__(256) void relax(const double* w, const double* u0, const double* u1,
                                             const int* nbr, double* out, int n, int deg)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const double a = u0[i], b = u1[i];
    double s = 0.0;
    for (int k = 0; k < deg; ++k)
        s += w[nbr[k * n + i]];
    out[i] = a * s + b;
}
