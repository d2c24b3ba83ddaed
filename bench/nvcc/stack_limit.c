/* LD_PRELOAD=libstack_limit.so PROGRAM: before the program starts, the
 * primary context of device 0 gets REGTUNE_STACK_BYTES of stack a thread
 * (cuCtxSetLimit), so local memory is reserved before its first launch.
 * A kernel whose frame exceeds the default 1 KiB otherwise grows local
 * memory at its first launch, inside the program's timer (tf32 GEMM's
 * plain nvcc build: a 1,304-byte frame). bench/nvcc/stack-limit.sh. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

typedef int (*init_f)(unsigned);
typedef int (*device_f)(int *, int);
typedef int (*retain_f)(void **, int);
typedef int (*ctx_f)(void *);
typedef int (*pop_f)(void **);
typedef int (*limit_f)(int, size_t);

__attribute__((constructor)) static void reserve(void) {
    const char *bytes = getenv("REGTUNE_STACK_BYTES");
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!bytes || !cuda) {
        fprintf(stderr, "stack_limit: %s\n", bytes ? "no libcuda.so.1" : "REGTUNE_STACK_BYTES unset");
        return;
    }
    int device = 0;
    void *ctx = 0, *popped = 0;
    int rc = ((init_f)dlsym(cuda, "cuInit"))(0);
    rc = rc ? rc : ((device_f)dlsym(cuda, "cuDeviceGet"))(&device, 0);
    rc = rc ? rc : ((retain_f)dlsym(cuda, "cuDevicePrimaryCtxRetain"))(&ctx, device);
    rc = rc ? rc : ((ctx_f)dlsym(cuda, "cuCtxPushCurrent_v2"))(ctx);
    rc = rc ? rc : ((limit_f)dlsym(cuda, "cuCtxSetLimit"))(0 /* CU_LIMIT_STACK_SIZE */, strtoul(bytes, 0, 10));
    if (ctx)
        ((pop_f)dlsym(cuda, "cuCtxPopCurrent_v2"))(&popped);
    fprintf(stderr, "stack_limit: %s bytes a thread, CUresult %d\n", bytes, rc);
}
