#!/usr/bin/env python3
"""Build the cubins bench/gpu/run.py runs: every example kernel that
compiles for NVPTX, as clang builds it plainly and as it builds it with the
regtune plugin applying what `regtune tune` decided. Runs on the CPU
machine (regtune, clang-22 and the CUDA directory of ci/bootstrap.sh);
writes bench/gpu/build/ (ignored by git; carried to the GPU machine):

    build/plain/<example>.cubin    clang -x cuda --cuda-device-only, no plugin
    build/tuned/<example>.cubin    + the plugin and `regtune tune`'s db (default options)
    build/assume/<example>.cubin   + the db of `regtune tune --noalias apply --block-size 256`:
                                   the assumptions that run.py's launches make true
                                   (distinct buffers, 256 threads per block)
    build/suggested/<example>.cubin  + `regtune tune`'s db with every suggestion confirmed:
                                   what the default rule holds back, timed
    build/manifest.json            kernels, their tune results, the toolchain

    python3 bench/gpu/build.py [--arch sm_90] [--regtune target/debug/regtune]
"""

import argparse
import glob
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CONFIGS = {"tuned": [], "assume": ["--noalias", "apply", "--block-size", "256"], "suggested": []}
# Every suggestion of these configs' dbs is confirmed before the build: the
# GPU then times what each suggestion would do (unroll caps, inexact pow2).
CONFIRM_ALL = {"suggested"}


def cuda_root():
    for d in [os.environ.get("CUDA_PATH"), "/usr/local/cuda", os.environ.get("REGTUNE_CUDA_PATH"), "/opt/regtune-cuda",
              os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "regtune", "cuda")]:
        if d and os.path.isfile(os.path.join(d, "bin", "ptxas")):
            return d
    sys.exit("no CUDA installation: run ci/bootstrap.sh")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--arch", default="sm_90")
    p.add_argument("--regtune", default=os.path.join(REPO, "target", "debug", "regtune"))
    p.add_argument("--out", default=os.path.join(HERE, "build"))
    a = p.parse_args()
    plugin = os.path.join(os.path.dirname(a.regtune), "libregtune_passes.so")
    cuda = cuda_root()
    examples = sorted(glob.glob(os.path.join(REPO, "examples", "*.hip")))
    os.makedirs(a.out, exist_ok=True)
    clang = ["clang-22", "-x", "cuda", "--cuda-device-only", f"--cuda-gpu-arch={a.arch}", f"--cuda-path={cuda}",
             "-Wno-unknown-cuda-version", "-O3", "-c"]

    def compile_to(variant, example, db=None):
        os.makedirs(os.path.join(a.out, variant), exist_ok=True)
        out = os.path.join(a.out, variant, os.path.splitext(os.path.basename(example))[0] + ".cubin")
        cmd = clang + ([f"-fpass-plugin={plugin}"] if db else []) + [example, "-o", out]
        env = dict(os.environ, REGTUNE_DECISIONS=db) if db else os.environ
        subprocess.run(cmd, check=True, env=env)
        return out

    tunes = {}
    for config, flags in CONFIGS.items():
        db = os.path.join(a.out, f"{config}-decisions.json")
        if os.path.exists(db):
            os.remove(db)
        out = subprocess.run([a.regtune, "tune", "--format", "json", "--offload-arch", a.arch, "--db", db] + flags + examples,
                             check=True, capture_output=True, text=True, cwd=REPO)
        tunes[config] = (db, json.loads(out.stdout)["kernels"])
        if config in CONFIRM_ALL:
            with open(db) as f:
                doc = json.load(f)
            for entry in doc["kernels"].values():
                for s in entry.get("suggested", []):
                    s["confirmed"] = True
            with open(db, "w") as f:
                json.dump(doc, f, indent=1)
        print(f"{config}: tuned {len(tunes[config][1])} kernels", file=sys.stderr)

    kernels = []
    for example in examples:
        stem = os.path.splitext(os.path.basename(example))[0]
        plain = open(compile_to("plain", example), "rb").read()
        same = {}
        for config, (db, _) in tunes.items():
            same[config] = open(compile_to(config, example, db), "rb").read() == plain
        for row in tunes["tuned"][1]:
            if os.path.basename(row["file"]) != os.path.basename(example):
                continue
            tune = {}
            for config, (_, rows) in tunes.items():
                r = next(x for x in rows if x["symbol"] == row["symbol"])
                applied = r["applied"] + (r["suggested"] if config in CONFIRM_ALL else [])
                tune[config] = {"applied": applied, "before": r["before"], "after": r["after"], "why": r["why"]}
            kernels.append({"example": stem, "symbol": row["symbol"], "name": row["name"], "tune": tune, "same_cubin": same})

    version = lambda cmd: subprocess.run(cmd, capture_output=True, text=True).stdout.strip().splitlines()
    manifest = {
        "arch": a.arch,
        "variants": ["plain"] + list(CONFIGS),
        "configs": {k: ["regtune", "tune"] + v for k, v in CONFIGS.items()},
        "toolchain": {"clang": version(["clang-22", "--version"])[0], "ptxas": version([os.path.join(cuda, "bin", "ptxas"), "--version"])[-1]},
        "kernels": kernels,
    }
    with open(os.path.join(a.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    for k in kernels:
        print(f"{k['example']:20} " + "  ".join(f"{c}: {', '.join(t['applied']) or '-'}" for c, t in k["tune"].items()))


if __name__ == "__main__":
    main()
