#!/usr/bin/env python3
"""What one tune turn leaves for a second: per kernel of the corpus, the
builds tune proposed but did not build (the db's `left_out`: past
--candidates or the time budget), which the next tune -> measure turn
builds first. A launched kernel with none left out gets nothing new from a
second turn but spilling to shared memory at the block size measure saw.
Only the corpus's kernels (programs.json: register-limited, written in the
program, not CUB's or Thrust's), where the corpus lists them.
CPU only; reads the dbs `bench/calibrate/corpus.py build --tune` (clang, at
tune's defaults) or `bench/search/build.py` wrote.

    python3 bench/search/left_out.py [--corpus bench/calibrate/build/corpus] [--dbs DIR] [--out FILE]

--dbs: the dbs of `corpus.py tune --db-dir DIR` (DIR/<program>/decisions.json)
instead of the corpus's own.
"""

import argparse
import collections
import glob
import json
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
# CUB's and Thrust's kernels, instantiated by the programs: not theirs.
LIBRARY = re.compile(r"\b(cub|thrust)::")


def kind(label):
    """A left-out build's kind: the register cap alone, a rewrite at a step, an unroll cap, ..."""
    parts = label.split(" + ")
    steps = [p for p in parts if re.match(r"(warps-per-sm|waves-per-eu|maxrregcount)=", p)]
    rest = [p.split("=")[0] for p in parts if p not in steps]
    if not rest:
        return "cap alone"
    return " + ".join(rest) + (" at a step" if steps else "")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--corpus", default=os.path.join(REPO, "bench", "calibrate", "build", "corpus"))
    p.add_argument("--dbs")
    p.add_argument("--out")
    a = p.parse_args()
    programs = {}
    listing = os.path.join(a.corpus, "programs.json")
    if os.path.exists(listing):
        programs = json.load(open(listing))
    lines = [f"{'program':22s} {'kernel':44s} {'launched':8s} {'kept':>4s} {'left out':>8s}  kinds left out"]
    totals = collections.Counter()
    pattern = os.path.join(a.dbs, "*", "decisions.json") if a.dbs else os.path.join(a.corpus, "*", "db", "decisions.json")
    for db in sorted(glob.glob(pattern)):
        prog = db.split(os.sep)[-2 if a.dbs else -3]
        entry = programs.get(prog, {})
        unlaunched = set(entry.get("unlaunched", []))
        # The corpus's kernels: register-limited, written in the program.
        limited = {k["symbol"] for k in entry.get("kernels", []) if k.get("limiter") == "vgpr"}
        for key, e in sorted(json.load(open(db))["kernels"].items()):
            if limited and e.get("symbol") not in limited or LIBRARY.search(e.get("name", "")):
                continue
            name = e.get("name", key)
            short = name.split("(")[0]
            launched = not any(u == short or short.endswith(u) or u in name for u in unlaunched)
            left = e.get("left_out", [])
            kinds = collections.Counter(kind(label) for label in left)
            totals["kernels"] += 1
            totals["launched kernels"] += launched
            totals["launched with some left out"] += launched and bool(left)
            totals["builds left out (launched)"] += len(left) if launched else 0
            shown = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) or "-"
            lines.append(f"{prog:22s} {short[:44]:44s} {'yes' if launched else 'no':8s} {len(e.get('candidates', [])):4d} {len(left):8d}  {shown}")
    lines.append("; ".join(f"{k}: {v}" for k, v in totals.items()))
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if a.out:
        open(a.out, "a").write(text)


if __name__ == "__main__":
    main()
