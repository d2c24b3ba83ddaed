#pragma once
// SU(3) algebra: the loops the kernel inlines from here.
struct su3 { double e[3][3][2]; };
struct vec { double c[3][2]; };

__device__ inline void mult_su3_mat_vec(const su3& a, const vec& b, vec& out)
{
    for (int i = 0; i < 3; ++i) {
        double re = 0.0, im = 0.0;
        for (int j = 0; j < 3; ++j) {
            re += a.e[i][j][0] * b.c[j][0] - a.e[i][j][1] * b.c[j][1];
            im += a.e[i][j][0] * b.c[j][1] + a.e[i][j][1] * b.c[j][0];
        }
        out.c[i][0] = re;
        out.c[i][1] = im;
    }
}
