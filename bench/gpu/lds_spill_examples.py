#!/usr/bin/env python3
"""regtune-lds-spill leaves every example kernel's results bit-identical: each
kernel of examples/*.hip, built for sm_90 with launch bounds 256 (the block
bench/gpu/run.py launches), with and without `lds-spill=N`, at each register
cap tune proposes, run on run.py's inputs; every byte of every buffer the
kernel can write must match.

    python3 bench/gpu/lds_spill_examples.py build [--plugin P] [--also NAME=PLUGIN ...]
    python3 bench/gpu/lds_spill_examples.py run [--out FILE]

`build` (CPU: clang-22, ptxas, the plugin) writes
bench/gpu/build/lds-spill-examples/ (ignored by git; carry it to the GPU
machine): one cubin per kernel and variant, and manifest.json. Variants:

    plain                 clang -O3, no plugin
    lb256[-wW]            the plugin with {launch_bounds: 256[, waves_per_eu: W]}
                          (W: warps per SM, 32/48/64: a register cap)
    lb256[-wW]+ldsN       the same and lds_spill: N (N = 1, 2, 4, 8)
    NAME:lb256[-w32]+lds8 the same with another plugin (--also NAME=PLUGIN: e.g.
                          the pass before a fix, to show the difference it made)
    .../nofma             ptxas --fmad=false (no contraction of mul and add into
                          fma by ptxas), for lb256 and each --also plugin

Each variant is compared with its baseline: lb256[-wW] with plain, the spill
variants with lb256[-wW], the /nofma ones with lb256/nofma. A variant
whose cubin is byte-identical to its baseline's is not run (reported
"same cubin"). `run` (GPU: CuPy) uploads run.py's input set for the
kernel (fixed seed), launches each variant once on a fresh copy, compares
all buffers on the device, and writes FILE (default
bench/gpu/lds_spill_examples.json): per kernel and variant, identical or
not, the buffers and elements that differ, registers and shared memory.

Recorded (lds_spill_examples.json and .txt here; H100, ptxas 12.9, the pass
at 760a3d7; 17 s on the GPU): every example kernel the pass changes (all
but laplacian3d_o8_ztile) is bit-identical with it at every cap and slot
count. Run with --nofma and two --also plugins, for the record:
`before` (the pass at 41237e5: its 64-bit halves through <2 x i32>, which
ptxas compiled as F2I.U32.F64.TRUNC) differs on both LBM kernels in nearly
every fluid cell; `halves_only` (760a3d7 without its contraction rule)
differs in f1/f2 of a fifth of the LBM cells, with --fmad=false too.
"""

import argparse
import concurrent.futures
import hashlib
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
BUILD = os.path.join(HERE, "build", "lds-spill-examples")
CAPS = [None, 32, 48, 64]
SLOTS = [1, 2, 4, 8]


def cuda_root():
    for d in [os.environ.get("CUDA_PATH"), "/usr/local/cuda", os.environ.get("REGTUNE_CUDA_PATH"), "/opt/regtune-cuda"]:
        if d and os.path.isfile(os.path.join(d, "bin", "ptxas")):
            return d
    sys.exit("no CUDA installation: run ci/bootstrap.sh")


def kernel_name(symbol):
    """'_Z24lbm_d3q19_collide_streamPKi...' -> 'lbm_d3q19_collide_stream'."""
    m = re.match(r"_Z(\d+)(.*)", symbol)
    return m.group(2)[: int(m.group(1))] if m else symbol


# --------------------------------------------------------------------------
# Build (CPU).


