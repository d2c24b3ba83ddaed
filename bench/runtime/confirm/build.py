#!/usr/bin/env python3
"""Build what bench/runtime/confirm/run.sh runs on the GPU machine (CPU
machine; nvcc from /opt/regtune-nvcc, as bench/nvcc builds): writes
bench/runtime/confirm/build/ (ignored by git; carried to the GPU machine):

    build/confirm              confirm.cu, nvcc -O3 -arch=sm_90 (static cudart)
    build/confirm-fast         the same, -DFAST=1: the program rebuilt with every decided build
    build/db/decisions.json    one entry per planned kernel (small_k1..k8, win, few, drift),
                               decided `sink` (a label only: see below)
    build/db/decisions.code/   each entry's plain cubin (nvcc -cubin, the program's code)
                               and its "decided" cubin: confirm.cu built with -DFAST=1,
                               the same bytes out with less work in
    build/bin/, build/lib/     regtune, regtune-replay, libregtune_runtime.so (stripped); CUPTI

The db is written by hand rather than by `regtune tune`: the point is a
build whose gain depends on where its data sits (L2 in the replay, HBM in
the program), which no tuning step promises. Its decisions are labelled
`sink`; their code is FAST's.

    python3 bench/runtime/confirm/build.py [--regtune target/release/regtune]
"""

import argparse
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.dirname(HERE))
from build import copy_tools, cuda_root, run  # noqa: E402  (bench/runtime/build.py)

PARAMS = "(unsigned int const*, unsigned int*, unsigned int)"
KERNELS = ["small_k1", "small_k2", "small_k4", "small_k8", "win", "few", "drift"]


def mangled(name):
    rest = "PKjPjji" if name == "drift" else "PKjPjj"
    return f"_Z{len(name)}{name}{rest}"


def hash_of_parts(parts):
    """decisions/src/hash.rs's of_parts: each part's length (u64 LE), then its bytes."""
    h = hashlib.sha256()
    for p in parts:
        h.update(struct.pack("<Q", len(p)))
        h.update(p)
    return h.hexdigest()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--arch", default="sm_90")
    p.add_argument("--regtune", default=os.path.join(REPO, "target", "release", "regtune"))
    p.add_argument("--nvcc", default=os.environ.get("REGTUNE_NVCC", "/opt/regtune-nvcc/bin/nvcc"))
    p.add_argument("--out", default=os.path.join(HERE, "build"))
    a = p.parse_args()
    cuda = cuda_root()
    tools = os.path.dirname(os.path.abspath(a.regtune))
    if os.path.isdir(a.out):
        shutil.rmtree(a.out)
    os.makedirs(a.out)
    src = os.path.join(HERE, "confirm.cu")
    flags = ["-O3", f"-arch={a.arch}"]
    run([a.nvcc] + flags + [src, "-o", os.path.join(a.out, "confirm")])
    # The program rebuilt with every decided build (FAST): its own timer is the truth to compare with.
    run([a.nvcc] + flags + ["-DFAST=1", src, "-o", os.path.join(a.out, "confirm-fast")])
    plain = os.path.join(a.out, "plain.cubin")
    fast = os.path.join(a.out, "fast.cubin")
    run([a.nvcc] + flags + ["-cubin", src, "-o", plain])
    run([a.nvcc] + flags + ["-DFAST=1", "-cubin", src, "-o", fast])

    db_dir = os.path.join(a.out, "db")
    code = os.path.join(db_dir, "decisions.code")
    decided = {"sink": True}
    spec = json.dumps(decided, separators=(",", ":")).encode()
    kernels = {}
    for name in KERNELS:
        symbol = mangled(name)
        input_hash = hashlib.sha256(f"confirm.cu {name}".encode()).hexdigest()
        d = os.path.join(code, input_hash)
        os.makedirs(d)
        shutil.copy(plain, os.path.join(d, "plain.cubin"))
        shutil.copy(fast, os.path.join(d, hash_of_parts([symbol.encode(), spec])[:16] + ".cubin"))
        kernels[f"{a.arch}/{symbol}/{input_hash}"] = {
            "symbol": symbol,
            "arch": a.arch,
            "input_hash": input_hash,
            "name": name + (PARAMS[:-1] + ", int)" if name == "drift" else PARAMS),
            "file": src,
            "transforms": decided,
        }
    db = os.path.join(db_dir, "decisions.json")
    with open(db, "w") as f:
        json.dump({"version": 1, "kernels": kernels}, f, indent=2)
    out = subprocess.run([a.regtune, "measure", "--db", db, "--dry-run", "--", "true"], capture_output=True, text=True, check=True)
    print(out.stderr, file=sys.stderr)
    os.remove(plain)
    os.remove(fast)
    copy_tools(a.out, tools, tools, cuda)
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(a.out) for f in fs)
    print(f"bench/runtime/confirm/build: {size / 2**20:.1f} MiB", file=sys.stderr)


if __name__ == "__main__":
    main()
