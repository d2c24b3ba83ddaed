#!/usr/bin/env python3
"""Each kernel's builds in one `regtune measure --format json` report,
fastest first: candidate, speedup over plain, rounds, whether it is a
register cap on a rewrite (NEW: what a first turn at the defaults built
only from 2026-12-02, bench/search/left_out.py), the verdict, and the
program's own confirmation where there was one.

    python3 bench/search/ranked.py OUT/work/PROGRAM.measure.json ...
"""

import json
import sys

for path in sys.argv[1:]:
    d = json.load(open(path))
    by = {}
    for r in d["kernels"]:
        by.setdefault(r["kernel"], []).append(r)
    for k, rs in by.items():
        print(f"== {path.split('/')[-1].split('.')[0]} {k}")
        for r in sorted(rs, key=lambda r: -(r.get("speedup") or 0)):
            t = r["transforms"]
            new = any(x.startswith("sink") for x in t) and any(x.startswith("warps-per-sm") for x in t)
            prog = f" program {r['program_speedup']:.3f}" if "program_speedup" in r else ""
            print(f"  {r['candidate'][:45]:45s} {(r.get('speedup') or 0):.3f} r{r.get('rounds')} {'NEW ' if new else '    '}"
                  f"{r.get('verdict', '')[:70]}{prog}")
