// Two kernels that square with pow(x, 2.0); the db tunes one of them.
#include <cmath>

__global__ void square(double* out, const double* in) {
    out[threadIdx.x] = pow(in[threadIdx.x], 2.0);
}

__global__ void square_plain(double* out, const double* in) {
    out[threadIdx.x] = pow(in[threadIdx.x], 2.0);
}
