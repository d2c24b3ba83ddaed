#!/usr/bin/env python3
"""Tables from a bench/search GPU run (run.sh's $OUT, unpacked):

  - per class of transform, alone on a kernel, identical results only: how
    many candidates, min, median and max speedup over plain; with
    --evidence, the table the default build follows (driver/src/evidence.json);
  - per kernel: the best global -maxrregcount of the hand sweep and its
    speedup, the candidate regtune's measured search kept and its speedup;
  - the replay's cost per kernel (seconds, bytes copied).

    python3 bench/search/report.py OUT_DIR [--evidence driver/src/evidence.json] [--markdown FILE]

Speedup is plain's median over the candidate's (> 1: faster), both timed
interleaved on copies of the same launches inside the program, in one run.
"""

import argparse
import glob
import json
import math
import os
import re
import statistics
import sys

# Classes the default build may apply unasked, and how a candidate's labels
# name one of them when it is alone.
def class_of(labels, spills, plain_spills, local, plain_local):
    """The class a candidate's transforms make alone; None for combinations."""
    steps = [l for l in labels if l.startswith("warps-per-sm=") or l.startswith("waves-per-eu=")]
    rest = [l for l in labels if l not in steps and not l.startswith("launch-bounds=")]
    if rest == ["spill-to-shared"] and steps:
        return "spill-to-shared"
    if steps and not rest:
        # What the static default could apply: no more spills or local memory than plain.
        admissible = (spills or 0) <= (plain_spills or 0) and (local or 0) <= (plain_local or 0)
        return "occupancy-target" if admissible else "register-cap-spilling"
    if len(labels) != 1:
        return None
    l = labels[0]
    if l.startswith("unroll-cap="):
        return "unroll-cap"
    if l == "sink":
        return "sink"
    if l == "pow2":
        return "pow2"
    return None


def load(out):
    rows, notes = [], {}
    for path in sorted(glob.glob(os.path.join(out, "*.measure.json"))):
        prog = os.path.basename(path)[: -len(".measure.json")]
        doc = json.load(open(path))
        notes[prog] = doc.get("notes", [])
        for r in doc["kernels"]:
            r["program"] = prog
            rows.append(r)
    return rows, notes


def dbs(out):
    """Measured dbs (run.sh packs them as <program>/db/decisions.json)."""
    found = {}
    for path in glob.glob(os.path.join(out, "*", "db", "decisions.json")):
        found[path.split(os.sep)[-3]] = json.load(open(path))
    return found


