#!/usr/bin/env python3
"""How many of the tuner's decisions reach a build without regtune: real
programs whose kernels live in included headers and `.cu` files, each
tuned (`regtune tune`) and patched (`regtune fix`), counting the decisions
that land in a verified patch. The sources come from read-only git mirrors
(`fetch` puts them under /work/.mirror) and stay out of the repository:

    DEST/src/<program>/...   the program's sources, extracted afresh each run
    DEST/<program>.<arch>.db.json, .patch, .log
    DEST/results.json        per program and target: decisions, in the patch, why not

    python3 bench/fix/corpus.py [--dest /tmp/regtune-fix-corpus] [--arch gfx90a sm_90]
        [--only bfs lavaMD] [--regtune target/debug/regtune] [--mirrors /work/.mirror]
        [--tune-flags "--pow2 apply --noalias apply --block-size auto"]

Every program is tuned as its build compiles it (its flags, from its own
directory). CUDA programs build for sm_90 as CUDA and for gfx90a as HIP
through compat/ (cuda.h and friends include <hip/hip_runtime.h> and name
CUDA's runtime calls as HIP's), as bench/corpus/corpus.sh does. tune's
defaults apply few decisions (unroll caps are suggestions, noalias and
pow2 too unless asked), so tune runs with `--pow2 apply --noalias apply
--block-size auto` (a block size inferred from the launches, which NVPTX
occupancy targets need to be spelled), and fix runs twice: on the
decisions, and with `--with-suggestions` (each kernel's suggestion as the
user would confirm it). Both shares are printed.
"""

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

RODINIA = "yuhc+gpu-rodinia"
SAMPLES = "NVIDIA+cuda-samples"
HPC = "amd+HPCTrainingExamples"
PARBOIL = "yuhc+gpu-parboil"

