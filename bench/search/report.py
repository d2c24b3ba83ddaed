#!/usr/bin/env python3
"""Tables from a bench/search GPU run (run.sh's $OUT, unpacked):

  - per kernel, a control: the hand sweep's own plain build (the same code
    as regtune's plain candidate, from another module), which must time as
    plain does;
  - per class of transform, alone on a kernel, identical results only: how
    many candidates, min, median and max speedup over plain; with
    --evidence, the table the default build follows (driver/src/evidence.json);
  - per kernel: the best global -maxrregcount of the hand sweep and its
    speedup, the candidate regtune's measured search kept and its speedup;
  - the replay's cost per kernel (seconds, bytes copied);
  - for the corpus built by nvcc (build.py --compiler nvcc): clang's plain
    code of the same kernel (`compare:clang-plain-<unit>`), timed beside
    nvcc's plain, regtune's kept and the -maxrregcount sweep.

    python3 bench/search/report.py OUT_DIR [--evidence driver/src/evidence.json] [--markdown FILE]

Speedup is plain's median over the candidate's (> 1: faster), both timed
interleaved on copies of the same launches inside the program, in one run.
"""

import argparse
import functools
import glob
import json
import math
import os
import re
import statistics
import sys

import paired

# Classes the default build may apply unasked, and how a candidate's labels
# name one of them when it is alone.
def class_of(labels, spills, plain_spills, local, plain_local):
    """The class a candidate's transforms make alone; None for combinations."""
    # nvcc's file-wide -maxrregcount=R is a register cap as well.
    steps = [l for l in labels if l.startswith(("warps-per-sm=", "waves-per-eu=", "maxrregcount="))]
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
    # A measure run stopped at its time limit writes no report: its kept
    # events still hold every launch replayed before that.
    for keep in sorted(glob.glob(os.path.join(out, "keep-*"))):
        prog = os.path.basename(keep)[len("keep-"):]
        if not os.path.exists(os.path.join(out, prog + ".measure.json")):
            rows += rows_from_events(prog, keep, db_entries(out, prog))
    return rows, notes


def rows_from_events(prog, keep, entries):
    """Report rows from an interposer's events.jsonl, as measure makes
    them: per candidate the sum over launches of each launch's median
    (`entries`: the program's db, by symbol)."""
    launches = {}
    for line in open(os.path.join(keep, "events.jsonl")):
        e = json.loads(line)
        if e.get("event") == "measured":
            launches.setdefault(e["symbol"], []).append(e)
    rows = []
    for symbol, ls in launches.items():
        entry = entries.get(symbol, {})
        usage = {"+".join(sorted(l for l in c_labels(c["transforms"]))): c["usage"] for c in entry.get("candidates", [])}
        per = {}
        for l in ls:
            for c in l["replayed"]["candidates"]:
                p = per.setdefault(c["name"], {"median": 0.0, "spread": 0.0, "identical": True, "n": 0})
                t = sorted(c["times_ms"])
                if t:
                    p["median"] += statistics.median(t)
                    q = lambda f: t[min(len(t) - 1, int(f * (len(t) - 1)))]
                    p["spread"] += q(0.75) - q(0.25)
                p["identical"] &= c["identical"] and l["replayed"]["deterministic"]
                p["n"] += 1
        plain = per.get("plain")
        for name, p in per.items():
            labels = [] if name == "plain" else name.split(" + ")
            u = usage.get("+".join(sorted(labels)), entry.get("before") if name == "plain" else {}) or {}
            rows.append({"program": prog, "kernel": entry.get("name", symbol).split("(")[0], "symbol": symbol, "candidate": name,
                         "transforms": labels, "registers": u.get("vgpr"), "spills": (u.get("vgpr_spills") or 0) + (u.get("sgpr_spills") or 0),
                         "occupancy": u.get("occupancy"), "median_ms": p["median"], "spread_ms": p["spread"],
                         "speedup": plain["median"] / p["median"] if plain and p["median"] else None,
                         "identical": p["identical"] and p["n"] == len(ls), "built": False, "device": ls[0]["device"]})
    # What Entry::effective keeps: the fastest allowed candidate, identical
    # and faster than plain beyond both spreads (suggestions need the user).
    for symbol in launches:
        mine = [r for r in rows if r["symbol"] == symbol]
        plain = next((r for r in mine if r["candidate"] == "plain"), None)
        ok = [r for r in mine if plain and r["candidate"] not in ("plain",) and not r["candidate"].startswith(("compare:", "suggested", "other:"))
              and r["identical"] and plain["median_ms"] - r["median_ms"] > r["spread_ms"] + plain["spread_ms"]]
        best = min(ok, key=lambda r: r["median_ms"], default=plain)
        if best:
            best["built"] = True
    return rows


