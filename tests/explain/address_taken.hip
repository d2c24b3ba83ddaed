// Seed pattern: a local whose address is passed to a function that cannot
// be inlined (it is recursive) lives in scratch memory.
#include <hip/hip_runtime.h>

__device__ void walk(const int* child, const float* val, int node, int depth, float* acc)
{
    if (node < 0 || depth == 0)
        return;
    *acc += val[node];
    walk(child, val, child[2 * node], depth - 1, acc);
    walk(child, val, child[2 * node + 1], depth - 1, acc);
}

__global__ __launch_bounds__(256) void tree_sum(const int* child, const float* val, const int* root, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float acc = 0.0f;
    walk(child, val, root[i], 8, &acc);
    out[i] = acc;
}