# program: (mirror, directories to extract, the unit (compiled from its own
# directory), flags, targets[, tune's own flags]). Every one keeps kernels,
# or the device code they inline, in a file the unit includes. CUDA programs
# build for sm_90 and, through compat/, for gfx90a; HIP ones for gfx90a.
# An NVPTX occupancy target has no source spelling without a block size
# (clang 22 has no `__maxnreg__`); the summary counts those apart.
SAMPLES_COMMON = "Common"
PROGRAMS = {
    # Rodinia (CUDA): kernels in `#include "kernel.cu"` and friends.
    "bfs": (RODINIA, ["cuda/bfs"], "cuda/bfs/bfs.cu", [], ["sm_90", "gfx90a"]),
    "backprop": (RODINIA, ["cuda/backprop"], "cuda/backprop/backprop_cuda.cu", [], ["sm_90", "gfx90a"]),
    "nw": (RODINIA, ["cuda/nw"], "cuda/nw/needle.cu", [], ["sm_90", "gfx90a"]),
    "srad_v1": (RODINIA, ["cuda/srad/srad_v1"], "cuda/srad/srad_v1/main.cu", [], ["sm_90", "gfx90a"]),
    "srad_v2": (RODINIA, ["cuda/srad/srad_v2"], "cuda/srad/srad_v2/srad.cu", [], ["sm_90", "gfx90a"]),
    "lavaMD": (RODINIA, ["cuda/lavaMD"], "cuda/lavaMD/kernel/kernel_gpu_cuda_wrapper.cu", [], ["sm_90", "gfx90a"]),
    "b+tree": (RODINIA, ["cuda/b+tree"], "cuda/b+tree/kernel/kernel_gpu_cuda_wrapper.cu", [], ["sm_90", "gfx90a"]),
    "b+tree_2": (RODINIA, ["cuda/b+tree"], "cuda/b+tree/kernel/kernel_gpu_cuda_wrapper_2.cu", [], ["sm_90", "gfx90a"]),
    "hotspot3D": (RODINIA, ["cuda/hotspot3D"], "cuda/hotspot3D/3D.cu", [], ["sm_90"]),
    "heartwall": (RODINIA, ["cuda/heartwall"], "cuda/heartwall/main.cu", ["-I./AVI"], ["sm_90", "gfx90a"]),
    "myocyte": (RODINIA, ["cuda/myocyte"], "cuda/myocyte/main.cu", [], ["sm_90", "gfx90a"]),
    "dwt2d_fdwt97": (RODINIA, ["cuda/dwt2d"], "cuda/dwt2d/dwt_cuda/fdwt97.cu", [], ["sm_90", "gfx90a"]),
    "dwt2d_rdwt97": (RODINIA, ["cuda/dwt2d"], "cuda/dwt2d/dwt_cuda/rdwt97.cu", [], ["sm_90", "gfx90a"]),
    "dwt2d_fdwt53": (RODINIA, ["cuda/dwt2d"], "cuda/dwt2d/dwt_cuda/fdwt53.cu", [], ["sm_90", "gfx90a"]),
    "dwt2d_rdwt53": (RODINIA, ["cuda/dwt2d"], "cuda/dwt2d/dwt_cuda/rdwt53.cu", [], ["sm_90", "gfx90a"]),
    "streamcluster": (RODINIA, ["cuda/streamcluster"], "cuda/streamcluster/streamcluster_cuda.cu", [], ["sm_90"]),
    # Parboil (CUDA): kernels in an included `.cu`, parboil.h from common/.
    **{
        f"parboil_{name}": (PARBOIL, [f"benchmarks/{name}/src/cuda", "common/include"], f"benchmarks/{name}/src/cuda/{unit}",
                            ["-I../../../../common/include"], ["sm_90", "gfx90a"])
        for name, unit in [
            ("bfs", "main.cu"), ("lbm", "lbm.cu"), ("mri-gridding", "CUDA_interface.cu"), ("mri-q", "main.cu"),
            ("sgemm", "main.cu"), ("spmv", "main.cu"), ("stencil", "main.cu"), ("tpacf", "main.cu"),
        ]
    },
    # NVIDIA's samples (CUDA): kernels in `_kernel.cuh` headers.
    **{
        name: (SAMPLES, [directory, SAMPLES_COMMON], f"{directory}/{unit}", ["-I" + "../" * directory.count("/") + "../Common"], ["sm_90"])
        for name, directory, unit in [
            ("BlackScholes", "Samples/5_Domain_Specific/BlackScholes", "BlackScholes.cu"),
            ("dct8x8", "Samples/2_Concepts_and_Techniques/dct8x8", "dct8x8.cu"),
            ("eigenvalues", "Samples/2_Concepts_and_Techniques/eigenvalues", "bisect_large.cu"),
            ("eigenvalues_small", "Samples/2_Concepts_and_Techniques/eigenvalues", "bisect_small.cu"),
            ("HSOpticalFlow", "Samples/5_Domain_Specific/HSOpticalFlow", "flowCUDA.cu"),
            ("particles", "Samples/2_Concepts_and_Techniques/particles", "particleSystem_cuda.cu"),
            ("sortingNetworks", "Samples/2_Concepts_and_Techniques/sortingNetworks", "bitonicSort.cu"),
            ("threadFenceReduction", "Samples/2_Concepts_and_Techniques/threadFenceReduction", "threadFenceReduction.cu"),
            ("fastWalshTransform", "Samples/5_Domain_Specific/fastWalshTransform", "fastWalshTransform.cu"),
            ("recursiveGaussian", "Samples/5_Domain_Specific/recursiveGaussian", "recursiveGaussian_cuda.cu"),
            ("Mandelbrot", "Samples/5_Domain_Specific/Mandelbrot", "Mandelbrot_cuda.cu"),
            ("imageDenoising", "Samples/2_Concepts_and_Techniques/imageDenoising", "imageDenoising.cu"),
            ("stereoDisparity", "Samples/5_Domain_Specific/stereoDisparity", "stereoDisparity.cu"),
            ("MonteCarlo", "Samples/5_Domain_Specific/MonteCarloMultiGPU", "MonteCarlo_kernel.cu"),
            ("dwtHaar1D", "Samples/5_Domain_Specific/dwtHaar1D", "dwtHaar1D.cu"),
            ("scalarProd", "Samples/2_Concepts_and_Techniques/scalarProd", "scalarProd.cu"),
        ]
    },
    "FDTD3d": (SAMPLES, ["Samples/5_Domain_Specific/FDTD3d", SAMPLES_COMMON], "Samples/5_Domain_Specific/FDTD3d/src/FDTD3dGPU.cu",
               ["-I../../../../Common", "-I../inc"], ["sm_90"]),
    # AMD's training examples (HIP): kernels and templates in headers.
    "laplacian_k1": (HPC, ["rocm-blogs-codes/finite-difference"], "rocm-blogs-codes/finite-difference/laplacian.cpp",
                     ["-O3", "-std=c++17", "-DDOUBLE"], ["gfx90a"]),
    **{
        f"laplacian_k{k}": (HPC, ["rocm-blogs-codes/finite-difference"], "rocm-blogs-codes/finite-difference/laplacian.cpp",
                            ["-O3", "-std=c++17", "-DDOUBLE", "-DKERNEL", "-include", f"kernel{k}.hpp"], ["gfx90a"])
        for k in range(2, 8)
    },
    "seismic_stencils": (HPC, ["rocm-blogs-codes/seismic-stencils/parts-1-2-3"], "rocm-blogs-codes/seismic-stencils/parts-1-2-3/stencils.cpp",
                         ["-O3", "-std=c++17", "-DRADIUS=4", "-DVEC_EXP=2"], ["gfx90a"]),
    "seismic_stencils_r2": (HPC, ["rocm-blogs-codes/seismic-stencils/parts-1-2-3"], "rocm-blogs-codes/seismic-stencils/parts-1-2-3/stencils.cpp",
                            ["-O3", "-std=c++17", "-DRADIUS=2", "-DVEC_EXP=1"], ["gfx90a"]),
}

