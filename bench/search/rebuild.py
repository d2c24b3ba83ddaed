#!/usr/bin/env python3
"""Rebuild the corpus programs whose kernels the measured search changed,
the way a user's build does it after `regtune measure`: clang with the pass
plugin and the measured db (`REGTUNE_DECISIONS`), so that each kernel gets
`Entry::effective()`, the candidate the GPU kept. rebuilt.sh then runs the
plain and the rebuilt program in turn, and compare.py sets the programs'
own timings beside the replay's speedups.

With --compiler nvcc (the corpus bench/nvcc/corpus.py built): each CUDA
file through `regtune cc -- nvcc ...` with the measured db (REGTUNE_DB),
linked by nvcc; then each changed kernel's code in the rebuilt object
(.text and .nv.info, its symbols by name, of the cubin nvcc embedded:
bench/cubin.py's kernel_code) is checked against the
candidate measure kept, and the count printed ("delivered").

    python3 bench/search/rebuild.py MEASURED_DIR [--db-name default] [--plugin target/release/libregtune_passes.so]
    python3 bench/search/rebuild.py MEASURED_DIR --compiler nvcc [--regtune target/release/regtune]

MEASURED_DIR holds <program>/db/decisions.json (run.sh packs them; for
nvcc also <program>/db/decisions.code, the code objects tune kept, and
<program>.measure.json, measure's report). Writes
bench/search/build/rebuilt/<program>[.<db-name>] (stripped) and
bench/search/build/rebuilt/plan.json.
"""

import argparse
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CORPUS = os.path.join(REPO, "bench", "calibrate", "build", "corpus")
CORPUS_NVCC = os.path.join(REPO, "bench", "calibrate", "build", "corpus-nvcc")
OUT = os.path.join(HERE, "build", "rebuilt")

sys.path.insert(0, os.path.join(REPO, "bench", "runtime"))
from build import cuda_root  # noqa: E402
sys.path.insert(0, os.path.join(REPO, "bench"))
from cubin import kernel_code, sections as cubin_sections  # noqa: E402


def changed(db):
    """Kernels whose build differs from plain under the db."""
    out = []
    for e in db["kernels"].values():
        m = e.get("measured")
        if m is None:
            if e.get("transforms"):
                out.append(e["name"])
            continue
        built = [c for c in m["candidates"] if c.get("transforms")]
        # What Entry::effective picks is what the plugin applies; the
        # report's `built` column says the same. Here: any decision or a
        # measured candidate faster beyond noise.
        plain = next((c for c in m["candidates"] if not c.get("transforms")), None)
        for c in built:
            t, p = c.get("time"), plain and plain.get("time")
            if c.get("identical") and t and p and p["median_ms"] - t["median_ms"] > t["spread_ms"] + p["spread_ms"]:
                out.append(e["name"])
                break
    return out


def cubins(blob):
    """The ELF cubins embedded in an object (nvcc's fatbin holds them whole)."""
    out, at = [], blob.find(b"\x7fELF\x02")
    while at >= 0:
        shoff, = struct.unpack_from("<Q", blob, at + 0x28)
        shentsize, shnum = struct.unpack_from("<HH", blob, at + 0x3A)
        machine, = struct.unpack_from("<H", blob, at + 0x12)
        end = at + shoff + shentsize * shnum
        if machine == 190 and end <= len(blob):  # EM_CUDA
            out.append(blob[at:end])
        at = blob.find(b"\x7fELF\x02", at + 4)
    return out


def code_hash(data):
    """decisions::hash::of_parts of one part: a code object's hash in the db."""
    return hashlib.sha256(struct.pack("<Q", len(data)) + data).hexdigest()


def kept_code(db_path, entry, measure_json):
    """The kernel's code in the candidate measure kept (its report's `built`
    row, matched to the db's measured candidate by its median); None when
    it kept plain or the code object is not there."""
    rows = json.load(open(measure_json))["kernels"] if os.path.exists(measure_json) else []
    built = next((r for r in rows if r["symbol"] == entry["symbol"] and r.get("built")), None)
    m = entry.get("measured") or {}
    kept = built and next((c for c in m.get("candidates", []) if (c.get("time") or {}).get("median_ms") == built["median_ms"]), None)
    if not kept or not kept.get("transforms") or not kept.get("code"):
        return None
    code_dir = os.path.join(os.path.dirname(db_path), "decisions.code", entry["input_hash"])
    for f in sorted(os.listdir(code_dir)) if os.path.isdir(code_dir) else []:
        data = open(os.path.join(code_dir, f), "rb").read()
        if code_hash(data) == kept["code"]:
            return kernel_code(data, entry["symbol"])
    return None


