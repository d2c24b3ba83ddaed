// What `regtune measure` did not see before (issue 39, item 3): memory a
// kernel reaches through pointers stored in device memory, the module's
// own `__device__` and `__constant__` variables, managed memory and
// stream-ordered (cudaMallocAsync) pools. One CUDA program, built plainly
// (build.py), each case a kernel of its own, so each gets its own row and
// verdict in measure's report (check.py says PASS or FAIL per case):
//
//   reach rows      chase_rows:   out[r][i] from rows[r][i], rows an array of pointers to 64 allocations
//   reach list      chase_list:   walks a linked list of 16 nodes (each its own allocation) to payloads
//   reach global    chase_global: the same list, its head in a `__device__` pointer (no argument names it)
//   reach constant  constant_table: reads a `__constant__` table the program set (cudaMemcpyToSymbol)
//   reach counter   device_counter: adds to a `__device__` counter the program set, and writes out
//   reach managed   managed_heavy: cudaMallocManaged input and output
//   reach async     async_heavy:  cudaMallocAsync input and output (the device's default pool)
//   reach pool      pool_heavy:   cudaMallocFromPoolAsync input and output (a pool of the program's)
//   reach           all of them
//
// Every kernel does the same register-hungry arithmetic per element
// (heavy(), 24 live doubles), so that tune keeps register-capped
// candidates for each. Each case prints a checksum of its output.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));    \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

constexpr int K = 24;

// 24 live doubles per thread, mixed in rounds: enough registers that tune
// finds occupancy steps to cap.
__device__ __forceinline__ double heavy(const double* __restrict__ c, double x)
{
    double acc[K];
#pragma unroll
    for (int k = 0; k < K; ++k)
        acc[k] = c[k] * x + k;
#pragma unroll
    for (int it = 0; it < 6; ++it) {
#pragma unroll
        for (int k = 0; k < K; ++k)
            acc[k] = acc[k] * 0.999 + acc[(k + 7) % K] * 1e-3 + c[(k + it) % K];
    }
    double s = 0.0;
#pragma unroll
    for (int k = 0; k < K; ++k)
        s += acc[k] * (k + 1);
    return s;
}

struct Node {
    const double* data; // a payload allocation of its own
    const Node* next;   // another node's allocation, or null
};

__constant__ double table[K];
__device__ unsigned long long counter;
__device__ const Node* head;

__global__ void chase_rows(double* out, const double* const* rows, const double* coef, int nrows, int len)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= nrows * len)
        return;
    const double* row = rows[i / len]; // a pointer read from device memory
    out[i] = heavy(coef, row[i % len]);
}

__global__ void chase_list(double* out, const Node* list, const double* coef, int len)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= len)
        return;
    double s = 0.0;
    for (const Node* n = list; n; n = n->next)
        s += n->data[i];
    out[i] = heavy(coef, s);
}

__global__ void chase_global(double* out, const double* coef, int len)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= len)
        return;
    double s = 0.0;
    for (const Node* n = head; n; n = n->next)
        s += n->data[i] * 0.5;
    out[i] = heavy(coef, s);
}

__global__ void constant_table(double* out, const double* in, int len)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < len)
        out[i] = heavy(table, in[i]);
}

__global__ void device_counter(double* out, const double* in, const double* coef, int len)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= len)
        return;
    double r = heavy(coef, in[i]);
    out[i] = r;
    if (r > 0.0)
        atomicAdd(&counter, 1ull);
}

#define HEAVY_KERNEL(name)                                                                         \
    __global__ void name(double* out, const double* in, const double* coef, int len)               \
    {                                                                                              \
        int i = blockIdx.x * blockDim.x + threadIdx.x;                                             \
        if (i < len)                                                                               \
            out[i] = heavy(coef, in[i]);                                                           \
    }
HEAVY_KERNEL(managed_heavy)
HEAVY_KERNEL(async_heavy)
HEAVY_KERNEL(pool_heavy)

static uint64_t state = 12345;
static double uniform()
{
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(state >> 11) * 0x1.0p-53 * 2.0 - 1.0;
}

static std::vector<double> random_vector(size_t n)
{
    std::vector<double> v(n);
    for (auto& x : v)
        x = uniform();
    return v;
}

