#!/usr/bin/env python3
"""Does where a module lands move a short kernel's time, or is it noise?

Rodinia lud's plain cubin (the corpus build's sweep/lud_kernel.cu.plain.cubin)
is loaded K = 6 times as separate modules; its two 20-30 us kernels are
timed R rounds, every module once per round in rotating order, memory
restored before each run, CUDA events around the launch alone (as
regtune-replay times). "static" loads once; "reload" loads again in a
shuffled order every round. Printed per kernel and mode: each module's
median time over module 0's, round by round, their spread, and the
interquartile range of those per-round ratios.

    R=400 REPS=2 python3 bench/search/placement.py PATH/lud_kernel.cu.plain.cubin   (needs CuPy and a GPU)
"""
import cupy as cp, numpy as np, random, json, sys, os
from cupy.cuda import function, Event, get_elapsed_time
plain = open(sys.argv[1], "rb").read()
N = 1024
rng = np.random.default_rng(1)
a = rng.random((N, N), dtype=np.float32) + np.eye(N, dtype=np.float32) * N
pristine = cp.asarray(a); work = cp.empty_like(pristine)
KERNELS = {"diag": ("_Z12lud_diagonalPfii", (1,1,1), (16,1,1)), "perim": ("_Z13lud_perimeterPfii", (63,1,1), (32,1,1))}
s, e = Event(), Event()
def time(f, grid, block):
    work[...] = pristine
    s.record(); f(grid, block, (work, np.int32(N), np.int32(0))); e.record(); e.synchronize()
    return get_elapsed_time(s, e)
def load(k):
    mods = [function.Module() for _ in range(k)]
    for m in mods: m.load(plain)
    return mods
def run(mode, kname, K=6, R=int(os.environ.get("R","40"))):
    name, grid, block = KERNELS[kname]
    mods = load(K) if mode == "static" else None
    t = np.zeros((R, K))
    for r in range(R):
        if mode == "reload":
            order = list(range(K)); random.shuffle(order)
            mods = [None] * K
            for i in order:
                m = function.Module(); m.load(plain); mods[i] = m
        fs = [m.get_function(name) for m in mods]
        for j in range(K):
            i = (j + r) % K
            t[r, i] = time(fs[i], grid, block)
        if mode == "reload":
            del fs; mods = None
    ratios = t[5:] / t[5:, :1]  # paired per round, vs module 0
    med = np.median(ratios, axis=0)
    return {"mode": mode, "kernel": kname, "median_ms": float(np.median(t[5:, 0])),
            "module_median_ratio": [round(float(x), 4) for x in med],
            "spread": round(float(med.max() - med.min()), 4),
            "ratio_iqr": round(float(np.median(np.percentile(ratios[:,1:],75,axis=0)-np.percentile(ratios[:,1:],25,axis=0))),4)}
out = []
for rep in range(int(os.environ.get("REPS","3"))):
    for kname in KERNELS:
        for mode in ("static", "reload"):
            res = run(mode, kname); res["rep"] = rep
            print(json.dumps(res), flush=True); out.append(res)
if os.environ.get("OUT"):
    json.dump(out, open(os.path.join(os.environ["OUT"], "placement.json"), "w"), indent=1)
