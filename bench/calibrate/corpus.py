#!/usr/bin/env python3
"""Real programs for calibrating the cost model: Rodinia's CUDA programs that
make their own input, built with clang-22 for sm_90, with `regtune tune`'s
decisions and candidates and `regtune predict`'s estimates beside each, for
bench/calibrate/run.sh to run under `regtune measure` on the GPU machine.
Runs on the CPU machine (regtune, clang-22, the CUDA directory of
ci/bootstrap.sh with cudart and CUPTI). The sources come from a read-only
mirror and stay out of the repository:

    build/corpus/<program>/src/        the program's sources (from the mirror)
    build/corpus/<program>/<program>   built plainly (clang-22 CUDA, static cudart)
    build/corpus/<program>/db/         regtune tune's db and its candidates (decisions.code/)
    build/corpus/<program>/predict.json  regtune predict for the same files and flags
    build/corpus/programs.json         each program: binary, arguments, db, kernels
    build/bin/, build/lib/             regtune, regtune-replay, the interposer, CUPTI

    python3 bench/calibrate/corpus.py [--arch sm_90] [--regtune target/debug/regtune]
                                      [--mirror /work/.mirror/yuhc+gpu-rodinia/repo]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(HERE, "build")

sys.path.insert(0, os.path.join(REPO, "bench", "runtime"))
from build import cuda_root  # noqa: E402  (bench/runtime/build.py: where CUDA is)

# program: (directory in the mirror, sources compiled as CUDA, files holding
# the kernels (what tune and predict read), other C sources, arguments:
# sizes that run for about a second on an H100 and make several launches).
# Left out: backprop (its host code needs OpenMP, which bootstrap does not
# install), and programs that read input files.
PROGRAMS = {
    "pathfinder": ("cuda/pathfinder", ["pathfinder.cu"], ["pathfinder.cu"], [], ["100000", "1000", "20"]),
    "gaussian": ("cuda/gaussian", ["gaussian.cu"], ["gaussian.cu"], [], ["-s", "1024", "-q"]),
    "needle": ("cuda/nw", ["needle.cu"], ["needle.cu"], [], ["4096", "10"]),
    "particlefilter": ("cuda/particlefilter", ["ex_particle_CUDA_float_seq.cu"], ["ex_particle_CUDA_float_seq.cu"], [],
                       ["-x", "128", "-y", "128", "-z", "10", "-np", "10000"]),
    "lud": ("cuda/lud", ["cuda/lud.cu", "cuda/lud_kernel.cu"], ["cuda/lud_kernel.cu"], ["common/common.c"], ["-s", "2048"]),
    "lavaMD": ("cuda/lavaMD", ["kernel/kernel_gpu_cuda_wrapper.cu", "util/device/device.cu"], ["kernel/kernel_gpu_cuda_wrapper.cu"],
               ["main.c", "util/num/num.c", "util/timer/timer.c"], ["-boxes1d", "16"]),
}

# Spellings of the original that clang does not take: `<< <` for `<<<`.
FIXUPS = {"particlefilter": [("<< <", "<<<"), (">> >", ">>>"), ("#include <stdlib.h>", "#include <stdlib.h>\n#include <time.h>")]}


def run(cmd, **kw):
    print("+", " ".join(cmd), file=sys.stderr)
    return subprocess.run(cmd, check=True, **kw)


def extract(mirror, subdir, dest):
    if os.path.isdir(dest):
        shutil.rmtree(dest)
    os.makedirs(dest)
    # Sources only: the mirror may lack the blobs of large data files.
    listed = subprocess.run(["git", "--git-dir", mirror, "ls-tree", "-r", "--name-only", "HEAD", subdir],
                            check=True, capture_output=True, text=True).stdout.split()
    sources = [f for f in listed if f.endswith((".c", ".h", ".cu", ".cuh", ".cpp", ".hpp"))]
    archive = subprocess.run(["git", "--git-dir", mirror, "archive", "HEAD"] + sources, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", dest, "--strip-components", str(subdir.count("/") + 1)], input=archive, check=True)


def every_candidate_measured(db_path, predict_path):
    """`regtune measure` times a kernel's plain build, decision and
    suggestions. For calibration every candidate predict estimated becomes
    an unconfirmed suggestion (measured, never applied); predict kept their
    cubins where measure looks (--code-dir, named as tune names them)."""
    db = json.load(open(db_path))
    by_symbol = {}
    for c in json.load(open(predict_path))["candidates"]:
        if c["transforms"]:
            by_symbol.setdefault(c["symbol"], []).append(c)
    for entry in db["kernels"].values():
        have = [s["transforms"] for s in entry.get("suggested", [])] + [entry["transforms"]]
        for c in by_symbol.get(entry["symbol"], []):
            if c["spec"] not in have:
                entry.setdefault("suggested", []).append({"transforms": c["spec"], "usage": c["usage"],
                                                          "message": "calibration candidate", "reasons": [], "confirmed": False})
    json.dump(db, open(db_path, "w"), indent=1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--arch", default="sm_90")
    p.add_argument("--regtune", default=os.path.join(REPO, "target", "debug", "regtune"))
    p.add_argument("--mirror", default="/work/.mirror/yuhc+gpu-rodinia/repo")
    p.add_argument("--only", nargs="*", help="programs to build (default: all)")
    a = p.parse_args()
    cuda = cuda_root()
    regtune = os.path.abspath(a.regtune)
    cuda_flags = ["-x", "cuda", f"--cuda-gpu-arch={a.arch}", f"--cuda-path={cuda}", "-Wno-unknown-cuda-version", "-O3", "-w"]
    root = os.path.join(OUT, "corpus")
    os.makedirs(root, exist_ok=True)
    manifest_path = os.path.join(root, "programs.json")
    programs = json.load(open(manifest_path)) if os.path.exists(manifest_path) else {}
    for name, (subdir, cu, kernels, c_sources, args) in PROGRAMS.items():
        if a.only and name not in a.only:
            continue
        here = os.path.join(root, name)
        src = os.path.join(here, "src")
        try:
            extract(a.mirror, subdir, src)
            for f in cu:
                path = os.path.join(src, f)
                text = open(path).read()
                for before, after in FIXUPS.get(name, []):
                    text = text.replace(before, after)
                open(path, "w").write(text)
            includes = [f"-I{src}"] + [f"-I{os.path.join(src, d)}" for d in ["common", "cuda"] if os.path.isdir(os.path.join(src, d))]
            objects = []
            for f in cu:
                obj = os.path.join(here, os.path.basename(f) + ".o")
                run(["clang++-22"] + cuda_flags + includes + ["-c", os.path.join(src, f), "-o", obj])
                objects.append(obj)
            for f in c_sources:
                obj = os.path.join(here, os.path.basename(f) + ".o")
                run(["clang-22", "-O3", "-w", "-std=gnu89", "-include", "string.h", "-include", "time.h"] + includes + ["-c", os.path.join(src, f), "-o", obj])
                objects.append(obj)
            binary = os.path.join(here, name)
            run(["clang++-22"] + objects + ["-o", binary, f"-L{cuda}/lib64", "-lcudart_static", "-ldl", "-lrt", "-lpthread", "-lm"])
            for o in objects:
                os.remove(o)
            files = [os.path.join(src, f) for f in kernels]
            db = os.path.join(here, "db", "decisions.json")
            if os.path.isdir(os.path.dirname(db)):
                shutil.rmtree(os.path.dirname(db))
            run([regtune, "tune", "--offload-arch", a.arch, "--db", db] + files + ["--"] + includes, stdout=subprocess.DEVNULL)
            code = os.path.join(os.path.dirname(db), "decisions.code")
            run([regtune, "predict", "--offload-arch", a.arch, "--code-dir", code, "-o", os.path.join(here, "predict.json")]
                + files + ["--"] + includes)
            every_candidate_measured(db, os.path.join(here, "predict.json"))
            plan = subprocess.run([regtune, "measure", "--db", db, "--dry-run", "--", "true"], capture_output=True, text=True)
            predicted = json.load(open(os.path.join(here, "predict.json")))["candidates"]
            programs[name] = {
                "binary": os.path.relpath(binary, REPO), "args": args, "db": os.path.relpath(db, REPO),
                "predict": os.path.relpath(os.path.join(here, "predict.json"), REPO),
                "kernels": len({c["symbol"] for c in predicted}), "planned": plan.stderr.strip().splitlines()[-1:] if plan.stderr else [],
            }
            print(f"{name}: built; {programs[name]['kernels']} kernels; {plan.stderr.strip().splitlines()[-1] if plan.stderr.strip() else ''}",
                  file=sys.stderr)
        except subprocess.CalledProcessError as e:
            programs.pop(name, None)
            print(f"{name}: skipped: {' '.join(e.cmd[:2])} failed ({e.returncode})", file=sys.stderr)
        json.dump(programs, open(manifest_path, "w"), indent=1)

    # The tools, stripped, and CUPTI (as bench/runtime/build.py copies them).
    tools = os.path.dirname(regtune)
    for d in ["bin", "lib"]:
        os.makedirs(os.path.join(OUT, d), exist_ok=True)
    for name in ["regtune", "regtune-replay", "libregtune_runtime.so"]:
        dest = os.path.join(OUT, "bin", name)
        shutil.copy(os.path.join(tools, name), dest)
        run(["llvm-strip-22", "--strip-debug", dest])
    shutil.copy(os.path.join(cuda, "lib64", "libcupti.so.12"), os.path.join(OUT, "lib"))
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(OUT) for f in fs)
    print(f"bench/calibrate/build: {size / 2**20:.1f} MiB", file=sys.stderr)


if __name__ == "__main__":
    main()