@functools.lru_cache(maxsize=None)
def db_entries(out, prog):
    """The program's db entries by symbol ({} without a db), read once."""
    path = os.path.join(out, prog, "db", "decisions.json")
    return {e["symbol"]: e for e in json.load(open(path))["kernels"].values()} if os.path.exists(path) else {}


def db_usage(out, prog, symbol, labels):
    """The usage tune recorded for the candidate of these labels ({} if none)."""
    entry = db_entries(out, prog).get(symbol, {})
    for c in entry.get("candidates", []) + entry.get("suggested", []):
        if sorted(c_labels(c["transforms"])) == sorted(labels):
            return c.get("usage") or c.get("after") or {}
    return {}


def c_labels(t):
    """A db transforms object's labels, as NVPTX reports name them."""
    out = []
    if t.get("pow2"):
        out.append("pow2=inexact" if t.get("pow2_inexact") else "pow2")
    if t.get("sink"):
        out.append("sink")
    if t.get("unroll_cap"):
        out.append(f"unroll-cap={t['unroll_cap']}")
    # Older dbs kept NVIDIA's step as waves_per_eu.
    if t.get("warps_per_sm") or t.get("waves_per_eu"):
        out.append(f"warps-per-sm={t.get('warps_per_sm') or t['waves_per_eu']}")
    if t.get("launch_bounds"):
        out.append(f"launch-bounds={t['launch_bounds']}")
    if t.get("spill_to_shared"):
        out.append("spill-to-shared")
    if t.get("lds_spill"):
        out.append(f"lds-spill={t['lds_spill']}")
    if t.get("maxrregcount"):
        out.append(f"maxrregcount={t['maxrregcount']}")
    return out


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


def head_to_head(out):
    """Per (program, symbol): a function of two candidate names that says
    whether the second ran faster than the first beyond noise, by the rule
    measure keeps a candidate by (paired.judge's interval: per-round ratios
    of the two, interleaved in one run, the median's confidence interval
    below 1 and the median at least MIN_GAIN below)."""
    found = {}
    for events in glob.glob(os.path.join(out, "keep-*", "events.jsonl")):
        prog = os.path.basename(os.path.dirname(events))[len("keep-"):]
        # The events name a suggestion "suggested", "suggested-2", ...;
        # the report by its transforms, in the same order.
        report = os.path.join(out, prog + ".measure.json")
        named = {}
        for r in json.load(open(report))["kernels"] if os.path.exists(report) else []:
            named.setdefault(r["symbol"], []).append(r["candidate"])
        for symbol, totals in paired.rounds_per_kernel(events).values():
            names = named.get(symbol, [])
            if len(names) == len(totals):
                totals = {n: t for n, t in zip(names, totals.values())}
            found[(prog, symbol)] = lambda a, b, t=totals: (
                a in t and b in t and paired.judge(t[b], t[a])["interval"])
    return found


