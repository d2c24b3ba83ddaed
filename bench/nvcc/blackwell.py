#!/usr/bin/env python3
"""`regtune report` against `ptxas -v` on the Blackwell targets (issue 38,
item 1), over every kernel file of the development corpus, for both
compilers: the nvcc-built corpus (bench/nvcc/corpus.py,
build/corpus-nvcc/programs.json) and the clang-built one
(bench/calibrate/corpus.py, build/corpus/programs.json), each on sm_100,
sm_103 and sm_120, with sm_90 as the control.

Per kernel file and arch:

    nvcc   regtune report --compiler nvcc --offload-arch sm_X FILE -- FLAGS
           against  nvcc FLAGS -Xptxas -v -cubin FILE   (nvcc's own ptxas line)
           FLAGS: the unit's "regtune_args" (the program's own nvcc flags),
           its -arch=sm_90 made -arch=sm_X
    clang  regtune report --offload-arch sm_X FILE -- FLAGS
           against  clang++-22 -x cuda --cuda-device-only -c --cuda-gpu-arch=sm_X
                    --cuda-path=CUDA FLAGS -Xcuda-ptxas -v FILE
           (clang runs CUDA's ptxas, CUDA/bin/ptxas: the one regtune uses,
           `regtune doctor`'s "CUDA for NVPTX targets")

and per kernel compares registers, spill stores, spill loads, stack frame,
shared memory and barriers, and the reported warps per SM against the
occupancy the CUDA rules give for ptxas's numbers at the block size report
used (the kernel's launch bounds, else 256): the limits of OCC_RULES below,
combined as NVIDIA's calculator (cuda_occupancy.h,
cudaOccMaxActiveBlocksPerMultiprocessor, default device state) combines
them (the rules are first checked against that header itself, CUDA's
and the nvcc tree's, compiled into tests/nvptx/occupancy_oracle.c). A
kernel matches when every field is equal.

    python3 bench/nvcc/blackwell.py [--corpus nvcc clang] [--arch sm_90 sm_100 sm_103 sm_120]
                                    [--only P...] [-j N] [-o OUT] [--cache DIR] [--cached-only]

nvcc's corpus was built by bootstrap's nvcc 13.5 over CUDA 13.0's runtime
headers; run the script where /opt/regtune-nvcc is that tree:

    unshare -m bash -c 'mount --bind /tmp/regtune-nvcc-13.0rt /opt/regtune-nvcc && \\
        nice -n 5 python3 bench/nvcc/blackwell.py'

Writes the table and totals to OUT (default
bench/nvcc/results/blackwell-report-vs-ptxas-<date>.txt; rewritten after
each check, marked partial until all are done) and stdout; exits 1 when any
kernel mismatches, 2 when all matched but some checks were not done. Checks run Blackwell first, sm_90 last; each one's
result is kept in --cache (default $TMPDIR/regtune-blackwell-vs-ptxas) and
reused by a later run with the same tools, regtune binary and flags;
--cached-only writes the table of the cached checks alone (a run stopped
early: its results file then says which checks were done). Programs still packed are unpacked first (corpus.py's unpack).
"""

import argparse
import concurrent.futures
import datetime
import hashlib
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
BUILD = os.path.join(REPO, "bench", "calibrate", "build")
ARCHS = ["sm_90", "sm_100", "sm_103", "sm_120"]
FIELDS = ["regs", "spill_st", "spill_ld", "stack", "smem", "barriers", "warps"]

