#!/usr/bin/env python3
"""Rebuild the corpus programs whose kernels the measured search changed,
the way a user's build does it after `regtune measure`: clang with the pass
plugin and the measured db (`REGTUNE_DECISIONS`), so that each kernel gets
`Entry::effective()`, the candidate the GPU kept. rebuilt.sh then runs the
plain and the rebuilt program in turn, and compare.py sets the programs'
own timings beside the replay's speedups.

    python3 bench/search/rebuild.py MEASURED_DIR [--db-name default] [--plugin target/release/libregtune_passes.so]

MEASURED_DIR holds <program>/db/decisions.json (run.sh packs them). Writes
bench/search/build/rebuilt/<program>[.<db-name>] (stripped) and
bench/search/build/rebuilt/plan.json.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CORPUS = os.path.join(REPO, "bench", "calibrate", "build", "corpus")
OUT = os.path.join(HERE, "build", "rebuilt")

sys.path.insert(0, os.path.join(REPO, "bench", "runtime"))
from build import cuda_root  # noqa: E402


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


def main():
    p = argparse.ArgumentParser()
    p.add_argument("measured")
    p.add_argument("--db-name", default="", help="a suffix for the rebuilt binaries, when several dbs are compared")
    p.add_argument("--plugin", default=os.path.join(REPO, "target", "release", "libregtune_passes.so"))
    p.add_argument("--all", action="store_true", help="rebuild every program, changed or not")
    a = p.parse_args()
    cuda = cuda_root()
    programs = json.load(open(os.path.join(CORPUS, "programs.json")))
    os.makedirs(OUT, exist_ok=True)
    plan_path = os.path.join(OUT, "plan.json")
    plan = json.load(open(plan_path)) if os.path.exists(plan_path) else {}
    for name, pr in programs.items():
        db_path = os.path.join(a.measured, name, "db", "decisions.json")
        if not pr.get("built") or not os.path.isfile(db_path):
            continue
        db = json.load(open(db_path))
        kernels = changed(db)
        if not kernels and not a.all:
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


if __name__ == "__main__":
    main()
