#!/usr/bin/env python3
"""The measured search on the development corpus, CPU half: for every program
bench/calibrate/corpus.py built, `regtune tune` (sm_90) keeps every
candidate of every kernel (each occupancy step's register cap, spilling or
not, alone, with the rewrites tune found and with spilling to shared memory;
unroll caps), and the program's hand sweep (`--maxrregcount=R` for each R,
built by corpus.py) is listed beside them as `--compare` builds. run.sh then
times all of it inside each program with `regtune measure`, in one GPU run.

    python3 bench/search/build.py [--regtune target/release/regtune] [--candidates 16] [--only P...] [-j 2] [--block-size N]
        [--retune DIR]

Writes bench/search/build/ (ignored by git, carried to the GPU machine):

    build/plan.json                 per program: binary, args, cwd, db, the --compare builds
    build/<program>/db/             regtune tune's db and candidates (decisions.code/)
    build/bin/, build/lib/          regtune, regtune-replay, the interposer (stripped), CUPTI

The corpus itself (bench/calibrate/build/corpus) travels too; its programs
stay out of git (bench/calibrate/corpus.py fetches and builds them).

--compiler nvcc: the same for the corpus built by nvcc (bench/nvcc/corpus.py,
bench/calibrate/build/corpus-nvcc): each kernel file tuned with `regtune tune
--compiler NVCC` and its own nvcc flags, so the candidates are nvcc's code
(nvcc's cubin is plain, each occupancy step's cap a ptxas run); the hand
sweep's builds are `nvcc -maxrregcount=R` (`r<R>-<unit>`, `rplain-<unit>`),
and clang's plain cubin of the same file (bench/calibrate/corpus.py's sweep,
copied beside the db) is timed beside them as `clang-plain-<unit>`:

    python3 bench/search/build.py --compiler nvcc [--out bench/nvcc/search] [--batches N] ...
    python3 bench/search/build.py --compiler nvcc --replan           # the compare builds again, no tuning
    python3 bench/search/build.py --compiler nvcc --batches-only --batches 2

    bench/nvcc/search/plan.json             as above; plan-<k>.json: the programs in batches (--batches)
    bench/nvcc/search/<program>/db.tar.xz   tune's db of nvcc's candidates (packed: --pack, the default here)
    bench/nvcc/search/<program>/clang/      clang's plain cubin of each kernel file (a static kernel's
                                            `_ZL` name made nvcc's `_Z` one, so measure finds it)
    bench/nvcc/search/tools.tar.xz          the tools (bin/, lib/ as above, packed)
    bench/nvcc/search/build.txt             what travels and its size, what was not built, notes

and `bench/search/run.sh bench/nvcc/search` times it (carry bench/nvcc/search
and bench/calibrate/build/corpus-nvcc; run.sh unpacks what is packed).
"""

import argparse
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(HERE, "build")
CORPUS = os.path.join(REPO, "bench", "calibrate", "build", "corpus")
NVCC_CORPUS = os.path.join(REPO, "bench", "calibrate", "build", "corpus-nvcc")
NVCC_OUT = os.path.join(REPO, "bench", "nvcc", "search")
ARCH = "sm_90"
COMPILER = None  # --compiler nvcc: nvcc's path, given to tune as --compiler


def tune(regtune, name, program, candidates, evidence, block_size=None, measured=None, budget=None):
    """Tune the program's kernel files into its own db; the wall time.
    `measured`: a db `regtune measure` wrote for the program, re-tuned (its
    measurements kept where the code is the same; its launches' block sizes
    leave out the caps at which no block fits)."""
    db = os.path.join(OUT, name, "db", "decisions.json")
    if os.path.isdir(os.path.dirname(db)):
        shutil.rmtree(os.path.dirname(db))
    os.makedirs(os.path.dirname(db))
    if measured:
        shutil.copy(measured, db)
    started = time.time()
    log = open(os.path.join(OUT, name, "tune.log"), "w")
    for unit in (u for u in program["units"] if u.get("kernels")):
        cmd = [regtune, "tune", "--offload-arch", ARCH, "--candidates", str(candidates), "--evidence", evidence,
               "--format", "json", "--db", db] + (["--compiler", COMPILER] if COMPILER else []) \
            + (["--block-size", str(block_size)] if block_size else []) \
            + (["--time-budget", str(budget)] if budget else []) \
            + [unit["file"], "--"] + unit["regtune_args"]
        r = subprocess.run(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=log, text=True)
        with open(os.path.join(OUT, name, "tune." + os.path.basename(unit["file"]) + ".json"), "w") as f:
            f.write(r.stdout)
        if r.returncode != 0:
            print(f"{name}: tune of {unit['file']} exited {r.returncode} (see {log.name})", file=sys.stderr)
    return db, time.time() - started