def build(args):
    cuda = cuda_root()
    os.makedirs(BUILD, exist_ok=True)
    clang = ["clang-22", "-x", "cuda", "--cuda-device-only", "--cuda-gpu-arch=sm_90", f"--cuda-path={cuda}",
             "-Wno-unknown-cuda-version", "-O3"]
    plugins = {"": os.path.abspath(args.plugin)}
    for also in args.also:
        name, path = also.split("=", 1)
        plugins[name] = os.path.abspath(path)

    kernels = []
    for example in sorted(os.listdir(os.path.join(REPO, "examples"))):
        if not example.endswith(".hip"):
            continue
        src = os.path.join(REPO, "examples", example)
        ir = subprocess.run(clang + ["-S", "-emit-llvm", src, "-o", "-"], check=True, capture_output=True, text=True).stdout
        for sym in re.findall(r"^define [^@\n]*ptx_kernel [^@\n]*@([\w.$]+)\(", ir, re.M):
            kernels.append({"example": os.path.splitext(example)[0], "source": src, "symbol": sym, "name": kernel_name(sym)})

    def variants(k):
        out = [("plain", None, {}, False, None)]
        for w in CAPS:
            base = "lb256" + (f"-w{w}" if w else "")
            t = {"launch_bounds": 256} | ({"waves_per_eu": w} if w else {})
            out.append((base, "", t, False, "plain"))
            for n in SLOTS:
                out.append((f"{base}+lds{n}", "", t | {"lds_spill": n}, False, base))
            for name in plugins:
                if name and w in (None, 32):
                    out.append((f"{name}:{base}+lds8", name, t | {"lds_spill": 8}, False, base))
        if args.nofma:
            out.append(("plain/nofma", None, {}, True, None))
            out.append(("lb256/nofma", "", {"launch_bounds": 256}, True, "plain/nofma"))
            for name in plugins:
                if name:
                    out.append((f"{name}:lb256+lds8/nofma", name, {"launch_bounds": 256, "lds_spill": 8}, True, "lb256/nofma"))
        return out

    def one(k, v):
        label, plugin, transforms, nofma, baseline = v
        stem = os.path.join(BUILD, k["name"], re.sub(r"[^\w.+-]", "_", label))
        os.makedirs(os.path.dirname(stem), exist_ok=True)
        cmd = clang + ["-S", k["source"], "-o", stem + ".ptx"]
        env = dict(os.environ)
        if plugin is not None:
            db = {"version": 1, "kernels": {"k": {"symbol": k["symbol"], "arch": "sm_90", "input_hash": "any", "transforms": transforms}}}
            with open(stem + ".json", "w") as f:
                json.dump(db, f)
            cmd.insert(-3, f"-fpass-plugin={plugins[plugin]}")
            env.update(REGTUNE_DECISIONS=stem + ".json", REGTUNE_VERBOSE="1")
        r = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
        note = " ".join(l.split(": ", 2)[-1] for l in r.stderr.splitlines() if "lds-spill<" in l and k["symbol"] in l)
        ptxas = [os.path.join(cuda, "bin", "ptxas"), "-arch=sm_90", "-O3"] + (["--fmad=false"] if nofma else [])
        subprocess.run(ptxas + [stem + ".ptx", "-o", stem + ".cubin"], check=True)
        with open(stem + ".cubin", "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        with open(stem + ".ptx") as f:
            shared = f.read().count("volatile.shared")
        return {"variant": label, "baseline": baseline, "plugin": plugin, "transforms": transforms, "fmad": not nofma,
                "cubin": os.path.relpath(stem + ".cubin", BUILD), "sha256": digest, "lds_spill_note": note,
                "volatile_shared_accesses": shared}

    start = time.time()
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {k["symbol"]: [pool.submit(one, k, v) for v in variants(k)] for k in kernels}
        for k in kernels:
            k["variants"] = [f.result() for f in futures[k["symbol"]]]
    for k in kernels:
        digests = {v["variant"]: v["sha256"] for v in k["variants"]}
        for v in k["variants"]:
            v["same_cubin_as_baseline"] = bool(v["baseline"]) and digests[v["baseline"]] == v["sha256"]
        applied = sorted({v["lds_spill_note"] for v in k["variants"] if v["plugin"] == "" and "lds_spill" in v["transforms"]})
        print(f"{k['name']}: {'; '.join(applied)}")
    toolchain = {
        "clang": subprocess.run(["clang-22", "--version"], capture_output=True, text=True).stdout.splitlines()[0],
        "ptxas": subprocess.run([os.path.join(cuda, "bin", "ptxas"), "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1],
        "plugins": plugins,
        "commit": subprocess.run(["git", "-C", REPO, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip(),
    }
    with open(os.path.join(BUILD, "manifest.json"), "w") as f:
        json.dump({"toolchain": toolchain, "kernels": kernels}, f, indent=1)
    print(f"{BUILD}: {sum(len(k['variants']) for k in kernels)} cubins of {len(kernels)} kernels in {time.time() - start:.0f} s")
    return 0


# --------------------------------------------------------------------------
# Run (GPU).


def run(args):
    import cupy as cp
    import numpy as np

    sys.path.insert(0, HERE)
    from run import CASES, SEED  # the inputs bench/gpu/run.py times

    with open(os.path.join(BUILD, "manifest.json")) as f:
        manifest = json.load(f)
    props = cp.cuda.runtime.getDeviceProperties(0)
    gpu = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    print(f"GPU: {gpu}; driver {cp.cuda.runtime.driverGetVersion()}", flush=True)
    results = {"gpu": gpu, "seed": SEED, "toolchain": manifest["toolchain"], "kernels": []}
    start = time.time()
    for k in manifest["kernels"]:
        if k["name"] not in CASES:
            print(f"{k['name']}: no input case in run.py, skipped", flush=True)
            continue
        case = CASES[k["name"]](np, np.random.default_rng(SEED))
        host = {n: cp.asarray(a) for n, a in case.buffers.items()}

        def launch(fn):
            dev = {n: a.copy() for n, a in host.items()}
            argv = [dev[v] if kind == "buf" else (np.int32(v) if kind == "i32" else np.float64(v)) for kind, v in case.args]
            fn(case.grid, case.block, tuple(argv))
            cp.cuda.runtime.deviceSynchronize()
            return dev

        outputs, rows = {}, []
        needed = {v["baseline"] for v in k["variants"] if v["baseline"]}
        for v in k["variants"]:
            row = {x: v[x] for x in ("variant", "baseline", "transforms", "fmad", "lds_spill_note", "volatile_shared_accesses", "same_cubin_as_baseline")}
            if v["same_cubin_as_baseline"] and v["variant"] not in needed:
                row["identical"] = True
                row["ran"] = False
                rows.append(row)
                continue
            mod = cp.RawModule(path=os.path.join(BUILD, v["cubin"]))
            fn = mod.get_function(k["symbol"])
            row["registers"], row["shared_bytes"], row["local_bytes"] = fn.num_regs, fn.shared_size_bytes, fn.local_size_bytes
            dev = launch(fn)
            if v["variant"] == "plain":
                # Determinism check: plain twice.
                again = launch(fn)
                row["plain_twice_identical"] = all(bool(cp.array_equal(dev[n].view(cp.uint8), again[n].view(cp.uint8))) for n in dev)
                del again
            row["ran"] = True
            if v["baseline"]:
                base = outputs[v["baseline"]]
                diffs = {}
                for n in dev:
                    a, b = base[n].view(cp.uint8).reshape(-1, base[n].itemsize), dev[n].view(cp.uint8).reshape(-1, dev[n].itemsize)
                    bad = cp.flatnonzero((a != b).any(axis=1))
                    if bad.size:
                        i = int(bad[0])
                        diffs[n] = {"elements": int(bad.size), "first": i, "baseline": repr(cp.asnumpy(base[n][i]).item()),
                                    "variant": repr(cp.asnumpy(dev[n][i]).item())}
                row["identical"] = not diffs
                row["differences"] = diffs
            if v["variant"] in needed:
                outputs[v["variant"]] = dev
            else:
                del dev
            rows.append(row)
            status = "" if not v["baseline"] else ("identical" if row["identical"] else "DIFFERENT " + json.dumps(row["differences"]))
            print(f"  {k['name']} {v['variant']}: {row['registers']} regs, {row['shared_bytes']} B shared, {row['local_bytes']} B local; {status}", flush=True)
        del outputs, host
        cp.get_default_memory_pool().free_all_blocks()
        results["kernels"].append({"kernel": k["name"], "symbol": k["symbol"], "example": k["example"], "variants": rows})
    # The verdict covers the pass as built now (no --also plugin).
    ours = [(k["kernel"], r) for k in results["kernels"] for r in k["variants"]
            if r["baseline"] and ":" not in r["variant"]]
    results["all_identical"] = all(r["identical"] for _, r in ours)
    results["applied_to"] = sorted({k for k, r in ours if "lds_spill" in r["transforms"] and r["volatile_shared_accesses"]})
    results["seconds"] = round(time.time() - start, 1)
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1)
    print(f"pass applied to: {', '.join(results['applied_to'])}")
    for k in results["kernels"]:
        for r in k["variants"]:
            if r["baseline"]:
                print(f"{k['kernel']:26} {r['variant']:28} vs {r['baseline']:12} "
                      f"{'same cubin' if not r['ran'] else ('identical' if r['identical'] else 'DIFFERENT')}")
    print("ALL IDENTICAL" if results["all_identical"] else "MISMATCH", f"({results['seconds']} s)")
    return 0 if results["all_identical"] else 1


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="what", required=True)
    b = sub.add_parser("build")
    b.add_argument("--plugin", default=os.path.join(REPO, "target", "debug", "libregtune_passes.so"))
    b.add_argument("--also", action="append", default=[], metavar="NAME=PLUGIN")
    b.add_argument("--nofma", action="store_true", help="also build lb256 and the --also plugins' lds8 with ptxas --fmad=false")
    b.add_argument("--jobs", type=int, default=2)
    r = sub.add_parser("run")
    r.add_argument("--out", default=os.path.join(HERE, "lds_spill_examples.json"))
    a = p.parse_args()
    return build(a) if a.what == "build" else run(a)


if __name__ == "__main__":
    sys.exit(main())