SOURCES = (".c", ".h", ".cu", ".cuh", ".cpp", ".hpp", ".hip", ".inc")

COMPAT = {
    "cuda_to_hip.h": """// bench/fix/corpus.py: CUDA runtime names as HIP's, so CUDA sources compile as HIP.
#pragma once
#include <hip/hip_runtime.h>
#define cudaError_t hipError_t
#define cudaSuccess hipSuccess
#define cudaMalloc hipMalloc
#define cudaMallocHost hipHostMalloc
#define cudaFreeHost hipHostFree
#define cudaFree hipFree
#define cudaMemcpy hipMemcpy
#define cudaMemcpyAsync hipMemcpyAsync
#define cudaMemcpy2D hipMemcpy2D
#define cudaMemset hipMemset
#define cudaMemcpyHostToDevice hipMemcpyHostToDevice
#define cudaMemcpyDeviceToHost hipMemcpyDeviceToHost
#define cudaMemcpyDeviceToDevice hipMemcpyDeviceToDevice
#define cudaMemcpyToSymbol hipMemcpyToSymbol
#define cudaMemcpyFromSymbol hipMemcpyFromSymbol
#define cudaGetErrorString hipGetErrorString
#define cudaGetLastError hipGetLastError
#define cudaThreadSynchronize hipDeviceSynchronize
#define cudaDeviceSynchronize hipDeviceSynchronize
#define cudaThreadExit hipDeviceReset
#define cudaDeviceReset hipDeviceReset
#define cudaSetDevice hipSetDevice
#define cudaGetDevice hipGetDevice
#define cudaGetDeviceCount hipGetDeviceCount
#define cudaGetDeviceProperties hipGetDeviceProperties
#define cudaDeviceProp hipDeviceProp_t
#define cudaEvent_t hipEvent_t
#define cudaEventCreate hipEventCreate
#define cudaEventRecord hipEventRecord
#define cudaEventSynchronize hipEventSynchronize
#define cudaEventElapsedTime hipEventElapsedTime
#define cudaEventDestroy hipEventDestroy
#define cudaStream_t hipStream_t
#define cudaStreamCreate hipStreamCreate
#define cudaStreamSynchronize hipStreamSynchronize
#define cudaFuncSetCacheConfig hipFuncSetCacheConfig
#define cudaFuncCachePreferL1 hipFuncCachePreferL1
#define cudaFuncCachePreferShared hipFuncCachePreferShared
#define cudaBindTexture hipBindTexture
#define cudaUnbindTexture hipUnbindTexture
#define cudaChannelFormatDesc hipChannelFormatDesc
#define cudaCreateChannelDesc hipCreateChannelDesc
#define cudaMallocArray hipMallocArray
#define cudaArray hipArray
#define cudaMemcpyToArray hipMemcpyToArray
#define cudaFreeArray hipFreeArray
""",
}


def run(cmd, cwd, log):
    log.write("+ (cd %s && %s)\n" % (cwd, " ".join(shlex.quote(c) for c in cmd)))
    log.flush()
    t = time.time()
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    log.write(out.stdout + out.stderr + "(exit %d, %.1f s)\n" % (out.returncode, time.time() - t))
    log.flush()
    return out


