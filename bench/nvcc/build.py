#!/usr/bin/env python3
"""Build what bench/nvcc/run.sh runs on the GPU machine: the examples'
multi-kernel program (bench/runtime/app.cu and examples/*.hip) built by
nvcc as a user would, regtune's db of nvcc's candidates, and a hand sweep of
nvcc's -maxrregcount, each cap's cubins kept for `measure --compare`.
Runs on the CPU machine (regtune, and ci/bootstrap.sh's nvcc and CUDA);
writes bench/nvcc/build/ (ignored by git; carried to the GPU machine):

    build/app                     the program, nvcc -O3 -arch=sm_90 (static cudart 13.0)
    build/db/decisions.json       regtune tune --compiler nvcc's db, and its candidates beside it
    build/sweep/capR/STEM.cubin   nvcc -cubin -maxrregcount=R of each example (R: the caps a hand sweep tries)
    build/bin/, build/lib/        regtune, regtune-replay, libregtune_runtime.so (stripped); CUPTI

    python3 bench/nvcc/build.py [--arch sm_90] [--regtune target/release/regtune] [--tune-args "..."]
"""

import argparse
import glob
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "bench", "runtime"))
import build as runtime_build  # noqa: E402  (bench/runtime/build.py: the tools' copy)
# The caps a hand sweep of -maxrregcount tries on sm_90 (one per occupancy step).
CAPS = [32, 40, 48, 56, 64, 72, 80, 96, 128, 168, 255]


def find(*candidates):
    for c in candidates:
        if c and os.path.exists(c):
            return c
    sys.exit(f"none of {candidates}: run ci/bootstrap.sh")


run = runtime_build.run


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--arch", default="sm_90")
    p.add_argument("--regtune", default=os.path.join(REPO, "target", "release", "regtune"))
    p.add_argument("--out", default=os.path.join(HERE, "build"))
    p.add_argument("--tune-args", default="")
    a = p.parse_args()
    nvcc = find(os.environ.get("REGTUNE_NVCC"), "/opt/regtune-nvcc/bin/nvcc")
    cuda = find(os.environ.get("REGTUNE_CUDA_PATH"), "/opt/regtune-cuda")
    tools = os.path.dirname(os.path.abspath(a.regtune))
    examples = sorted(e for e in glob.glob(os.path.join(REPO, "examples", "*.hip")))
    if os.path.isdir(a.out):
        shutil.rmtree(a.out)
    os.makedirs(os.path.join(a.out, "obj"))
    flags = ["-x", "cu", "-O3", f"-arch={a.arch}", f"-I{os.path.join(REPO, 'examples')}"]

    # The program, as nvcc builds it: every example's host and kernel, app.cu's main.
    objects = []
    for ex in [e for e in examples if not e.endswith("long_lived.hip")] + [os.path.join(REPO, "bench", "runtime", "app.cu")]:
        stem = os.path.splitext(os.path.basename(ex))[0]
        obj = os.path.join(a.out, "obj", stem + ".o")
        rename = [] if stem == "app" else [f"-Dmain=example_{stem}"]
        run([nvcc] + flags + rename + ["-c", ex, "-o", obj])
        objects.append(obj)
    run([nvcc, f"-arch={a.arch}"] + objects + ["-o", os.path.join(a.out, "app")])

    # regtune's candidates for nvcc's code, with the same flags.
    db = os.path.join(a.out, "db", "decisions.json")
    run([a.regtune, "tune", "--compiler", nvcc, "--offload-arch", a.arch, "--db", db] + a.tune_args.split() + examples + ["--"] + flags,
        cwd=REPO)

    # The hand sweep: each example's cubin at every cap.
    for cap in CAPS:
        d = os.path.join(a.out, "sweep", f"cap{cap}")
        os.makedirs(d)
        for ex in examples:
            stem = os.path.splitext(os.path.basename(ex))[0]
            run([nvcc] + flags + [f"-maxrregcount={cap}", "-cubin", ex, "-o", os.path.join(d, stem + ".cubin")])

    runtime_build.copy_tools(a.out, tools, tools, cuda)
    shutil.rmtree(os.path.join(a.out, "obj"))
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(a.out) for f in fs)
    print(f"bench/nvcc/build: {size / 2**20:.1f} MiB", file=sys.stderr)


if __name__ == "__main__":
    main()
