#pragma once
// Kernels a macro defines: every expansion shares this text.
#define SQUARE_ADD(name, T)                                      \
    __global__ void name(T* y, const T* x, int n)                \
    {                                                            \
        int i = blockIdx.x * blockDim.x + threadIdx.x;           \
        if (i < n)                                               \
            y[i] += pow(x[i], 2.0);                              \
    }