template <class T> static T* upload(const std::vector<T>& v)
{
    T* p;
    CHECK(cudaMalloc(&p, v.size() * sizeof(T)));
    CHECK(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
    return p;
}

static double checksum(const double* dev, size_t n)
{
    std::vector<double> h(n);
    CHECK(cudaMemcpy(h.data(), dev, n * sizeof(double), cudaMemcpyDeviceToHost));
    double s = 0.0;
    for (double x : h)
        s += x;
    return s;
}

static const int LEN = 1 << 16, BLOCK = 256;
static const std::vector<double> coef_host = random_vector(K);

static int rows()
{
    const int nrows = 64, len = 4096;
    std::vector<double*> ptrs(nrows);
    for (auto& p : ptrs)
        p = upload(random_vector(len));
    double** d_rows = upload(ptrs);
    double* coef = upload(coef_host);
    double* out;
    CHECK(cudaMalloc(&out, sizeof(double) * nrows * len));
    chase_rows<<<nrows * len / BLOCK, BLOCK>>>(out, d_rows, coef, nrows, len);
    CHECK(cudaGetLastError());
    printf("rows: %.9e\n", checksum(out, (size_t)nrows * len));
    for (auto p : ptrs)
        CHECK(cudaFree(p));
    CHECK(cudaFree(d_rows));
    CHECK(cudaFree(coef));
    CHECK(cudaFree(out));
    return 0;
}

// A list of 16 nodes, each node and each payload an allocation of its own.
static std::vector<void*> build_list(const Node** first)
{
    std::vector<void*> owned;
    const Node* next = nullptr;
    for (int k = 0; k < 16; ++k) {
        double* data = upload(random_vector(LEN));
        Node host_node = {data, next};
        Node* node;
        CHECK(cudaMalloc(&node, sizeof(Node)));
        CHECK(cudaMemcpy(node, &host_node, sizeof(Node), cudaMemcpyHostToDevice));
        owned.push_back(data);
        owned.push_back(node);
        next = node;
    }
    *first = next;
    return owned;
}

static int list()
{
    const Node* first;
    auto owned = build_list(&first);
    double* coef = upload(coef_host);
    double* out;
    CHECK(cudaMalloc(&out, sizeof(double) * LEN));
    chase_list<<<LEN / BLOCK, BLOCK>>>(out, first, coef, LEN);
    CHECK(cudaGetLastError());
    printf("list: %.9e\n", checksum(out, LEN));
    for (void* p : owned)
        CHECK(cudaFree(p));
    CHECK(cudaFree(coef));
    CHECK(cudaFree(out));
    return 0;
}

static int global()
{
    const Node* first;
    auto owned = build_list(&first);
    CHECK(cudaMemcpyToSymbol(head, &first, sizeof first));
    double* coef = upload(coef_host);
    double* out;
    CHECK(cudaMalloc(&out, sizeof(double) * LEN));
    chase_global<<<LEN / BLOCK, BLOCK>>>(out, coef, LEN);
    CHECK(cudaGetLastError());
    printf("global: %.9e\n", checksum(out, LEN));
    for (void* p : owned)
        CHECK(cudaFree(p));
    CHECK(cudaFree(coef));
    CHECK(cudaFree(out));
    return 0;
}

static int constant()
{
    // Other values than the table's initial ones (zero): a replay that
    // left the candidate's own table as loaded would compute other bytes.
    CHECK(cudaMemcpyToSymbol(table, coef_host.data(), sizeof(double) * K));
    double* in = upload(random_vector(LEN));
    double* out;
    CHECK(cudaMalloc(&out, sizeof(double) * LEN));
    constant_table<<<LEN / BLOCK, BLOCK>>>(out, in, LEN);
    CHECK(cudaGetLastError());
    printf("constant: %.9e\n", checksum(out, LEN));
    CHECK(cudaFree(in));
    CHECK(cudaFree(out));
    return 0;
}

static int count()
{
    unsigned long long start = 1000000, end = 0;
    CHECK(cudaMemcpyToSymbol(counter, &start, sizeof start));
    double* in = upload(random_vector(LEN));
    double* coef = upload(coef_host);
    double* out;
    CHECK(cudaMalloc(&out, sizeof(double) * LEN));
    device_counter<<<LEN / BLOCK, BLOCK>>>(out, in, coef, LEN);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpyFromSymbol(&end, counter, sizeof end));
    printf("counter: %.9e, counted %llu\n", checksum(out, LEN), end - start);
    CHECK(cudaFree(in));
    CHECK(cudaFree(coef));
    CHECK(cudaFree(out));
    return 0;
}

