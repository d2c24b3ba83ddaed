#!/usr/bin/env python3
"""Which of tune's register-cap builds on NVIDIA repeat code already built.

Issue 39 item 1: `regtune tune` builds every occupancy step's register cap
on NVIDIA (one ptxas run each over the kernel's PTX with the entry's
`.maxnreg R`), and those builds are exempt from the time budget. This
script asks, per kernel and per cap, whether the cap's code is plain's
(ptxas on the same PTX with no `.maxnreg`) or a cap's already built, the
way tune's dedup compares them (driver/src/gpu/nvptx/cubin.rs
`kernel_code`: the kernel's registers, its `.text`, its `.nv.info` less
`EIATTR_MAXREG_COUNT`, and the code of what it calls). It also records
whether the whole cubins are equal (clang's path hashes the whole object).

PTX: clang's (`clang++-22 -x cuda --cuda-device-only -S`, the unit's
flags) or nvcc's (`nvcc <flags> -ptx`, assembled with the ptxas line
`nvcc --dryrun -cubin` prints), cut to one entry (tune assembles clang's
kernels alone; ptxas allocates each entry's registers on its own).
The caps are sm_90's steps, 255 168 128 96 80 72 64 56 48 40 32
(nvidia.rs `register_cap_for_warps`); only kernels over 32 registers
(the register-limited ones, whose steps tune builds).

    nice -n 5 python3 bench/cost/redundant.py --corpus clang --json OUT.json
    unshare -m bash -c 'mount --bind /tmp/regtune-nvcc-13.0rt /opt/regtune-nvcc && \
        nice -n 5 python3 bench/cost/redundant.py --corpus nvcc --json OUT.json'
    python3 bench/cost/redundant.py --table OUT.json [OUT2.json ...]

Corpora as bench/cost/nvidia.py finds them (the programs unpacked under
bench/calibrate/build/); `examples` is examples/*.hip built as CUDA by
clang (tests/nvptx.rs's flags: -x cuda -O3).
"""

import argparse
import hashlib
import json
import re
import shlex
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from nvidia import CUDA, NVCC, ROOT  # noqa: E402  the cost bench's toolchain and corpus
from nvidia import units as corpus_units  # noqa: E402

CAPS = [255, 168, 128, 96, 80, 72, 64, 56, 48, 40, 32]
EIATTR_MAXREG_COUNT = 0x1B


def units(corpus, only):
    """(program, file, flags) for every unit with kernels: the examples, or a corpus as nvidia.py reads it."""
    if corpus == "examples":
        for f in sorted((ROOT / "examples").glob("*.hip")):
            yield "examples", str(f.relative_to(ROOT)), ["-O3"]
        return
    yield from corpus_units(corpus, only)


def sections(data):
    """{name: (sh_info, bytes)} of an ELF64 cubin."""
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    heads = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    strtab = heads[shstrndx]
    names = data[strtab[4]:strtab[4] + strtab[5]]
    out = {}
    for h in heads:
        name = names[h[0]:names.index(b"\0", h[0])].decode()
        body = data[h[4]:h[4] + h[5]] if h[1] != 8 else b""  # SHT_NOBITS
        out[name] = (h[7], body)
    return out


def without_maxreg(info):
    out, p = b"", 0
    while p + 2 <= len(info):
        fmt, attr = info[p], info[p + 1]
        n = 2 if fmt == 1 else 4 + struct.unpack_from("<H", info, p + 2)[0] if fmt == 4 else 4
        if attr != EIATTR_MAXREG_COUNT:
            out += info[p:p + n]
        p += n
    return out


def kernel_code(data, symbol, kernels, regs):
    """What tune's dedup hashes of `symbol` (cubin.rs kernel_code; with the
    module's `.nv.info`, where registers and frames are, less the cap)."""
    s = sections(data)
    h = hashlib.sha256(f"{regs}\n".encode())
    for name, (_, body) in s.items():
        if name in (".nv.info", ".nv.info." + symbol):
            h.update(name.encode() + without_maxreg(body))
        elif name.startswith(".text.") and (name[6:] == symbol or name[6:] not in kernels):
            h.update(name.encode() + body)
    return h.hexdigest()[:16]


def entries(ptx):
    return [m.group(1) for m in re.finditer(r"^\s*(?:\.visible\s+|\.weak\s+)?\.entry\s+([\w$.]+)\s*\(", ptx, re.M)]


