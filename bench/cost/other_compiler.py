#!/usr/bin/env python3
"""What tune's build of a CUDA file by the other compiler (nvcc's plain
cubin, for `regtune measure` to time beside clang's candidates) costs,
before and after it became `nvcc -cubin` (device only) instead of
`nvcc --keep -c` (host too) with two more ptxas runs: per file of the nvcc
corpus (bench/calibrate/build/corpus-nvcc, unpacked), compiled as the clang
corpus compiles it (bench/calibrate/compat/regtune_cuda_compat.h), side by
side and interleaved: the plain clang device compile, the whole plain
`clang -c` (host and device: what the user's build runs for the file),
`nvcc -c --keep`, `nvcc -cubin`, and `regtune tune -j 1` (or --jobs) at
its defaults with and without `--no-other-compiler`. Not a test.

    python3 bench/cost/other_compiler.py [--out FILE] [--reps N] [--jobs J] [FILE...]   # from the repository root

--jobs: tune's -j (default 1; 0: unset, every core).
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(REPO, "bench", "calibrate", "build", "corpus-nvcc")
COMPAT = os.path.join(REPO, "bench", "calibrate", "compat", "regtune_cuda_compat.h")
NVCC = "/opt/regtune-nvcc/bin/nvcc"
FILES = [
    "dxtc/src/dxtc.cu",
    "interval/src/interval.cu",
    "lavaMD/src/kernel/kernel_gpu_cuda_wrapper.cu",
    "eigenvalues/src/bisect_large.cu",
    "particlefilter/src/ex_particle_CUDA_float_seq.cu",
]


def timed(cmd, cwd):
    t = time.monotonic()
    r = subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if r.returncode != 0:
        sys.exit(f"failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr.decode()[-2000:]}")
    return time.monotonic() - t


def clang_args(src):
    """The clang corpus's flags for a corpus file: -O3, the compat header, its includes."""
    d = os.path.dirname(src)
    inc = [f"-I{d}", f"-I{os.path.join(d, 'Common')}", f"-I{os.path.join(os.path.dirname(d), 'Common')}"]
    return ["-O3", "-w", "-include", COMPAT] + inc


def nvcc_args(src):
    """The same for nvcc (`tune --compiler nvcc`): nvcc's compat header instead of clang's."""
    return ["-O3", "-arch=sm_90", "-w", "-include", os.path.join(REPO, "bench", "nvcc", "compat", "regtune_nvcc_compat.h")] + clang_args(src)[4:]


def report(lines, out):
    """Print the table, and append it to `out` if given."""
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if out:
        open(out, "a").write(text)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out")
    p.add_argument("--reps", type=int, default=1)
    p.add_argument("--jobs", type=int, default=1, help="tune's -j (0: unset, every core)")
    p.add_argument("--regtune", default=os.path.join(REPO, "target", "release", "regtune"))
    p.add_argument("files", nargs="*", default=FILES)
    a = p.parse_args()
    jobs = ["-j", str(a.jobs)] if a.jobs else []
    rows = []
    for rel in a.files:
        src = os.path.join(CORPUS, rel)
        clang = clang_args(src)
        times = {k: [] for k in ["plain", "whole", "keep", "cubin", "tune", "tune-no-other"]}
        cuda = ["clang++-22", "-x", "cuda", "-Wno-unknown-cuda-version", "--cuda-gpu-arch=sm_90", "--cuda-path=/opt/regtune-cuda"]
        for _ in range(a.reps):
            with tempfile.TemporaryDirectory() as tmp:
                times["plain"].append(timed(cuda + ["--cuda-device-only"] + clang + ["-c", src, "-o", os.path.join(tmp, "p.o")], REPO))
                times["whole"].append(timed(cuda + clang + ["-c", src, "-o", os.path.join(tmp, "w.o")], REPO))
                keep = os.path.join(tmp, "keep")
                os.makedirs(keep)
                times["keep"].append(timed([NVCC] + nvcc_args(src) + ["-c", "--keep", "--keep-dir", keep, "-o",
                                                                 os.path.join(keep, "u.o"), src], REPO))
                times["cubin"].append(timed([NVCC] + nvcc_args(src) + ["-cubin", "-o", os.path.join(tmp, "u.cubin"), src], REPO))
                for k, extra in [("tune", []), ("tune-no-other", ["--no-other-compiler"])]:
                    db = os.path.join(tmp, k, "db.json")
                    times[k].append(timed([a.regtune, "tune"] + jobs + ["--offload-arch", "sm_90", "--db", db] + extra
                                          + [src, "--"] + clang, REPO))
        rows.append((rel, {k: statistics.median(v) for k, v in times.items()}))
    load = os.getloadavg()
    lines = [f"bench/cost/other_compiler.py, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, reps {a.reps}, load at end "
             f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f} ({os.cpu_count()} cores), tune {'-j ' + str(a.jobs) if a.jobs else 'on every core'}; seconds, and each over the plain clang device compile",
             f"{'file':50s} {'plain':>6s} {'whole':>6s} {'nvcc -c':>8s} {'-cubin':>7s} {'tune':>7s} {'(ratio)':>8s} {'/whole':>7s} {'no-other':>8s} {'(ratio)':>8s}"]
    for rel, t in rows:
        lines.append(f"{rel:50s} {t['plain']:6.2f} {t['whole']:6.2f} {t['keep']:8.2f} {t['cubin']:7.2f} {t['tune']:7.2f} {t['tune'] / t['plain']:7.2f}x "
                     f"{t['tune'] / t['whole']:6.2f}x "
                     f"{t['tune-no-other']:8.2f} {t['tune-no-other'] / t['plain']:7.2f}x")
    ratios = [t["tune"] / t["plain"] for _, t in rows]
    lines.append(f"median tune/plain {statistics.median(ratios):.2f}x; over the whole plain compile "
                 f"{statistics.median(t['tune'] / t['whole'] for _, t in rows):.2f}x; without the other compiler "
                 f"{statistics.median(t['tune-no-other'] / t['plain'] for _, t in rows):.2f}x; nvcc -c over -cubin "
                 f"{statistics.median(t['keep'] / t['cubin'] for _, t in rows):.2f}x")
    report(lines, a.out)


if __name__ == "__main__":
    main()
