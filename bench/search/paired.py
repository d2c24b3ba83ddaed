#!/usr/bin/env python3
"""The keep rule, judged on what a GPU run recorded: every timed round of
every candidate (`--keep DIR`'s events.jsonl, packed by run.sh into
search-out.tar.gz or measure-h100.tar.gz).

    python3 bench/search/paired.py RESULTS.tar.gz [Z]    (Z: 2.576, as measure; 1.96 for 95 %)

Prints, per kernel:
  - the control: measure's own (`plain again`, plain's code loaded a second
    time) or, in runs before it, the sweep's plain build (`compare:rplain-*`,
    the same code from another module), round by round against plain: how
    far apart two loads of the same code run (as in measure, what the first
    one differs becomes the kernel's least gain where more than MIN_GAIN),
    and whether the rule would call it faster with MIN_GAIN alone;
  - what each rule keeps among the candidates the user allows: the old one
    (medians apart by more than both interquartile ranges), the quartile
    one (the upper quartile of the per-round ratios below 1, their median
    at least MIN_GAIN below) and the interval one
    (regtune_decisions::measured::Paired: the median's confidence interval,
    median ± Z · 1.2533 / 1.349 · IQR / √rounds, below 1, the median at
    least MIN_GAIN below); for the last two, of those within MIN_GAIN of
    the fastest, the fewest transforms;
  - the hand sweep's best global -maxrregcount, by the same paired measure.
Then the totals both rules reach. Everything is recomputed from the rounds;
nothing is run.
"""

import glob
import json
import math
import os
import statistics
import sys
import tarfile
import tempfile
from collections import defaultdict

MIN_GAIN = 0.01  # as regtune_decisions::measured::MIN_GAIN
Z = 2.576  # as regtune_decisions::measured::Z


