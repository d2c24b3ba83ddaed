#!/usr/bin/env python3
"""The programs' own timers, plain beside rebuilt (rebuilt.sh's output): for
each line that reports a time or a rate, the median over the rounds of each
build and their ratio (> 1: the rebuilt program is faster).

    python3 bench/search/compare.py OUT_DIR
"""

import glob
import os
import re
import statistics
import sys

NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
TIMING = re.compile(r"time|ms\b|_ms|sec|\d s\b|tflops|gflops|sims/s|lookups/s", re.I)
RATE = re.compile(r"flops|/s\b|sims/s|lookups/s|performance", re.I)


def timers(path):
    """(line shape, first number) for each line that reports a time or rate;
    a shape printed again (one per kernel variant, as miniBUDE's min_ms per
    ppwi) is numbered: "shape [2]"."""
    out = {}
    for line in open(path, errors="replace"):
        if not TIMING.search(line) or "epoch" in line:
            continue
        nums = NUMBER.findall(line)
        if nums:
            shape = NUMBER.sub("#", line.strip())
            seen = sum(1 for k in out if k == shape or k.startswith(shape + " ["))
            out[shape if not seen else f"{shape} [{seen + 1}]"] = float(nums[0])
    return out


def main():
    out = sys.argv[1]
    runs = {}
    for path in glob.glob(os.path.join(out, "*.*.*.out")):
        prog, build, _ = os.path.basename(path)[:-4].rsplit(".", 2)
        for shape, value in timers(path).items():
            runs.setdefault(prog, {}).setdefault(shape, {}).setdefault(build, []).append(value)
    for prog in sorted(runs):
        for shape, builds in runs[prog].items():
            if "plain" not in builds or len(builds) < 2:
                continue
            plain = statistics.median(builds["plain"])
            for build, values in builds.items():
                if build == "plain" or not plain:
                    continue
                v = statistics.median(values)
                ratio = (v / plain) if RATE.search(shape) else (plain / v if v else float("nan"))
                print(f"{prog}\t{build}\t{ratio:.3f}x\t{plain:g} -> {v:g}\t{shape[:90]}")


if __name__ == "__main__":
    main()
