// Kalman filter, one track per thread: an 8-state constant-velocity model
// with two measured components, stepped through a sequence of measurements.
//
// Register-pressure pattern: small matrices in private arrays (the state
// covariance P, the transition F and a temporary) whose loops, unrolled
// (`#pragma unroll`, as such code is written), index them with constants
// only. Fully unrolled, every element
// is a register: far more than a thread may have, so the backend spills
// (NVPTX: 254 registers with spills; AMDGPU: scratch). Capping the
// unrolling "removes" those spills, and the matrices go back to memory
// as arrays indexed at run time: every access a local (scratch) load or
// store inside the loops, many times the spill traffic. Spill counts alone
// call that an improvement; the local-memory accesses of the final code,
// weighted by the loops around them, do not.
#include "regtune_gpu.h" // <hip/hip_runtime.h>, or CUDA with NVPTX

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define NS 8 // state dimension
#define NM 2 // measured components (the first NM states)

__global__ void kalman_track(const float* model, const float* z, float* state, int steps, int tracks)
{
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= tracks)
        return;

    float F[NS][NS], P[NS][NS], T[NS][NS], x[NS];
    #pragma unroll
    for (int i = 0; i < NS; ++i) {
        x[i] = 0.0f;
        #pragma unroll
        for (int j = 0; j < NS; ++j) {
            F[i][j] = model[i * NS + j];
            P[i][j] = i == j ? 1.0f : 0.0f;
        }
    }
    const float q = model[NS * NS], r = model[NS * NS + 1];

    for (int s = 0; s < steps; ++s) {
        // Predict: x = F x, P = F P F^T + q I.
        float xp[NS];
        #pragma unroll
        for (int i = 0; i < NS; ++i) {
            float acc = 0.0f;
            #pragma unroll
            for (int k = 0; k < NS; ++k)
                acc += F[i][k] * x[k];
            xp[i] = acc;
        }
        #pragma unroll
        for (int i = 0; i < NS; ++i)
            #pragma unroll
            for (int j = 0; j < NS; ++j) {
                float acc = 0.0f;
                #pragma unroll
                for (int k = 0; k < NS; ++k)
                    acc += F[i][k] * P[k][j];
                T[i][j] = acc;
            }
        #pragma unroll
        for (int i = 0; i < NS; ++i)
            #pragma unroll
            for (int j = 0; j < NS; ++j) {
                float acc = i == j ? q : 0.0f;
                #pragma unroll
                for (int k = 0; k < NS; ++k)
                    acc += T[i][k] * F[j][k];
                P[i][j] = acc;
            }
        // Update, one measured component at a time (no matrix inverse).
        #pragma unroll
        for (int m = 0; m < NM; ++m) {
            const float y = z[((size_t)s * tracks + t) * NM + m] - xp[m];
            const float inv_s = 1.0f / (P[m][m] + r);
            float k[NS], pm[NS];
            #pragma unroll
            for (int i = 0; i < NS; ++i) {
                k[i] = P[i][m] * inv_s;
                pm[i] = P[m][i];
            }
            #pragma unroll
            for (int i = 0; i < NS; ++i) {
                xp[i] += k[i] * y;
                #pragma unroll
                for (int j = 0; j < NS; ++j)
                    P[i][j] -= k[i] * pm[j];
            }
        }
        #pragma unroll
        for (int i = 0; i < NS; ++i)
            x[i] = xp[i];
    }
    #pragma unroll
    for (int i = 0; i < NS; ++i)
        state[(size_t)t * (NS + 1) + i] = x[i];
    float trace = 0.0f;
    #pragma unroll
    for (int i = 0; i < NS; ++i)
        trace += P[i][i];
    state[(size_t)t * (NS + 1) + NS] = trace;
}

#define HIP_CHECK(call)                                                        \
    do {                                                                       \
        hipError_t err_ = (call);                                              \
        if (err_ != hipSuccess) {                                              \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__,                 \
                    hipGetErrorString(err_));                                  \
            exit(1);                                                           \
        }                                                                      \
    } while (0)

int main()
{
    const int tracks = 1 << 16, steps = 32;
    // Constant velocity: position i moves by dt times velocity i + 4.
    std::vector<float> h_model(NS * NS + 2, 0.0f);
    for (int i = 0; i < NS; ++i)
        h_model[i * NS + i] = 1.0f;
    for (int i = 0; i < NS / 2; ++i)
        h_model[i * NS + i + NS / 2] = 0.1f;
    h_model[NS * NS] = 1e-3f;    // process noise
    h_model[NS * NS + 1] = 0.25f; // measurement noise
    std::vector<float> h_z((size_t)steps * tracks * NM);
    for (size_t p = 0; p < h_z.size(); ++p)
        h_z[p] = (float)((p * 2654435761u) >> 24) / 256.0f; // pseudo-random measurements

    float *model, *z, *state;
    HIP_CHECK(hipMalloc(&model, h_model.size() * sizeof(float)));
    HIP_CHECK(hipMalloc(&z, h_z.size() * sizeof(float)));
    HIP_CHECK(hipMalloc(&state, (size_t)tracks * (NS + 1) * sizeof(float)));
    HIP_CHECK(hipMemcpy(model, h_model.data(), h_model.size() * sizeof(float), hipMemcpyHostToDevice));
    HIP_CHECK(hipMemcpy(z, h_z.data(), h_z.size() * sizeof(float), hipMemcpyHostToDevice));

    hipLaunchKernelGGL(kalman_track, dim3((tracks + 255) / 256), dim3(256), 0, 0, model, z, state, steps, tracks);
    HIP_CHECK(hipGetLastError());
    HIP_CHECK(hipDeviceSynchronize());

    std::vector<float> h_state((size_t)tracks * (NS + 1));
    HIP_CHECK(hipMemcpy(h_state.data(), state, h_state.size() * sizeof(float), hipMemcpyDeviceToHost));
    printf("track 0: position %.4f, covariance trace %.4f\n", h_state[0], h_state[NS]);

    HIP_CHECK(hipFree(model));
    HIP_CHECK(hipFree(z));
    HIP_CHECK(hipFree(state));
    return 0;
}
