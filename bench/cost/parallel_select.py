#!/usr/bin/env python3
"""What building the measured search's candidates a core's worth at a time
(candidates::select) saves in tune's wall time: two regtune binaries, the
one before (OLD) and this checkout's release build, each tuning the files
of bench/cost/other_compiler.py at their defaults (every core: -j unset)
in turn, REPS times, side by side; their dbs compared byte for byte (a
db holds no timing). Not a test.

    python3 bench/cost/parallel_select.py OLD [--reps N] [--out FILE]   # from the repository root
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from other_compiler import CORPUS, FILES, REPO, clang_args, report, timed  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("old")
    p.add_argument("--reps", type=int, default=2)
    p.add_argument("--out")
    a = p.parse_args()
    new = os.path.join(REPO, "target", "release", "regtune")
    lines = [f"bench/cost/parallel_select.py, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, reps {a.reps}, "
             f"{os.cpu_count()} cores; tune's seconds (median), old then new, at the defaults",
             f"{'file':50s} {'old':>7s} {'new':>7s} {'new/old':>8s}  same db"]
    ratios = []
    for rel in FILES:
        src = os.path.join(CORPUS, rel)
        args = clang_args(src)
        times = {"old": [], "new": []}
        same = True
        for _ in range(a.reps):
            with tempfile.TemporaryDirectory() as tmp:
                dbs = {}
                for k, binary in [("old", a.old), ("new", new)]:
                    dbs[k] = os.path.join(tmp, k + ".json")
                    times[k].append(timed([binary, "tune", "--offload-arch", "sm_90", "--db", dbs[k], src, "--"] + args, REPO))
                same = same and open(dbs["old"], "rb").read() == open(dbs["new"], "rb").read()
        o, n = statistics.median(times["old"]), statistics.median(times["new"])
        ratios.append(n / o)
        lines.append(f"{rel:50s} {o:7.2f} {n:7.2f} {n / o:7.3f}x  {'yes' if same else 'NO'}")
    lines.append(f"median new/old {statistics.median(ratios):.3f}x")
    report(lines, a.out)


if __name__ == "__main__":
    main()
