#!/usr/bin/env python3
"""Predicted against measured speed of every candidate: how well the cost
model (`regtune predict`) ranks what a GPU then measures.

    python3 bench/calibrate/correlate.py PREDICT.json MEASURED.json [PREDICT.json MEASURED.json ...]

PREDICT.json is `regtune predict`'s document; MEASURED.json either
bench/calibrate/examples.py's output or `regtune measure --format json`'s
(rows with "symbol", "transforms" and "speedup"). Candidates are matched by
kernel symbol and transforms; plain builds are left out. Printed: the
number of candidates, Spearman's rank correlation and Pearson's correlation
of log speedups, how often the model calls the direction right (faster,
slower, or within 2 % of plain), and every candidate it gets wrong: a
predicted win that ran slower, or a predicted loss that ran faster.
"""

import json
import math
import sys

SAME = 0.02  # within 2 % of plain: "no change"


def direction(x):
    return 1 if x > 1 + SAME else (-1 if x < 1 - SAME else 0)


def ranks(xs):
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    r = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2
        i = j + 1
    return r


def pearson(a, b):
    n = len(a)
    if n < 2:
        return float("nan")
    ma, mb = sum(a) / n, sum(b) / n
    cov = sum((x - ma) * (y - mb) for x, y in zip(a, b))
    va = sum((x - ma) ** 2 for x in a)
    vb = sum((y - mb) ** 2 for y in b)
    return cov / math.sqrt(va * vb) if va and vb else float("nan")


def key(row):
    # NVPTX occupancy targets: "warps-per-sm=N" (predict before it named
    # them so wrote "waves-per-eu=N").
    return row["symbol"], tuple(sorted(t.replace("waves-per-eu=", "warps-per-sm=") for t in row["transforms"]))


def pairs(predict_docs, measured_docs):
    """(predicted candidate, measured speedup, identical) for every match."""
    out = []
    for p, m in zip(predict_docs, measured_docs):
        rows = m.get("candidates") or m.get("kernels") or []
        measured = {}
        for r in rows:
            if r.get("speedup") is not None:
                measured[key(r)] = r
        for c in p["candidates"]:
            if not c["transforms"]:
                continue
            r = measured.get(key(c))
            if r:
                out.append((c, r["speedup"], r.get("identical", True)))
    return out


def summary(matched, predicted=lambda c: c["predicted_speedup"]):
    pred = [predicted(c) for c, _, _ in matched]
    meas = [m for _, m, _ in matched]
    logs = lambda xs: [math.log(max(x, 1e-9)) for x in xs]
    right = sum(direction(p) == direction(m) for p, m in zip(pred, meas))
    wrong = [(c, p, m) for (c, m, _), p in zip(matched, pred)
             if direction(p) * direction(m) < 0 or (direction(p) > 0 and direction(m) <= 0)]
    return {
        "candidates": len(matched),
        "spearman": pearson(ranks(pred), ranks(meas)),
        "pearson_log": pearson(logs(pred), logs(meas)),
        "direction_right": right,
        "wrong": wrong,
    }


def main(argv):
    if len(argv) < 2 or len(argv) % 2:
        sys.exit(__doc__)
    docs = [json.load(open(f)) for f in argv]
    matched = pairs(docs[0::2], docs[1::2])
    s = summary(matched)
    print(f"{s['candidates']} candidates: Spearman {s['spearman']:.3f}, Pearson (log) {s['pearson_log']:.3f}, "
          f"direction right {s['direction_right']}/{s['candidates']}")
    print(f"wrong ({len(s['wrong'])}): predicted a win that was not, or a loss that was a win")
    for c, p, m in sorted(s["wrong"], key=lambda w: w[2]):
        print(f"  {c['kernel'][:28]:28} {'+'.join(c['transforms'])[:44]:44} predicted {p:6.3f} measured {m:6.3f}")


if __name__ == "__main__":
    main(sys.argv[1:])