def extract(git_dir, dirs, dest):
    """The source files under `dirs` at HEAD, at their paths in the
    repository (blobs the mirror lacks are skipped)."""
    if os.path.isdir(dest):
        shutil.rmtree(dest)
    listed = subprocess.run(["git", "--git-dir", git_dir, "ls-tree", "-r", "HEAD", "--", *dirs],
                            check=True, capture_output=True, text=True).stdout
    for line in listed.splitlines():
        meta, path = line.split("\t", 1)
        _mode, kind, obj = meta.split()
        if kind != "blob" or not path.endswith(SOURCES):
            continue
        blob = subprocess.run(["git", "--git-dir", git_dir, "cat-file", "blob", obj], capture_output=True)
        if blob.returncode != 0:
            continue
        out = os.path.join(dest, path)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "wb") as f:
            f.write(blob.stdout)


def summary_lines(stderr):
    """fix's kernel lines: (kernel, arch, in the patch, why not)."""
    out = []
    for line in stderr.splitlines():
        m = re.match(r"^\S+: (.+) \((\w+)\): (.*)$", line)
        if not m:
            continue
        name, arch, rest = m.groups()
        if "; verified by a plain build: " in rest:
            out.append((name, arch, True, ""))
        elif ": not in the patch: " in rest:
            out.append((name, arch, False, rest.split(": not in the patch: ", 1)[1]))
    return out


def unspellable(stderr, kernel):
    """fix's note that the kernel's NVPTX occupancy target has no spelling
    without a block size (clang 22 has no `__maxnreg__`)."""
    return re.search(r": " + re.escape(kernel) + r": warps-per-sm=\d+ on sm_\d+: clang 22 has no", stderr) is not None


