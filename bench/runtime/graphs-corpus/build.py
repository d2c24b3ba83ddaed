#!/usr/bin/env python3
"""Real programs whose hot kernels launch through CUDA graphs (issue 39,
item 3), built by nvcc for sm_90 and tuned as a user of nvcc would tune
them, for bench/runtime/graphs-corpus/run.sh to run plainly and under
`regtune measure` on the GPU machine. The sources stay out of git: they are
read from git mirrors at the commits pinned below ($REGTUNE_MIRRORS, default
/work/.mirror; the `fetch` tool or bench/calibrate/corpus.py puts them there).

    jacobiCudaGraphs   NVIDIA/cuda-samples: JacobiMethod in a graph [memset -> kernel -> copy to host],
                       launched once per iteration until it converges; -gpumethod=0 builds the graph
                       explicitly and sets the kernel node's params per iteration
                       (cudaGraphExecKernelNodeSetParams), -gpumethod=1 captures it per iteration and
                       updates the exec (cudaGraphExecUpdate)
    phaseFieldLBM      brenogemelgo/phaseFieldLBM (JET, D3Q19, fp16 populations): each time step one
                       captured graph of five kernels (computePhase -> computeNormals -> computeForces
                       -> computeMoments -> streamCollide), boundary kernels launched plainly after it;
                       its SAMPLE_MODE (10001 steps, fields written every 1000) instead of RUN_MODE's
                       100001 steps (the one source change, a define in constants.cuh)
    particlefilter     utcs-scea/altis (level2/particlefilter, the float version) --graph: per frame one
                       explicit graph likelihood_kernel -> sum_kernel -> normalize_weights_kernel ->
                       find_index_kernel; two source changes for comparable runs (a fixed seed instead
                       of time(0); k set before the graph's node takes its address), two for CUDA 13
    (tune keeps no candidate for any of these programs' kernels, all at 64 warps/SM or <<<1,1>>>: run under
    measure with jacobiCudaGraphs' db, nothing to time, to see the interposer follow their graphs unharmed)
    simpleCudaGraphs   NVIDIA/cuda-samples: reduce -> reduceFinal, after a copy and memsets, in an
                       explicit graph and in a captured one, each cloned; every graph launched 3 times
    graphMemoryNodes   NVIDIA/cuda-samples: squareArray -> negateArray with graph memory nodes
                       (alloc, copy, kernel, free), captured and explicit; validateGPU launched plainly
                       on memory the graph allocated
    graphConditionalNodes  NVIDIA/cuda-samples: conditional nodes (if, if/else, while, switch), explicit
                       and captured

Writes bench/runtime/graphs-corpus/build/ (ignored by git; carried to the GPU machine):

    build/<program>/src/           the sources (from the mirror), build/<program>/<program> the program
    build/<program>/db/            `regtune tune --compiler nvcc` of its kernel file: decisions.json and
                                   the candidates (decisions.code/)
    build/plan.json                the cases run.sh runs: program, arguments, db, launches to measure
    build/bin/, build/lib/         regtune, regtune-replay, libregtune_runtime.so (stripped), CUPTI
    build/build.txt                what was built, kernels and candidates, tune's time

    python3 bench/runtime/graphs-corpus/build.py [--regtune target/release/regtune] [--only P...]

Results: bench/runtime/results/graphs-corpus-h200-2026-11-28/ (README.txt says what was measured), and
graphs-corpus-h200-2026-11-28-nodes/ (phaseFieldLBM's later graph kernels measured, the graph run in parts).
"""

import argparse
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.dirname(HERE))
from build import copy_tools, cuda_root  # noqa: E402  (bench/runtime/build.py)

MIRRORS = os.environ.get("REGTUNE_MIRRORS", "/work/.mirror")
COMPAT = os.path.join(REPO, "bench", "nvcc", "compat", "regtune_nvcc_compat.h")  # nvcc 13.5 with CCCL 13.0
SAMPLES = ("NVIDIA/cuda-samples", "c94ff366aed18c797b8a85dfaac7817b0228b420")  # bench/calibrate/corpus_programs.py's
LBM = ("brenogemelgo/phaseFieldLBM", "6ad716e22a7a12dec47471ec5a70b4bee8f0a361")
ALTIS = ("utcs-scea/altis", "042e2926d1fe9a5ea5b3e2d659b75bf925b152cc")
COMMON = ["Common/" + f for f in ["helper_cuda.h", "helper_functions.h", "helper_string.h", "helper_timer.h",
                                  "helper_image.h", "exception.h"]]
