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
ARCH = "sm_90"


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
               "--format", "json", "--db", db] + (["--block-size", str(block_size)] if block_size else []) \
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


def main():
    p = argparse.ArgumentParser()
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
    programs = json.load(open(os.path.join(CORPUS, "programs.json")))
    chosen = {n: pr for n, pr in programs.items() if pr.get("built") and (not a.only or n in a.only)}
    # corpus.py leaves its programs packed; tune reads their sources.
    if any(not os.path.isdir(os.path.join(CORPUS, n)) for n in chosen):
        subprocess.run([sys.executable, os.path.join(REPO, "bench", "calibrate", "corpus.py"), "unpack"], check=True)
    os.makedirs(OUT, exist_ok=True)
    plan_path = os.path.join(OUT, "plan.json")
    plan = json.load(open(plan_path)) if os.path.exists(plan_path) else {}
    for n in chosen:
        os.makedirs(os.path.join(OUT, n), exist_ok=True)
    with concurrent.futures.ThreadPoolExecutor(a.j) as pool:
        measured = {n: os.path.join(a.retune, n, "db", "decisions.json") for n in chosen} if a.retune else {}
        for n, path in measured.items():
            if not os.path.isfile(path):
                sys.exit(f"--retune: {path} is missing")
        jobs = {pool.submit(tune, regtune, n, pr, a.candidates, os.path.abspath(a.evidence), a.block_size, measured.get(n),
                            a.time_budget): n
                for n, pr in chosen.items()}
        for job in concurrent.futures.as_completed(jobs):
            n = jobs[job]
            db, seconds = job.result()
            pr = chosen[n]
            plan[n] = {
                "binary": pr["binary"], "args": pr["args"], "cwd": pr["cwd"], "check": pr.get("check", ""),
                "env": {"CUDA_VISIBLE_DEVICES": "0"},
                "db": os.path.relpath(db, REPO), "compare": compare_builds(pr, db), "tune_seconds": round(seconds, 1),
            }
            entries = json.load(open(db))["kernels"] if os.path.isfile(db) else {}
            n_cands = sum(len(e.get("candidates", [])) for e in entries.values())
            print(f"{n}: {len(entries)} kernels, {n_cands} candidates, {len(plan[n]['compare'])} sweep builds, tune {seconds:.0f} s",
                  file=sys.stderr)
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


if __name__ == "__main__":
    main()