def compare_builds(program, db):
    """The hand sweep's cubins that differ from plain for some kernel of
    the db, as `--compare` takes them: `r<R>-<unit>=PATH`; and the sweep's
    own plain build, `rplain-<unit>`, a control: the same code as regtune's
    plain candidate from another module, so it must time as plain does."""
    kernels = {e["symbol"] for e in json.load(open(db))["kernels"].values()} if os.path.isfile(db) else set()
    out = []
    for i, unit in enumerate(program["units"]):
        regs = unit.get("sweep_registers", {})
        plain = regs.get("plain", {})
        seen = set()  # a cap that changes no byte of the unit is plain again: timed once, as the control
        for r, path in unit.get("sweep", {}).items():
            if r == "plain" and any(s in plain for s in kernels):
                out.append(f"rplain-{i}={path}")
            elif r.isdigit() and any(s in regs.get(r, {}) for s in kernels):
                code = open(os.path.join(REPO, path), "rb").read()
                if code not in seen and code != open(os.path.join(REPO, unit["sweep"]["plain"]), "rb").read():
                    seen.add(code)
                    out.append(f"r{r}-{i}={path}")
    return out


def symbols_of(path):
    """The kernels (symbols) of a cubin."""
    return set(calibrate_corpus().cubin_registers(path))


def calibrate_corpus():
    """bench/calibrate/corpus.py as a module."""
    import importlib.util
    if "calibrate_corpus" not in sys.modules:
        spec = importlib.util.spec_from_file_location("calibrate_corpus", os.path.join(REPO, "bench", "calibrate", "corpus.py"))
        mod = importlib.util.module_from_spec(spec)
        sys.modules["calibrate_corpus"] = mod
        spec.loader.exec_module(mod)
    return sys.modules["calibrate_corpus"]


def internal_names(theirs, ours):
    """{clang's name: nvcc's} for kernels of internal linkage (static, a
    static template): clang mangles them `_ZL...`, nvcc `_Z...`."""
    return {t: "_Z" + t[3:] for t in theirs if t.startswith("_ZL") and t not in ours and "_Z" + t[3:] in ours}


def rename_symbols(data, names):
    """A cubin with symbols renamed, each new name no longer than its old:
    written in place in the string tables (the old name's bytes, then
    NULs), so no offset moves; `.text.<name>`, `.nv.info.<name>`, ... follow
    in the section names."""
    import struct
    d = bytearray(data)
    shoff, = struct.unpack_from("<Q", d, 0x28)
    shentsize, shnum, _ = struct.unpack_from("<HHH", d, 0x3a)
    for i in range(shnum):
        _, kind, _, _, off, size = struct.unpack_from("<IIQQQQ", d, shoff + i * shentsize)
        if kind != 3:  # SHT_STRTAB
            continue
        table = bytes(d[off:off + size])
        for old, new in names.items():
            assert len(new) <= len(old)
            for prefix in (b"\0", b"."):  # a name of its own, or the end of a section's name
                table = table.replace(prefix + old.encode() + b"\0", prefix + new.encode() + b"\0" * (len(old) - len(new) + 1))
        d[off:off + size] = table
    return bytes(d)


