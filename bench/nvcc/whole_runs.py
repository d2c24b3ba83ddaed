#!/usr/bin/env python3
"""The program's whole runs decide where its launches cannot
(driver/src/measure/whole_runs.rs): the two kernels whose db figure was
furthest from their rebuilt programs' own timers, each launched once
(lavaMD's kernel_gpu_cuda, 1.076x replayed and about 1.02x in the program;
tf32 GEMM, 1.902x replayed and 2.096x in the program:
bench/nvcc/results/rebuilt-perkernel-h200-2026-12-01.txt), measured again
from their tune's db as it was before any measurement, with this
checkout's regtune (whole runs on, their default budget), then their
rebuilt programs' own timers beside the plain programs in the same GPU call.

    cargo build --release --workspace && python3 bench/nvcc/whole_runs.py [PROGRAM...]   # CPU: bench/nvcc/search-whole
    OUT=DIR PROGRAMS="..." bash bench/nvcc/whole-runs.sh                                 # GPU, one call

PROGRAMS default to lavaMD and tf32TensorCoreGemm; the second batch of
2026-12-02 was `MC_SingleAsianOptionP miniBUDE RSBench immaTensorCoreGemm
cudaTensorCoreGemm`.

search-e and search-f are the tune runs of the 2026-12-01 nvcc corpus
(bench/search/build.py --compiler nvcc, then bench/nvcc/gpu.sh --pack);
bench/search/build/rebuilt is `bench/search/rebuild.py --compiler nvcc
--all` of their measured dbs (the rebuilt programs). The GPU call carries
bench/nvcc/search-whole, bench/nvcc/search-e/corpus-nvcc and
bench/search/build/rebuilt.
"""

import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(HERE, "search-whole")
REL = "bench/nvcc/search-whole"


def tools(dest):
    """This checkout's release build, stripped, and search-e's CUPTI."""
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(os.path.join(HERE, "search-e", "tools.tar.xz")) as t:
            t.extractall(tmp, filter="data")
        for name in ["regtune", "regtune-replay", "libregtune_runtime.so"]:
            shutil.copy(os.path.join(ROOT, "target", "release", name), os.path.join(tmp, "bin", name))
            subprocess.run(["strip", os.path.join(tmp, "bin", name)], check=True)
        with tarfile.open(dest, "w:xz") as t:
            for d in ["bin", "lib"]:
                t.add(os.path.join(tmp, d), arcname=d)


def main():
    programs = sys.argv[1:] or ["lavaMD", "tf32TensorCoreGemm"]
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    tools(os.path.join(OUT, "tools.tar.xz"))
    plans = {b: json.load(open(os.path.join(HERE, b, "plan.json"))) for b in ["search-e", "search-f"]}
    plan = {}
    for name in programs:
        batch = next(b for b in plans if name in plans[b] and os.path.exists(os.path.join(HERE, b, name, "db.tar.xz")))
        os.makedirs(os.path.join(OUT, name))
        shutil.copy(os.path.join(HERE, batch, name, "db.tar.xz"), os.path.join(OUT, name))
        plan[name] = dict(plans[batch][name], db=f"{REL}/{name}/db/decisions.json")
    json.dump(plan, open(os.path.join(OUT, "plan.json"), "w"), indent=1)
    print(OUT)


if __name__ == "__main__":
    main()
