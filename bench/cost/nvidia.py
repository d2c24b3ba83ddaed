#!/usr/bin/env python3
"""What `regtune tune` costs on NVIDIA next to a plain device compile.

The NVIDIA counterpart of driver/benches/tune_time.rs (gfx90a): per kernel
file of the CUDA corpora bench/calibrate built, the plain device compile and
`regtune tune` at its defaults (no --candidates, --evidence or --time-budget;
-j 1 so the ratio is work, not the machine's cores) side by side,
interleaved (plain, tune, plain, tune, ... so a noisy machine slows both
alike), their ratio, and the median, p95 and maximum ratio against issue
10's targets (median <= 3x, p95 <= 10x, no file over 20x). On NVIDIA every
occupancy step is one more ptxas run over the plain PTX, so the kernels a
file has and the steps tune built (`variants` in its JSON) say where the
time went. Not a test: nothing here fails on a slow day.

Corpora (`--corpus`):
  clang  bench/calibrate/build/corpus/programs.json (bench/calibrate/corpus.py):
         plain = clang++-22 -x cuda --cuda-device-only -Wno-unknown-cuda-version
                 --cuda-gpu-arch=ARCH --cuda-path=/opt/regtune-cuda <unit's
                 regtune_args> -c FILE -o /dev/null (the device compile
                 regtune's NVPTX backend runs, driver/src/gpu/nvptx/flags.rs)
         tune  = regtune tune --offload-arch ARCH --db TMP FILE -- <regtune_args>
  nvcc   bench/calibrate/build/corpus-nvcc/programs.json (bench/nvcc/corpus.py):
         plain = nvcc <unit's regtune_args> -cubin FILE -o /dev/null (device
                 only), and also nvcc ... -c (host and device: what tune's own
                 plain build, nvcc --keep -c, does)
         tune  = regtune tune --compiler nvcc --offload-arch ARCH --db TMP FILE -- <regtune_args>

The units' sources (and the compat headers their flags name) are copied to a
temporary tree with the same relative paths; nothing under
bench/calibrate/build/ is written. The programs must be unpacked there
(bench/calibrate/corpus.py / `python3 bench/nvcc/corpus.py unpack`).

Run from the repository root (the shared machine: nice, one job):

    nice -n 5 python3 bench/cost/nvidia.py --corpus clang --out RESULTS.txt
    # the nvcc corpus was built with an nvcc tree with 13.0 runtime headers:
    unshare -m bash -c 'mount --bind /tmp/regtune-nvcc-13.0rt /opt/regtune-nvcc && \
        nice -n 5 python3 bench/cost/nvidia.py --corpus nvcc --out RESULTS.txt'

Options: --bin (regtune to time; default target/release/regtune; its pass
plugin must sit beside it), --arch (default sm_90), --reps (timed runs per
file, default 1; medians of them), --only PROGRAM (repeatable), --json
(also write the rows here), --tune-timeout S (stop a tune run after S
seconds; its ratio is then a lower bound), --prior JSON (rows of an earlier
run: not run again, but in the table and summary). --out appends the table, the machine's load
average at start and end, and the summary.
"""

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CUDA = "/opt/regtune-cuda"
NVCC = "/opt/regtune-nvcc/bin/nvcc"
PROGRAMS = {
    "clang": "bench/calibrate/build/corpus/programs.json",
    "nvcc": "bench/calibrate/build/corpus-nvcc/programs.json",
}
# Headers the units' flags name, copied with the sources.
SHARED = ["bench/calibrate/compat", "bench/nvcc/compat", "bench/calibrate/build/corpus-nvcc/include-curand"]


def units(corpus, only):
    """(program, file, flags) for every unit with kernels, in programs.json's order."""
    doc = json.loads((ROOT / PROGRAMS[corpus]).read_text())
    for name, prog in doc.items():
        if only and name not in only:
            continue
        for u in prog.get("units", []):
            if u.get("kernels") and u.get("lang", "cuda") == "cuda":
                yield name, u["file"], list(u["regtune_args"])


