// Shared by bench/runtime/launches' programs: error checks, a kernel body
// with enough live values that regtune's register caps give candidates,
// and its host reference. Plain CUDA: no regtune in it.
#pragma once
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));   \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#define TERMS 12

// out = sum over k, j of in[i_k] * in[i_j] * (k + 1) / (j + 2): 12 doubles live at once.
__host__ __device__ inline double mix(const double* __restrict__ in, int i, int n)
{
    double acc[TERMS];
#pragma unroll
    for (int k = 0; k < TERMS; ++k)
        acc[k] = in[(i + k * 97) % n];
    double r = 0;
#pragma unroll
    for (int k = 0; k < TERMS; ++k) {
#pragma unroll
        for (int j = 0; j < TERMS; ++j)
            r += acc[k] * acc[j] * (k + 1.0) / (j + 2.0);
    }
    return r;
}

// Inputs from a seed: small values, so sums stay exact enough to compare.
inline std::vector<double> inputs(int n, unsigned seed)
{
    std::vector<double> v(n);
    unsigned s = seed * 2654435761u + 1;
    for (int i = 0; i < n; ++i) {
        s = s * 1664525u + 1013904223u;
        v[i] = (double)(s >> 8) / (double)(1u << 24) - 0.5;
    }
    return v;
}

inline double* upload(const std::vector<double>& v)
{
    double* p;
    CHECK(cudaMalloc(&p, v.size() * sizeof(double)));
    CHECK(cudaMemcpy(p, v.data(), v.size() * sizeof(double), cudaMemcpyHostToDevice));
    return p;
}

inline std::vector<double> download(const double* p, int n)
{
    std::vector<double> v(n);
    CHECK(cudaMemcpy(v.data(), p, n * sizeof(double), cudaMemcpyDeviceToHost));
    return v;
}

// Relative agreement with the host's reference (the GPU contracts to FMAs).
inline bool close(const std::vector<double>& got, const std::vector<double>& want)
{
    for (size_t i = 0; i < want.size(); ++i)
        if (std::fabs(got[i] - want[i]) > 1e-9 * (1 + std::fabs(want[i])))
            return false;
    return true;
}

// A checksum of the bytes: the same output under measure or not.
inline unsigned long long digest(const std::vector<double>& v)
{
    unsigned long long h = 1469598103934665603ull;
    const unsigned char* b = (const unsigned char*)v.data();
    for (size_t i = 0; i < v.size() * sizeof(double); ++i)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}
