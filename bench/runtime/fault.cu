// A deliberately broken candidate for the Laplacian: same name and
// parameters, but it writes far outside any allocation. bench/runtime
// swaps it in as the "decided" code object of a copy of the db, to show
// that a candidate that faults costs its measurement, not the program.
__global__ void laplacian3d_o8_ztile(double* __restrict__ lap, const double* __restrict__ u, int nx, int ny, double inv_h2)
{
    lap[(size_t)1 << 40] = u[0] * inv_h2 + nx + ny;
}