def stage(rows, work):
    """Copy each unit's program sources and the shared headers under work."""
    done = set()
    for _, file, _ in rows:
        parts = Path(file).parts
        src = Path(*parts[: parts.index("src") + 1])
        if src not in done:
            if not (ROOT / src).is_dir():
                sys.exit(f"{src}: not unpacked (see bench/calibrate/corpus.py, bench/nvcc/corpus.py unpack)")
            shutil.copytree(ROOT / src, work / src)
            done.add(src)
    for d in SHARED:
        if (ROOT / d).is_dir() and not (work / d).exists():
            shutil.copytree(ROOT / d, work / d)


def timed(cmd, cwd, env=None, timeout=None):
    """Seconds and the finished process; a run past `timeout` is stopped
    (its process group: tune's ptxas too) and comes back as None."""
    start = time.monotonic()
    p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return time.monotonic() - start, None
    return time.monotonic() - start, subprocess.CompletedProcess(cmd, p.returncode, out, err)


def percentile(v, p):
    """Nearest rank, as tune_time.rs."""
    v = sorted(v)
    rank = -(-p * len(v) // 100)
    return v[min(max(int(rank), 1), len(v)) - 1]


def loadavg():
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", choices=sorted(PROGRAMS), required=True)
    ap.add_argument("--bin", default=str(ROOT / "target/release/regtune"))
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--only", action="append")
    ap.add_argument("--out")
    ap.add_argument("--json")
    ap.add_argument("--tune-timeout", type=float,
                    help="stop a tune run after this many seconds: its time and ratio are then lower bounds (>=)")
    ap.add_argument("--prior", help="rows of an earlier run of the same corpus (its --json): their files are not run again, "
                    "and they join the table and the summary")
    a = ap.parse_args()

    rows = list(units(a.corpus, a.only))
    work = Path(tempfile.mkdtemp(prefix="regtune-cost-"))
    stage(rows, work)
    env = dict(os.environ, REGTUNE_NVCC=NVCC)
    nvcc = a.corpus == "nvcc"
    lines = []

    def say(s=""):
        print(s, flush=True)
        lines.append(s)

    start_load = loadavg()
    version = subprocess.run([NVCC if nvcc else "clang++-22", "--version"], capture_output=True, text=True).stdout.strip().splitlines()
    say(f"== {a.corpus} corpus ({PROGRAMS[a.corpus]}), {a.arch}, {len(rows)} files, {time.strftime('%Y-%m-%d %H:%M:%S %Z')}")
    say(f"   regtune: {a.bin}; compiler: {version[-1] if nvcc else version[0]}; tune -j 1, defaults; reps {a.reps}")
    say(f"   load average at start: {start_load} ({os.cpu_count()} cores)")
    plain_head = "cubin s" if nvcc else "plain s"
    head = f"{'file':<58} {plain_head:>7} {'tune s':>7} {'ratio':>7} {'kernels':>7} {'steps':>5} {'budget':>6}"
    if nvcc:
        head += f" {'-c s':>6} {'ratio/-c':>8}"
    say(head)

    results = []
    prior = {r["file"]: r for r in json.loads(Path(a.prior).read_text())} if a.prior else {}

    def row_text(r):
        low = ">=" if r.get("stopped") else ""
        text = (f"{r['file']:<58} {r['plain_seconds']:>7.2f} {low + format(r['tune_seconds'], '.2f'):>7} "
                f"{low + format(r['ratio'], '.2f'):>6}x {r['kernels'] if not r.get('stopped') else '?':>7} "
                f"{r['steps'] if not r.get('stopped') else '?':>5} {'spent' if r['budget_reached'] else '-':>6}")
        if nvcc:
            text += f" {r['whole_seconds']:>6.2f} {low + format(r['ratio_whole'], '.2f'):>7}x"
        return text + (f"  ({r['note']})" if r.get("note") else "")

    for n, (prog, file, flags) in enumerate(rows):
        if file.split("build/", 1)[-1] in prior:
            r = prior[file.split("build/", 1)[-1]]
            say(row_text(r))
            results.append(r)
            continue
        if nvcc:
            plain_cmd = [NVCC, *flags, "-cubin", file, "-o", "/dev/null"]
            whole_cmd = [NVCC, *flags, "-c", file, "-o", str(work / "plain.o")]
        else:
            plain_cmd = ["clang++-22", "-x", "cuda", "--cuda-device-only", "-Wno-unknown-cuda-version",
                         f"--cuda-gpu-arch={a.arch}", f"--cuda-path={CUDA}", "-O3", *flags, "-c", file, "-o", "/dev/null"]
        warm = subprocess.run(plain_cmd, cwd=work, env=env, capture_output=True)  # file cache; not counted
        if warm.returncode != 0:
            say(f"{file}: plain compile failed: {warm.stderr.decode(errors='replace')[-400:]}")
            continue
        plain, whole, tune = [], [], []
        doc, err, stopped = {}, "", False
        for rep in range(a.reps):
            t, _ = timed(plain_cmd, work, env)
            plain.append(t)
            cmd = [a.bin, "tune", "--format", "json", "-j", "1", "--offload-arch", a.arch,
                   "--db", str(work / f"db{n}-{rep}.json")]
            if nvcc:
                cmd[2:2] = ["--compiler", "nvcc"]
            t, p = timed([*cmd, file, "--", *flags], work, env, a.tune_timeout)
            tune.append(t)
            stopped = p is None
            try:
                doc = json.loads(p.stdout) if p else {}
            except ValueError:
                doc, err = {}, p.stderr.decode(errors="replace")[-400:]
            if nvcc:
                t, _ = timed(whole_cmd, work, env)
                whole.append(t)
        p_s, t_s = statistics.median(plain), statistics.median(tune)
        kernels = doc.get("kernels", [])
        steps = sum(k.get("variants", 0) for k in kernels)
        budget = any(k.get("budget_reached") for k in kernels)
        name = file.split("build/", 1)[-1]
        r = {"program": prog, "file": name, "plain_seconds": p_s, "tune_seconds": t_s, "ratio": t_s / p_s,
             "kernels": len(kernels), "steps": steps, "budget_reached": budget, "stopped": stopped,
             "timed_out": sum(len(k.get("timed_out") or []) for k in kernels),
             "per_kernel": [{"symbol": k.get("symbol"), "variants": k.get("variants"), "reason": k.get("reason"),
                             "before": k.get("before", {}).get("occupancy"), "after": k.get("after", {}).get("occupancy"),
                             "budget_reached": k.get("budget_reached")} for k in kernels]}
        if nvcc:
            w_s = statistics.median(whole)
            r.update(whole_seconds=w_s, ratio_whole=t_s / w_s)
        if stopped:
            r["note"] = f"stopped at --tune-timeout {a.tune_timeout:.0f} s"
        elif not kernels:
            r["note"] = "tune: " + (err.strip().splitlines()[-1] if err.strip() else "no kernels")
        row = row_text(r)
        say(row)
        results.append(r)

    ratios = [r["ratio"] for r in results]
    end_load = loadavg()
    if ratios:
        say(f"{len(ratios)} files, {sum(r['kernels'] for r in results)} kernels, {sum(r['steps'] for r in results)} steps: "
            f"tune/plain median {statistics.median(ratios):.2f}x (target <= 3x), p95 {percentile(ratios, 95):.2f}x (<= 10x), "
            f"max {max(ratios):.2f}x (<= 20x); budget spent in {sum(r['budget_reached'] for r in results)} files"
            + (f"; {sum(bool(r.get('stopped')) for r in results)} tune runs stopped at the timeout (their ratios, and any "
               "figure they set, are lower bounds)" if any(r.get("stopped") for r in results) else ""))
        if nvcc:
            w = [r["ratio_whole"] for r in results]
            say(f"   against nvcc -c (host and device): median {statistics.median(w):.2f}x, p95 {percentile(w, 95):.2f}x, max {max(w):.2f}x")
    say(f"   load average at end: {end_load}")
    say()
    if a.out:
        with open(a.out, "a") as f:
            f.write("\n".join(lines) + "\n")
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
