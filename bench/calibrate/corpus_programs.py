"""The table of programs bench/calibrate/corpus.py builds: the recipe is in
git, the third-party sources are not (corpus.py reads them from a mirror of
each repository at the commit COMMITS pins, fetching one from GitHub where
none is there).

The first programs are NVIDIA's cuda-samples (github NVIDIA/cuda-samples),
built whole with clang-22 for sm_90 and run with their own
default inputs and built-in check; then miniBUDE (github UoB-HPC/miniBUDE)
and three Rodinia programs (github yuhc/gpu-rodinia, a copy of Rodinia 3.1
with cuda/<program>/), each run with small arguments; then (2026-11-27)
ANL's RSBench and XSBench (CUDA versions) and three more tensor-core GEMM
samples, for heavy kernels. Keys: see corpus.py (build_program,
prepare_sources, tu_flags). "check" is what shows success in the output
(exit status 0 in every case).
"""

# Each repository at the commit the measured runs built (programs.json's "commit"), so that a
# newer mirror or a fresh fetch builds the same sources. A program's own "commit" overrides.
COMMITS = {
    "NVIDIA/cuda-samples": "c94ff366aed18c797b8a85dfaac7817b0228b420",
    "UoB-HPC/miniBUDE": "570f66c1fd0c29b7f3ab6fa96fba87f4561aa44c",
    "yuhc/gpu-rodinia": "9c10d3ea16ddba2ba057cc3951a9efc4c2cc18a4",
    "ANL-CESAR/XSBench": "ba08e5221af6106252b866e50ea123c69d31a4e2",
    "ANL-CESAR/RSBench": "34b644787ea9af4fb188e1253da72e09bbed9989",
}

# nvcc builds (bench/nvcc/corpus.py): each program's "nvcc_flags" are the CUDA flags its own build
# gives nvcc, less the target list (nvcc_flags never name an arch: corpus adds -arch=<--arch>, sm_90);
# the table's defines and includes are added as for clang, the sources are the same (the fixups too).
# cuda-samples' CMakeLists: CMAKE_CUDA_FLAGS -Wno-deprecated-gpu-targets -lineinfo, --extended-lambda,
# cuda_std_17 (cxx_std_17 for the host files), no build type (-O3 here, for host code: nvcc's device code
# is -O3 either way), CMAKE_CUDA_ARCHITECTURES 75..120 (sm_90 alone here) and CUDA_SEPARABLE_COMPILATION ON,
# which is left out: relocatable device code is linked by nvlink, which regtune refuses to tune (tune says
# "build it without -rdc"); these samples call no device code across files, so they build whole without it.
SAMPLES_NVCC = ["-O3", "-std=c++17", "-lineinfo", "--extended-lambda", "-Wno-deprecated-gpu-targets"]
SAMPLES_HOST = ["-O3", "-std=c++17"]  # "nvcc_host_flags": g++ for the .cpp files (CMake's CXX compiler)

SAMPLES = "NVIDIA/cuda-samples"
# The parts of cuda-samples' Common/ the samples below include (helper_functions.h pulls in the rest).
COMMON = {"Common": ("Common", ["helper_cuda.h", "helper_functions.h", "helper_string.h", "helper_timer.h",
                                "helper_image.h", "exception.h"])}

# dxtc also includes helper_math.h.
COMMON_MATH = {"Common": ("Common", COMMON["Common"][1] + ["helper_math.h"])}
# Rodinia 3.1's CUDA programs (a public copy with cuda/<program>/).
RODINIA = "yuhc/gpu-rodinia"