def cut(ptx, keep, cap=None):
    """The PTX with only entry `keep`, and `.maxnreg cap` on it (as nvcc.rs edit_entry writes it)."""
    lines, out, i = ptx.split("\n"), [], 0
    while i < len(lines):
        m = re.match(r"^\s*(?:\.visible\s+|\.weak\s+)?\.entry\s+([\w$.]+)\s*\(", lines[i])
        if not m:
            out.append(lines[i])
            i += 1
            continue
        # The entry ends where its braces close (inline asm has its own).
        depth, opened, end = 0, False, i
        for end in range(i, len(lines)):
            code = lines[end].split("//", 1)[0]
            depth += code.count("{") - code.count("}")
            opened = opened or "{" in code
            if opened and depth == 0:
                break
        if m.group(1) == keep:
            body = lines[i:end + 1]
            opn = next(j for j, l in enumerate(body) if l.strip() == "{")
            head = [l for l in body[:opn] if not re.match(r"\s*\.maxnreg\s", l)]
            out += head + ([f".maxnreg {cap}"] if cap else []) + body[opn:]
        i = end + 1
    return "\n".join(out)


def ptxas_line(flags, file, arch):
    """nvcc's ptxas arguments for the unit (from --dryrun), less input and output."""
    p = subprocess.run([NVCC, *flags, "-cubin", "--dryrun", file, "-o", "x.cubin"], cwd=ROOT, capture_output=True, text=True)
    for line in p.stderr.splitlines():
        if line.startswith("#$ ptxas"):
            args = shlex.split(line[3:])[1:]
            out, skip = [], False
            for a in args:
                if skip:
                    skip = False
                    continue
                if a in ("-o", "--output-file"):
                    skip = True
                    continue
                if a.endswith(".ptx"):
                    continue
                out.append(a)
            return out
    sys.exit(f"{file}: no ptxas line in nvcc --dryrun:\n{p.stderr[-800:]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", choices=["clang", "nvcc", "examples"])
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--only", action="append")
    ap.add_argument("--json")
    ap.add_argument("--table", nargs="*", help="print the tables of earlier --json runs")
    ap.add_argument("--timeout", type=float, default=600)
    a = ap.parse_args()
    if a.table:
        return table([r for f in a.table for r in json.loads(Path(f).read_text())])
    rows = []
    tmp = Path(tempfile.mkdtemp(prefix="regtune-redundant-"))
    for prog, file, flags in units(a.corpus, a.only):
        ptx_path = tmp / "unit.ptx"
        if a.corpus == "nvcc":
            cmd = [NVCC, *flags, "-ptx", file, "-o", str(ptx_path)]
            ptxas = [str(Path(NVCC).parent / "ptxas"), *ptxas_line(flags, file, a.arch), "-v"]
        else:
            lang = ["-x", "cuda"]
            cmd = ["clang++-22", *lang, "--cuda-device-only", "-Wno-unknown-cuda-version", f"--cuda-gpu-arch={a.arch}",
                   f"--cuda-path={CUDA}", "-O3", *flags, "-S", file, "-o", str(ptx_path)]
            ptxas = [f"{CUDA}/bin/ptxas", "-m64", "-O3", "--gpu-name", a.arch, "-v"]
        p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        if p.returncode:
            print(f"{file}: PTX failed: {p.stderr[-400:]}", flush=True)
            continue
        ptx = ptx_path.read_text()
        kernels = entries(ptx)

        def build(symbol, cap):
            src, cubin = tmp / "k.ptx", tmp / "k.cubin"
            src.write_text(cut(ptx, symbol, cap))
            t = time.monotonic()
            q = subprocess.run([*ptxas, str(src), "-o", str(cubin)], capture_output=True, text=True, timeout=a.timeout)
            dt = time.monotonic() - t
            if q.returncode:
                return None
            data = cubin.read_bytes()
            used = re.search(r"Compiling entry function '" + re.escape(symbol) + r"'.*?Used (\d+) registers", q.stdout + q.stderr, re.S)
            regs = int(used.group(1)) if used else -1
            code = kernel_code(data, symbol, kernels, regs)
            return {"cap": cap, "registers": regs, "code": code, "whole": hashlib.sha256(data).hexdigest()[:16], "seconds": round(dt, 2)}

        for symbol in kernels:
            plain = build(symbol, None)
            if plain is None:
                print(f"{file} {symbol}: ptxas failed", flush=True)
                continue
            row = {"corpus": a.corpus, "program": prog, "file": file.split("build/", 1)[-1], "symbol": symbol, "plain": plain, "caps": []}
            if plain["registers"] > 32:
                for cap in CAPS:
                    b = build(symbol, cap)
                    if b:
                        row["caps"].append(b)
            rows.append(row)
            print(one(row), flush=True)
            if a.json:
                Path(a.json).write_text(json.dumps(rows, indent=1))
    table(rows)


def verdicts(row):
    """Per cap: 'plain' (plain's code), '=C' (cap C's, built before it in
    the sweep's order), 'new'; and whether the whole cubin equals plain's."""
    seen, out = {row["plain"]["code"]: "plain"}, []
    for b in row["caps"]:
        v = seen.get(b["code"])
        out.append((b, v if v == "plain" else f"={v}" if v else "new"))
        seen.setdefault(b["code"], str(b["cap"]))
    return out


