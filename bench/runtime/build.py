#!/usr/bin/env python3
"""Build what bench/runtime/run.sh runs on the GPU machine: a plain
multi-kernel CUDA program (app.cu + the examples' own hosts), the
decisions db and candidate cubins of `regtune tune --offload-arch sm_90`,
and regtune's measure tools. Runs on the CPU machine (regtune, clang-22 and
the CUDA directory of ci/bootstrap.sh, with CUPTI and cudart); writes
bench/runtime/build/ (ignored by git; carried to the GPU machine):

    build/app                        the program, built plainly (clang-22 CUDA, static cudart)
    build/bin/                       regtune, regtune-replay, libregtune_runtime.so (stripped copies)
    build/lib/libcupti.so.12         CUPTI, for the interposer
    build/db/decisions.json          regtune tune's db, and build/db/decisions.code/ its candidates
    build/fault/decisions.json       a copy whose Laplacian candidates are all fault.cu's (writes out of bounds)
    build/reach                      reach.cu's program (pointers in device memory, module variables,
                                     managed and pool memory), built plainly like app
    build/reach-db/decisions.json    regtune tune's db for reach.cu, and its candidates

    python3 bench/runtime/build.py [--arch sm_90] [--regtune target/debug/regtune] [--runtime target/release] [--reach-only]
"""

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def cuda_root():
    """The CUDA directory clang and ptxas use (as bench/gpu/build.py finds it)."""
    for d in [os.environ.get("CUDA_PATH"), "/usr/local/cuda", os.environ.get("REGTUNE_CUDA_PATH"), "/opt/regtune-cuda",
              os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "regtune", "cuda")]:
        if d and os.path.isfile(os.path.join(d, "bin", "ptxas")):
            return d
    sys.exit("no CUDA installation: run ci/bootstrap.sh")


def run(cmd, **kw):
    print("+", " ".join(cmd), file=sys.stderr)
    subprocess.run(cmd, check=True, **kw)


def copy_tools(out, tools, runtime, cuda):
    """regtune (from `tools`), regtune-replay and the interposer (from
    `runtime`), stripped, into out/bin; CUPTI into out/lib."""
    os.makedirs(os.path.join(out, "bin"))
    os.makedirs(os.path.join(out, "lib"))
    for name, src in [("regtune", tools), ("regtune-replay", runtime), ("libregtune_runtime.so", runtime)]:
        dest = os.path.join(out, "bin", name)
        shutil.copy(os.path.join(src, name), dest)
        run(["llvm-strip-22", "--strip-debug", dest])
    shutil.copy(os.path.join(cuda, "lib64", "libcupti.so.12"), os.path.join(out, "lib"))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--arch", default="sm_90")
    p.add_argument("--regtune", default=os.path.join(REPO, "target", "debug", "regtune"))
    p.add_argument("--runtime", help="where regtune-replay and libregtune_runtime.so are (default: beside --regtune)")
    p.add_argument("--out", default=os.path.join(HERE, "build"))
    p.add_argument("--tune-args", default="", help="more `regtune tune` options, e.g. the measured search's: --block-size 256 --candidates 16")
    p.add_argument("--reach-only", action="store_true", help="build reach.cu's program and db (and the tools) only, not app's")
    a = p.parse_args()
    cuda = cuda_root()
    tools = os.path.dirname(os.path.abspath(a.regtune))
    examples = sorted(glob.glob(os.path.join(REPO, "examples", "*.hip")))
    if os.path.isdir(a.out):
        shutil.rmtree(a.out)
    os.makedirs(os.path.join(a.out, "obj"))
    cuda_flags = ["-x", "cuda", f"--cuda-gpu-arch={a.arch}", f"--cuda-path={cuda}", "-Wno-unknown-cuda-version", "-O3"]
    link = [f"-L{cuda}/lib64", "-lcudart_static", "-ldl", "-lrt", "-lpthread"]

    # reach.cu: its own program and db, built and tuned as app is.
    reach = os.path.join(HERE, "reach.cu")
    run(["clang++-22"] + cuda_flags + ["-c", reach, "-o", os.path.join(a.out, "obj", "reach.o")])
    run(["clang++-22", os.path.join(a.out, "obj", "reach.o"), "-o", os.path.join(a.out, "reach")] + link)
    reach_db = os.path.join(a.out, "reach-db", "decisions.json")
    run([a.regtune, "tune", "--offload-arch", a.arch, "--db", reach_db, "--time-budget", "60"] + a.tune_args.split() + [reach], cwd=REPO)
    if a.reach_only:
        finish(a, tools, cuda)
        return

    # The program: every example's host and kernel, compiled as CUDA, plainly
    # (app.cu includes long_lived.hip: its MD kernel also runs at production size).
    objects = []
    for ex in [e for e in examples if not e.endswith("long_lived.hip")] + [os.path.join(HERE, "app.cu")]:
        stem = os.path.splitext(os.path.basename(ex))[0]
        obj = os.path.join(a.out, "obj", stem + ".o")
        rename = [] if stem == "app" else [f"-Dmain=example_{stem}"]
        run(["clang++-22"] + cuda_flags + rename + ["-c", ex, "-o", obj])
        objects.append(obj)
    run(["clang++-22"] + objects + ["-o", os.path.join(a.out, "app"), f"-L{cuda}/lib64", "-lcudart_static", "-ldl", "-lrt", "-lpthread"])

    # The decisions and their candidates, as a user would make them.
    db = os.path.join(a.out, "db", "decisions.json")
    run([a.regtune, "tune", "--offload-arch", a.arch, "--db", db] + a.tune_args.split() + examples, cwd=REPO)

    # A db whose Laplacian candidate faults.
    fault_db = os.path.join(a.out, "fault", "decisions.json")
    shutil.copytree(os.path.join(a.out, "db"), os.path.join(a.out, "fault"))
    bad = os.path.join(a.out, "obj", "fault.cubin")
    run(["clang++-22", "-x", "cuda", "--cuda-device-only", f"--cuda-gpu-arch={a.arch}", f"--cuda-path={cuda}",
         "-Wno-unknown-cuda-version", "-O3", "-c", os.path.join(HERE, "fault.cu"), "-o", bad])
    out = subprocess.run([a.regtune, "measure", "--db", fault_db, "--dry-run", "--", "true"], capture_output=True, text=True, check=True)
    print(out.stderr, file=sys.stderr)
    entries = json.load(open(fault_db))["kernels"].values()
    lap = next(e for e in entries if e["symbol"].startswith("_Z20laplacian3d"))
    # Every candidate of the Laplacian but plain: whichever runs first faults.
    others = [f for f in glob.glob(os.path.join(a.out, "fault", "decisions.code", lap["input_hash"], "*.cubin")) if not f.endswith("plain.cubin")]
    assert others, "the Laplacian has candidates"
    for f in others:
        shutil.copy(bad, f)

    finish(a, tools, cuda)


def finish(a, tools, cuda):
    copy_tools(a.out, tools, a.runtime or tools, cuda)
    shutil.rmtree(os.path.join(a.out, "obj"))
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(a.out) for f in fs)
    print(f"bench/runtime/build: {size / 2**20:.1f} MiB", file=sys.stderr)


if __name__ == "__main__":
    main()
