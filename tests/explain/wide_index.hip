// Seed pattern: 64-bit index arithmetic where 32-bit would do.
#include <hip/hip_runtime.h>

__global__ __launch_bounds__(256) void gather_rows(const float* a, float* out, int rows, int cols)
{
    size_t row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= (size_t)rows)
        return;
    float s = 0.0f;
    for (int c = 0; c < cols; ++c) {
        size_t at = row * cols + c;
        s += a[at];
    }
    out[row] = s;
}