def file_wide_lines(table):
    """nvcc's -maxrregcount is one flag per file: a hand sweep can give a
    file one R (or none), not each kernel its own. Per file (the kernels
    whose sweep builds share a unit), the R of least total time over its
    measured kernels (plain's time each, over that build's speedup), against
    regtune's kept builds' total: the peer a user can build."""
    files = {}
    for t in table:
        units = {name.rsplit("-", 1)[1] for name in t["sweep_all"]}
        if len(units) == 1:
            files.setdefault((t["program"], units.pop()), []).append(t)
    if not files:
        return []
    out = ["", "Per file, nvcc's one flag (the sweep's best -maxrregcount for the whole file, by its measured kernels' total time):", "",
           "| program | kernels | plain ms | sweep's best for the file | its total speedup | regtune kept, total speedup | regtune over the sweep |",
           "|---|---:|---:|---|---:|---:|---:|"]
    ratios = []
    for (prog, unit), ts in sorted(files.items()):
        plain = sum(t["plain_ms"] for t in ts)
        best, best_total = "plain", plain
        for name in sorted({n for t in ts for n in t["sweep_all"]}):
            if name.startswith(("rplain", "clang")):
                continue
            speedups = [t["sweep_all"].get(name) for t in ts]
            if any(x is None for x in speedups):
                continue
            total = sum(t["plain_ms"] / x for t, x in zip(ts, speedups))
            if total < best_total:
                best, best_total = name.rsplit("-", 1)[0], total
        kept = sum(t["plain_ms"] / (t["kept_speedup"] or 1.0) for t in ts)
        ratios.append(best_total / kept)
        out.append(f"| {prog} | {len(ts)} | {plain:.4f} | {best} | {plain / best_total:.3f}× | {plain / kept:.3f}× | {best_total / kept:.3f}× |")
    out += ["", f"files: {len(ratios)}; regtune's total at or above the sweep's best for the file: {sum(r >= 1.0 for r in ratios)}, "
            f"within 1%: {sum(r >= 0.99 for r in ratios)}, within 2%: {sum(r >= 0.98 for r in ratios)}; "
            f"geomean of regtune over the sweep's file-wide best: {geomean(ratios):.3f}×"]
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--evidence", help="write the default build's evidence table here")
    p.add_argument("--markdown", help="write the tables as Markdown here")
    a = p.parse_args()
    rows, notes = load(a.out)
    kernels = by_kernel(rows)
    beats = head_to_head(a.out)
    device = next((r["device"] for r in rows if r.get("device")), "?")
    classes, differs = {}, {}
    table = []
    for (prog, symbol), rs in sorted(kernels.items()):
        plain = next((r for r in rs if r["candidate"] == "plain"), None)
        if plain is None or plain.get("median_ms") is None:
            continue
        ours = [r for r in rs if not r["candidate"].startswith(("compare:", "other:")) and r["candidate"] != "plain"]
        sweep = [r for r in rs if r["candidate"].startswith("compare:r") and not r["candidate"].startswith("compare:rplain")]
        control = next((r for r in rs if r["candidate"].startswith("compare:rplain")), None)
        clang = next((r for r in rs if r["candidate"].startswith("compare:clang-plain")), None)
        other = next((r for r in rs if r["candidate"].startswith("other:")), None)  # measure's own: the other compiler's build
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
            # Each sweep build's speedup, by its name (r<R>-<unit>): one file's kernels share a unit.
            "sweep_all": {r["candidate"].split(":", 1)[1]: (r["speedup"] if r["identical"] else None) for r in sweep if r.get("speedup")},
            "control": control.get("speedup") if control else None,
            "clang": (clang.get("speedup"), clang["identical"]) if clang and clang.get("speedup") else None,
            "other": (other["candidate"], other.get("speedup"), other["identical"]) if other and other.get("speedup") else None,
            # Where the sweep's best shows the higher speedup: is it faster
            # than regtune's kept beyond noise, round by round?
            "sweep_faster": bool(best_sweep) and best_sweep["speedup"] > (built.get("speedup") or 1.0)
            and (prog, symbol) in beats and beats[(prog, symbol)](built["candidate"], best_sweep["candidate"]),
        })

    lines = [f"GPU: {device}", ""]
    lines.append("| class (alone on a kernel) | candidates | kernels | min | median | max | different bytes |")
    lines.append("|---|---:|---:|---:|---:|---:|---:|")
    records = []
    for c in sorted(set(classes) | set(differs)):
        xs = sorted(s for s, *_ in classes.get(c, []))
        if xs:
            lines.append(f"| {c} | {len(xs)} | {len({(p, k) for _, p, k, _ in classes[c]})} | {xs[0]:.3f}× | {statistics.median(xs):.3f}× | {xs[-1]:.3f}× | {len(differs.get(c, []))} |")
            distinct = len({(prog, kernel) for _, prog, kernel, _ in classes[c]})
            records.append({"class": c, "kernels": distinct, "candidates": len(xs), "min": round(xs[0], 3),
                            "median": round(statistics.median(xs), 3), "max": round(xs[-1], 3)})
        else:
            lines.append(f"| {c} | 0 | 0 | - | - | - | {len(differs.get(c, []))} |")
    lines += ["", "Worst of each class:"]
    for c, xs in sorted(classes.items()):
        s, prog, kernel, cand = min(xs)
        lines.append(f"- {c}: {s:.3f}× {prog} {kernel} ({cand})")

    # The corpus built by nvcc: clang's plain code of the kernel beside (over nvcc's plain; "differs": other bytes out).
    # measure's own `other:<compiler>` (the other compiler's build tune made of the file), where there is one.
    with_clang = any(t["clang"] for t in table)
    with_other = any(t["other"] for t in table)
    lines += ["", "| program | kernel | regs | warps/SM | plain ms | noise | control | best -maxrregcount | its speedup | regtune kept | its speedup | identical |"
              + (" clang plain |" if with_clang else "") + (" other compiler (measure) |" if with_other else ""),
              "|---|---|---:|---:|---:|---:|---:|---|---:|---|---:|---|" + ("---:|" if with_clang else "") + ("---:|" if with_other else "")]
    for t in table:
        sw = f"{t['sweep_speedup']:.3f}×" if t["sweep_speedup"] else "-"
        ctl = f"{t['control']:.3f}×" if t["control"] else "-"
        cl = (f" {t['clang'][0]:.3f}×{'' if t['clang'][1] else ' (differs)'} |" if t["clang"] else " - |") if with_clang else ""
        ot = (f" {t['other'][0]} {t['other'][1]:.3f}×{'' if t['other'][2] else ' (differs)'} |" if t["other"] else " - |") if with_other else ""
        lines.append(f"| {t['program']} | {t['kernel']} | {t['registers']} | {t['occupancy']} | {t['plain_ms']:.4f} | "
                     f"{100 * (t['noise'] or 0):.1f}% | {ctl} | {t['sweep_best']} | {sw} | {t['kept']} | {t['kept_speedup']:.3f}× | "
                     f"{'yes' if t['kept_identical'] else 'NO'} |" + cl + ot)
    touched = [t for t in table if t["kept"] != "plain"]
    # The sweep's best for a kernel is at least plain (a user keeps plain when no cap helps).
    sweep_best = lambda t: max(1.0, t["sweep_speedup"] or 1.0)
    at_least = [t for t in table if t["kept_speedup"] >= sweep_best(t) * 0.98]
    above = [t for t in table if t["kept_speedup"] >= sweep_best(t)]
    within1 = [t for t in table if t["kept_speedup"] >= sweep_best(t) * 0.99]
    lines += ["", f"kernels measured: {len(table)}; touched (regtune kept a candidate): {len(touched)}; "
              f"geomean over touched: {geomean([t['kept_speedup'] for t in touched]):.3f}×; "
              f"lowest kept: {min((t['kept_speedup'] for t in touched), default=float('nan')):.3f}×; "
              f"at or above the sweep's per-kernel best: {len(above)}, within 1%: {len(within1)}, "
              f"within 2%: {len(at_least)} of {len(table)}; "
              f"sweep's per-kernel best, geomean over all: {geomean([sweep_best(t) for t in table]):.3f}×, "
              f"regtune's: {geomean([t['kept_speedup'] for t in table]):.3f}×"]
    lines += file_wide_lines(table)
    if with_clang:
        cl = [t for t in table if t["clang"]]
        faster = [t for t in cl if t["clang"][0] > max(1.0, t["kept_speedup"]) * 1.01]
        lines.append(f"clang's plain code timed beside nvcc's: {len(cl)} of {len(table)} kernels; faster than nvcc's plain by more "
                     f"than 1 %: {sum(t['clang'][0] > 1.01 for t in cl)}, slower by more than 1 %: {sum(t['clang'][0] < 0.99 for t in cl)}; "
                     f"faster than regtune's kept nvcc build by more than 1 %: {len(faster)}"
                     + "".join(f"; {t['program']} {t['kernel']} ({t['clang'][0]:.3f}× against {t['kept_speedup']:.3f}×)" for t in faster)
                     + f"; other bytes out than nvcc's: {sum(not t['clang'][1] for t in cl)}")
    # "At or above" compares two medians, the sweep's the highest of its
    # builds: noise alone puts it above plain where no cap helps. Round by
    # round, by measure's own rule, which kernels did the sweep win?
    won = [t for t in table if t["sweep_faster"]]
    lines.append(f"the sweep's best faster than regtune's kept beyond noise (per-round ratios, measure's rule): "
                 f"{len(won)} of {len(table)}" + "".join(f"; {t['program']} {t['kernel']} ({t['sweep_best']} "
                                                          f"{t['sweep_speedup']:.3f}× against {t['kept_speedup']:.3f}×)" for t in won))
    # Spilling to shared memory (issue 26): at each step where both were
    # built, the register cap alone, with ptxas's spill to shared memory,
    # and with regtune's LDS spill.
    shared, shared_verdicts = [], []
    for (prog, symbol), rs in sorted(kernels.items()):
        steps = {}
        for r in rs:
            labels = r["transforms"]
            step = next((l for l in labels if l.startswith("warps-per-sm=") or l.startswith("waves-per-eu=")), None)
            rest = sorted(l for l in labels if l != step and not l.startswith("launch-bounds="))
            if step and rest in ([], ["spill-to-shared"]) or step and len(rest) == 1 and rest[0].startswith("lds-spill="):
                kind = "cap" if not rest else ("smem" if rest == ["spill-to-shared"] else "lds")
                steps.setdefault(step, {})[kind] = r
        for step, k in steps.items():
            if "cap" in k and ("smem" in k or "lds" in k) and (k["cap"].get("spills") or 0) > 0:
                cell = lambda kind: (f"{k[kind]['speedup']:.3f}×{'' if k[kind]['identical'] else ' (differs)'} ({k[kind].get('spills')})"
                                     if kind in k and k[kind].get("speedup") else "-")
                # The cap's spill stores over every thread the SM holds:
                # tune's rule (shared_spill_pays) wants a quarter of sm_90's
                # largest carveout, 57 KiB.
                u = db_usage(a.out, prog, symbol, k["cap"]["transforms"])
                kib = (u.get("vgpr_spills") or 0) * (u.get("occupancy") or 0) * 32 / 1024
                shared.append(f"| {prog} | {rs[0]['kernel']} | {step} | {kib:.0f} | {cell('cap')} | {cell('smem')} | {cell('lds')} |")
                if k["cap"].get("speedup") and k.get("smem", {}).get("speedup"):
                    ratio = k["smem"]["speedup"] / k["cap"]["speedup"]
                    judge = beats.get((prog, symbol))
                    beyond = bool(judge and judge(k["cap"]["candidate"], k["smem"]["candidate"]))
                    shared_verdicts.append((kib >= 228 / 4, 1 if ratio > 1.005 else -1 if ratio < 0.995 else 0, beyond))
    if shared:
        lines += ["", "Where a cap spills: speedup over plain (spilled bytes or registers the compile reports; the cap's "
                      "spill stores over an SM's threads in KiB):", "",
                  "| program | kernel | step | KiB an SM | cap alone | + ptxas spill-to-shared | + regtune lds-spill=8 |",
                  "|---|---|---|---:|---:|---:|---:|"]
        lines += shared
        for over, words in ((True, "57 KiB or more an SM (tune's rule)"), (False, "under 57 KiB an SM")):
            v = [r for o, r, _ in shared_verdicts if o == over]
            beyond = sum(b for o, _, b in shared_verdicts if o == over)
            lines.append(f"ptxas's spilling against the cap's spills where the cap spills {words}: better by more than 0.5 % on "
                         f"{v.count(1)} of {len(v)} ({beyond} faster beyond noise by measure's rule), tied on {v.count(0)}, "
                         f"lost on {v.count(-1)}")
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
