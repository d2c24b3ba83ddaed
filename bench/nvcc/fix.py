#!/usr/bin/env python3
"""How many of measure's kept choices on the corpus built by nvcc land in a
verified nvcc patch (issue 38, item 5): `regtune fix --compiler nvcc` on
each program's kernel files with the measured db, the program's own nvcc
flags after `--`; fix rebuilds the patched files with nvcc and checks each
kernel against the kept candidate. Prints one line per program and the
totals; writes the patches beside the dbs.

    python3 bench/nvcc/fix.py MEASURED_DIR [--regtune target/debug/regtune]

MEASURED_DIR as bench/search/rebuild.py takes it (<program>/db/decisions.json
with its decisions.code, <program>.measure.json). A kept choice is a
`built` row of measure's report other than plain; one that fix does not
see (its db entry under another input hash: another toolkit or flags) is
counted as not landed. Runs on the CPU machine from the repository root,
with the nvcc the corpus was tuned with.
"""

import argparse
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PROGRAMS = os.path.join(REPO, "bench", "calibrate", "build", "corpus-nvcc", "programs.json")
SUMMARY = re.compile(r"regtune fix: (?:all (\d+) decision|(\d+) of (\d+) decision|nothing to patch)")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("measured")
    p.add_argument("--regtune", default=os.path.join(REPO, "target", "debug", "regtune"))
    a = p.parse_args()
    programs = json.load(open(PROGRAMS))
    landed = total = 0
    for name in sorted(programs):
        db = os.path.join(a.measured, name, "db", "decisions.json")
        if not os.path.isfile(db):
            continue
        units = [u for u in programs[name]["units"] if u["lang"] == "cuda" and u.get("kernels", True)]
        report = os.path.join(a.measured, f"{name}.measure.json")
        rows = json.load(open(report))["kernels"] if os.path.exists(report) else []
        # By symbol: a template's instantiations are choices of their own
        # (measure's kernel column may name them alike).
        kept = sorted({r.get("symbol") or r["kernel"] for r in rows if r.get("built") and r["candidate"] != "plain"})
        if not units or not kept:
            continue
        # One fix per nvcc command line (a program's kernel files share it).
        by_flags = {}
        for u in units:
            by_flags.setdefault(tuple(u["regtune_args"]), []).append(u["file"])
        for flags, files in by_flags.items():
            patch = os.path.join(os.path.dirname(db), "fix.patch")
            cmd = [a.regtune, "fix", "--compiler", "nvcc", "--offload-arch", "sm_90", "--db", db, "-o", patch] + files + ["--"] + list(flags)
            r = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
            m = SUMMARY.search(r.stderr)
            if not m:
                print(f"{name}: fix failed (exit {r.returncode}): {r.stderr.strip().splitlines()[-1:] }", file=sys.stderr)
                continue
            if m.group(1):
                ok = n = int(m.group(1))
            elif m.group(3):
                n = int(m.group(3))
                ok = n - int(m.group(2))
            else:
                ok = n = 0
            landed += ok
            total += len(kept)
            left = [l for l in r.stderr.splitlines() if "not in the patch" in l or "note:" in l]
            print(f"{name}: {ok} of {len(kept)} kept choice(s) in a verified nvcc patch (fix saw {n}; exit {r.returncode})"
                  + "".join(f"\n  {l}" for l in left))
    print(f"total: {landed} of {total} kept choices land in a verified nvcc patch")


if __name__ == "__main__":
    main()
