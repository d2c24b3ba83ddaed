// Included by main.hip, as programs include their kernels.
__global__ void advect(double* u, const double* v, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        u[i] = 0.5 * pow(v[i], 2.0) + u[i];
}
