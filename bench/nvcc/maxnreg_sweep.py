#!/usr/bin/env python3
"""Does any `__maxnreg__(N)` reach what nvcc's `-maxrregcount=R` builds?

`regtune fix --compiler nvcc` writes a kernel's kept `-maxrregcount=R` as
`__maxnreg__(N)` only where that build has the candidate's registers,
spills and occupancy (cicc's `-maxreg R` changes the PTX, so the bytes
cannot match). fix tries a few N; this tries every N from 32 to 255.

For each kernel asked for, from a unit of a program bench/nvcc/corpus.py
built (its own nvcc flags): nvcc -ptx once (plain's PTX, which is what
`__maxnreg__` caps: `.maxnreg N` on the kernel's entry, shown equal to the
source spelling by tests/nvcc.rs), then ptxas -v per N; and nvcc
`-maxrregcount=R -cubin` for the candidate. Prints each N's registers and
spill stores, and whether any N reaches the candidate's registers and
spills, stores and loads, as fix compares them (occupancy follows from
the registers at one block size). CPU only.

    python3 bench/nvcc/maxnreg_sweep.py MC_SingleAsianOptionP pricingengine.cu \
        _Z13generatePathsIdEv 64 [--jobs 2]

PROGRAM and the unit's file name as in programs.json; the kernel by a
prefix of its mangled name; R the kept `-maxrregcount`.
"""

import argparse
import concurrent.futures
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

PROGRAMS = Path("bench/calibrate/build/corpus-nvcc/programs.json")


def usage(ptxas_out, symbol):
    """(registers, spill store bytes, spill load bytes) of `symbol` in ptxas -v's output."""
    m = re.search(
        r"entry function '" + re.escape(symbol) + r"'.*?(\d+) bytes spill stores, (\d+) bytes spill loads.*?Used (\d+) registers",
        ptxas_out,
        re.S,
    )
    if not m:
        sys.exit(f"maxnreg_sweep: ptxas said nothing of {symbol}")
    return int(m[3]), int(m[1]), int(m[2])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("program")
    ap.add_argument("unit")
    ap.add_argument("kernel", help="a prefix of the kernel's mangled name")
    ap.add_argument("r", type=int)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--from", dest="lo", type=int, default=32, help="the lowest N (default 32)")
    ap.add_argument("--to", dest="hi", type=int, default=255, help="the highest N (default 255)")
    a = ap.parse_args()
    prog = json.loads(PROGRAMS.read_text())[a.program]
    unit = next(u for u in prog["units"] if Path(u["file"]).name == a.unit)
    nvcc, flags = unit["flags"][0], unit["flags"][1:]
    arch = next(f.split("=", 1)[1] for f in flags if f.startswith("-arch="))
    ptxas = str(Path(nvcc).resolve().parent / "ptxas")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        ptx = tmp / "plain.ptx"
        subprocess.run([nvcc, *flags, "-w", "-ptx", unit["file"], "-o", str(ptx)], check=True)
        text = ptx.read_text()
        m = re.search(r"^(?:\.visible |\.weak )?\.entry (" + re.escape(a.kernel) + r"[^(]*)\(", text, re.M)
        if not m:
            sys.exit(f"maxnreg_sweep: no entry {a.kernel}... in {a.unit}'s PTX")
        symbol = m[1]
        close = text.index("\n)", m.end()) + 2
        cand = subprocess.run(
            [nvcc, *flags, "-w", f"-maxrregcount={a.r}", "-cubin", "-Xptxas", "-v", unit["file"], "-o", str(tmp / "c.cubin")],
            capture_output=True,
            text=True,
            check=True,
        )
        want = usage(cand.stderr, symbol)

        def build(n):
            capped = tmp / f"n{n}.ptx"
            capped.write_text(text[:close] + (f".maxnreg {n}\n" if n else "") + text[close:])
            out = subprocess.run(
                [ptxas, f"-arch={arch}", "-O3", "-v", str(capped), "-o", str(tmp / f"n{n}.cubin")],
                capture_output=True,
                text=True,
                check=True,
            )
            return n, usage(out.stderr, symbol)

        with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
            got = dict(pool.map(build, [0, *range(a.lo, a.hi + 1)]))
    shown = lambda u: f"registers {u[0]}, spill stores {u[1]} bytes, loads {u[2]} bytes"  # noqa: E731
    print(f"{a.program} {symbol} ({arch}): nvcc -maxrregcount={a.r}: {shown(want)}")
    print(f"  plain: {shown(got[0])}")
    runs, prev = [], None
    for n in range(a.lo, a.hi + 1):
        if got[n] != prev:
            runs.append([n, n, got[n]])
            prev = got[n]
        else:
            runs[-1][1] = n
    for lo, hi, u in runs:
        mark = "  <- the candidate's" if u == want else ""
        print(f"  __maxnreg__({lo}..{hi}): {shown(u)}{mark}")
    hit = [n for n in range(a.lo, a.hi + 1) if got[n] == want]
    print(f"  reached by: {', '.join(map(str, hit)) if hit else f'no N in {a.lo}..{a.hi}'}")


if __name__ == "__main__":
    main()
