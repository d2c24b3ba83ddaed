// Seed pattern: pow(x, 2.0) where x * x would do.
#include <hip/hip_runtime.h>

__global__ __launch_bounds__(256) void kinetic_energy(const double* vx, const double* vy, double* e, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    e[i] = 0.5 * (pow(vx[i], 2.0) + pow(vy[i], 2.0));
}
