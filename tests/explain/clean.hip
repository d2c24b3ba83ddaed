// No seed pattern: a plain kernel that explain has nothing to say about.
#include <hip/hip_runtime.h>

__global__ void axpy(float a, const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
}