static int managed()
{
    double *in, *out, *coef;
    CHECK(cudaMallocManaged(&in, sizeof(double) * LEN));
    CHECK(cudaMallocManaged(&out, sizeof(double) * LEN));
    CHECK(cudaMallocManaged(&coef, sizeof(double) * K));
    auto v = random_vector(LEN);
    memcpy(in, v.data(), sizeof(double) * LEN); // written by the host, through the managed mapping
    memcpy(coef, coef_host.data(), sizeof(double) * K);
    managed_heavy<<<LEN / BLOCK, BLOCK>>>(out, in, coef, LEN);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    double s = 0.0;
    for (int i = 0; i < LEN; ++i)
        s += out[i];
    printf("managed: %.9e\n", s);
    CHECK(cudaFree(in));
    CHECK(cudaFree(out));
    CHECK(cudaFree(coef));
    return 0;
}

static int async_case(bool own_pool)
{
    cudaStream_t stream;
    CHECK(cudaStreamCreate(&stream));
    cudaMemPool_t pool = nullptr;
    if (own_pool) {
        int device = 0;
        CHECK(cudaGetDevice(&device));
        cudaMemPoolProps props = {};
        props.allocType = cudaMemAllocationTypePinned;
        props.location.type = cudaMemLocationTypeDevice;
        props.location.id = device;
        CHECK(cudaMemPoolCreate(&pool, &props));
    }
    double *in, *out, *coef;
    auto alloc = [&](double** p, size_t bytes) {
        if (own_pool)
            CHECK(cudaMallocFromPoolAsync((void**)p, bytes, pool, stream));
        else
            CHECK(cudaMallocAsync((void**)p, bytes, stream));
    };
    alloc(&in, sizeof(double) * LEN);
    alloc(&out, sizeof(double) * LEN);
    alloc(&coef, sizeof(double) * K);
    auto v = random_vector(LEN);
    CHECK(cudaMemcpyAsync(in, v.data(), sizeof(double) * LEN, cudaMemcpyHostToDevice, stream));
    CHECK(cudaMemcpyAsync(coef, coef_host.data(), sizeof(double) * K, cudaMemcpyHostToDevice, stream));
    if (own_pool)
        pool_heavy<<<LEN / BLOCK, BLOCK, 0, stream>>>(out, in, coef, LEN);
    else
        async_heavy<<<LEN / BLOCK, BLOCK, 0, stream>>>(out, in, coef, LEN);
    CHECK(cudaGetLastError());
    std::vector<double> h(LEN);
    CHECK(cudaMemcpyAsync(h.data(), out, sizeof(double) * LEN, cudaMemcpyDeviceToHost, stream));
    CHECK(cudaStreamSynchronize(stream));
    double s = 0.0;
    for (double x : h)
        s += x;
    printf("%s: %.9e\n", own_pool ? "pool" : "async", s);
    CHECK(cudaFreeAsync(in, stream));
    CHECK(cudaFreeAsync(out, stream));
    CHECK(cudaFreeAsync(coef, stream));
    CHECK(cudaStreamSynchronize(stream));
    if (pool)
        CHECK(cudaMemPoolDestroy(pool));
    CHECK(cudaStreamDestroy(stream));
    return 0;
}

static int async_default() { return async_case(false); }
static int async_pool() { return async_case(true); }

static const struct {
    const char* name;
    int (*run)();
} cases[] = {
    {"rows", rows},       {"list", list},         {"global", global},         {"constant", constant},
    {"counter", count},   {"managed", managed},   {"async", async_default},   {"pool", async_pool},
};

int main(int argc, char** argv)
{
    for (const auto& c : cases) {
        bool wanted = argc == 1;
        for (int i = 1; i < argc; ++i)
            wanted |= strcmp(argv[i], c.name) == 0;
        if (wanted && c.run())
            return 1;
    }
    return 0;
}