# cuda-samples' CMakeLists: -Wno-deprecated-gpu-targets -lineinfo --extended-lambda, C++17, separable
# compilation (left out, as bench/calibrate/corpus_programs.py does: tune refuses -rdc, and these samples call
# no device code across files); -lineinfo left out (no tool here reads it).
SAMPLES_FLAGS = ["-O3", "-std=c++17", "--extended-lambda", "-Wno-deprecated-gpu-targets"]

PROGRAMS = {
    "jacobiCudaGraphs": {
        "repo": SAMPLES, "dir": "Samples/3_CUDA_Features/jacobiCudaGraphs", "also": COMMON,
        "cuda": ["jacobi.cu"], "cxx": ["main.cpp"], "flags": SAMPLES_FLAGS, "includes": [".", "Common"],
        "cases": {
            # JacobiMethod's graph launches: the first 3 measured of each exec (about 3000 iterations run).
            "jacobi-setparams": {"args": ["-gpumethod=0"], "launches": 3},
            "jacobi-update": {"args": ["-gpumethod=1"], "launches": 3},
        },
        "check": "&&&& jacobiCudaGraphs PASSED",
    },
    "simpleCudaGraphs": {
        "repo": SAMPLES, "dir": "Samples/3_CUDA_Features/simpleCudaGraphs", "also": COMMON,
        "cuda": ["simpleCudaGraphs.cu"], "flags": SAMPLES_FLAGS, "includes": [".", "Common"],
        # reduce and reduceFinal: 19 and 18 registers, 64 warps/SM already: tune keeps no candidate, so
        # measure has nothing to time (it refuses their db: "no kernel with a decision or a suggestion").
        # Run under measure with jacobiCudaGraphs' db (db_of), whose kernel it never launches: the interposer
        # then follows its graphs (host nodes, clones, a capture over three streams) with nothing to time.
        "cases": {"simple": {"args": [], "launches": 1, "db_of": "jacobiCudaGraphs"}},
        "check": "the host callbacks' sums, the same as the plain run's",
    },
    "graphMemoryNodes": {
        "repo": SAMPLES, "dir": "Samples/3_CUDA_Features/graphMemoryNodes", "also": COMMON,
        "cuda": ["graphMemoryNodes.cu"], "flags": SAMPLES_FLAGS, "includes": [".", "Common"],
        # squareArray, negateArray, validateGPU: 10 to 14 registers, 64 warps/SM: no candidate (as above);
        # run with jacobiCudaGraphs' db: graph memory nodes (alloc, free), stream-ordered allocation.
        "cases": {"memnodes": {"args": [], "launches": 1, "db_of": "jacobiCudaGraphs"}},
        "check": "Validation PASSED! after each of its six runs",
    },
    "graphConditionalNodes": {
        "repo": SAMPLES, "dir": "Samples/3_CUDA_Features/graphConditionalNodes", "also": COMMON,
        "cuda": ["graphConditionalNodes.cu"], "flags": SAMPLES_FLAGS, "includes": [".", "Common"],
        # <<<1,1>>> kernels that set a conditional handle, print, or nothing: no candidate. Run with
        # jacobiCudaGraphs' db: conditional nodes (if, if/else, while, switch; explicit and captured).
        "cases": {"conditional": {"args": [], "launches": 1, "db_of": "jacobiCudaGraphs"}},
        "check": "its output, the plain run's",
    },
    "particlefilter": {
        "repo": ALTIS, "dir": "src/cuda/level2/particlefilter", "also": ["src/cuda/common", "src/common"],
        "cuda": ["ex_particle_CUDA_float_seq.cu", "src/cuda/common/main.cu"], "kernels": ["ex_particle_CUDA_float_seq.cu"],
        "cxx": ["src/common/" + f for f in ["ResultDatabase.cpp", "OptionParser.cpp", "Option.cpp", "ProgressBar.cpp"]],
        # Altis' CMake: -w, C++11 (C++17 here: CUDA 13's headers), no build type (-O3 here for the host code;
        # nvcc's device code is -O3 either way), the common/ folders on the include path.
        "flags": ["-O3", "-std=c++17", "-w"], "includes": [".", "src/cuda/common", "src/common"],
        "fixups": {"ex_particle_CUDA_float_seq.cu": [
            # The seeds are time(0) * i: a second's seed, so a run is not comparable with another; one
            # second of 2026-11-28 instead.
            ("seed[i] = time(0) * i;", "seed[i] = (time_t) 1764300000 * i;"),
            # The graph's likelihood node is given &k before k is set (the node keeps that value for every
            # frame): 0, so that two runs build the same graph (the same text in particleFilter, which sets k
            # in its loop before use, gets it too).
            ("    int k;\n    //start send\n    cudaEventRecord(start, 0);\n\n    CUDA_SAFE_CALL(cudaMemcpy(I_GPU",
             "    int k = 0;\n    //start send\n    cudaEventRecord(start, 0);\n\n    CUDA_SAFE_CALL(cudaMemcpy(I_GPU"),
            # CUDA 13's cudaGraphAddDependencies takes edge data (NULL: plain edges) before the count.
            ] + [(f"&{n}, 1));", f"&{n}, NULL, 1));") for n in ["sumKernelNode", "normalizeWeightsKernelNode", "findIndexKernelNode"]],
            # CUDA 13 removed cudaDeviceProp::clockRate (printed by --properties alone).
            "src/cuda/common/main.cu": [("<< deviceProp.clockRate <<", "<< \"(removed in CUDA 13)\" <<")]},
        # --graph: each frame one graph likelihood_kernel -> sum_kernel -> normalize_weights_kernel ->
        # find_index_kernel (explicit, cudaGraphAddKernelNode); size 3: 200x200 frames, 8 frames, 500000
        # particles (977 blocks of 512); 2 passes (7 graph launches each); -v prints the estimate.
        "cases": {"particlefilter": {"args": ["--graph", "-s", "3", "-n", "2", "-v"], "launches": 3, "compare": r"(XE|YE): |^[0-9.]+$"}},
        "check": "exit status 0; the estimate (XE, YE, distance; no check of its own), the plain run's",
    },
    "phaseFieldLBM": {
        "repo": LBM, "dir": "src", "cuda": ["main.cu"],
        # compile.sh's flags, less -rdc=true and the LTO target (one translation unit: main.cu includes the rest),
        # --ptxas-options=-v (output only) and -gencode (-arch=sm_90 here).
        "flags": ["-O3", "--restrict", "--extra-device-vectorization", "--fmad=true", "--extended-lambda", "-std=c++20",
                  "-DVS_D3Q19", "-DJET", "-DENABLE_FP16=1", "-DBENCHMARK=0", "-DTIME_AVERAGE=0",
                  "-DREYNOLDS_MOMENTS=0", "-DVORTICITY_FIELDS=0", "-DPASSIVE_SCALAR=0"],
        "includes": ["."],
        "fixups": {"constants.cuh": [("#define RUN_MODE\n// #define SAMPLE_MODE", "// #define RUN_MODE\n#define SAMPLE_MODE")]},
        "cases": {"lbm": {"args": ["JET", "D3Q19", "000"], "launches": 2, "outputs": "bin"}},
        "check": "exit status 0; its fields (bin/JET/D3Q19/000/*.bin), byte-identical to the plain run's",
    },
}


