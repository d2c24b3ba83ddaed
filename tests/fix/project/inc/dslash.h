#pragma once
#include "su3.h"

// Eight links per site, each multiplied into the neighbour's vector.
__global__ void dslash(const su3* links, const vec* src, vec* dst, const int* nbr, int n)
{
    int s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= n)
        return;
    vec acc = {};
    for (int d = 0; d < 8; ++d) {
        vec t;
        mult_su3_mat_vec(links[8 * s + d], src[nbr[8 * s + d]], t);
        for (int c = 0; c < 3; ++c) {
            acc.c[c][0] += t.c[c][0];
            acc.c[c][1] += t.c[c][1];
        }
    }
    dst[s] = acc;
}
