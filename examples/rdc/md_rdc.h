// Relocatable device code (-fgpu-rdc): md_step.hip's kernel calls
// thermostat_scale, which thermostat.hip defines. Each file is its own
// translation unit; only the device link resolves the call (and inlines
// it), so a kernel's registers are known only once both are linked.
#pragma once
#include "../regtune_gpu.h" // <hip/hip_runtime.h>, or CUDA with NVPTX

// Berendsen thermostat: the factor that rescales a velocity whose kinetic
// energy is ekin towards the target energy, with coupling time tau.
extern __device__ double thermostat_scale(double ekin, double target, double dt, double tau);
