// Local-entropy texture filter (as in scikit-image's filters.rank.entropy):
// for each pixel, build a histogram of the quantised grey levels in a
// (2R+1)^2 window and output the Shannon entropy of that histogram.
//
// Register-pressure pattern: a per-thread array indexed at run time.  The
// histogram bin depends on the pixel value, so the compiler cannot map
// hist[] onto registers and it lives in scratch (private) memory:
// ScratchSize > 0 with no register spills.  This is not register pressure in
// the allocator's sense; it is the control case for the tuner, whose register
// rewrites are not expected to remove this scratch use.
#include "regtune_gpu.h" // <hip/hip_runtime.h>, or CUDA with NVPTX

#include <cstdio>
#include <cstdlib>
#include <vector>

#define NBINS 64  // grey levels are quantised to 6 bits
#define RADIUS 4  // 9x9 window

__global__ void local_entropy_filter(const unsigned char* img, float* entropy,
                                     int width, int height)
{
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y;
    if (x >= width)
        return;

    int hist[NBINS];
    for (int b = 0; b < NBINS; ++b)
        hist[b] = 0;

    int count = 0;
    for (int dy = -RADIUS; dy <= RADIUS; ++dy) {
        const int yy = y + dy;
        if (yy < 0 || yy >= height)
            continue;
        for (int dx = -RADIUS; dx <= RADIUS; ++dx) {
            const int xx = x + dx;
            if (xx < 0 || xx >= width)
                continue;
            hist[img[yy * width + xx] >> 2]++; // run-time index
            ++count;
        }
    }

    const float inv_count = 1.0f / count;
    float h = 0.0f;
    for (int b = 0; b < NBINS; ++b) {
        if (hist[b] > 0) {
            const float p = hist[b] * inv_count;
            h -= p * __log2f(p);
        }
    }
    entropy[y * width + x] = h;
}

#define HIP_CHECK(call)                                                        \
    do {                                                                       \
        hipError_t err_ = (call);                                              \
        if (err_ != hipSuccess) {                                              \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__,                 \
                    hipGetErrorString(err_));                                  \
            exit(1);                                                           \
        }                                                                      \
    } while (0)

int main()
{
    const int width = 1920, height = 1080;
    std::vector<unsigned char> h_img((size_t)width * height);
    for (size_t p = 0; p < h_img.size(); ++p)
        h_img[p] = (unsigned char)((p * 2654435761u) >> 24); // pseudo-random texture

    unsigned char* img;
    float* ent;
    HIP_CHECK(hipMalloc(&img, h_img.size()));
    HIP_CHECK(hipMalloc(&ent, h_img.size() * sizeof(float)));
    HIP_CHECK(hipMemcpy(img, h_img.data(), h_img.size(), hipMemcpyHostToDevice));

    hipLaunchKernelGGL(local_entropy_filter, dim3((width + 255) / 256, height), dim3(256), 0, 0,
                       img, ent, width, height);
    HIP_CHECK(hipGetLastError());
    HIP_CHECK(hipDeviceSynchronize());

    std::vector<float> h_ent(h_img.size());
    HIP_CHECK(hipMemcpy(h_ent.data(), ent, h_ent.size() * sizeof(float), hipMemcpyDeviceToHost));
    printf("entropy at centre = %.4f bits (max %.1f)\n",
           h_ent[(height / 2) * width + width / 2], 6.0);

    HIP_CHECK(hipFree(img));
    HIP_CHECK(hipFree(ent));
    return 0;
}