PROGRAMS = {
    "cudaTensorCoreGemm": {
        "repo": SAMPLES, "dir": "Samples/3_CUDA_Features/cudaTensorCoreGemm",
        "nvcc_flags": SAMPLES_NVCC, "nvcc_host_flags": SAMPLES_HOST,
        "cuda": ["cudaTensorCoreGemm.cu"],
        "also": COMMON, "includes": [".", "Common"],
        "args": [],
        "check": "exit status 0 (no result check unless built with CPU_DEBUG=1: a 4096^3 CPU GEMM)",
        # compute_gemm runs where the device has 64 KiB of shared memory a block (H100 has); otherwise simple_wmma_gemm.
        "unlaunched": ["simple_wmma_gemm"],
        "note": "WMMA half->float GEMM, M=N=K=4096",
    },
    "sortingNetworks": {
        "repo": SAMPLES, "dir": "Samples/2_Concepts_and_Techniques/sortingNetworks",
        "nvcc_flags": SAMPLES_NVCC, "nvcc_host_flags": SAMPLES_HOST,
        "cuda": ["bitonicSort.cu", "oddEvenMergeSort.cu"],
        "cxx": ["main.cpp", "sortingNetworks_validate.cpp"],
        "also": COMMON, "includes": [".", "Common"],
        "args": [],
        "check": "exit status 0; '...inspecting keys and values array: OK' for every array length",
        # main() calls bitonicSort() only.
        "unlaunched": ["oddEvenMergeSortShared", "oddEvenMergeGlobal"],
        "note": "bitonic sort of 1M keys+values, array lengths 64..1M",
    },
    "MC_EstimatePiInlineP": {
        "repo": SAMPLES, "dir": "Samples/2_Concepts_and_Techniques/MC_EstimatePiInlineP",
        "nvcc_flags": SAMPLES_NVCC, "nvcc_host_flags": SAMPLES_HOST,
        "cuda": ["src/piestimator.cu"],
        "cxx": ["src/main.cpp", "src/test.cpp"],
        "also": COMMON, "includes": ["inc", "Common"],
        "args": [],
        "check": "exit status 0 and no 'does not match expected result' (main ignores the test's verdict)",
        "note": "cuRAND device API (curand_kernel.h) only; single precision by default",
    },
    "MC_SingleAsianOptionP": {
        "repo": SAMPLES, "dir": "Samples/2_Concepts_and_Techniques/MC_SingleAsianOptionP",
        "nvcc_flags": SAMPLES_NVCC, "nvcc_host_flags": SAMPLES_HOST,
        "cuda": ["src/pricingengine.cu"],
        "cxx": ["src/main.cpp", "src/test.cpp"],
        "also": COMMON, "includes": ["inc", "Common"],
        # The sample's own option: its register-limited kernels are the double instantiations
        # (generatePaths<double>, computeValue<double>); the default (single) launches only the float ones.
        "args": ["--precision=double"],
        "check": "exit status 0 and no 'does not match expected result' (main ignores the test's verdict)",
        "note": "cuRAND device API (curand_kernel.h) only; run in double precision (the float kernels are not register-limited)",
    },
    "eigenvalues": {
        "repo": SAMPLES, "dir": "Samples/2_Concepts_and_Techniques/eigenvalues",
        "nvcc_flags": SAMPLES_NVCC, "nvcc_host_flags": SAMPLES_HOST,
        # bisect_util.cu is #included by every bisect_kernel_*.cuh as well; CMake compiles it alone too (no kernels).
        "cuda": ["bisect_large.cu", "bisect_small.cu", "bisect_util.cu", "main.cu"],
        "cxx": ["gerschgorin.cpp", "matlab.cpp"],
        "kernels": ["bisect_large.cu", "bisect_small.cu"],
        "also": COMMON, "includes": [".", "Common"],
        "data": ["data/diagonal.dat", "data/superdiagonal.dat", "data/reference.dat"],
        "cwd": ".",  # sdkFindFilePath finds ./data/*.dat from the source folder
        "args": [],
        "check": "Test Succeeded!",
        # the default matrix (2048) takes the large path: bisectKernel is for matrices of at most 512.
        "unlaunched": ["bisectKernel"],
        "note": "bisection eigenvalues of a 2048x2048 tridiagonal matrix read from data/",
    },
    "MonteCarloMultiGPU": {
        "repo": SAMPLES, "dir": "Samples/5_Domain_Specific/MonteCarloMultiGPU",
        "nvcc_flags": SAMPLES_NVCC, "nvcc_host_flags": SAMPLES_HOST,
        "cuda": ["MonteCarlo_kernel.cu"],
        "cxx": ["MonteCarloMultiGPU.cpp", "MonteCarlo_gold.cpp", "multithreading.cpp"],
        "also": COMMON, "includes": [".", "Common"],
        "args": [],
        "check": "Test passed",
        "fixups": {
            # MonteCarloCPU (host cuRAND, libcurand) is called only under DO_CPU, which the sample #undefs:
            # compiled out so the program links with cudart alone.
            "MonteCarlo_gold.cpp": [
                ('extern "C" void MonteCarloCPU(', '#ifdef DO_CPU\nextern "C" void MonteCarloCPU('),
                ("callValue.Confidence = (float)(exp(-R * T) * 1.96 * stdDev / sqrt((double)pathN));\n}",
                 "callValue.Confidence = (float)(exp(-R * T) * 1.96 * stdDev / sqrt((double)pathN));\n}\n#endif"),
            ],
        },
        "note": "one GPU (CUDA_VISIBLE_DEVICES=0), default method; CPU Monte Carlo reference (host cuRAND) compiled out as the sample does",
    },
    "dmmaTensorCoreGemm": {
        "repo": SAMPLES, "dir": "Samples/3_CUDA_Features/dmmaTensorCoreGemm",
        "nvcc_flags": SAMPLES_NVCC, "nvcc_host_flags": SAMPLES_HOST,
        "cuda": ["dmmaTensorCoreGemm.cu"],
        "also": COMMON, "includes": [".", "Common"],
        "cuda_std": ["-std=c++17"],
        "args": [],
        "check": "exit status 0 (no result check unless built with CPU_DEBUG=1: a CPU DGEMM of 8192x8192x4096)",
        # the default kernel is dmma_shmem_gemm_async_copy (compute_dgemm_async_copy); -kernel=N picks another.
        "unlaunched": ["compute_dgemm", "compute_dgemm_cg_async_copy", "simple_wmma_gemm"],
        "note": "DMMA (FP64 tensor core) GEMM, M=N=8192, K=4096, default kernel (async copy)",
    },
    "dxtc": {
        "repo": SAMPLES, "dir": "Samples/5_Domain_Specific/dxtc",
        "nvcc_flags": SAMPLES_NVCC, "nvcc_host_flags": SAMPLES_HOST,
        "cuda": ["dxtc.cu"],
        "also": COMMON_MATH, "includes": [".", "Common"],
        "data": ["data/teapot512_std.ppm", "data/teapot512_ref.dds"],
        "cwd": ".",  # sdkFindFilePath finds ./data/ from the source folder
        "args": [],
        "check": "Test passed",
        "note": "DXT1 compression of a 512x512 image read from data/, compared with a reference .dds",
    },
    "interval": {
        "repo": SAMPLES, "dir": "Samples/2_Concepts_and_Techniques/interval",
        "nvcc_flags": SAMPLES_NVCC, "nvcc_host_flags": SAMPLES_HOST,
        "cuda": ["interval.cu"],
        "also": COMMON, "includes": [".", "Common"],
        "args": [],
        "check": "exit status 0 (checkAgainstHost: the GPU intervals equal the CPU (Boost) ones)",
        "fixups": {
            # under clang, ::nan in host-device code binds to a device declaration with no definition
            # (ptxas: unresolved extern function _ZL3nanPKc); the builtin is the same NaN on both sides.
            "cuda_interval_rounded_arith.h": [('return ::nan("");', 'return __builtin_nan("");')],
        },
        "note": "interval Newton root search, double, naive implementation (-n=0, the default)",
    },
    "miniBUDE": {
        "repo": "UoB-HPC/miniBUDE", "dir": "src",
        # src/cuda/model.cmake (not CUDA_CLANG_DRIVER): -std=c++17 -forward-unknown-to-host-compiler -extended-lambda
        # -use_fast_math -restrict -arch=${CUDA_ARCH}, then the Release flags -O3 -ffast-math (for the host compiler);
        # main.cpp has LANGUAGE CUDA (CMake: -x cu).
        "nvcc_flags": ["-std=c++17", "-forward-unknown-to-host-compiler", "-extended-lambda", "-use_fast_math", "-restrict",
                       "-O3", "-ffast-math", "-x", "cu"],
        # nvcc splits -D's value at commas: CMakeLists.txt escapes them (USE_PPWI=1\,2\,...) when the model is CUDA.
        "nvcc_defines": ["CUDA", "USE_PPWI=1\\,2\\,4\\,8"],
        # the CUDA model is single source: main.cpp includes cuda/fasten.hpp under -DCUDA, compiled as CUDA.
        "cuda": ["main.cpp"],
        "also": {"data/bm1": ("data/bm1", ["forcefield.in", "ligand.in", "poses.in", "protein.in", "ref_energies.out"])},
        "includes": ["."],
        "cuda_std": ["-std=c++17"],
        # fasten_main<PPWI> for PPWI 1, 2, 4, 8 only (CMake's default list goes to 128).
        "defines": ["CUDA", "USE_PPWI=1,2,4,8"],
        "cwd": ".",
        # the whole bm1 deck (65536 poses: --poses must be a multiple of ppwi*wgsize), 64 threads a block,
        # every PPWI, 2 iterations (+2 warm-up) each.
        "args": ["--deck", "data/bm1", "-p", "1,2,4,8", "-w", "64", "-i", "2"],
        "check": "exit status 0 (nonzero when any result fails validation against ref_energies.out)",
        "note": "miniBUDE (UoB-HPC) CUDA model, bm1 deck, fasten_main<1,2,4,8> at 64 threads a block; built without fast math (as its CUDA_CLANG_DRIVER build)",
    },
    "lud": {
        "repo": RODINIA, "dir": "cuda/lud",
        # cuda/lud/cuda/Makefile: NVCCFLAGS -I../common -O3 -use_fast_math, DEFS -DGPU_TIMER; gcc -O3 for common.c.
        "nvcc_flags": ["-O3", "-use_fast_math", "-DGPU_TIMER"],
        "cuda": ["cuda/lud.cu", "cuda/lud_kernel.cu"],
        "c": ["common/common.c"],
        "kernels": ["cuda/lud_kernel.cu"],
        "includes": ["common"],
        "args": ["-s", "1024", "-v"],
        "check": "exit status 0 and no 'dismatch' line after '>>>Verify<<<<'",
        "note": "Rodinia LU decomposition, 1024x1024 matrix generated internally, CPU verification",
    },
    "lavaMD": {
        "repo": RODINIA, "dir": "cuda/lavaMD",
        # cuda/lavaMD/makefile: nvcc -O3 (and -arch) for the .cu files, gcc -O3 for the C files.
        "nvcc_flags": ["-O3"],
        "cuda": ["kernel/kernel_gpu_cuda_wrapper.cu", "util/device/device.cu"],
        "c": ["main.c", "util/num/num.c", "util/timer/timer.c"],
        "kernels": ["kernel/kernel_gpu_cuda_wrapper.cu"],
        "includes": ["."],
        # main.c and timer.c call strcmp, time and gettimeofday without their headers (an error in C99 and later for clang).
        "c_flags": ["-include", "string.h", "-include", "time.h", "-include", "sys/time.h"],
        "args": ["-boxes1d", "10"],
        "check": "exit status 0 (no result check)",
        "note": "Rodinia lavaMD, 10x10x10 boxes",
    },
    "particlefilter": {
        "repo": RODINIA, "dir": "cuda/particlefilter",
        # cuda/particlefilter/Makefile (float): nvcc -g -O3 -use_fast_math (-lm -lcuda at the link).
        "nvcc_flags": ["-g", "-O3", "-use_fast_math"],
        "cuda": ["ex_particle_CUDA_float_seq.cu"],
        # launches are written `kernel << < grid, block >> > (...)`, which clang does not parse;
        # main() calls time() without <time.h>.
        "fixups": {"ex_particle_CUDA_float_seq.cu": [("<< <", "<<<"), (">> >", ">>>"),
                                                      ("#include <sys/time.h>", "#include <sys/time.h>\n#include <time.h>")]},
        "args": ["-x", "128", "-y", "128", "-z", "10", "-np", "1000"],
        "check": "exit status 0 (prints the estimate's distance from the truth; no check)",
        "note": "Rodinia particle filter, the 'float' version (ex_particle_CUDA_float_seq.cu, double arrays), 128x128 frames, 10 frames, 1000 particles",
    },

# ANL's Monte Carlo neutron transport proxy apps, CUDA versions (github ANL-CESAR/RSBench, ANL-CESAR/XSBench):
# self-generated inputs, a verification hash checked against the known value for the default problem.
    "RSBench": {
        "repo": "ANL-CESAR/RSBench", "dir": "cuda",
        # cuda/Makefile: nvcc -Xcompiler -Wall -Xcompiler -O3 -arch=sm_$(SM_VERSION) -std=c++14 -O3, but with
        # -std=c++17: CUDA 13's Thrust refuses C++14 ("Thrust requires at least C++17").
        "nvcc_flags": ["-Xcompiler", "-Wall", "-Xcompiler", "-O3", "-std=c++17", "-O3"],
        "cuda": ["main.cu", "simulation.cu", "io.cu", "init.cu", "material.cu", "utils.cu"],
        "kernels": ["simulation.cu"],
        "cuda_std": ["-std=c++14"],
        # the default method is history-based, which the CUDA version does not implement.
        "args": ["-m", "event"],
        "check": "Verification checksum: ... (Valid) (exit status 1 when the hash is not the default problem's)",
        # -k 1 (xs_lookup_kernel_optimization_1, sorted by material with Thrust) is not the default.
        "unlaunched": ["xs_lookup_kernel_optimization_1"],
        "note": "RSBench (multipole cross sections, complex Faddeeva), default problem: large, event-based, 10.2M lookups, baseline kernel",
    },
    "XSBench": {
        "repo": "ANL-CESAR/XSBench", "dir": "cuda",
        # cuda/Makefile: nvcc -Xcompiler -Wall -Xcompiler -O3 -arch=sm_$(SM_VERSION) -std=c++14 -O3, but with
        # -std=c++17: CUDA 13's Thrust refuses C++14 ("Thrust requires at least C++17").
        "nvcc_flags": ["-Xcompiler", "-Wall", "-Xcompiler", "-O3", "-std=c++17", "-O3"],
        "cuda": ["Main.cu", "Simulation.cu", "io.cu", "GridInit.cu", "Materials.cu", "XSutils.cu"],
        "kernels": ["Simulation.cu"],
        # the hash grid (the default unionized grid needs 5.7 GB and a long CPU set-up); the checksum is the same.
        "args": ["-m", "event", "-G", "hash"],
        "check": "Verification checksum: ... (Valid) (exit status 1 otherwise)",
        "unlaunched": ["xs_lookup_kernel_optimization_1", "xs_lookup_kernel_optimization_2", "xs_lookup_kernel_optimization_3",
                       "xs_lookup_kernel_optimization_4", "xs_lookup_kernel_optimization_5"],
        "note": "XSBench (continuous-energy cross-section lookups), large problem, hash grid, event-based, 17M lookups, baseline kernel",
    },
    "bf16TensorCoreGemm": {
        "repo": SAMPLES, "dir": "Samples/3_CUDA_Features/bf16TensorCoreGemm",
        "nvcc_flags": SAMPLES_NVCC, "nvcc_host_flags": SAMPLES_HOST,
        "cuda": ["bf16TensorCoreGemm.cu"],
        "also": COMMON, "includes": [".", "Common"],
        "cuda_std": ["-std=c++17"],
        "args": [],
        "check": "exit status 0 (no result check unless built with CPU_DEBUG=1)",
        "unlaunched": ["compute_bf16gemm", "simple_wmma_bf16gemm"],
        "note": "BF16 WMMA GEMM, M=N=K=8192, default kernel (async copy)",
    },
    "tf32TensorCoreGemm": {
        "repo": SAMPLES, "dir": "Samples/3_CUDA_Features/tf32TensorCoreGemm",
        "nvcc_flags": SAMPLES_NVCC, "nvcc_host_flags": SAMPLES_HOST,
        "cuda": ["tf32TensorCoreGemm.cu"],
        "also": COMMON, "includes": [".", "Common"],
        "cuda_std": ["-std=c++17"],
        "args": [],
        "check": "exit status 0 (no result check unless built with CPU_DEBUG=1)",
        "unlaunched": ["compute_tf32gemm", "simple_wmma_tf32gemm"],
        "note": "TF32 WMMA GEMM, M=N=K=8192, default kernel (async copy)",
    },
    "immaTensorCoreGemm": {
        "repo": SAMPLES, "dir": "Samples/3_CUDA_Features/immaTensorCoreGemm",
        "nvcc_flags": SAMPLES_NVCC, "nvcc_host_flags": SAMPLES_HOST,
        "cuda": ["immaTensorCoreGemm.cu"],
        "also": COMMON, "includes": [".", "Common"],
        "cuda_std": ["-std=c++17"],
        "args": [],
        "check": "exit status 0 (no result check unless built with CPU_DEBUG=1)",
        "unlaunched": ["simple_wmma_gemm_imma"],
        "note": "INT8 WMMA GEMM (int32 accumulate), M=N=K=4096",
    },
}
