// Seed pattern: no launch bounds, so the compiler must allow 1024-thread
// blocks and caps the registers; this kernel needs more and spills.
#include <hip/hip_runtime.h>

#define N 8

__global__ void solve8(const double* m, const double* r, double* x, int cells)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cells)
        return;
    double a[N][N], b[N];
#pragma unroll
    for (int i = 0; i < N; ++i) {
        b[i] = r[i * cells + c];
#pragma unroll
        for (int j = 0; j < N; ++j)
            a[i][j] = m[(i * N + j) * cells + c];
    }
#pragma unroll
    for (int p = 0; p < N; ++p) {
#pragma unroll
        for (int i = p + 1; i < N; ++i) {
            double l = a[i][p] / a[p][p];
#pragma unroll
            for (int j = p + 1; j < N; ++j)
                a[i][j] -= l * a[p][j];
            b[i] -= l * b[p];
        }
    }
#pragma unroll
    for (int i = N - 1; i >= 0; --i) {
        double s = b[i];
#pragma unroll
        for (int j = i + 1; j < N; ++j)
            s -= a[i][j] * b[j];
        b[i] = s / a[i][i];
    }
#pragma unroll
    for (int i = 0; i < N; ++i)
        x[i * cells + c] = b[i];
}

int main()
{
    solve8<<<64, 256>>>(nullptr, nullptr, nullptr, 0);
    return 0;
}
