#pragma once
// A vendor's header, reached through -isystem: fix never edits it.
__device__ inline double norm2(const double* v, int n)
{
    double s = 0.0;
    for (int i = 0; i < n; ++i)
        s += pow(v[i], 2.0);
    return s;
}