def one(row):
    p = row["plain"]
    head = f"{row['file']:<52} {row['symbol'][:40]:<40} plain {p['registers']:>3} regs {p['seconds']:>6.2f} s"
    if not row["caps"]:
        return head + "  (<= 32 registers: no steps)"
    cells = " ".join(f"{b['cap']}:{b['registers']}{'P' if v == 'plain' else '=' if v.startswith('=') else 'n'}" for b, v in verdicts(row))
    return head + "  " + cells


def table(rows):
    searched = [r for r in rows if r["caps"]]
    print(f"\n{len(rows)} kernels, {len(searched)} over 32 registers (their caps built)")
    print("per cap: cap:registers then P (plain's code), = (a cap's before it), n (new code)\n")
    for r in rows:
        print(one(r))
    stats = {}
    for r in searched:
        preg = r["plain"]["registers"]
        for b, v in verdicts(r):
            cls = "cap >= plain registers" if b["cap"] >= preg else "cap < plain registers"
            s = stats.setdefault((r["corpus"], cls), {"builds": 0, "plain": 0, "dup": 0, "new": 0, "seconds": 0.0, "wasted_s": 0.0,
                                                       "whole_plain": 0})
            s["builds"] += 1
            s["seconds"] += b["seconds"]
            key = "plain" if v == "plain" else "dup" if v.startswith("=") else "new"
            s[key] += 1
            if key != "new":
                s["wasted_s"] += b["seconds"]
            s["whole_plain"] += b["whole"] == r["plain"]["whole"]
        if r["caps"] and r["caps"][0]["cap"] == 255:
            s = stats.setdefault((r["corpus"], "cap 255 alone"), {"builds": 0, "plain": 0, "dup": 0, "new": 0, "seconds": 0.0,
                                                                  "wasted_s": 0.0, "whole_plain": 0})
            b = r["caps"][0]
            s["builds"] += 1
            s["seconds"] += b["seconds"]
            same = b["code"] == r["plain"]["code"]
            s["plain" if same else "new"] += 1
            s["wasted_s"] += b["seconds"] if same else 0
            s["whole_plain"] += b["whole"] == r["plain"]["whole"]
    print(f"\n{'corpus':<9} {'class':<24} {'builds':>6} {'plain':>6} {'dup':>5} {'new':>5} {'ptxas s':>8} {'repeat s':>8} {'whole=plain':>11}")
    for (c, cls), s in sorted(stats.items()):
        print(f"{c:<9} {cls:<24} {s['builds']:>6} {s['plain']:>6} {s['dup']:>5} {s['new']:>5} {s['seconds']:>8.1f} {s['wasted_s']:>8.1f} "
              f"{s['whole_plain']:>11}")
    # The rule a sweep from the highest cap down could skip builds by: a
    # cap C under a cap C' already built whose build used fewer than C
    # registers gives C''s code again.
    held, broke, saved = 0, [], 0.0
    for r in searched:
        built = []
        for b in r["caps"]:
            twin = next((c for c in built if c["cap"] > b["cap"] > c["registers"]), None)
            if twin is not None:
                if twin["code"] == b["code"]:
                    held += 1
                    saved += b["seconds"]
                else:
                    broke.append((r["file"], r["symbol"][:50], twin["cap"], twin["registers"], b["cap"], b["registers"]))
            built.append(b)
    print(f"\nrule 'cap C < an earlier cap C' whose build used < C registers: C''s code': held {held}, broke {len(broke)} "
          f"(ptxas s of the builds it would skip: {saved:.1f})")
    for o in broke:
        print("   broke:", *o)
    # The same, for caps of 128 registers or more.
    held, broke = 0, 0
    for r in searched:
        built = []
        for b in r["caps"]:
            twin = next((c for c in built if c["cap"] > b["cap"] > c["registers"] and b["cap"] >= 128), None)
            if twin is not None:
                held += twin["code"] == b["code"]
                broke += twin["code"] != b["code"]
            built.append(b)
    print(f"the same for caps of 128 registers or more: held {held}, broke {broke}")
    # Caps at or above plain's registers that gave code no build before them had.
    odd = [(r["file"], r["symbol"][:50], r["plain"]["registers"], b["cap"], b["registers"]) for r in searched for b, v in verdicts(r)
           if b["cap"] >= r["plain"]["registers"] and v == "new"]
    if odd:
        print("\ncaps at or above plain's registers whose code no build before had (file, kernel, plain registers, cap, cap's registers):")
        for o in odd:
            print("  ", *o)


if __name__ == "__main__":
    main()