def run(cmd, **kw):
    print("+", " ".join(cmd), file=sys.stderr)
    subprocess.run(cmd, check=True, **kw)


def extract(p, dest):
    """The program's folder (and `also` files) from the mirror at its commit, into dest."""
    (repo, commit) = p["repo"]
    git_dir = os.path.join(MIRRORS, repo.replace("/", "+"), "repo")
    if not os.path.isdir(git_dir):
        sys.exit(f"{git_dir}: no mirror of {repo} (fetch github:{repo})")
    paths = [p["dir"]] + p.get("also", [])
    data = subprocess.run(["git", "--git-dir", git_dir, "archive", commit] + paths, check=True, capture_output=True).stdout
    os.makedirs(dest)
    with tarfile.open(fileobj=io.BytesIO(data)) as t:
        for m in t.getmembers():
            if not m.isfile():
                continue
            rel = os.path.relpath(m.name, p["dir"]) if m.name.startswith(p["dir"] + "/") else m.name
            out = os.path.join(dest, rel)
            os.makedirs(os.path.dirname(out), exist_ok=True)
            with open(out, "wb") as f:
                f.write(t.extractfile(m).read())
    for f, subs in p.get("fixups", {}).items():
        path = os.path.join(dest, f)
        text = open(path).read()
        for old, new in subs:
            assert old in text, f"{f}: {old!r} not found"
            text = text.replace(old, new)
        open(path, "w").write(text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--regtune", default=os.path.join(REPO, "target", "release", "regtune"))
    ap.add_argument("--nvcc", default=os.environ.get("REGTUNE_NVCC", "/opt/regtune-nvcc/bin/nvcc"))
    ap.add_argument("--candidates", type=int, default=16)
    ap.add_argument("--evidence", default=os.path.join(REPO, "tests", "fixtures", "evidence-none.json"),
                    help="what tune may apply unasked: none, so every class is a candidate (bench/search/build.py's)")
    ap.add_argument("--time-budget", type=int, default=600)
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--out", default=os.path.join(HERE, "build"))
    a = ap.parse_args()
    regtune = os.path.abspath(a.regtune)
    nvcc = a.nvcc
    out = os.path.abspath(a.out)
    chosen = {n: p for n, p in PROGRAMS.items() if not a.only or n in a.only}
    if not a.only and os.path.isdir(out):
        shutil.rmtree(out)
    os.makedirs(out, exist_ok=True)
    plan_path = os.path.join(out, "plan.json")
    plan = json.load(open(plan_path)) if os.path.exists(plan_path) else {}
    lines = []
    include_cuda = f"-I{os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(nvcc))), 'include')}"
    for name, p in chosen.items():
        here = os.path.join(out, name)
        if os.path.isdir(here):
            shutil.rmtree(here)
        src = os.path.join(here, "src")
        extract(p, src)
        includes = [f"-I{os.path.relpath(os.path.join(src, d), REPO)}" for d in p["includes"]]
        args = p["flags"] + [f"-arch={a.arch}", "-include", os.path.relpath(COMPAT, REPO)] + includes
        objs = []
        for f in p["cuda"]:
            obj = os.path.join(here, f.replace("/", "_") + ".o")
            run(["nice", "-n", "5", nvcc] + args + ["-c", os.path.join(src, f), "-o", obj], cwd=REPO)
            objs.append(obj)
        for f in p.get("cxx", []):
            obj = os.path.join(here, f.replace("/", "_") + ".o")
            run(["nice", "-n", "5", "g++", "-O3", "-std=c++17", "-w", include_cuda] + includes + ["-c", os.path.join(src, f), "-o", obj], cwd=REPO)
            objs.append(obj)
        binary = os.path.join(here, name)
        run([nvcc, f"-arch={a.arch}"] + objs + ["-o", binary], cwd=REPO)
        run(["llvm-strip-22", "--strip-all", binary])
        for o in objs:
            os.remove(o)
        # tune, as a user of nvcc would: every kernel file, its own flags after `--`.
        db = os.path.join(here, "db", "decisions.json")
        os.makedirs(os.path.dirname(db))
        started = time.time()
        for f in p.get("kernels", p["cuda"]):
            cmd = ["nice", "-n", "5", regtune, "tune", "--compiler", nvcc, "--offload-arch", a.arch,
                   "--candidates", str(a.candidates), "--evidence", os.path.abspath(a.evidence),
                   "--time-budget", str(a.time_budget), "-j", "2", "--format", "json", "--db", db,
                   os.path.relpath(os.path.join(src, f), REPO), "--"] + args
            print("+", " ".join(cmd), file=sys.stderr)
            r = subprocess.run(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            open(os.path.join(here, f"tune.{f}.json"), "w").write(r.stdout)
            open(os.path.join(here, f"tune.{f}.log"), "w").write(r.stderr)
            if r.returncode != 0:
                lines.append(f"{name}: tune of {f} exited {r.returncode}: {r.stderr.strip().splitlines()[-1:]}")
        seconds = time.time() - started
        entries = json.load(open(db))["kernels"].values() if os.path.isfile(db) else []
        kernels = [f"{e['symbol']} ({len(e.get('candidates', [])) + len(e.get('suggested', []))} candidates)" for e in entries]
        lines.append(f"{name}: {p['repo'][0]}@{p['repo'][1][:12]} {p['dir']}; tune {seconds:.0f} s; "
                     f"{len(kernels)} kernels in the db: {', '.join(kernels) or 'none'}")
        for case, c in p["cases"].items():
            db_of = os.path.join(out, c["db_of"], "db", "decisions.json") if c.get("db_of") else db
            plan[case] = {"program": name, "binary": os.path.relpath(binary, REPO), "args": c["args"],
                          "db": os.path.relpath(db_of, REPO), "launches": c["launches"], "outputs": c.get("outputs"),
                          "compare": c.get("compare"),
                          "check": p["check"]}
        json.dump(plan, open(plan_path, "w"), indent=1)
    if not os.path.isdir(os.path.join(out, "bin")):
        tools = os.path.dirname(regtune)
        copy_tools(out, tools, tools, cuda_root())
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(out) for f in fs)
    lines.append(f"nvcc: {subprocess.run([nvcc, '--version'], capture_output=True, text=True).stdout.strip().splitlines()[-1]}")
    lines.append(f"build/: {size / 2**20:.1f} MiB")
    with open(os.path.join(out, "build.txt"), "a") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines), file=sys.stderr)


if __name__ == "__main__":
    main()
