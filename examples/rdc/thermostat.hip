// The device function md_step.hip's kernel calls: a translation unit of its
// own, with no kernel (see md_rdc.h).
#include "md_rdc.h"

__device__ double thermostat_scale(double ekin, double target, double dt, double tau)
{
    if (ekin <= 0.0)
        return 1.0;
    const double s = sqrt(1.0 + dt / tau * (target / ekin - 1.0));
    return fmin(fmax(s, 0.8), 1.25); // never rescale by more than 25 % in one step
}