def quantile(xs, p):
    xs = sorted(xs)
    pos = p * (len(xs) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def rounds_per_kernel(events_path):
    """Per kernel key: candidate name → per-round totals over its launches."""
    launches = defaultdict(list)
    for line in open(events_path):
        e = json.loads(line)
        if e.get("event") == "measured":
            launches[e["key"]].append(e)
    out = {}
    for key, evs in launches.items():
        names = [c["name"] for c in evs[0]["replayed"]["candidates"]]
        totals = {}
        for name in names:
            per = []
            for e in evs:
                c = next((c for c in e["replayed"]["candidates"] if c["name"] == name), None)
                if c is None or not c.get("times_ms"):
                    break
                per.append(c["times_ms"])
            if len(per) == len(evs):
                n = min(len(t) for t in per)
                totals[name] = [sum(t[i] for t in per) for i in range(n)]
        if "plain" in totals:
            out[key] = (evs[0]["symbol"], totals)
    return out


def iqr(xs):
    return quantile(xs, 0.75) - quantile(xs, 0.25)


def judge(times, plain, gain=MIN_GAIN):
    n = min(len(times), len(plain))
    ratios = [times[i] / plain[i] for i in range(n)]
    med_t, med_p = statistics.median(times), statistics.median(plain)
    margin = Z * 1.2533 / 1.349 * iqr(ratios) / math.sqrt(n)
    return {
        "median": quantile(ratios, 0.5), "upper": quantile(ratios, 0.75),
        "paired": quantile(ratios, 0.75) < 1 and quantile(ratios, 0.5) <= 1 - gain,
        "interval": quantile(ratios, 0.5) + margin < 1 and quantile(ratios, 0.5) <= 1 - gain,
        "old": med_p - med_t > iqr(times) + iqr(plain),
        "old_speedup": med_p / med_t, "rounds": n,
    }


def is_control(name):
    """measure's own control, or the sweep's plain build (the same code from another module)."""
    return name == "plain again" or name.startswith("compare:rplain")


def choose(faster):
    """As Measured::choose: within MIN_GAIN of the fastest, the fewest transforms."""
    if not faster:
        return (1.0, "plain")
    top = max(faster.values())
    near = [(len(n.split(" + ")), -s, n) for n, s in faster.items() if s * (1 + MIN_GAIN) >= top]
    _, s, n = min(near)
    return (-s, n)


def allowed_candidates(measure_json):
    """(symbol, candidate) pairs the build may use: the verdicts that say kept or rejected."""
    rows = json.load(open(measure_json))["kernels"]
    return {(r["symbol"], r["candidate"]) for r in rows if "kept" in r["verdict"] or "rejected" in r["verdict"]}


def main():
    global Z
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    if len(sys.argv) == 3:
        Z = float(sys.argv[2])
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(sys.argv[1]) as t:
            t.extractall(tmp, filter="data")
        results = []
        controls = []
        for events in sorted(glob.glob(os.path.join(tmp, "**", "keep-*", "events.jsonl"), recursive=True)):
            prog = os.path.basename(os.path.dirname(events))[len("keep-"):]
            mj = os.path.join(os.path.dirname(os.path.dirname(events)), prog + ".measure.json")
            if not os.path.exists(mj):
                # The run ended before measure wrote its report: what the user allows is unknown.
                print(f"{prog}: no {prog}.measure.json (its run timed out?): left out")
                continue
            allowed = allowed_candidates(mj)
            for key, (symbol, totals) in rounds_per_kernel(events).items():
                plain = totals["plain"]
                j = {name: judge(t, plain) for name, t in totals.items() if name != "plain"}
                ctl = [r for name, r in j.items() if is_control(name)]
                controls += [(prog, symbol, r) for r in ctl]
                # As Measured::least_gain: what the control's load differs, where that is more than MIN_GAIN.
                gain = max([MIN_GAIN] + [abs(1 - r["median"]) for r in ctl[:1]])
                j = {name: judge(t, plain, gain) for name, t in totals.items() if name != "plain"}
                ours = {n: r for n, r in j.items() if not n.startswith("compare:") and (symbol, n) in allowed}
                sweep = {n: r for n, r in j.items() if n.startswith("compare:r") and not is_control(n)}
                old = max(((r["old_speedup"], n) for n, r in ours.items() if r["old"]), default=(1.0, "plain"))
                new = choose({n: 1 / r["median"] for n, r in ours.items() if r["paired"]})
                interval = choose({n: 1 / r["median"] for n, r in ours.items() if r["interval"]})
                best = max(((1 / r["median"], n) for n, r in sweep.items()), default=None)
                results.append((prog, symbol, old, new, best, interval))
    print("control (the same code as plain, another module), round by round:")
    for prog, symbol, r in controls:
        flag = "  faster than MIN_GAIN alone tells" if r["paired"] else ""
        print(f"  {prog:22} {symbol[:44]:44} median {r['median']:.4f} upper {r['upper']:.4f} ({r['rounds']} rounds){flag}")
    within = sum(1 for c in controls if abs(c[2]["median"] - 1) <= 0.009)
    print(f"  within 0.9 %: {within} of {len(controls)}; faster than MIN_GAIN alone tells: {sum(c[2]['paired'] for c in controls)}")
    print(f"\nper kernel: old rule's keep, quartile rule's keep, interval rule's keep (Z {Z}), the sweep's best (paired):")
    for prog, symbol, old, new, best, interval in results:
        b = f"{best[1][8:]} {best[0]:.3f}x" if best else "-"
        print(f"  {prog:22} {symbol[:36]:36} old {old[1][:24]:24} {old[0]:.3f}x  quartile {new[1][:24]:24} {new[0]:.3f}x  "
              f"interval {interval[1][:24]:24} {interval[0]:.3f}x  sweep {b}")
    for label, i in [("old", 2), ("quartile", 3), ("interval", 5)]:
        kept = [r[i][0] for r in results if r[i][1] != "plain"]
        with_sweep = [r for r in results if r[4]]
        reach = sum(1 for r in with_sweep if r[i][0] >= max(1.0, r[4][0]) / 1.02)
        geo = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs)) if xs else 1.0
        print(f"{label}: kernels {len(results)}, kept a candidate on {len(kept)} (geomean {geo(kept):.3f}x, "
              f"lowest {min(kept, default=1.0):.3f}x), over all {geo([r[i][0] for r in results]):.3f}x; "
              f"within 2 % of the sweep's best on {reach} of {len(with_sweep)}")


if __name__ == "__main__":
    main()
