#!/usr/bin/env python3
"""Time every candidate `regtune predict` found for the example kernels on a
GPU, beside the plain build, so the cost model's predictions can be checked
against the truth (bench/calibrate/correlate.py).

    # CPU machine: the candidates and their predictions
    python3 bench/calibrate/examples.py build [--arch sm_90] [--regtune target/debug/regtune]
    # GPU machine (CuPy): time them; writes examples.measured.json
    python3 bench/calibrate/examples.py run --out $OUT/examples.measured.json

`build` runs `regtune predict --code-dir` on examples/*.hip, so each
candidate's cubin is the very code the model was asked about (the whole
file, that kernel built with the candidate's transforms), and copies the
predictions to build/examples/predict.json. `run` launches each kernel with
bench/gpu/run.py's inputs (every index in bounds, fixed seed): every
candidate once from the same inputs (bytes compared with plain's), then
RUNS rounds, all candidates of the kernel in rotating order, each launch
between two CUDA events; speedup = median(plain) / median(candidate).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
BUILD = os.path.join(HERE, "build", "examples")
RUNS = 15
WARMUP = 2

sys.path.insert(0, os.path.join(REPO, "bench", "gpu"))
import run as gpu  # noqa: E402  (bench/gpu/run.py: the kernels' inputs and the byte comparison)


def build(a):
    if os.path.isdir(BUILD):
        shutil.rmtree(BUILD)
    os.makedirs(BUILD)
    examples = sorted(os.path.relpath(p, REPO) for p in __import__("glob").glob(os.path.join(REPO, "examples", "*.hip")))
    code = os.path.join(BUILD, "code")
    subprocess.run([a.regtune, "predict", "--offload-arch", a.arch, "--code-dir", code, "-o", os.path.join(BUILD, "predict.json")] + examples,
                   check=True, cwd=REPO)
    doc = json.load(open(os.path.join(BUILD, "predict.json")))
    for c in doc["candidates"]:
        # Relative to the repository, as the GPU machine has it.
        c["code"] = os.path.relpath(c["code"], REPO)
    json.dump(doc, open(os.path.join(BUILD, "predict.json"), "w"), indent=1)
    kernels = {c["symbol"] for c in doc["candidates"]}
    print(f"bench/calibrate/examples: {len(doc['candidates'])} candidates of {len(kernels)} kernels", file=sys.stderr)


def median(xs):
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def run(a):
    import cupy as cp
    import numpy as np

    doc = json.load(open(os.path.join(BUILD, "predict.json")))
    by_kernel = {}
    for c in doc["candidates"]:
        by_kernel.setdefault(c["symbol"], []).append(c)
    props = cp.cuda.runtime.getDeviceProperties(0)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    out = {"gpu": name, "runs": RUNS, "candidates": []}
    for symbol, cands in by_kernel.items():
        kernel = gpu.base_name(cands[0]["kernel"])
        if kernel not in gpu.CASES:
            print(f"{kernel}: no inputs in bench/gpu/run.py; skipped", flush=True)
            continue
        case = gpu.CASES[kernel](np, np.random.default_rng(gpu.SEED))
        fns = [cp.RawModule(path=os.path.join(REPO, c["code"])).get_function(symbol) for c in cands]

        def upload():
            return {n: cp.asarray(x) for n, x in case.buffers.items()}

        def launch(fn, dev):
            args = [dev[v] if k == "buf" else (np.int32(v) if k == "i32" else np.float64(v)) for k, v in case.args]
            fn(case.grid, case.block, tuple(args))

        outputs = []
        for fn in fns:
            dev = upload()
            launch(fn, dev)
            cp.cuda.runtime.deviceSynchronize()
            outputs.append({n: (gpu.dtype_name(case.buffers[n]), cp.asnumpy(d).tobytes()) for n, d in dev.items()})
            del dev
        plain = next(i for i, c in enumerate(cands) if not c["transforms"])
        identical = [not gpu.compare(kernel, "c", outputs[plain], o) for o in outputs]
        del outputs
        dev = upload()
        for _ in range(WARMUP):
            for fn in fns:
                launch(fn, dev)
        cp.cuda.runtime.deviceSynchronize()
        times = [[] for _ in fns]
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        order = list(range(len(fns)))
        for r in range(RUNS):
            rotated = order[r % len(order):] + order[:r % len(order)]
            for i in (rotated if r % 2 == 0 else list(reversed(rotated))):
                start.record()
                launch(fns[i], dev)
                stop.record()
                stop.synchronize()
                times[i].append(cp.cuda.get_elapsed_time(start, stop))
        del dev
        cp.get_default_memory_pool().free_all_blocks()
        base = median(times[plain])
        for c, t, same in zip(cands, times, identical):
            row = {"file": c["file"], "kernel": kernel, "symbol": symbol, "transforms": c["transforms"], "decision": c["decision"],
                   "predicted_speedup": c["predicted_speedup"], "median_ms": median(t), "speedup": base / median(t),
                   "spread_ms": sorted(t)[3 * len(t) // 4] - sorted(t)[len(t) // 4], "identical": same}
            out["candidates"].append(row)
        shown = [f"{'+'.join(c['transforms'])[:40]} x{base / median(t):.3f}" for c, t in zip(cands, times) if c["transforms"]]
        print(f"{kernel}: {len(cands)} candidates, plain {base:.4f} ms; " + ", ".join(shown), flush=True)
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    json.dump(out, open(a.out, "w"), indent=1)


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("--arch", default="sm_90")
    b.add_argument("--regtune", default=os.path.join(REPO, "target", "debug", "regtune"))
    r = sub.add_parser("run")
    r.add_argument("--out", default=os.path.join(HERE, "examples.measured.json"))
    a = p.parse_args()
    build(a) if a.cmd == "build" else run(a)


if __name__ == "__main__":
    main()