def rebuild_nvcc(a, name, pr, db_path, db, kernels):
    """One program through `regtune cc -- nvcc`; its binary, or None."""
    work = os.path.join(OUT, "obj", name)
    os.makedirs(work, exist_ok=True)
    env = dict(os.environ, REGTUNE_DB=os.path.abspath(db_path))
    objects, ok = [], True
    for i, u in enumerate(pr["units"]):
        obj = os.path.join(work, f"{i}.o")
        wrap = [os.path.abspath(a.regtune), "cc", "--"] if u["lang"] == "cuda" else []
        r = subprocess.run(wrap + u["flags"] + ["-c", u["file"], "-o", obj], cwd=REPO, env=env, capture_output=True, text=True)
        if r.returncode != 0:
            print(f"{name}: {u['file']}: {r.stderr.strip()[:300]}", file=sys.stderr)
        # regtune's own lines, not behind nvcc's warnings.
        for line in r.stderr.splitlines():
            if line.startswith("regtune"):
                print(f"{name}: {u['file']}: {line}", file=sys.stderr)
        ok &= r.returncode == 0
        objects.append(obj)
    # Each changed kernel's code in what the wrapper built: the kept candidate's?
    built = [c for o in objects if os.path.exists(o) for c in cubins(open(o, "rb").read())]
    delivered = []
    for e in db["kernels"].values():
        want = kept_code(db_path, e, os.path.join(a.measured, f"{name}.measure.json"))
        if want is not None:
            got = [kernel_code(c, e["symbol"]) for c in built]
            delivered.append((e["name"], want in got))
    binary = os.path.join(OUT, name + (f".{a.db_name}" if a.db_name else ""))
    link = [pr["nvcc"], "-arch=sm_90"] + objects + ["-o", binary, "-lm"]  # as corpus.py links (no program names libs)
    ok = ok and subprocess.run(link, cwd=REPO).returncode == 0
    shutil.rmtree(work)
    for kernel, same in delivered:
        print(f"{name}: {kernel}: {'the kept candidate' if same else 'NOT the kept candidate'} in the rebuilt object", file=sys.stderr)
    return binary if ok else None, delivered


def main():
    p = argparse.ArgumentParser()
    p.add_argument("measured")
    p.add_argument("--db-name", default="", help="a suffix for the rebuilt binaries, when several dbs are compared")
    p.add_argument("--plugin", default=os.path.join(REPO, "target", "release", "libregtune_passes.so"))
    p.add_argument("--all", action="store_true", help="rebuild every program, changed or not")
    p.add_argument("--compiler", default="clang", choices=["clang", "nvcc"])
    p.add_argument("--only", nargs="*", help="these programs alone")
    p.add_argument("--regtune", default=os.path.join(REPO, "target", "release", "regtune"))
    a = p.parse_args()
    cuda = cuda_root()
    programs = json.load(open(os.path.join(CORPUS_NVCC if a.compiler == "nvcc" else CORPUS, "programs.json")))
    counts = [0, 0]
    os.makedirs(OUT, exist_ok=True)
    plan_path = os.path.join(OUT, "plan.json")
    plan = json.load(open(plan_path)) if os.path.exists(plan_path) else {}
    for name, pr in programs.items():
        db_path = os.path.join(a.measured, name, "db", "decisions.json")
        if not (pr.get("built") or pr.get("compiler") == "nvcc") or not os.path.isfile(db_path) or (a.only and name not in a.only):
            continue
        db = json.load(open(db_path))
        kernels = changed(db)
        if not kernels and not a.all:
            continue
        if a.compiler == "nvcc":
            binary, delivered = rebuild_nvcc(a, name, pr, db_path, db, kernels)
            counts[0] += sum(same for _, same in delivered)
            counts[1] += len(delivered)
            if binary is None:
                print(f"{name}: rebuild failed", file=sys.stderr)
                continue
            subprocess.run(["llvm-strip-22", "--strip-all", binary], check=True)
            plan.setdefault(name, {"plain": pr["binary"], "args": pr["args"], "cwd": pr["cwd"], "rebuilt": {}})
            plan[name]["rebuilt"][a.db_name or "measured"] = {"binary": os.path.relpath(binary, REPO), "kernels": kernels}
            json.dump(plan, open(plan_path, "w"), indent=1)
            continue
        work = os.path.join(OUT, "obj", name)
        os.makedirs(work, exist_ok=True)
        objects = []
        env = dict(os.environ, REGTUNE_DECISIONS=os.path.abspath(db_path))
        ok = True
        for i, u in enumerate(pr["units"]):
            obj = os.path.join(work, f"{i}.o")
            extra = [f"-fpass-plugin={os.path.abspath(a.plugin)}"] if u["lang"] == "cuda" else []
            r = subprocess.run(u["flags"] + extra + ["-c", u["file"], "-o", obj], cwd=REPO, env=env, capture_output=True, text=True)
            if r.returncode != 0 or "regtune" in r.stderr:
                print(f"{name}: {u['file']}: {r.stderr.strip()[:300]}", file=sys.stderr)
            ok &= r.returncode == 0
            objects.append(obj)
        binary = os.path.join(OUT, name + (f".{a.db_name}" if a.db_name else ""))
        link = ["clang++-22"] + objects + ["-o", binary, f"-L{cuda}/lib64", "-lcudart_static", "-ldl", "-lrt", "-lpthread", "-lm"]
        ok = ok and subprocess.run(link, cwd=REPO).returncode == 0
        shutil.rmtree(work)
        if not ok:
            print(f"{name}: rebuild failed", file=sys.stderr)
            continue
        subprocess.run(["llvm-strip-22", "--strip-all", binary], check=True)
        plan.setdefault(name, {"plain": pr["binary"], "args": pr["args"], "cwd": pr["cwd"], "rebuilt": {}})
        plan[name]["rebuilt"][a.db_name or "measured"] = {"binary": os.path.relpath(binary, REPO), "kernels": kernels}
        print(f"{name}: rebuilt ({', '.join(kernels) or 'nothing changed'})", file=sys.stderr)
        json.dump(plan, open(plan_path, "w"), indent=1)
    if a.compiler == "nvcc":
        print(f"delivered: {counts[0]} of {counts[1]} kept candidates are the rebuilt objects' code", file=sys.stderr)


if __name__ == "__main__":
    main()