def decided(entry, with_suggestions):
    """The db entry holds a decision fix must express (as fix reads it)."""
    if with_suggestions and any(not s.get("confirmed") for s in entry.get("suggested", [])):
        return True
    applied = dict(entry.get("transforms", {}))
    for s in entry.get("suggested", []):
        if s.get("confirmed"):
            applied = s["transforms"]
    return bool(applied)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dest", default=os.environ.get("REGTUNE_FIX_CORPUS", "/tmp/regtune-fix-corpus"))
    p.add_argument("--mirrors", default="/work/.mirror")
    p.add_argument("--regtune", default=os.path.join(REPO, "target", "debug", "regtune"))
    p.add_argument("--arch", nargs="*", default=["gfx90a", "sm_90"])
    p.add_argument("--only", nargs="*", help="programs (default: all)")
    p.add_argument("--tune-flags", default="--pow2 apply --noalias apply --block-size auto")
    a = p.parse_args()

    regtune = os.path.abspath(a.regtune)
    dest = os.path.abspath(a.dest)
    os.makedirs(dest, exist_ok=True)
    compat = os.path.join(dest, "compat")
    os.makedirs(compat, exist_ok=True)
    for name, text in COMPAT.items():
        with open(os.path.join(compat, name), "w") as f:
            f.write(text)
    for h in ("cuda.h", "cuda_runtime.h", "cuda_runtime_api.h"):
        with open(os.path.join(compat, h), "w") as f:
            f.write('#include "cuda_to_hip.h"\n')

    results = []
    for name, (repo, dirs, unit, flags, archs, *own) in PROGRAMS.items():
        if a.only and name not in a.only:
            continue
        git_dir = os.path.join(a.mirrors, repo, "repo")
        if not os.path.isdir(git_dir):
            print(f"{name}: no mirror at {git_dir}; skipped", file=sys.stderr)
            continue
        for arch in archs:
            if arch not in a.arch:
                continue
            root = os.path.join(dest, "src", f"{name}.{arch}")
            extract(git_dir, dirs, root)
            if not os.path.isfile(os.path.join(root, unit)):
                print(f"{name}: {unit} is not in the mirror; skipped", file=sys.stderr)
                continue
            cwd = os.path.join(root, os.path.dirname(unit))
            file = os.path.basename(unit)
            extra = list(flags)
            if unit.endswith(".cu") and arch.startswith("gfx"):
                extra += ["-I" + compat, "-include", os.path.join(compat, "cuda_to_hip.h")]
            db = os.path.join(dest, f"{name}.{arch}.db.json")
            if os.path.exists(db):
                os.remove(db)
            row = {"program": name, "arch": arch, "unit": unit, "flags": extra}
            with open(os.path.join(dest, f"{name}.{arch}.log"), "w") as log:
                t0 = time.time()
                tune_flags = shlex.split(a.tune_flags) + (own[0] if own else [])
                if own:
                    tune_flags = [f for i, f in enumerate(tune_flags) if f != "auto" and not (f == "--block-size" and tune_flags[i + 1:i + 2] == ["auto"])]
                row["tune_flags"] = tune_flags
                tune = run([regtune, "tune", "--offload-arch", arch, *tune_flags, "--db", db, file, "--", *extra], cwd, log)
                row["tune_exit"], row["tune_s"] = tune.returncode, round(time.time() - t0, 1)
                if tune.returncode != 0:
                    row["error"] = (tune.stderr.strip().splitlines() or ["?"])[-1]
                # Each way fix reads the db: the decisions, then the suggestions too.
                for mode, extra_fix in (("decisions", []), ("with_suggestions", ["--with-suggestions"])):
                    patch = os.path.join(dest, f"{name}.{arch}.{mode}.patch")
                    if os.path.exists(patch):
                        os.remove(patch)
                    t1 = time.time()
                    fix = run([regtune, "fix", "--offload-arch", arch, "--db", db, "-o", patch, *extra_fix, file, "--", *extra], cwd, log)
                    kernels = summary_lines(fix.stderr)
                    if fix.returncode == 2 and tune.returncode == 0:
                        # fix failed outright: every decision the db holds is left out.
                        why = "fix failed: " + (fix.stderr.strip().splitlines() or ["?"])[-1]
                        entries = json.load(open(db))["kernels"].values() if os.path.exists(db) else []
                        kernels = [(e["name"], e["arch"], False, why) for e in entries if decided(e, bool(extra_fix))]
                    # The patch applies to the sources as they are.
                    applies = None
                    if os.path.exists(patch) and "+++ b/" in open(patch).read():
                        applies = run(["git", "apply", "--check", patch], cwd, log).returncode == 0
                    row[mode] = {
                        "fix_exit": fix.returncode, "fix_s": round(time.time() - t1, 1),
                        "decisions": len(kernels), "in_patch": sum(1 for k in kernels if k[2]),
                        "left_out": [{"kernel": k[0], "why": k[3], "unspellable": unspellable(fix.stderr, k[0])} for k in kernels if not k[2]],
                        "files": sorted(set(re.findall(r"^\+\+\+ b/(.*)$", open(patch).read(), re.M))) if os.path.exists(patch) else [],
                        "patch_applies": applies,
                        "verdict": fix.stderr.strip().splitlines()[-1] if fix.stderr.strip() else "",
                    }
            results.append(row)
            if tune.returncode:
                state = "tune failed: " + row["error"]
            else:
                d, w = row["decisions"], row["with_suggestions"]
                state = (f"decisions {d['in_patch']}/{d['decisions']} in the patch (exit {d['fix_exit']}); "
                         f"with suggestions {w['in_patch']}/{w['decisions']} (exit {w['fix_exit']}); files {w['files'] or d['files']}")
            print(f"{name:22} {arch:7} {state}", flush=True)

    with open(os.path.join(dest, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    built = [r for r in results if r["tune_exit"] == 0]
    print(f"\n{len(built)} of {len(results)} program builds tuned ({a.tune_flags})")
    for mode in ("decisions", "with_suggestions"):
        print(f"fix {'--with-suggestions' if mode != 'decisions' else '(decisions only)'}:")
        for arch in a.arch + ["all"]:
            rows = [r for r in built if arch in ("all", r["arch"])]
            decided_n = sum(r[mode]["decisions"] for r in rows)
            verified = sum(r[mode]["in_patch"] for r in rows)
            programs = sum(1 for r in rows if r[mode]["decisions"])
            # Not about where the code is: no source spelling exists (clang 22).
            no_spelling = sum(1 for r in rows for k in r[mode]["left_out"] if k.get("unspellable"))
            share = f" ({100.0 * verified / decided_n:.1f}%)" if decided_n else ""
            rest = decided_n - no_spelling
            spellable = f"; of the {rest} with a source spelling, {100.0 * verified / rest:.1f}%" if no_spelling and rest else ""
            print(f"  {arch:7} {decided_n} decisions in {programs} program builds, {verified} in a verified patch{share}{spellable}")
        for r in built:
            for k in r[mode]["left_out"]:
                print(f"  left out: {r['program']} {r['arch']} {k['kernel']}: {k['why'][:200]}")


if __name__ == "__main__":
    main()
