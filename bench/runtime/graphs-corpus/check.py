#!/usr/bin/env python3
"""The verdict on each case of bench/runtime/graphs-corpus, from what run.sh
left in out/: PASS or FAIL per case with why, then what measure saw:

    - the program ran under measure as it does plainly: status 0 both ways, the same output (less
      its timings and the folder it ran in), its own check passed (build.py's "check": jacobi's
      "&&&& jacobiCudaGraphs PASSED", graphMemoryNodes' six "Validation PASSED!", phaseFieldLBM's
      fields byte-identical to the plain run's);
    - phaseFieldLBM's computeMoments and streamCollide (fourth and fifth in its graph) measured at
      every planned launch, the graph run in three parts: every candidate timed and identical, the
      program's bytes compared and identical;
    - no failed event, and every measured launch deterministic (plain against plain) with a
      candidate byte-identical to plain; a candidate kept (built) was identical at every launch;
    - per kernel: launches measured, whether through a graph (the interposer's note "measured in a
      CUDA graph ..." or program_identical of a graph with nothing after it), candidates timed and
      identical; the report's rows (speedup over plain, verdict); and every note, with its count:
      the graph kernels that ran unmeasured, and why.

A case run with another program's db (build.py's db_of: its own kernels have no candidate) measures
nothing; measure then exits 1 ("launched none of the ... kernels"), which passes when the program
itself exited 0 and its output is the plain run's.

    python3 bench/runtime/graphs-corpus/check.py bench/runtime/graphs-corpus/out
"""

import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PLAN = os.path.join(HERE, "build", "plan.json")


def read(path, default=""):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return default


def events(case_dir):
    ev = []
    for line in read(os.path.join(case_dir, "run", "events.jsonl")).splitlines():
        try:
            ev.append(json.loads(line))
        except ValueError:
            pass
    return ev


def demangle(symbols):
    symbols = sorted(set(symbols))
    if not symbols or not shutil.which("c++filt"):
        return {s: s for s in symbols}
    out = subprocess.run(["c++filt"], input="\n".join(symbols), capture_output=True, text=True).stdout.splitlines()
    return {s: (d.split("(")[0] if "(" in d else d) for s, d in zip(symbols, out)}


TIMING = re.compile(r"(time|MLUPS|Performance)", re.I)


def normal(stdout, keep=None):
    """The output less what differs from run to run: timings, and the folder it ran in; with `keep`
    (the plan's "compare"), only the lines it matches."""
    lines = []
    for line in stdout.splitlines():
        if TIMING.search(line) or (keep and not re.search(keep, line)):
            continue
        lines.append(re.sub(r"/(plain|measured)/", "/<cwd>/", line))
    return lines


