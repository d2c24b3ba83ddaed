// Launches from several host threads and streams, during another thread's
// stream capture, and on a GPU other than device 0, under `regtune measure`.
//
//   threads threads          2 host threads, each with its own stream and buffers, each launching
//                            t_kernel 6 times (waiting for each): no deadlock, results right
//   threads capture-beside   this thread captures [t_kernel] on a stream (global mode) while a second
//                            thread launches t_kernel on its own stream: that launch runs unmeasured
//                            (synchronizing then would break the capture), the capture is intact;
//                            then the captured graph is launched (and measured)
//   threads device N         cudaSetDevice(N), then 3 launches
//   threads devices          3 launches on device 0, then 3 on device 1
//
// One line per thread or phase (checksum, ok/WRONG); status 1 when wrong.
#include <atomic>
#include <thread>

#include "common.cuh"

static const int BLOCK = 256;

__global__ void t_kernel(double* __restrict__ out, const double* __restrict__ in, int n, double s)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = mix(in, i, n) * s + out[i] * 0.5;
}

static int failures = 0;

// `times` launches of t_kernel on `stream`, each waited for; the result checked.
static bool run(cudaStream_t stream, int n, unsigned seed, int times, unsigned long long* sum)
{
    std::vector<double> x = inputs(n, seed), want(n, 0.0);
    double* in = upload(x);
    double* out = upload(want);
    for (int t = 0; t < times; ++t) {
        double s = 1.0 + t;
        t_kernel<<<n / BLOCK, BLOCK, 0, stream>>>(out, in, n, s);
        CHECK(cudaGetLastError());
        CHECK(cudaStreamSynchronize(stream));
        for (int i = 0; i < n; ++i)
            want[i] = mix(x.data(), i, n) * s + want[i] * 0.5;
    }
    std::vector<double> got = download(out, n);
    *sum = digest(got);
    CHECK(cudaFree(in));
    CHECK(cudaFree(out));
    return close(got, want);
}

static void threads()
{
    bool ok[2];
    unsigned long long sums[2];
    std::vector<std::thread> ts;
    for (int t = 0; t < 2; ++t)
        ts.emplace_back([t, &ok, &sums]() {
            cudaStream_t s;
            CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
            ok[t] = run(s, (96 + 32 * t) * BLOCK, 60 + t, 6, &sums[t]);
            CHECK(cudaStreamDestroy(s));
        });
    for (auto& t : ts)
        t.join();
    for (int t = 0; t < 2; ++t) {
        failures += !ok[t];
        printf("thread %d: %016llx %s\n", t, sums[t], ok[t] ? "ok" : "WRONG");
    }
}

static void capture_beside()
{
    const int n = 128 * BLOCK;
    std::vector<double> x = inputs(n, 70), x2 = inputs(n, 71), zero(n, 0.0);
    double* in = upload(x);
    double* out = upload(zero);
    double* in2 = upload(x2);
    double* out2 = upload(zero);
    cudaStream_t s, s2;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    // The other thread is ready (its CUDA state made) before the capture starts, and launches
    // during it: a launch is allowed then; a synchronization would not be, so it waits for
    // nothing until the capture has ended.
    std::atomic<int> stage{0};
    std::thread beside([&]() {
        CHECK(cudaSetDevice(0));
        stage = 1;
        while (stage != 2)
            std::this_thread::yield();
        t_kernel<<<n / BLOCK, BLOCK, 0, s2>>>(out2, in2, n, 3.0);
        CHECK(cudaGetLastError());
        stage = 3;
    });
    while (stage != 1)
        std::this_thread::yield();
    cudaGraph_t graph;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    t_kernel<<<n / BLOCK, BLOCK, 0, s>>>(out, in, n, 2.0);
    CHECK(cudaGetLastError());
    stage = 2;
    while (stage != 3)
        std::this_thread::yield();
    CHECK(cudaStreamEndCapture(s, &graph));
    beside.join();
    CHECK(cudaStreamSynchronize(s2));
    std::vector<double> want2(n);
    for (int i = 0; i < n; ++i)
        want2[i] = mix(x2.data(), i, n) * 3.0;
    std::vector<double> got2 = download(out2, n);
    bool beside_ok = close(got2, want2);
    failures += !beside_ok;
    printf("beside the capture: %016llx %s\n", digest(got2), beside_ok ? "ok" : "WRONG");
    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaStreamSynchronize(s));
    std::vector<double> want(n);
    for (int i = 0; i < n; ++i)
        want[i] = mix(x.data(), i, n) * 2.0;
    std::vector<double> got = download(out, n);
    bool ok = close(got, want);
    failures += !ok;
    printf("captured graph: %016llx %s\n", digest(got), ok ? "ok" : "WRONG");
}

static void on_device(int d)
{
    CHECK(cudaSetDevice(d));
    unsigned long long sum;
    bool ok = run(0, 160 * BLOCK, 80 + d, 3, &sum);
    failures += !ok;
    printf("device %d: %016llx %s\n", d, sum, ok ? "ok" : "WRONG");
}

int main(int argc, char** argv)
{
    const char* mode = argc > 1 ? argv[1] : "threads";
    if (!strcmp(mode, "threads"))
        threads();
    else if (!strcmp(mode, "capture-beside"))
        capture_beside();
    else if (!strcmp(mode, "device") && argc > 2)
        on_device(atoi(argv[2]));
    else if (!strcmp(mode, "devices")) {
        on_device(0);
        on_device(1);
    } else {
        fprintf(stderr, "usage: threads threads|capture-beside|device N|devices\n");
        return 2;
    }
    return failures ? 1 : 0;
}
