// Kernels for tests/fix.rs: the forms a source patch has to handle or
// report. Each is small; the tests write their decisions into a db.
#include <hip/hip_runtime.h>

// A template: both instantiations share one source, so one edit; the
// first square is of an expression (a helper evaluates it once).
template <typename T>
__global__ void scale_sq(T* x, const T* y, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] = pow(y[i] + T(1), T(2)) + pow(x[i], T(2));
}
template __global__ void scale_sq<float>(float*, const float*, int);
template __global__ void scale_sq<double>(double*, const double*, int);

// A kernel a macro defines: its square is written in the macro, through
// the helper (the argument is not a plain name), defined above the macro.
#define SQUARE_KERNEL(name) \
    __global__ void name(double* p) { p[threadIdx.x] = pow(p[threadIdx.x], 2.0); }
SQUARE_KERNEL(from_macro)

// A value kept across a loop with a barrier: it may not move below it.
__global__ void sync_loop(const double* a, double* out, int n)
{
    const double keep = a[threadIdx.x] * a[threadIdx.x + 1];
    double s = 0.0;
    for (int k = 0; k < n; ++k) {
        s += a[k * blockDim.x + threadIdx.x];
        __syncthreads();
    }
    out[threadIdx.x] = s * keep;
}

// Loops without a pragma, and one in a helper the kernel calls.
__device__ double dot(const double* a, const double* b, int n)
{
    double s = 0.0;
    for (int k = 0; k < n; ++k)
        s += a[k] * b[k];
    return s;
}

__global__ void rows(const double* m, const double* v, double* out, int n)
{
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    double acc = 0.0;
    for (int c = 0; c < 4; ++c)
        acc += dot(m + (r * 4 + c) * n, v, n);
    out[r] = acc;
}

// A loop in a member function of a class template the kernel inlines.
template <int N>
struct Window {
    __device__ double sum(const double* v) const
    {
        double s = 0.0;
        for (int k = 0; k < N; ++k)
            s += v[k] * v[k + N];
        return s;
    }
};

__global__ void windows(const double* v, double* out)
{
    out[threadIdx.x] = Window<8>().sum(v + 16 * threadIdx.x);
}