def by_kernel(rows):
    kernels = {}
    for r in rows:
        kernels.setdefault((r["program"], r["symbol"]), []).append(r)
    return kernels


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def replay_cost(out):
    """Per kernel: replay seconds (the replayer's log) and bytes copied (events)."""
    cost = {}
    for keep in glob.glob(os.path.join(out, "keep-*")):
        prog = os.path.basename(keep)[len("keep-"):]
        events = os.path.join(keep, "events.jsonl")
        if os.path.exists(events):
            for line in open(events):
                e = json.loads(line)
                if e.get("event") == "measured":
                    c = cost.setdefault((prog, e["symbol"]), {"seconds": 0.0, "bytes": 0})
                    c["bytes"] += e.get("bytes", 0)
        log = os.path.join(keep, "replay.log")
        if os.path.exists(log):
            for line in open(log):
                m = re.match(r"(\S+): replayed in ([0-9.]+) ms", line)
                if m:
                    cost.setdefault((prog, m.group(1)), {"seconds": 0.0, "bytes": 0})["seconds"] += float(m.group(2)) / 1e3
    return cost


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--evidence", help="write the default build's evidence table here")
    p.add_argument("--markdown", help="write the tables as Markdown here")
    a = p.parse_args()
    rows, notes = load(a.out)
    kernels = by_kernel(rows)
    device = next((r["device"] for r in rows if r.get("device")), "?")
    classes, differs = {}, {}
    table = []
    for (prog, symbol), rs in sorted(kernels.items()):
        plain = next((r for r in rs if r["candidate"] == "plain"), None)
        if plain is None or plain.get("median_ms") is None:
            continue
        ours = [r for r in rs if not r["candidate"].startswith("compare:") and r["candidate"] != "plain"]
        sweep = [r for r in rs if r["candidate"].startswith("compare:")]
        for r in ours:
            c = class_of(r["transforms"], r.get("spills"), plain.get("spills"), None, None)
            if c is None or r.get("speedup") is None:
                continue
            if r["identical"]:
                classes.setdefault(c, []).append((r["speedup"], prog, r["kernel"], r["candidate"]))
            else:
                differs.setdefault(c, []).append((prog, r["kernel"], r["candidate"]))
        built = next((r for r in rs if r.get("built")), plain)
        good_sweep = [r for r in sweep if r["identical"] and r.get("speedup")]
        best_sweep = max(good_sweep, key=lambda r: r["speedup"], default=None)
        table.append({
            "program": prog, "kernel": plain["kernel"], "symbol": symbol,
            "registers": plain.get("registers"), "occupancy": plain.get("occupancy"), "plain_ms": plain["median_ms"],
            "noise": (plain.get("spread_ms") or 0) / plain["median_ms"] if plain["median_ms"] else None,
            "kept": built["candidate"], "kept_speedup": built.get("speedup") if built is not plain else 1.0,
            "kept_identical": built["identical"],
            "sweep_best": best_sweep["candidate"].split(":", 1)[1].split("-")[0] if best_sweep else "-",
            "sweep_speedup": best_sweep["speedup"] if best_sweep else None,
            "candidates": len(ours), "sweep_builds": len(sweep),
        })

    lines = [f"GPU: {device}", ""]
    lines.append("| class (alone on a kernel) | candidates | min | median | max | different bytes |")
    lines.append("|---|---:|---:|---:|---:|---:|")
    records = []
    for c in sorted(set(classes) | set(differs)):
        xs = sorted(s for s, *_ in classes.get(c, []))
        if xs:
            lines.append(f"| {c} | {len(xs)} | {xs[0]:.3f}× | {statistics.median(xs):.3f}× | {xs[-1]:.3f}× | {len(differs.get(c, []))} |")
            records.append({"class": c, "kernels": len(xs), "min": round(xs[0], 3), "median": round(statistics.median(xs), 3), "max": round(xs[-1], 3)})
        else:
            lines.append(f"| {c} | 0 | - | - | - | {len(differs.get(c, []))} |")
    lines += ["", "Worst of each class:"]
    for c, xs in sorted(classes.items()):
        s, prog, kernel, cand = min(xs)
        lines.append(f"- {c}: {s:.3f}× {prog} {kernel} ({cand})")

    lines += ["", "| program | kernel | regs | warps/SM | plain ms | noise | best -maxrregcount | its speedup | regtune kept | its speedup | identical |",
              "|---|---|---:|---:|---:|---:|---|---:|---|---:|---|"]
    for t in table:
        sw = f"{t['sweep_speedup']:.3f}×" if t["sweep_speedup"] else "-"
        lines.append(f"| {t['program']} | {t['kernel']} | {t['registers']} | {t['occupancy']} | {t['plain_ms']:.4f} | "
                     f"{100 * (t['noise'] or 0):.1f}% | {t['sweep_best']} | {sw} | {t['kept']} | {t['kept_speedup']:.3f}× | "
                     f"{'yes' if t['kept_identical'] else 'NO'} |")
    touched = [t for t in table if t["kept"] != "plain"]
    # The sweep's best for a kernel is at least plain (a user keeps plain when no cap helps).
    sweep_best = lambda t: max(1.0, t["sweep_speedup"] or 1.0)
    at_least = [t for t in table if t["kept_speedup"] >= sweep_best(t) * 0.98]
    lines += ["", f"kernels measured: {len(table)}; touched (regtune kept a candidate): {len(touched)}; "
              f"geomean over touched: {geomean([t['kept_speedup'] for t in touched]):.3f}×; "
              f"min kept: {min((t['kept_speedup'] for t in table), default=float('nan')):.3f}×; "
              f"at least the sweep's per-kernel best (within 2%): {len(at_least)} of {len(table)}; "
              f"sweep's per-kernel best, geomean over all: {geomean([sweep_best(t) for t in table]):.3f}×, "
              f"regtune's: {geomean([t['kept_speedup'] for t in table]):.3f}×"]
    cost = replay_cost(a.out)
    if cost:
        secs = [c["seconds"] for c in cost.values()]
        mib = [c["bytes"] / 2**20 for c in cost.values()]
        lines.append(f"replay per kernel: median {statistics.median(secs):.2f} s (max {max(secs):.2f} s), "
                     f"median {statistics.median(mib):.1f} MiB copied per kernel (max {max(mib):.0f} MiB)")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.markdown:
        open(a.markdown, "w").write(text)
    if a.evidence:
        doc = {"source": f"bench/search/report.py: regtune measure of every candidate on the development corpus "
                         f"({len({t['program'] for t in table})} programs, {len(table)} kernels), {device}",
               "records": [r for r in records if r["class"] != "register-cap-spilling"]}
        json.dump(doc, open(a.evidence, "w"), indent=2)
        open(a.evidence, "a").write("\n")


if __name__ == "__main__":
    main()