KB = 1024
# The CUDA occupancy rules per compute capability: CUDA C++ Programming Guide,
# "Compute Capabilities", Table 30 (technical specifications per compute
# capability: resident warps, blocks and threads per SM, 64 K 32-bit registers
# per SM and per block, 255 per thread, shared memory per SM and per block,
# the 1 KB the driver reserves per block), and NVIDIA's calculator
# cuda_occupancy.h (CUDA 12.9 and 13.0, identical for 9.x, 10.x and 12.x) for
# the allocation units (registers: 256 per warp, over 4 sub-partitions;
# shared memory: 128 B), the carveouts and named barriers per block slot, and
# sm_120's 24 block slots. (CCCL's arch traits give 12.x 32 resident blocks
# per SM, cuda_occupancy.h of CUDA 12.9 and 13.0, and so regtune, 24: the
# totals list the kernels where the two would differ; only blocks of 64
# threads or fewer can.)
OCC_RULES = {
    #          warps/SM blocks/SM smem/SM  barriers per block slot
    "sm_90": (64, 32, 228 * KB, 2),
    "sm_100": (64, 32, 228 * KB, 2),
    "sm_103": (64, 32, 228 * KB, 2),
    "sm_120": (48, 24, 100 * KB, 1),
}
REGS_PER_SM = 65536
REG_UNIT = 256
SUB_PARTITIONS = 4
MAX_REGS_PER_THREAD = 255
SMEM_UNIT = 128
SMEM_PER_BLOCK = 48 * KB
RESERVED_SMEM = KB
SM_120_GUIDE_BLOCKS = 32


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def round_up(x, unit):
    return -(-x // unit) * unit


def warps_per_sm(arch, regs, smem, barriers, block, block_slots=None):
    """Resident warps per SM by the rules above (no dynamic shared memory);
    `block_slots` in place of the arch's resident blocks per SM."""
    max_warps, max_blocks, smem_per_sm, bars_per_slot = OCC_RULES[arch]
    max_blocks = block_slots or max_blocks
    if block > 1024:
        return 0
    wpb = -(-block // 32)
    limits = [max_warps // wpb, max_blocks]
    per_warp = round_up(regs * 32, REG_UNIT)
    if regs > MAX_REGS_PER_THREAD or per_warp * wpb > REGS_PER_SM or per_warp * round_up(wpb, SUB_PARTITIONS) > REGS_PER_SM:
        limits.append(0)
    elif per_warp:
        limits.append((REGS_PER_SM // SUB_PARTITIONS // per_warp) * SUB_PARTITIONS // wpb)
    per_block = round_up(smem + RESERVED_SMEM, SMEM_UNIT)
    limits.append(0 if per_block > SMEM_PER_BLOCK + RESERVED_SMEM else smem_per_sm // per_block)
    if barriers:
        limits.append(max_blocks * bars_per_slot // barriers)
    return min(limits) * wpb


def rules_against_calculator(include):
    """The rules above against NVIDIA's calculator itself: cuda_occupancy.h
    from `include`, compiled into tests/nvptx/occupancy_oracle.c (the device
    properties regtune's tests give it), over a grid of registers, block
    sizes, shared memory and barriers. Returns (cases, disagreements)."""
    cc = {"sm_90": (9, 0), "sm_100": (10, 0), "sm_103": (10, 3), "sm_120": (12, 0)}
    cases = [(a, r, b, s, bar) for a in cc for r in list(range(1, 256, 3)) + [255]
             for b in [32, 64, 96, 128, 192, 256, 320, 384, 512, 640, 768, 1024]
             for s in [0, 1000, 4096, 8192, 20480, 47104, 48 * KB, 48 * KB + 1] for bar in [0, 1, 2, 16]]
    with tempfile.TemporaryDirectory() as tmp:
        oracle = os.path.join(tmp, "oracle")
        subprocess.run(["clang-22", "-O1", "-w", "-x", "c", f"-I{include}", os.path.join(REPO, "tests", "nvptx", "occupancy_oracle.c"),
                        "-o", oracle], check=True)
        text = "".join(f"{cc[a][0]} {cc[a][1]} {r} {b} {s} {bar}\n" for a, r, b, s, bar in cases)
        out = subprocess.run([oracle], input=text, capture_output=True, text=True, check=True).stdout.split()
    bad = sum(int(n) * -(-b // 32) != warps_per_sm(a, r, s, bar, b) for (a, r, b, s, bar), n in zip(cases, out))
    return len(cases), bad


def parse_ptxas(text):
    """`ptxas -v`'s report: per entry function, its numbers."""
    entries, props, current = {}, {}, None
    num = lambda line, what: int(m.group(1)) if (m := re.search(r"(\d+) bytes " + what, line)) else 0
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if m := re.search(r"Compiling entry function '([^']+)'", line):
            current = m.group(1)
            entries[current] = {"regs": 0, "barriers": 0, "smem": 0}
        elif m := re.search(r"Function properties for (\S+)", line):
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            props[m.group(1)] = {"stack": num(nxt, "stack frame"), "spill_st": num(nxt, "spill stores"), "spill_ld": num(nxt, "spill loads")}
        elif current and (m := re.search(r"Used (\d+) registers", line)):
            b = re.search(r"used (\d+) barriers", line)
            entries[current].update(regs=int(m.group(1)), barriers=int(b.group(1)) if b else 0, smem=num(line, "smem"))
            current = None
    for name, e in entries.items():
        e.update(props.get(name, {"stack": 0, "spill_st": 0, "spill_ld": 0}))
    return entries


def with_arch(args, arch):
    out, skip = [], False
    for a in args:
        if skip:
            out.append(arch)
            skip = False
        elif a.startswith("-arch=") or a.startswith("--gpu-architecture="):
            out.append(a.split("=")[0] + "=" + arch)
        else:
            out.append(a)
            skip = a in ("-arch", "--gpu-architecture")
    return out


def run(cmd):
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)


def check(job):
    """One kernel file on one arch: rows of (kernel, fields report, fields ptxas)."""
    corpus, program, unit, arch, regtune, nvcc, cuda = job
    args = with_arch(unit["regtune_args"], arch) if corpus == "nvcc" else unit["regtune_args"]
    rep = run([regtune, "report", "--format", "json", "--offload-arch", arch] + (["--compiler", nvcc] if corpus == "nvcc" else [])
              + [unit["file"], "--"] + args)
    with tempfile.TemporaryDirectory() as tmp:
        cubin = os.path.join(tmp, "k.cubin")
        if corpus == "nvcc":
            truth = run([nvcc] + args + ["-Xptxas", "-v", "-cubin", unit["file"], "-o", cubin])
        else:
            truth = run(["clang++-22", "-x", "cuda", "--cuda-device-only", "-c", f"--cuda-gpu-arch={arch}", f"--cuda-path={cuda}",
                         "-Wno-unknown-cuda-version"] + args + ["-Xcuda-ptxas", "-v", unit["file"], "-o", cubin])
    errors = []
    if rep.returncode != 0:
        errors.append("report failed: " + " | ".join(rep.stderr.strip().splitlines()[-2:]))
    if truth.returncode != 0:
        errors.append("ptxas -v build failed: " + " | ".join(truth.stderr.strip().splitlines()[-2:]))
    if errors:
        return job, None, errors
    ptxas = parse_ptxas(truth.stderr + truth.stdout)
    rows = []
    kernels = json.loads(rep.stdout)["kernels"]
    for k in kernels:
        n, u = k["nvidia"], k["usage"]
        got = {"regs": n["registers"], "spill_st": n["spill_store_bytes"], "spill_ld": n["spill_load_bytes"],
               "stack": n["stack_frame_bytes"], "smem": n["shared_bytes"], "barriers": n["barriers"], "warps": u["occupancy"]}
        p = ptxas.get(k["symbol"])
        want = None
        if p:
            want = dict(p, warps=warps_per_sm(arch, p["regs"], p["smem"], p["barriers"], n["block_size"]))
        rows.append((k["symbol"], k["name"], n["block_size"], got, want))
    for sym in set(ptxas) - {k["symbol"] for k in kernels}:
        rows.append((sym, sym, None, None, dict(ptxas[sym], warps=None)))
    return job, rows, []


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", nargs="*", default=["nvcc", "clang"], choices=["nvcc", "clang"])
    p.add_argument("--arch", nargs="*", default=ARCHS, choices=ARCHS)
    p.add_argument("--only", nargs="*", help="programs (default: all)")
    p.add_argument("--regtune", default=os.path.join(REPO, "target", "release", "regtune"))
    p.add_argument("-j", "--jobs", type=int, default=2)
    p.add_argument("--cached-only", action="store_true", help="run no check: the table of those --cache holds")
    p.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "regtune-blackwell-vs-ptxas"),
                   help="each check's result, reused by a run with the same tools, regtune binary and flags")
    p.add_argument("-o", "--output", default=os.path.join(HERE, "results", f"blackwell-report-vs-ptxas-{datetime.date.today()}.txt"))
    a = p.parse_args()
    C = load("calibrate_corpus", os.path.join(REPO, "bench", "calibrate", "corpus.py"))
    N = load("nvcc_corpus", os.path.join(HERE, "corpus.py"))
    cuda, nvcc = C.cuda_root(), N.nvcc_path()
    tools = {
        "regtune": os.path.relpath(a.regtune, REPO),
        "nvcc": run([nvcc, "--version"]).stdout.strip().splitlines()[-1],
        "nvcc runtime headers": next((l.split()[-1] for l in open(os.path.join(os.path.dirname(os.path.dirname(nvcc)), "include", "cuda_runtime_api.h"))
                                      if l.startswith("#define CUDART_VERSION")), "?"),
        "clang": run(["clang++-22", "--version"]).stdout.splitlines()[0],
        "clang's ptxas": run([os.path.join(cuda, "bin", "ptxas"), "--version"]).stdout.strip().splitlines()[-1],
    }
    calculators = []
    for include in [os.path.join(cuda, "include"), os.path.join(os.path.dirname(os.path.dirname(nvcc)), "include")]:
        version = next((l.split()[-1] for l in open(os.path.join(include, "cuda_runtime_api.h")) if l.startswith("#define CUDART_VERSION")), "?")
        n, bad = rules_against_calculator(include)
        calculators.append(f"cuda_occupancy.h of {include} (CUDART_VERSION {version}): {n - bad}/{n} cases agree")
    jobs = []
    for corpus in a.corpus:
        root = os.path.join(BUILD, "corpus-nvcc" if corpus == "nvcc" else "corpus")
        programs = json.load(open(os.path.join(root, "programs.json")))
        for name, entry in programs.items():
            if not entry.get("built") or (a.only and name not in a.only):
                continue
            units = [u for u in entry["units"] if u.get("kernels")]
            if any(not os.path.exists(os.path.join(REPO, u["file"])) for u in units):
                C.unpack(name, root)
            for u in units:
                for arch in a.arch:
                    jobs.append((corpus, name, u, arch, a.regtune, nvcc, cuda))
    # Blackwell first, the sm_90 control last: a run stopped early has the targets.
    order = {arch: i for i, arch in enumerate(["sm_100", "sm_120", "sm_103", "sm_90"])}
    jobs.sort(key=lambda j: order[j[3]])
    os.makedirs(a.cache, exist_ok=True)
    versions = "|".join(tools.values()) + f"|{os.path.getmtime(a.regtune)}"

    def cached(job):
        key = hashlib.sha256(json.dumps([versions, job[0], job[2]["file"], job[2]["regtune_args"], job[3]]).encode()).hexdigest()[:24]
        path = os.path.join(a.cache, key + ".json")
        if os.path.exists(path):
            rows, errors = json.load(open(path))
            return job, rows, errors
        if a.cached_only:
            return job, None, None
        job, rows, errors = check(job)
        json.dump([rows, errors], open(path + ".part", "w"))
        os.replace(path + ".part", path)
        return job, rows, errors

    results = []
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
        for done in concurrent.futures.as_completed([pool.submit(cached, j) for j in jobs]):
            job, rows, errors = done.result()
            if rows is None and errors is None:
                continue
            results.append((job, rows, errors))
            print(f"{job[0]} {job[1]} {os.path.basename(job[2]['file'])} {job[3]}: "
                  + ("; ".join(errors) if errors else f"{len(rows)} kernels"), file=sys.stderr)
            write(a, tools, calculators, results, len(jobs), quiet=True)
    sys.exit(write(a, tools, calculators, results, len(jobs)))


def write(a, tools, calculators, results, planned, quiet=False):
    """The table and totals of the jobs done so far into a.output (and
    stdout unless quiet); returns the exit status (0: every kernel matched)."""
    lines = [f"regtune report vs ptxas -v on Blackwell (sm_90 the control), {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
             "by bench/nvcc/blackwell.py" + ("" if len(results) == planned else f" (partial: {len(results)} of {planned} file x arch checks done)")]
    if len(results) < planned:
        done = {(j[0], j[2]["file"], j[3]) for j, _, _ in results}
        lines.append("  checks done per corpus and arch: " + ", ".join(
            f"{c} {x} {sum(1 for k in done if k[0] == c and k[2] == x)}" for c in a.corpus for x in ARCHS if x in a.arch))
    lines += [f"  {k}: {v}" for k, v in tools.items()]
    lines += ["fields: regs, spill stores, spill loads, stack frame, static smem, barriers (all from ptxas -v), warps/SM (report's",
              "occupancy vs the CUDA rules applied to ptxas's numbers at report's block size); '=' every field equal",
              "the rules (OCC_RULES) against NVIDIA's calculator:"] + [f"  {c}" for c in calculators] + [""]
    head = f"{'corpus':6} {'program':22} {'kernel':44} {'arch':7} {'block':>5} {'result':8} report (regs/st/ld/stack/smem/bar/warps) | ptxas+rules / mismatched fields"
    lines.append(head)
    total, matched, failed, slots = {}, {}, [], []
    archs = [x for x in ARCHS if x in a.arch]
    key_of = lambda r: (r[0][0], r[0][1], r[0][2]["file"], archs.index(r[0][3]))
    for (corpus, program, unit, arch, *_), rows, errors in sorted(results, key=key_of):
        if errors:
            failed.append(f"{corpus} {program} {unit['file']} {arch}: {'; '.join(errors)}")
            continue
        for sym, name, block, got, want in rows:
            key = (corpus, arch)
            total[key] = total.get(key, 0) + 1
            ok = got is not None and want is not None and all(got[f] == want[f] for f in FIELDS)
            matched[key] = matched.get(key, 0) + ok
            if arch == "sm_120" and want and block:
                guide = warps_per_sm(arch, want["regs"], want["smem"], want["barriers"], block, SM_120_GUIDE_BLOCKS)
                if guide != want["warps"]:
                    slots.append(f"{corpus} {program} {name} (block {block}): {want['warps']} warps with 24 slots, {guide} with 32")
            fmt = lambda d: "/".join(str(d[f]) for f in FIELDS) if d else "-"
            short = name if len(name) <= 44 else name[:41] + "..."
            detail = fmt(got) + (" =" if ok else " | " + fmt(want) + " " + ",".join(f for f in FIELDS if got and want and got[f] != want[f]))
            lines.append(f"{corpus:6} {program:22} {short:44} {arch:7} {block or '-':>5} {'match' if ok else 'MISMATCH':8} {detail}")
    lines += ["", "totals (kernels matched / kernels):"]
    for corpus in a.corpus:
        cells = [f"{arch} {matched.get((corpus, arch), 0)}/{total.get((corpus, arch), 0)}" for arch in archs]
        lines.append(f"  {corpus:6} " + ", ".join(cells))
    all_total, all_matched = sum(total.values()), sum(matched.values())
    lines.append(f"  all    {all_matched}/{all_total} kernel x arch pairs match; {len(failed)} file x arch checks failed to build")
    lines += [f"  failed: {f}" for f in failed]
    lines.append(f"  sm_120 kernels whose warps/SM 32 block slots (CCCL) would change from 24's (cuda_occupancy.h): {len(slots)}")
    lines += [f"    {x}" for x in slots]
    text = "\n".join(lines) + "\n"
    os.makedirs(os.path.dirname(a.output), exist_ok=True)
    open(a.output + ".part", "w").write(text)
    os.replace(a.output + ".part", a.output)
    if not quiet:
        print(text, end="")
    return 1 if all_matched != all_total or failed else 2 if len(results) < planned else 0


if __name__ == "__main__":
    main()
