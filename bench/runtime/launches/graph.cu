// CUDA graphs under `regtune measure`: kernels that run only inside graphs.
//
//   graph capture    stream capture of [memset(out), g_capture] (global mode), instantiated and
//                    launched 3 times on new inputs: g_capture is the graph's last node after a
//                    memset: measured, and the program's bytes compared
//   graph explicit   cudaGraphAddKernelNode: g_root -> g_after, launched twice: g_root (a root)
//                    measured, not compared (g_after runs after it); g_after (after a kernel) not measured
//   graph destroyed HOW
//                    as explicit, but the graph destroyed right after its instantiation, through
//                    cudaGraphDestroy (HOW = runtime), through the cuGraphDestroy that
//                    cudaGetDriverEntryPoint gives (entry), or through the one the driver's
//                    cuGetProcAddress gives (driver), both looked up after the runtime started
//   graph update     [memset -> g_update] on buffers A (64 blocks); then the exec's kernel node set to
//                    buffers B (128 blocks) and its memset moved to B; then the exec updated from a
//                    new graph on buffers C (192 blocks): each launch measured with the params it ran
//
// Each prints one line per launch (a checksum of the output, and whether it matches the host's
// reference); exit status 1 when a result is wrong.
#include "common.cuh"

#include <dlfcn.h>

__global__ void g_capture(double* __restrict__ out, const double* __restrict__ in, int n, double s)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] += mix(in, i, n) * s;
}

__global__ void g_root(double* __restrict__ out, const double* __restrict__ in, int n, double s)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = mix(in, i, n) * s;
}

__global__ void g_after(double* __restrict__ out, const double* __restrict__ in, int n, double s)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = mix(in, i, n) * s + 1.0;
}

__global__ void g_update(double* __restrict__ out, const double* __restrict__ in, int n, double s)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] += mix(in, i, n) * s;
}

static const int BLOCK = 256;
static int failures = 0;

static void report(const char* what, const std::vector<double>& got, const std::vector<double>& want)
{
    bool ok = close(got, want);
    failures += !ok;
    printf("%s: %016llx %s\n", what, digest(got), ok ? "ok" : "WRONG");
}

static void capture()
{
    const int n = 256 * BLOCK;
    double *in, *out;
    CHECK(cudaMalloc(&in, n * sizeof(double)));
    CHECK(cudaMalloc(&out, n * sizeof(double)));
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaGraph_t graph;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK(cudaMemsetAsync(out, 0, n * sizeof(double), s));
    g_capture<<<n / BLOCK, BLOCK, 0, s>>>(out, in, n, 0.5);
    CHECK(cudaGetLastError());
    CHECK(cudaStreamEndCapture(s, &graph));
    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    for (int launch = 0; launch < 3; ++launch) {
        std::vector<double> x = inputs(n, 10 + launch);
        CHECK(cudaMemcpy(in, x.data(), n * sizeof(double), cudaMemcpyHostToDevice));
        CHECK(cudaGraphLaunch(exec, s));
        CHECK(cudaStreamSynchronize(s));
        std::vector<double> want(n);
        for (int i = 0; i < n; ++i)
            want[i] = mix(x.data(), i, n) * 0.5;
        char what[64];
        snprintf(what, sizeof what, "capture launch %d", launch);
        report(what, download(out, n), want);
    }
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));
}

static cudaGraphNode_t kernel_node(cudaGraph_t g, const cudaGraphNode_t* deps, int ndeps, void* f, int blocks, void** args)
{
    cudaKernelNodeParams p = {};
    p.func = f;
    p.gridDim = dim3(blocks);
    p.blockDim = dim3(BLOCK);
    p.kernelParams = args;
    cudaGraphNode_t node;
    CHECK(cudaGraphAddKernelNode(&node, g, deps, ndeps, &p));
    return node;
}