def check(out, case, p):
    d = os.path.join(out, case)
    if not os.path.exists(os.path.join(d, "rc")):
        return None
    problems, facts = [], []
    prog = p["program"]
    need = lambda ok, why: ok or problems.append(why)
    plain_rc, rc = read(os.path.join(d, "plain.rc")).strip(), read(os.path.join(d, "rc")).strip()
    stdout, plain = read(os.path.join(d, "stdout")), read(os.path.join(d, "plain.stdout"))
    need(plain_rc == "0", f"the program alone exited {plain_rc or '?'}")
    err = read(os.path.join(d, "stderr"))
    foreign = f"/{prog}/" not in p["db"]  # another program's db: nothing of it launched, measure exits 1
    nothing = rc == "1" and "launched none of the" in err and "exit status 0" in read(os.path.join(d, "report.json"))
    need(rc == "0" or (foreign and nothing), f"under measure the status was {rc or '?'} "
                    f"({'timed out' if rc == '124' else err.strip().splitlines()[-1:]})")
    a, b = normal(plain, p.get("compare")), normal(stdout, p.get("compare"))
    need(a != [], "no output to compare")
    if a != b:
        diff = [f"{x!r} / {y!r}" for x, y in zip(a, b) if x != y][:2] or [f"{len(a)} / {len(b)} lines"]
        problems.append("output differs from the plain run's (less timings): " + "; ".join(diff))
    prog = p["program"]
    if prog == "jacobiCudaGraphs":
        need("&&&& jacobiCudaGraphs PASSED" in stdout, "no '&&&& jacobiCudaGraphs PASSED'")
        facts += [l.strip() for l in stdout.splitlines() if l.startswith("GPU iterations")]
    elif prog == "graphConditionalNodes":
        facts.append(f"{sum('Complete' in l for l in stdout.splitlines())} graphs complete")
    elif prog == "graphMemoryNodes":
        n = stdout.count("Validation PASSED!")
        need(n == 6 and "FAILURE" not in stdout, f"{n} of 6 'Validation PASSED!'")
        facts.append(f"{n} x Validation PASSED!")
    elif prog == "particlefilter":
        facts.append("estimate " + ", ".join(a))
    elif prog == "simpleCudaGraphs":
        sums = re.findall(r"final reduced sum = (\S+)", stdout)
        need(len(sums) == 12 and len(set(sums)) == 1, f"the host callbacks' sums: {sums}")
        facts.append(f"{len(sums)} host callbacks, sum {sorted(set(sums))}")
    if p.get("outputs"):
        ours, theirs = read(os.path.join(d, "measured.outputs.sha256")), read(os.path.join(d, "plain.outputs.sha256"))
        n = len(theirs.splitlines())
        need(n > 0 and ours == theirs, f"the files it wrote differ from the plain run's ({len(ours.splitlines())} / {n})")
        facts.append(f"{n} files written, byte-identical to the plain run's" if n and ours == theirs else "")
    if foreign:
        facts.append(f"under measure with {p['db'].split('/')[-3]}'s db, none of whose kernels it launches "
                     f"(measure's status {rc}: nothing measured; the program's 0)")
    facts.append(read(os.path.join(d, "seconds")).strip())

    ev = events(d)
    measured = [e for e in ev if e.get("event") == "measured"]
    notes = [e for e in ev if e.get("event") == "note"]
    for f in (e for e in ev if e.get("event") == "failed"):
        problems.append(f"failed event: {f.get('symbol')}: {f.get('message')}")
    report = json.loads(read(os.path.join(d, "report.json"), "{}") or "{}")
    rows = report.get("kernels", [])
    names = demangle([e["symbol"] for e in ev if e.get("event") in ("measured", "note", "unplanned") and e.get("symbol")])
    names.update({r["symbol"]: r["kernel"] for r in rows if r.get("symbol")})
    # The last count of each note (written at 1, 2, 4, ... launches and at exit).
    counts = {}
    for n in notes:
        counts[(n["symbol"], n["message"])] = n["launches"]
    through_graph = {s: c for (s, m), c in counts.items() if m.startswith("measured in a CUDA graph")}
    lines = []
    by_symbol = {}
    for r in measured:
        by_symbol.setdefault(r["symbol"], []).append(r)
    for sym, ms in by_symbol.items():
        ok_det = all(r["replayed"]["deterministic"] for r in ms)
        need(ok_det, f"{names[sym]}: plain not deterministic at {sum(not r['replayed']['deterministic'] for r in ms)} launches")
        for r in ms:
            c = r["replayed"]["candidates"]
            need(any(x["identical"] for x in c[1:] if x["times_ms"]), f"{names[sym]}: no candidate timed and identical at a launch")
        c0 = ms[0]["replayed"]["candidates"]
        lines.append(f"    {names[sym]}: {len(ms)} launches measured ({through_graph.get(sym, 0)} noted as in a CUDA graph), "
                     f"grid {ms[0]['launch']['grid']} x {ms[0]['launch']['block']}, {ms[0]['bytes']} bytes, "
                     f"{len(c0)} candidates, identical per launch {[sum(x['identical'] for x in r['replayed']['candidates']) for r in ms]}, "
                     f"program bytes compared {[r.get('program_identical') for r in ms]}")
    if prog == "phaseFieldLBM":
        # Its two heavy kernels, fourth and fifth in the graph's chain: measured with the graph run in
        # three parts (runtime/src/graph_parts.rs), every candidate identical, the program's bytes compared.
        for sym in ["_ZN3lbm14computeMomentsE9LBMFields", "_ZN3lbm13streamCollideE9LBMFields"]:
            ms = by_symbol.get(sym, [])
            need(len(ms) == p["launches"], f"{names.get(sym, sym)}: {len(ms)} launches measured, not {p['launches']}")
            for r in ms:
                c = [x for x in r["replayed"]["candidates"] if x["times_ms"] and not x.get("error")]
                need(len(c) == len(r["replayed"]["candidates"]) and all(x["identical"] for x in c),
                     f"{names.get(sym, sym)}: not every candidate timed and identical")
                need(r.get("program_identical") is True, f"{names.get(sym, sym)}: program bytes {r.get('program_identical')}")
            need(any(s == sym and m.startswith("measured in a CUDA graph after other work") for (s, m) in counts),
                 f"{names.get(sym, sym)}: no note that its graph ran in parts")
    for r in rows:
        if r.get("built"):
            need(r.get("identical"), f"{r['kernel']}: kept {r['candidate']}, not identical")
        num = lambda v, f: format(v, f) if isinstance(v, (int, float)) else "-"
        lines.append(f"      {r['kernel']:<18} {r['candidate']:<24} {num(r.get('registers'), '>4')} regs occ {num(r.get('occupancy'), '>3')} "
                     f"{num((r.get('median_ms') or 0) * 1000, '9.2f')} us  x{num(r.get('speedup'), '.3f')} ±{num(r.get('margin'), '.3f')}  "
                     f"identical {r.get('identical')}  {'KEPT ' if r.get('built') else ''}{r.get('verdict', '')}")
    for (sym, msg), n in counts.items():
        lines.append(f"    note {names.get(sym, sym)}: {msg} ({n} launches)")
    for n in report.get("notes", []):
        if "candidates left out" in n or "exit status" in n:
            lines.append(f"    report: {n}")
    unplanned = sorted(names.get(e["symbol"], e["symbol"]) for e in ev if e.get("event") == "unplanned")
    if unplanned:
        lines.append(f"    launched, not measured (no candidate in the db): {', '.join(unplanned)}")
    word = "PASS" if not problems else "FAIL"
    head = f"{word} {case} ({prog} {' '.join(p['args'])}): " + ("; ".join(problems) if problems else "; ".join(x for x in facts if x))
    return "\n".join([head] + lines)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "out")
    plan_path = sys.argv[2] if len(sys.argv) > 2 else os.path.join(out, "plan.json")  # run.sh copies it there
    plan = json.load(open(plan_path if os.path.exists(plan_path) else PLAN))
    print(read(os.path.join(out, "date.txt")).strip(), read(os.path.join(out, "gpu.txt")).strip().replace("\n", " | "))
    fails = 0
    for case, p in plan.items():
        v = check(out, case, p)
        if v is None:
            print(f"---- {case}: not run")
            continue
        print(v)
        fails += v.startswith("FAIL")
    skipped = read(os.path.join(out, "skipped.txt")).strip()
    if skipped:
        print(skipped)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
