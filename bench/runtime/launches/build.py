#!/usr/bin/env python3
"""Build what bench/runtime/launches/run.sh runs on the GPU machine: small
CUDA programs whose kernels launch the ways plain `<<<...>>>` does not (CUDA
graphs, captured and explicit and updated; cooperative launches; several
host threads and streams; a stream capture beside a launch; a GPU other than
device 0), the decisions db `regtune tune` makes of them, and regtune's
measure tools. Runs on the CPU machine (as bench/runtime/build.py: clang-22
and the CUDA directory of ci/bootstrap.sh); writes
bench/runtime/launches/build/ (ignored by git; carried to the GPU machine):

    build/graph, build/coop, build/threads,
    build/variables                          the programs (clang-22 CUDA, static cudart), plainly
    build/bin/, build/lib/                   regtune, regtune-replay, libregtune_runtime.so; CUPTI
    build/db/decisions.json                  regtune tune's db of the three, and its candidates
    build/fat/decisions.json                 a copy whose c_coop candidates are fat.cu's (too few
                                             blocks per SM for the program's cooperative grid),
                                             but for plain and nvcc's build
    build/fast/decisions.json                a copy whose v_count candidates are variables.cu's
                                             -DFAST build (the same results, faster), but for
                                             plain and nvcc's build

    python3 bench/runtime/launches/build.py [--regtune target/release/regtune]
"""

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.dirname(HERE))
from build import copy_tools, cuda_root, run  # noqa: E402  (bench/runtime/build.py)

PROGRAMS = ["graph", "coop", "threads", "variables"]


def swapped(a, cuda, name, prefix, source, extra):
    """build/NAME/: a copy of the db whose candidates for the kernel whose
    symbol starts with `prefix` are `source` built with `extra`, but for
    plain and the other compiler's build."""
    db = os.path.join(a.out, name, "decisions.json")
    shutil.copytree(os.path.join(a.out, "db"), os.path.join(a.out, name))
    cubin = os.path.join(a.out, name + ".cubin")
    run(["clang++-22", "-x", "cuda", "--cuda-device-only", f"--cuda-gpu-arch={a.arch}", f"--cuda-path={cuda}",
         "-Wno-unknown-cuda-version", "-O3"] + extra + ["-c", source, "-o", cubin])
    entry = next(e for e in json.load(open(db))["kernels"].values() if e["symbol"].startswith(prefix))
    code = os.path.join(a.out, name, "decisions.code", entry["input_hash"])
    others = [f for f in glob.glob(os.path.join(code, "*.cubin")) if os.path.basename(f) != "plain.cubin" and not os.path.basename(f).startswith("other-")]
    assert others, f"{prefix} has candidates"
    for f in others:
        shutil.copy(cubin, f)
    os.remove(cubin)
    out = subprocess.run([a.regtune, "measure", "--db", db, "--dry-run", "--", "true"], capture_output=True, text=True, check=True)
    print(out.stderr, file=sys.stderr)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--arch", default="sm_90")
    p.add_argument("--regtune", default=os.path.join(REPO, "target", "release", "regtune"))
    p.add_argument("--out", default=os.path.join(HERE, "build"))
    a = p.parse_args()
    cuda = cuda_root()
    tools = os.path.dirname(os.path.abspath(a.regtune))
    if os.path.isdir(a.out):
        shutil.rmtree(a.out)
    os.makedirs(a.out)
    flags = ["-x", "cuda", f"--cuda-gpu-arch={a.arch}", f"--cuda-path={cuda}", "-Wno-unknown-cuda-version", "-O3"]
    for prog in PROGRAMS:
        obj = os.path.join(a.out, prog + ".o")
        run(["clang++-22"] + flags + ["-c", os.path.join(HERE, prog + ".cu"), "-o", obj])
        run(["clang++-22", obj, "-o", os.path.join(a.out, prog), f"-L{cuda}/lib64", "-lcudart_static", "-ldl", "-lrt", "-lpthread"])
        os.remove(obj)

    # The decisions and their candidates, as a user would make them.
    db = os.path.join(a.out, "db", "decisions.json")
    run([a.regtune, "tune", "--offload-arch", a.arch, "--db", db] + [os.path.join(HERE, f + ".cu") for f in PROGRAMS], cwd=HERE)

    # A db whose c_coop candidates cannot launch the program's cooperative
    # grid, and one whose v_count candidates are its faster twin.
    for name, prefix, source, flags_ in [("fat", "_Z6c_coop", "fat.cu", []), ("fast", "_Z7v_count", "variables.cu", ["-DFAST"])]:
        swapped(a, cuda, name, prefix, os.path.join(HERE, source), flags_)

    copy_tools(a.out, tools, tools, cuda)
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(a.out) for f in fs)
    print(f"bench/runtime/launches/build: {size / 2**20:.1f} MiB", file=sys.stderr)


if __name__ == "__main__":
    main()