def clang_builds(name, program, db, clang_programs):
    """--compiler nvcc: clang's plain cubin of each of the program's kernel
    files (bench/calibrate/corpus.py's sweep), copied beside the db, as
    `--compare clang-plain-<unit>=PATH` where it has a kernel of the db;
    and the units clang has no plain cubin for (a line each)."""
    kernels = {e["symbol"] for e in json.load(open(db))["kernels"].values()} if os.path.isfile(db) else set()
    clang = clang_programs.get(name) or {}
    if not clang.get("built"):
        return [], [f"{name}: no clang build of it (bench/calibrate/corpus.py build)"]
    src = lambda entry, u: os.path.relpath(u["file"], os.path.join(os.path.dirname(entry["binary"]), "src"))
    theirs = {src(clang, u): u for u in clang["units"] if u.get("sweep", {}).get("plain")}
    out, missing = [], []
    for i, unit in enumerate(program["units"]):
        if not unit.get("kernels"):
            continue
        u = theirs.get(src(program, unit))
        if not u:
            missing.append(f"{name}: no clang plain cubin of {src(program, unit)}")
            continue
        found = os.path.join(REPO, u["sweep"]["plain"])
        clang_symbols = symbols_of(found)
        # A static kernel has another name under each compiler: clang's cubin is given nvcc's names.
        renamed = internal_names(clang_symbols, symbols_of(os.path.join(REPO, unit["sweep"]["plain"])) if unit.get("sweep") else kernels)
        if not kernels & ((clang_symbols - set(renamed)) | set(renamed.values())):
            missing.append(f"{name}: clang's {src(program, unit)} has none of nvcc's kernels by name")
            continue
        dest = os.path.join(OUT, name, "clang", os.path.basename(found))
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        open(dest, "wb").write(rename_symbols(open(found, "rb").read(), renamed))
        if renamed:
            assert symbols_of(dest) == (clang_symbols - set(renamed)) | set(renamed.values()), dest
            missing.append(f"{name}: clang's {src(program, unit)}: {len(renamed)} static kernels given nvcc's names (_ZL... as _Z...)")
        out.append(f"clang-plain-{i}={os.path.relpath(dest, REPO)}")
    return out, missing


def write_batches(plan, n):
    """plan-1.json ... plan-<n>.json: the programs in n batches of about
    equal weight, each for one GPU call (run.sh: PLAN=...). The weight
    stands in for a program's GPU time: its `--compare` builds and
    candidates, each replayed on every measured launch, and its tune time
    (large kernels take longest both to tune and to replay)."""
    def weight(name):
        db = os.path.join(REPO, plan[name]["db"])
        entries = json.load(open(db))["kernels"].values() if os.path.isfile(db) else []
        return plan[name].get("tune_seconds", 0) + 2 * len(plan[name]["compare"]) \
            + sum(len(e.get("candidates", [])) for e in entries)
    batches = [[] for _ in range(n)]
    for name in sorted(plan, key=lambda m: -weight(m)):
        min(batches, key=lambda b: sum(weight(m) for m in b)).append(name)
    for k, names in enumerate(batches, 1):
        json.dump({m: plan[m] for m in names}, open(os.path.join(OUT, f"plan-{k}.json"), "w"), indent=1)
        print(f"plan-{k}.json: {' '.join(names)}", file=sys.stderr)


def pack(root, names, archive):
    """root/<names> into one xz archive (solid: a file's candidates share
    most of their bytes), the folders removed; run.sh unpacks it."""
    import tarfile
    with tarfile.open(archive + ".part", "w:xz", preset=9) as t:
        for name in names:
            t.add(os.path.join(root, name), arcname=name)
    os.replace(archive + ".part", archive)
    for name in names:
        shutil.rmtree(os.path.join(root, name))


def carried_size(paths):
    """Bytes of the files under these paths."""
    return sum(os.path.getsize(os.path.join(d, f)) for p in paths for d, _, fs in os.walk(p) for f in fs
               if not os.path.islink(os.path.join(d, f)))


