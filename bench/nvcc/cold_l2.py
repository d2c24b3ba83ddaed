#!/usr/bin/env python3
"""Does the replay's figure move with the L2 cache's state, or with the
problem's size? The two kernels whose db figure was furthest from their
rebuilt programs' own timers (lavaMD's kernel_gpu_cuda, 1.076x replayed and
about 1.02x in the program; tf32 GEMM, 1.902x replayed and 2.096x in the
program: bench/nvcc/results/rebuilt-perkernel-h200-2026-12-01.txt) measured
again, each from its tune's db as it was before any measurement: lavaMD at
its tuned size, with and without 256 MiB copied on the device between each
run's restore and its launch (REGTUNE_REPLAY_COLD_L2_MIB, which the
replayer reads: nothing of the launch's memory left in the L2 cache), and
at 27 times the work (-boxes1d 30); tf32 with and without.

    python3 bench/nvcc/cold_l2.py                   # CPU: bench/nvcc/search-lava from search-e and search-f
    OUT=... PLAN=bench/nvcc/search-lava/plan.json bash bench/search/run.sh bench/nvcc/search-lava   # GPU

search-e and search-f are the tune runs of the 2026-12-01 nvcc corpus
(bench/search/build.py --compiler nvcc, then bench/nvcc/gpu.sh --pack);
the GPU call also needs bench/nvcc/search-e/corpus-nvcc copied into
bench/calibrate/build/corpus-nvcc, as gpu.sh does. tools.tar.xz is taken
from search-e: pack this checkout's release build into it (bin/regtune,
bin/regtune-replay, bin/libregtune_runtime.so, stripped) for the cold runs.
"""

import json
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "search-lava")
REL = "bench/nvcc/search-lava"


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    shutil.copy(os.path.join(HERE, "search-e", "tools.tar.xz"), OUT)
    lava = json.load(open(os.path.join(HERE, "search-e", "plan.json")))["lavaMD"]
    tf32 = json.load(open(os.path.join(HERE, "search-f", "plan.json")))["tf32TensorCoreGemm"]
    runs = [
        ("lavaMD10", lava, "search-e/lavaMD", ["-boxes1d", "10"], False),
        ("lavaMD10c", lava, "search-e/lavaMD", ["-boxes1d", "10"], True),
        ("lavaMD30c", lava, "search-e/lavaMD", ["-boxes1d", "30"], True),
        ("tf32w", tf32, "search-f/tf32TensorCoreGemm", None, False),
        ("tf32c", tf32, "search-f/tf32TensorCoreGemm", None, True),
    ]
    plan = {}
    for name, base, db, args, cold in runs:
        os.makedirs(os.path.join(OUT, name))
        shutil.copy(os.path.join(HERE, db, "db.tar.xz"), os.path.join(OUT, name))
        entry = dict(base, db=f"{REL}/{name}/db/decisions.json", env=dict(base.get("env", {})))
        if args is not None:
            entry["args"] = args
        if cold:
            entry["env"]["REGTUNE_REPLAY_COLD_L2_MIB"] = "256"
        plan[name] = entry
    json.dump(plan, open(os.path.join(OUT, "plan.json"), "w"), indent=1)
    print(OUT)


if __name__ == "__main__":
    main()