static cudaMemsetParams memset_params(double* dst, int n)
{
    cudaMemsetParams m = {};
    m.dst = dst;
    m.value = 0;
    m.elementSize = 4;
    m.width = n * sizeof(double) / 4;
    m.height = 1;
    return m;
}

// How the explicit graph is destroyed: at the end (keep), or right after its instantiation.
enum class Destroy { Keep, Runtime, Entry, Driver };

typedef int (*GraphDestroyFn)(cudaGraph_t);

// cuGraphDestroy as the program looks it up after the runtime started.
static GraphDestroyFn driver_graph_destroy(Destroy how)
{
    void* f = nullptr;
    if (how == Destroy::Entry) {
        cudaDriverEntryPointQueryResult q;
        CHECK(cudaGetDriverEntryPoint("cuGraphDestroy", &f, cudaEnableDefault, &q));
    } else {
        void* lib = dlopen("libcuda.so.1", RTLD_NOW);
        typedef int (*GetProc)(const char*, void**, int, unsigned long long, int*);
        GetProc get = lib ? (GetProc)dlsym(lib, "cuGetProcAddress_v2") : nullptr;
        int status = -1;
        if (!get || get("cuGraphDestroy", &f, 12000, 0, &status) != 0)
            f = nullptr;
    }
    if (!f) {
        fprintf(stderr, "cannot look cuGraphDestroy up\n");
        exit(1);
    }
    return (GraphDestroyFn)f;
}

static void explicit_graph(Destroy how)
{
    const int n = 192 * BLOCK;
    std::vector<double> x = inputs(n, 3);
    double* in = upload(x);
    double *mid, *out;
    CHECK(cudaMalloc(&mid, n * sizeof(double)));
    CHECK(cudaMalloc(&out, n * sizeof(double)));
    int nn = n;
    double s1 = 0.25, s2 = 2.0;
    void* root_args[] = {&mid, &in, &nn, &s1};
    void* after_args[] = {&out, &mid, &nn, &s2};
    cudaGraph_t g;
    CHECK(cudaGraphCreate(&g, 0));
    cudaGraphNode_t root = kernel_node(g, nullptr, 0, (void*)g_root, n / BLOCK, root_args);
    kernel_node(g, &root, 1, (void*)g_after, n / BLOCK, after_args);
    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, g, 0));
    if (how == Destroy::Runtime)
        CHECK(cudaGraphDestroy(g));
    else if (how != Destroy::Keep && driver_graph_destroy(how)(g) != 0) {
        fprintf(stderr, "cuGraphDestroy failed\n");
        exit(1);
    }
    std::vector<double> m(n), want(n);
    for (int i = 0; i < n; ++i)
        m[i] = mix(x.data(), i, n) * s1;
    for (int i = 0; i < n; ++i)
        want[i] = mix(m.data(), i, n) * s2 + 1.0;
    for (int launch = 0; launch < 2; ++launch) {
        CHECK(cudaGraphLaunch(exec, 0));
        CHECK(cudaDeviceSynchronize());
        char what[64];
        snprintf(what, sizeof what, "explicit launch %d", launch);
        report(what, download(out, n), want);
    }
    CHECK(cudaGraphExecDestroy(exec));
    if (how == Destroy::Keep)
        CHECK(cudaGraphDestroy(g));
}

struct Buffers {
    int n;
    double *in, *out;
    std::vector<double> x, before;
};

static Buffers buffers(int blocks, unsigned seed)
{
    Buffers b;
    b.n = blocks * BLOCK;
    b.x = inputs(b.n, seed);
    b.before = inputs(b.n, seed + 100);
    b.in = upload(b.x);
    b.out = upload(b.before);
    return b;
}

