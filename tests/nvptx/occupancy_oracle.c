/* NVIDIA's own occupancy calculator (cuda_occupancy.h, shipped with CUDA)
 * as a test oracle for driver/src/nvidia.rs. Reads lines of
 *   major minor regs block static_smem barriers
 * and prints, per line, the active blocks per SM that
 * cudaOccMaxActiveBlocksPerMultiprocessor computes in the default device
 * state. The device properties are those cudaGetDeviceProperties reports
 * for each compute capability (the same numbers as nvidia.rs's table). */
#include <stdio.h>
#include <string.h>

#include "cuda_occupancy.h"

static int props(int major, int minor, cudaOccDeviceProp *p) {
    memset(p, 0, sizeof *p);
    p->computeMajor = major;
    p->computeMinor = minor;
    p->maxThreadsPerBlock = 1024;
    p->warpSize = 32;
    p->regsPerBlock = 65536;
    p->regsPerMultiprocessor = 65536;
    p->sharedMemPerBlock = 48 * 1024;
    p->numSms = 1;
    switch (major * 10 + minor) {
    case 70: p->maxThreadsPerMultiprocessor = 2048; p->sharedMemPerMultiprocessor = 96 * 1024; p->sharedMemPerBlockOptin = 96 * 1024; p->reservedSharedMemPerBlock = 0; break;
    case 75: p->maxThreadsPerMultiprocessor = 1024; p->sharedMemPerMultiprocessor = 64 * 1024; p->sharedMemPerBlockOptin = 64 * 1024; p->reservedSharedMemPerBlock = 0; break;
    case 80: p->maxThreadsPerMultiprocessor = 2048; p->sharedMemPerMultiprocessor = 164 * 1024; p->sharedMemPerBlockOptin = 163 * 1024; p->reservedSharedMemPerBlock = 1024; break;
    case 86: p->maxThreadsPerMultiprocessor = 1536; p->sharedMemPerMultiprocessor = 100 * 1024; p->sharedMemPerBlockOptin = 99 * 1024; p->reservedSharedMemPerBlock = 1024; break;
    case 89: p->maxThreadsPerMultiprocessor = 1536; p->sharedMemPerMultiprocessor = 100 * 1024; p->sharedMemPerBlockOptin = 99 * 1024; p->reservedSharedMemPerBlock = 1024; break;
    case 90: p->maxThreadsPerMultiprocessor = 2048; p->sharedMemPerMultiprocessor = 228 * 1024; p->sharedMemPerBlockOptin = 227 * 1024; p->reservedSharedMemPerBlock = 1024; break;
    /* Blackwell: CCCL's cuda/__device/arch_traits.h (threads, shared memory,
     * reserved) and CUTLASS's sm100/sm120_smem_capacity_bytes (opt-in). */
    case 100: p->maxThreadsPerMultiprocessor = 2048; p->sharedMemPerMultiprocessor = 228 * 1024; p->sharedMemPerBlockOptin = 227 * 1024; p->reservedSharedMemPerBlock = 1024; break;
    case 103: p->maxThreadsPerMultiprocessor = 2048; p->sharedMemPerMultiprocessor = 228 * 1024; p->sharedMemPerBlockOptin = 227 * 1024; p->reservedSharedMemPerBlock = 1024; break;
    case 120: p->maxThreadsPerMultiprocessor = 1536; p->sharedMemPerMultiprocessor = 100 * 1024; p->sharedMemPerBlockOptin = 99 * 1024; p->reservedSharedMemPerBlock = 1024; break;
    default: return 0;
    }
    return 1;
}

int main(void) {
    int major, minor, regs, block, smem, barriers;
    while (scanf("%d %d %d %d %d %d", &major, &minor, &regs, &block, &smem, &barriers) == 6) {
        cudaOccDeviceProp p;
        cudaOccFuncAttributes a;
        cudaOccDeviceState s;
        cudaOccResult r;
        memset(&a, 0, sizeof a);
        memset(&s, 0, sizeof s);
        memset(&r, 0, sizeof r);
        if (!props(major, minor, &p)) {
            printf("unknown\n");
            continue;
        }
        a.maxThreadsPerBlock = 1024;
        a.numRegs = regs;
        a.sharedSizeBytes = (size_t)smem;
        a.numBlockBarriers = barriers;
        s.carveoutConfig = SHAREDMEM_CARVEOUT_DEFAULT;
        if (cudaOccMaxActiveBlocksPerMultiprocessor(&r, &p, &a, &s, block, 0) != CUDA_OCC_SUCCESS) {
            printf("error\n");
            continue;
        }
        printf("%d\n", r.activeBlocksPerMultiprocessor);
    }
    return 0;
}
