#!/usr/bin/env python3
"""What a change to tune saves in its wall time: two regtune binaries, the
one before (OLD) and this checkout's release build, each tuning the files
of bench/cost/other_compiler.py at their defaults (every core: -j unset,
or --jobs J) in turn, REPS times, side by side; their dbs compared byte
for byte (a db holds no timing). First written for building the measured
search's candidates a core's worth at a time (candidates::select). Not a
test.

    python3 bench/cost/parallel_select.py OLD [--reps N] [--jobs J] [--compiler nvcc] [--out FILE]   # from the repository root
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from other_compiler import CORPUS, FILES, REPO, clang_args, nvcc_args, report, timed  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("old")
    p.add_argument("--reps", type=int, default=2)
    p.add_argument("--jobs", type=int, help="tune's -j (default: unset, every core)")
    p.add_argument("--compiler", choices=["clang", "nvcc"], default="clang", help="tune's --compiler (nvcc: the file's nvcc flags)")
    p.add_argument("--out")
    a = p.parse_args()
    jobs = ["-j", str(a.jobs)] if a.jobs else []
    if a.compiler == "nvcc":
        jobs += ["--compiler", "nvcc"]
    new = os.path.join(REPO, "target", "release", "regtune")
    lines = [f"bench/cost/parallel_select.py, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, reps {a.reps}, "
             f"{os.cpu_count()} cores, {'-j ' + str(a.jobs) if a.jobs else 'every core'}, --compiler {a.compiler}; tune's seconds (median), old then new, at the defaults",
             f"{'file':50s} {'old':>7s} {'new':>7s} {'new/old':>8s}  same db"]
    ratios = []
    for rel in FILES:
        src = os.path.join(CORPUS, rel)
        args = nvcc_args(src) if a.compiler == "nvcc" else clang_args(src)
        times = {"old": [], "new": []}
        same = True
        for _ in range(a.reps):
            with tempfile.TemporaryDirectory() as tmp:
                dbs = {}
                for k, binary in [("old", a.old), ("new", new)]:
                    dbs[k] = os.path.join(tmp, k + ".json")
                    times[k].append(timed([binary, "tune", *jobs, "--offload-arch", "sm_90", "--db", dbs[k], src, "--"] + args, REPO))
                same = same and open(dbs["old"], "rb").read() == open(dbs["new"], "rb").read()
        o, n = statistics.median(times["old"]), statistics.median(times["new"])
        ratios.append(n / o)
        lines.append(f"{rel:50s} {o:7.2f} {n:7.2f} {n / o:7.3f}x  {'yes' if same else 'NO'}")
    lines.append(f"median new/old {statistics.median(ratios):.3f}x")
    report(lines, a.out)


if __name__ == "__main__":
    main()
