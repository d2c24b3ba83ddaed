// Shared memory and named barriers, for tests/nvptx.rs: `regtune report`'s
// shared memory and barriers must equal `ptxas -v`'s, and its occupancy
// NVIDIA's calculator's, where those limits matter (sm_100's 228 KB and 2
// barriers per block slot against sm_120's 100 KB and 1).
#include <cuda_runtime.h>

// 40 KB of static shared memory: 41 KB a block with the driver's reserved
// kilobyte, so 5 blocks fit sm_100's largest carveout and 2 sm_120's.
__global__ void tile_transpose_sum(const float* in, float* out, int n)
{
    __shared__ float tile[80][128];
    const int x = blockIdx.x * 128 + threadIdx.x;
    for (int r = 0; r < 80; ++r)
        tile[r][threadIdx.x] = x < n ? in[r * n + x] : 0.0f;
    __syncthreads();
    float s = 0.0f;
    for (int r = 0; r < 80; ++r)
        s += tile[(r + threadIdx.x) % 80][(threadIdx.x * 7) % 128];
    if (x < n)
        out[x] = s;
}

// A named barrier besides __syncthreads' barrier 0: ptxas counts 2.
__global__ void two_barriers(float* data, int n)
{
    __shared__ float buf[256];
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    buf[threadIdx.x] = i < n ? data[i] : 0.0f;
    __syncthreads();
    if (threadIdx.x < 64) {
        buf[threadIdx.x] += buf[threadIdx.x + 64];
        asm volatile("bar.sync 1, 64;" ::: "memory");
        buf[threadIdx.x] += buf[(threadIdx.x + 1) % 64];
    }
    __syncthreads();
    if (i < n)
        data[i] = buf[threadIdx.x];
}
