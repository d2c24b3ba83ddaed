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
        [--tune-flags "--pow2 apply --noalias apply"] [--with-suggestions]

Every program is tuned as its build compiles it (its flags, from its own
directory). CUDA programs build for sm_90 as CUDA and for gfx90a as HIP
through compat/ (cuda.h and friends include <hip/hip_runtime.h> and name
CUDA's runtime calls as HIP's), as bench/corpus/corpus.sh does. tune's
defaults apply few decisions (unroll caps and noalias are suggestions, pow2
too unless asked), so by default tune runs with `--pow2 apply --noalias
apply`, and `--with-suggestions` also counts the confirmed-by-fix
suggestions (`regtune fix --with-suggestions`).
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

# program: (mirror, directory in it, the unit (relative to that directory,
# compiled from where it lies), flags, targets). Every one keeps kernels or
# the device code they inline in a file the unit includes.
PROGRAMS = {
    # Rodinia (CUDA): kernels in `#include "kernel.cu"` and friends.
    "bfs": (RODINIA, "cuda/bfs", "bfs.cu", [], ["sm_90", "gfx90a"]),
    "backprop": (RODINIA, "cuda/backprop", "backprop_cuda.cu", [], ["sm_90", "gfx90a"]),
    "nw": (RODINIA, "cuda/nw", "needle.cu", [], ["sm_90", "gfx90a"]),
    "srad_v1": (RODINIA, "cuda/srad/srad_v1", "main.cu", [], ["sm_90", "gfx90a"]),
    "srad_v2": (RODINIA, "cuda/srad/srad_v2", "srad.cu", [], ["sm_90", "gfx90a"]),
    "lavaMD": (RODINIA, "cuda/lavaMD", "kernel/kernel_gpu_cuda_wrapper.cu", [], ["sm_90", "gfx90a"]),
    "b+tree": (RODINIA, "cuda/b+tree", "kernel/kernel_gpu_cuda_wrapper.cu", [], ["sm_90", "gfx90a"]),
    "b+tree_2": (RODINIA, "cuda/b+tree", "kernel/kernel_gpu_cuda_wrapper_2.cu", [], ["sm_90", "gfx90a"]),
    "hotspot3D": (RODINIA, "cuda/hotspot3D", "3D.cu", [], ["sm_90", "gfx90a"]),
    "heartwall": (RODINIA, "cuda/heartwall", "main.cu", [], ["sm_90", "gfx90a"]),
    "myocyte": (RODINIA, "cuda/myocyte", "main.cu", [], ["sm_90", "gfx90a"]),
    "dwt2d_fdwt97": (RODINIA, "cuda/dwt2d", "dwt_cuda/fdwt97.cu", [], ["sm_90", "gfx90a"]),
    "dwt2d_rdwt53": (RODINIA, "cuda/dwt2d", "dwt_cuda/rdwt53.cu", [], ["sm_90", "gfx90a"]),
    "streamcluster": (RODINIA, "cuda/streamcluster", "streamcluster_cuda.cu", [], ["sm_90", "gfx90a"]),
    # NVIDIA's samples (CUDA): kernels in `_kernel.cuh` headers.
    "BlackScholes": (SAMPLES, "Samples/5_Domain_Specific/BlackScholes", "BlackScholes.cu", ["-I../../../Common"], ["sm_90"]),
    "dct8x8": (SAMPLES, "Samples/2_Concepts_and_Techniques/dct8x8", "dct8x8.cu", ["-I../../../Common"], ["sm_90"]),
    "eigenvalues": (SAMPLES, "Samples/2_Concepts_and_Techniques/eigenvalues", "bisect_large.cu", ["-I../../../Common"], ["sm_90"]),
    "FDTD3d": (SAMPLES, "Samples/5_Domain_Specific/FDTD3d", "src/FDTD3dGPU.cu", ["-I../../../../Common", "-Iinc"], ["sm_90"]),
    "HSOpticalFlow": (SAMPLES, "Samples/5_Domain_Specific/HSOpticalFlow", "flowCUDA.cu", ["-I../../../Common"], ["sm_90"]),
    "particles": (SAMPLES, "Samples/2_Concepts_and_Techniques/particles", "particleSystem_cuda.cu", ["-I../../../Common"], ["sm_90"]),
    "sortingNetworks": (SAMPLES, "Samples/2_Concepts_and_Techniques/sortingNetworks", "bitonicSort.cu", ["-I../../../Common"], ["sm_90"]),
    "threadFenceReduction": (SAMPLES, "Samples/2_Concepts_and_Techniques/threadFenceReduction", "threadFenceReduction.cu", ["-I../../../Common"], ["sm_90"]),
    "fastWalshTransform": (SAMPLES, "Samples/5_Domain_Specific/fastWalshTransform", "fastWalshTransform.cu", ["-I../../../Common"], ["sm_90"]),
    "recursiveGaussian": (SAMPLES, "Samples/5_Domain_Specific/recursiveGaussian", "recursiveGaussian_cuda.cu", ["-I../../../Common"], ["sm_90"]),
    # AMD's training examples (HIP): kernels and templates in headers.
    "transpose": (HPC, "HIP/transpose", "transpose_timed.cpp", [], ["gfx90a", "sm_90"]),
    "laplacian_k4": (HPC, "rocm-blogs-codes/finite-difference", "laplacian.cpp", ["-O3", "-std=c++17", "-DDOUBLE", "-include", "kernel4.hpp"], ["gfx90a", "sm_90"]),
    "laplacian_k7": (HPC, "rocm-blogs-codes/finite-difference", "laplacian.cpp", ["-O3", "-std=c++17", "-DDOUBLE", "-include", "kernel7.hpp"], ["gfx90a", "sm_90"]),
    "seismic_stencils": (HPC, "rocm-blogs-codes/seismic-stencils/parts-1-2-3", "stencils.cpp", ["-O3", "-std=c++17", "-DRADIUS=4", "-DVEC_EXP=2"], ["gfx90a"]),
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


def extract(git_dir, subdir, dest):
    """The source files under `subdir` at HEAD (blobs the mirror lacks are skipped)."""
    if os.path.isdir(dest):
        shutil.rmtree(dest)
    listed = subprocess.run(["git", "--git-dir", git_dir, "ls-tree", "-r", "HEAD", subdir],
                            check=True, capture_output=True, text=True).stdout
    for line in listed.splitlines():
        meta, path = line.split("\t", 1)
        _mode, kind, obj = meta.split()
        if kind != "blob" or not path.endswith(SOURCES):
            continue
        blob = subprocess.run(["git", "--git-dir", git_dir, "cat-file", "blob", obj], capture_output=True)
        if blob.returncode != 0:
            continue
        out = os.path.join(dest, os.path.relpath(path, subdir))
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
    p.add_argument("--tune-flags", default="--pow2 apply --noalias apply")
    p.add_argument("--with-suggestions", action="store_true", help="fix --with-suggestions: count the suggestions too")
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
    for name, (repo, subdir, unit, flags, archs) in PROGRAMS.items():
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
            extract(git_dir, subdir, root)
            if not os.path.isfile(os.path.join(root, unit)):
                print(f"{name}: {unit} is not in the mirror; skipped", file=sys.stderr)
                continue
            cwd = os.path.join(root, os.path.dirname(unit))
            file = os.path.basename(unit)
            extra = list(flags)
            if unit.endswith(".cu") and arch.startswith("gfx"):
                extra += ["-I" + compat, "-include", os.path.join(compat, "cuda_to_hip.h")]
            db = os.path.join(dest, f"{name}.{arch}.db.json")
            patch = os.path.join(dest, f"{name}.{arch}.patch")
            for f in (db, patch):
                if os.path.exists(f):
                    os.remove(f)
            with open(os.path.join(dest, f"{name}.{arch}.log"), "w") as log:
                t0 = time.time()
                tune = run([regtune, "tune", "--offload-arch", arch, *shlex.split(a.tune_flags), "--db", db, file, "--", *extra], cwd, log)
                t1 = time.time()
                fix_cmd = [regtune, "fix", "--offload-arch", arch, "--db", db, "-o", patch]
                if a.with_suggestions:
                    fix_cmd.append("--with-suggestions")
                fix = run(fix_cmd + [file, "--", *extra], cwd, log)
                t2 = time.time()
                # The patch applies to the sources as they are (git apply --check).
                applies = None
                if os.path.exists(patch) and "+++ b/" in open(patch).read():
                    applies = run(["git", "apply", "--check", patch], cwd, log).returncode == 0
            kernels = summary_lines(fix.stderr)
            if fix.returncode == 2 and tune.returncode == 0:
                # fix failed outright: every decision the db holds is left out.
                why = "fix failed: " + (fix.stderr.strip().splitlines() or ["?"])[-1]
                entries = json.load(open(db))["kernels"].values() if os.path.exists(db) else []
                kernels = [(e["name"], e["arch"], False, why) for e in entries if decided(e, a.with_suggestions)]
            row = {
                "program": name, "arch": arch, "unit": unit, "flags": extra,
                "tune_exit": tune.returncode, "fix_exit": fix.returncode,
                "decisions": len(kernels), "in_patch": sum(1 for k in kernels if k[2]),
                "left_out": [{"kernel": k[0], "why": k[3]} for k in kernels if not k[2]],
                "patch_applies": applies, "tune_s": round(t1 - t0, 1), "fix_s": round(t2 - t1, 1),
                "verdict": fix.stderr.strip().splitlines()[-1] if fix.stderr.strip() else "",
            }
            if tune.returncode != 0:
                row["error"] = (tune.stderr.strip().splitlines() or ["?"])[-1]
            results.append(row)
            state = "tune failed: " + row["error"] if tune.returncode else f"{row['in_patch']}/{row['decisions']} in the patch (fix exit {fix.returncode})"
            print(f"{name:22} {arch:7} {state}", flush=True)

    with open(os.path.join(dest, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    decided = sum(r["decisions"] for r in results)
    verified = sum(r["in_patch"] for r in results)
    built = [r for r in results if r["tune_exit"] == 0]
    print(f"\n{len(built)} of {len(results)} program builds tuned; {decided} decisions, {verified} in a verified patch"
          + (f" ({100.0 * verified / decided:.1f}%)" if decided else ""))
    for r in results:
        for k in r["left_out"]:
            print(f"  left out: {r['program']} {r['arch']} {k['kernel']}: {k['why']}")


if __name__ == "__main__":
    main()