static void update()
{
    Buffers a = buffers(64, 20), b = buffers(128, 21), c = buffers(192, 22);
    double sa = 1.0, sb = 2.0, sc = 3.0;
    // [memset(A.out) -> g_update(A)]
    cudaGraph_t g1;
    CHECK(cudaGraphCreate(&g1, 0));
    cudaMemsetParams ma = memset_params(a.out, a.n);
    cudaGraphNode_t set1, k1;
    CHECK(cudaGraphAddMemsetNode(&set1, g1, nullptr, 0, &ma));
    void* args_a[] = {&a.out, &a.in, &a.n, &sa};
    k1 = kernel_node(g1, &set1, 1, (void*)g_update, a.n / BLOCK, args_a);
    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, g1, 0));
    // Launch 1: buffers A, 64 blocks.
    CHECK(cudaGraphLaunch(exec, 0));
    CHECK(cudaDeviceSynchronize());
    std::vector<double> want(a.n);
    for (int i = 0; i < a.n; ++i)
        want[i] = mix(a.x.data(), i, a.n) * sa;
    report("update launch 0 (A, 64 blocks)", download(a.out, a.n), want);
    // Launch 2: the exec's nodes set to buffers B, 128 blocks.
    void* args_b[] = {&b.out, &b.in, &b.n, &sb};
    cudaKernelNodeParams pb = {};
    pb.func = (void*)g_update;
    pb.gridDim = dim3(b.n / BLOCK);
    pb.blockDim = dim3(BLOCK);
    pb.kernelParams = args_b;
    CHECK(cudaGraphExecKernelNodeSetParams(exec, k1, &pb));
    cudaMemsetParams mb = memset_params(b.out, b.n);
    CHECK(cudaGraphExecMemsetNodeSetParams(exec, set1, &mb));
    CHECK(cudaGraphLaunch(exec, 0));
    CHECK(cudaDeviceSynchronize());
    want.assign(b.n, 0);
    for (int i = 0; i < b.n; ++i)
        want[i] = mix(b.x.data(), i, b.n) * sb;
    report("update launch 1 (B, 128 blocks)", download(b.out, b.n), want);
    // Launch 3: the exec updated from a graph of the same shape on buffers C, 192 blocks.
    cudaGraph_t g2;
    CHECK(cudaGraphCreate(&g2, 0));
    cudaMemsetParams mc = memset_params(c.out, c.n);
    cudaGraphNode_t set2;
    CHECK(cudaGraphAddMemsetNode(&set2, g2, nullptr, 0, &mc));
    void* args_c[] = {&c.out, &c.in, &c.n, &sc};
    kernel_node(g2, &set2, 1, (void*)g_update, c.n / BLOCK, args_c);
    cudaGraphExecUpdateResultInfo info;
    CHECK(cudaGraphExecUpdate(exec, g2, &info));
    CHECK(cudaGraphLaunch(exec, 0));
    CHECK(cudaDeviceSynchronize());
    want.assign(c.n, 0);
    for (int i = 0; i < c.n; ++i)
        want[i] = mix(c.x.data(), i, c.n) * sc;
    report("update launch 2 (C, 192 blocks)", download(c.out, c.n), want);
    // The inputs A and B were left as they were, and C's own.
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(g1));
    CHECK(cudaGraphDestroy(g2));
}

int main(int argc, char** argv)
{
    const char* mode = argc > 1 ? argv[1] : "capture";
    if (!strcmp(mode, "capture"))
        capture();
    else if (!strcmp(mode, "explicit"))
        explicit_graph(Destroy::Keep);
    else if (!strcmp(mode, "destroyed") && argc > 2 && !strcmp(argv[2], "runtime"))
        explicit_graph(Destroy::Runtime);
    else if (!strcmp(mode, "destroyed") && argc > 2 && !strcmp(argv[2], "entry"))
        explicit_graph(Destroy::Entry);
    else if (!strcmp(mode, "destroyed") && argc > 2 && !strcmp(argv[2], "driver"))
        explicit_graph(Destroy::Driver);
    else if (!strcmp(mode, "update"))
        update();
    else {
        fprintf(stderr, "usage: graph capture|explicit|update|destroyed runtime|entry|driver\n");
        return 2;
    }
    return failures ? 1 : 0;
}