def main():
    global OUT, CORPUS, COMPILER
    p = argparse.ArgumentParser()
    p.add_argument("--compiler", choices=["clang", "nvcc"], default="clang",
                   help="nvcc: the corpus built by nvcc (bench/nvcc/corpus.py), tuned as nvcc builds it, "
                        "clang's plain code of each kernel beside it (default out: bench/nvcc/search)")
    p.add_argument("--out", help="where the plan, the dbs and the tools go (default: bench/search/build; "
                                 "with --compiler nvcc, bench/nvcc/search)")
    p.add_argument("--batches", type=int, default=1,
                   help="also write plan-1.json ... plan-N.json, the programs split by tune time, each for one "
                        "GPU run (run.sh: PLAN=...)")
    p.add_argument("--pack", action=argparse.BooleanOptionalAction, default=None,
                   help="pack the tools (tools.tar.xz) and each db (<program>/db.tar.xz), and the corpus again, "
                        "so that they travel within the device tool's 64 MiB; run.sh unpacks them "
                        "(default: with --compiler nvcc, whose cubins carry line tables)")
    p.add_argument("--replan", action="store_true",
                   help="tune nothing: the compare builds and plan.json again from the dbs there (after the corpus changed)")
    p.add_argument("--batches-only", action="store_true", help="write plan-<k>.json (--batches) from plan.json; tune nothing")
    p.add_argument("--regtune", default=os.path.join(REPO, "target", "release", "regtune"))
    p.add_argument("--candidates", type=int, default=16)
    p.add_argument("--evidence", default=os.path.join(REPO, "tests", "fixtures", "evidence-none.json"),
                   help="what tune may apply unasked: none, so every class is a candidate, not a decision")
    p.add_argument("--only", nargs="*")
    p.add_argument("--block-size", type=int,
                   help="state that every launch has at most N threads (tune's --block-size): adds the shared-memory "
                        "spilling candidates; a program that launches more fails those candidates, which measure rejects")
    p.add_argument("--retune", metavar="DIR",
                   help="re-tune from the measured dbs run.sh packed (DIR/<program>/db/decisions.json, "
                        "search-out.tar.gz unpacked): measurements of unchanged code are kept, and the block sizes "
                        "the launches used leave out caps at which no block fits")
    p.add_argument("--time-budget", type=int, default=600,
                   help="tune's --time-budget per file: room for every candidate, so the sets do not depend on how "
                        "busy the machine is (tune's default, 8x the plain compile, left three programs' kernels "
                        "without candidates when two tunes shared two cores)")
    p.add_argument("-j", type=int, default=2)
    a = p.parse_args()
    regtune = os.path.abspath(a.regtune)
    corpus_py = [sys.executable, os.path.join(REPO, "bench", "calibrate", "corpus.py")]
    clang_programs = {}
    if a.compiler == "nvcc":
        OUT, CORPUS = NVCC_OUT, NVCC_CORPUS
        COMPILER = next((c for c in [os.environ.get("REGTUNE_NVCC"), "/opt/regtune-nvcc/bin/nvcc"] if c and os.path.isfile(c)), None)
        if not COMPILER:
            sys.exit("no nvcc: run ci/bootstrap.sh (or set REGTUNE_NVCC)")
        clang_manifest = os.path.join(REPO, "bench", "calibrate", "build", "corpus", "programs.json")
        clang_programs = json.load(open(clang_manifest)) if os.path.exists(clang_manifest) else {}
        if not clang_programs:
            print("no clang corpus (bench/calibrate/corpus.py build): no clang-plain builds", file=sys.stderr)
    OUT = os.path.abspath(a.out) if a.out else OUT
    if a.batches_only:
        if not os.path.isfile(os.path.join(OUT, "plan.json")) or a.batches < 2:
            sys.exit("--batches-only: needs --batches N (N > 1) and a plan.json")
        plan = json.load(open(os.path.join(OUT, "plan.json")))
        unpacked = []  # packed dbs (--pack) are weighed unpacked, then removed again
        for n in plan:
            if os.path.exists(os.path.join(OUT, n, "db.tar.xz")) and not os.path.isdir(os.path.join(OUT, n, "db")):
                subprocess.run(["tar", "-xJf", os.path.join(OUT, n, "db.tar.xz"), "-C", os.path.join(OUT, n)], check=True)
                unpacked.append(os.path.join(OUT, n, "db"))
        write_batches(plan, a.batches)
        for d in unpacked:
            shutil.rmtree(d)
        return
    started = time.time()
    manifest = os.path.join(CORPUS, "programs.json")
    if not os.path.exists(manifest):
        sys.exit(f"{os.path.relpath(manifest, REPO)}: build the corpus first (bench/calibrate/corpus.py"
                 f"{' --compiler nvcc' if COMPILER else ''} build)")
    programs = json.load(open(manifest))
    chosen = {n: pr for n, pr in programs.items() if pr.get("built") and (not a.only or n in a.only)}
    failed = {n: pr.get("error", "?") for n, pr in programs.items() if not pr.get("built") and (not a.only or n in a.only)}
    # corpus.py leaves its programs packed; tune reads their sources.
    if any(not os.path.isdir(os.path.join(CORPUS, n)) for n in chosen):
        subprocess.run(corpus_py + (["--compiler", "nvcc"] if COMPILER else []) + ["unpack"], check=True)
    if clang_programs and any(not os.path.isdir(os.path.join(REPO, "bench", "calibrate", "build", "corpus", n))
                              for n in chosen if clang_programs.get(n, {}).get("built")):
        subprocess.run(corpus_py + ["unpack"], check=True)
    os.makedirs(OUT, exist_ok=True)
    notes = []
    plan_path = os.path.join(OUT, "plan.json")
    plan = json.load(open(plan_path)) if os.path.exists(plan_path) else {}
    for n in chosen:
        os.makedirs(os.path.join(OUT, n), exist_ok=True)
    with concurrent.futures.ThreadPoolExecutor(a.j) as pool:
        measured = {n: os.path.join(a.retune, n, "db", "decisions.json") for n in chosen} if a.retune else {}
        for n, path in measured.items():
            if not os.path.isfile(path):
                sys.exit(f"--retune: {path} is missing")
        tuner = tune
        if a.replan:  # the dbs as they are: the compare builds and the plan again
            def tuner(regtune, n, *rest):
                folder = os.path.join(OUT, n)
                if os.path.exists(os.path.join(folder, "db.tar.xz")):
                    shutil.rmtree(os.path.join(folder, "db"), ignore_errors=True)
                    subprocess.run(["tar", "-xJf", os.path.join(folder, "db.tar.xz"), "-C", folder], check=True)
                if os.path.isdir(os.path.join(folder, "clang")):
                    shutil.rmtree(os.path.join(folder, "clang"))
                return os.path.join(folder, "db", "decisions.json"), plan.get(n, {}).get("tune_seconds", 0)
        jobs = {pool.submit(tuner, regtune, n, pr, a.candidates, os.path.abspath(a.evidence), a.block_size, measured.get(n),
                            a.time_budget): n
                for n, pr in chosen.items()}
        for job in concurrent.futures.as_completed(jobs):
            n = jobs[job]
            db, seconds = job.result()
            pr = chosen[n]
            compare = compare_builds(pr, db)
            clang = []
            if COMPILER and clang_programs:
                clang, missing = clang_builds(n, pr, db, clang_programs)
                notes += missing
            plan[n] = {
                "binary": pr["binary"], "args": pr["args"], "cwd": pr["cwd"], "check": pr.get("check", ""),
                "env": {"CUDA_VISIBLE_DEVICES": "0"},
                "db": os.path.relpath(db, REPO), "compare": compare + clang, "tune_seconds": round(seconds, 1),
            }
            if COMPILER:
                plan[n]["compiler"] = "nvcc"
            entries = json.load(open(db))["kernels"] if os.path.isfile(db) else {}
            n_cands = sum(len(e.get("candidates", [])) for e in entries.values())
            print(f"{n}: {len(entries)} kernels, {n_cands} candidates, {len(compare)} sweep builds"
                  + (f", {len(clang)} clang builds" if COMPILER else "") + f", tune {seconds:.0f} s", file=sys.stderr)
            json.dump(plan, open(plan_path, "w"), indent=1)

    # The tools, stripped, and CUPTI, where run.sh looks.
    tools = os.path.dirname(regtune)
    for d in ["bin", "lib"]:
        os.makedirs(os.path.join(OUT, d), exist_ok=True)
    for name in ["regtune", "regtune-replay", "libregtune_runtime.so"]:
        dest = os.path.join(OUT, "bin", name)
        shutil.copy(os.path.join(tools, name), dest)
        subprocess.run(["llvm-strip-22", "--strip-debug", dest], check=True)
    sys.path.insert(0, os.path.join(REPO, "bench", "runtime"))
    from build import cuda_root  # noqa: E402
    shutil.copy(os.path.join(cuda_root(), "lib64", "libcupti.so.12"), os.path.join(OUT, "lib"))

    if a.pack if a.pack is not None else bool(COMPILER):
        pack(OUT, ["bin", "lib"], os.path.join(OUT, "tools.tar.xz"))
        for n in plan:
            if os.path.isdir(os.path.join(OUT, n, "db")):
                pack(os.path.join(OUT, n), ["db"], os.path.join(OUT, n, "db.tar.xz"))
        subprocess.run(corpus_py + (["--compiler", "nvcc"] if COMPILER else []) + ["pack"], check=True)

    if a.batches > 1:
        write_batches(plan, a.batches)
    # What travels to the GPU machine: the corpus (packed) and this folder; the tree itself comes on top.
    carried = [CORPUS, OUT]
    size = carried_size(carried)
    lines = [f"{os.path.relpath(d, REPO)}: {carried_size([d]) / 2**20:.1f} MiB" for d in carried]
    lines.append(f"carried in all: {size / 2**20:.1f} MiB (the device tool carries at most 64 MiB, the tracked tree included)")
    lines += [f"not built: {n}: {why}" for n, why in failed.items()] + notes
    lines.append(f"build.py took {time.time() - started:.0f} s")
    open(os.path.join(OUT, "build.txt"), "w").write("\n".join(lines) + "\n")
    print("\n".join(lines), file=sys.stderr)


if __name__ == "__main__":
    main()
