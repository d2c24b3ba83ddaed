// Kernels that already promise their block size (`__launch_bounds__(N)`,
// spelled as a number, a macro and a template parameter, and one with a
// minimum of blocks), each with 24 accumulators live across a loop: 40
// registers on sm_90, where a cap of 32 reaches 64 warps per SM (56 and a
// cap of 40 for the one with two blocks). `regtune fix` spells that occupancy target as
// the launch bounds' second argument (tests/fix.rs).
#define NT 64
#define BODY(N)                                                                                   \
    float acc[24];                                                                                \
    int i = blockIdx.x * N + threadIdx.x;                                                         \
    _Pragma("unroll") for (int j = 0; j < 24; j++) acc[j] = a[i + j * n];                         \
    for (int t = 0; t < n; t++) {                                                                 \
        _Pragma("unroll") for (int j = 0; j < 24; j++) acc[j] = acc[j] * acc[(j + 1) % 24] + a[t * 24 + j]; \
    }                                                                                             \
    float s = 0;                                                                                  \
    _Pragma("unroll") for (int j = 0; j < 24; j++) s += acc[j];                                   \
    b[i] = s;

__global__ void __launch_bounds__(64) literal(const float *__restrict__ a, float *__restrict__ b, int n) { BODY(64) }

__global__ void __launch_bounds__(NT) named(const float *__restrict__ a, float *__restrict__ b, int n) { BODY(NT) }

// A minimum of blocks per SM already (too few for the tuned cap): replaced.
__global__ void __launch_bounds__(64, 2) chosen(const float *__restrict__ a, float *__restrict__ b, int n) { BODY(64) }

template <int N>
__global__ void __launch_bounds__(N) templ(const float *__restrict__ a, float *__restrict__ b, int n) { BODY(N) }

template __global__ void templ<64>(const float *, float *, int);
template __global__ void templ<128>(const float *, float *, int);
