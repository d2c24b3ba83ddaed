// Seed pattern: a large struct passed by value that the kernel writes to,
// so it works on a private copy in scratch memory.
#include <hip/hip_runtime.h>

struct Stencil {
    float weight[32];
    int radius;
};

__global__ __launch_bounds__(256) void smooth(Stencil s, const float* in, float* out, int n, float scale)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    for (int r = 0; r < s.radius; ++r)
        s.weight[r] *= scale * in[i + r];
    float acc = 0.0f;
    for (int r = 0; r < s.radius; ++r)
        acc += s.weight[r];
    out[i] = acc;
}
