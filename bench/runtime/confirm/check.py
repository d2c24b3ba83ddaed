#!/usr/bin/env python3
"""The table of bench/runtime/confirm from run.sh's out/: per kernel, the
replay's figure for its decided build, the program's own launches' figure
(the confirmation), the rebuilt program's own timer (plain's median over
FAST's, CONFIRM_TIME=1), and what measure kept; then measure's notes, and
whether the program's output was its own.

    python3 bench/runtime/confirm/check.py bench/runtime/confirm/out
"""

import json
import os
import re
import statistics
import sys


def read(path, default=""):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return default


def timers(text):
    """{program: {kernel: [ms, ...]}} from timer.txt."""
    out, prog = {}, None
    for line in text.splitlines():
        m = re.match(r"== (\S+) ", line)
        if m:
            prog = m.group(1)
            continue
        m = re.match(r"timer (\S+) ([0-9.]+)", line)
        if m and prog:
            out.setdefault(prog, {}).setdefault(m.group(1), []).append(float(m.group(2)))
    return out


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "out")
    t = timers(read(os.path.join(out, "timer.txt")))
    plain_stdout = read(os.path.join(out, "plain.stdout"))
    print(f"GPU: {read(os.path.join(out, 'gpu.txt')).strip()}  ({read(os.path.join(out, 'date.txt')).strip()})")
    for n in (1, 2):
        report = json.loads(read(os.path.join(out, f"measure-{n}.json"), "{}") or "{}")
        rc = read(os.path.join(out, f"measure-{n}.rc")).strip()
        same = read(os.path.join(out, f"measure-{n}.stdout")) == plain_stdout and plain_stdout != ""
        print(f"\nmeasure run {n}: {rc}; the program's output {'is its own' if same else 'DIFFERS'}")
        print(f"{'kernel':10} {'replay':>14} {'program (pairs)':>26} {'rebuilt timer':>14} {'plain ms':>9}  kept  verdict")
        confirmed = {}
        for line in read(os.path.join(out, f"events-{n}.jsonl")).splitlines():
            e = json.loads(line)
            if e.get("event") == "confirmed":
                confirmed[e["symbol"]] = e
        for r in report.get("kernels", []):
            if r.get("candidate") in ("plain", "plain again") or ":" in r.get("candidate", ""):
                continue
            k = r["kernel"]
            replay = f"{r['speedup']:.3f}×" if r.get("speedup") else "-"
            if r.get("margin"):
                replay += f" ±{100 * r['margin']:.1f}%"
            prog = "-"
            if r.get("program_speedup"):
                prog = f"{r['program_speedup']:.3f}× ±{100 * (r.get('program_margin') or 0):.1f}% ({r.get('program_pairs')})"
            timer, plain_ms = "-", "-"
            if k in t.get("confirm", {}) and k in t.get("confirm-fast", {}):
                p, f = statistics.median(t["confirm"][k]), statistics.median(t["confirm-fast"][k])
                timer, plain_ms = f"{p / f:.3f}×", f"{p:.4f}"
            kept = "yes" if r.get("built") else "no"
            print(f"{k:10} {replay:>14} {prog:>26} {timer:>14} {plain_ms:>9}  {kept:4}  {r.get('verdict', '')}")
            c = confirmed.get(r.get("symbol"))
            if c and c.get("plain_ms") and c.get("choice_ms"):
                p, f = statistics.median(c["plain_ms"]), statistics.median(c["choice_ms"])
                print(f"{'':10} the program's launches (CUPTI): plain {p:.4f} ms, the choice {f:.4f} ms over {len(c['plain_ms'])} pairs "
                      f"({p / f:.3f}×); registers in the records: plain {c.get('registers', [None, None])[0]}, "
                      f"the choice {c.get('registers', [None, None])[1]}; {c.get('failure') or 'confirmed'}")
        for note in report.get("notes", []):
            print(f"  note: {note}")


if __name__ == "__main__":
    main()
