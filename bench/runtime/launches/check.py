#!/usr/bin/env python3
"""The verdict each case of bench/runtime/launches must get, from what
run.sh left in out/: PASS or FAIL per case, one line each with why, then a
line per measured launch. A case passes when the program ran as it does
plainly (same stdout, status 0, its own results checked) and measure saw
what the case is about:

    capture         g_capture, launched only through a captured graph [memset, kernel]: every launch
                    measured, candidates timed, plain and a candidate byte-identical, the program's
                    bytes compared and identical (the memset node done on the copy)
    explicit        g_root (root of an explicit graph) measured, not compared (g_after runs after it);
                    g_after not measured: g_root was measured at both launches (a note says so)
    explicit-later  the same, one launch measured per kernel: g_root at the first, g_after (after a
                    kernel) at the second, the graph run in three parts: compared and identical
    destroyed-driver
                    explicit-later with the graph destroyed right after its instantiation, through the
                    cuGraphDestroy the driver's cuGetProcAddress gives after the runtime started: the
                    destroy held back until the exec's, and so g_after measured as in explicit-later
                    (a note says the source was held back)
    destroyed-entry the same through cudaGetDriverEntryPoint's cuGraphDestroy, and
    destroyed-runtime
                    through cudaGraphDestroy: g_root measured; g_after either measured so, or (where
                    the program's destroy does not go through an entry regtune looked up) not
                    measured, with the note saying why; which of the two is said
    update          g_update measured at each of 3 launches with the params it ran: 64, 128, 192
                    blocks (exec kernel node and memset node set, then the exec updated), each identical
    coop            c_coop (grid.sync) measured at both launches (cudaLaunchCooperativeKernel,
                    cudaLaunchKernelEx + cooperative attribute), launched cooperatively in the replay
    coop-fat        c_coop's candidates swapped for a build with too few blocks per SM: reported
                    "cannot launch cooperatively at this occupancy", never built; plain measured
    threads         t_kernel from 2 threads on 2 streams: finished (no deadlock), measured, identical
    capture-beside  a launch on another thread during a global-mode capture: not measured (a note says
                    why), the capture intact; the captured graph's launch measured
    device1         a program on device 1 (cudaSetDevice(1)): measured, identical
    devices         device 0 then device 1 in one program: both measured, identical
    variables       v_count (a `__constant__` table and a `__device__` counter), 100 launches, its
                    candidates its faster twin: both replayed launches measured and identical, the
                    choice kept and confirmed on the program's own launches (not whole runs, at least
                    20 pairs, no failure), and the program's counter counted every launch

    python3 bench/runtime/launches/check.py bench/runtime/launches/out
"""

import json
import os
import sys

SYMBOLS = {
    "capture": "_Z9g_capturePdPKdid",
    "root": "_Z6g_rootPdPKdid",
    "after": "_Z7g_afterPdPKdid",
    "update": "_Z8g_updatePdPKdid",
    "coop": "_Z6c_coopPdS_PKdid",
    "t": "_Z8t_kernelPdPKdid",
    "v": "_Z7v_countPdPKdii",
}
COOP_TOO_LARGE = "cannot launch cooperatively at this occupancy"
HELD_BACK = "held back by regtune until the exec is destroyed"
NOT_HELD_BACK = "through a cuGraphDestroy regtune could not hold back"


def read(path, default=""):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return default


def events(out, name):
    lines = read(os.path.join(out, f"{name}-run", "events.jsonl")).splitlines()
    ev = []
    for line in lines:
        try:
            ev.append(json.loads(line))
        except ValueError:
            pass
    return ev


def measured(ev, symbol):
    return [e for e in ev if e.get("event") == "measured" and e["symbol"] == symbol]


def notes(ev, symbol):
    return [e for e in ev if e.get("event") == "note" and e["symbol"] == symbol]


def failed(ev):
    return [e for e in ev if e.get("event") == "failed"]


class Case:
    def __init__(self, out, name):
        self.out, self.name = out, name
        self.ev = events(out, name)
        self.problems = []
        self.facts = []

    def need(self, ok, why):
        if not ok:
            self.problems.append(why)
        return ok

    def ran_as_plainly(self):
        o = self.out
        plain_rc, rc = read(os.path.join(o, f"{self.name}.plain.rc")).strip(), read(os.path.join(o, f"{self.name}.rc")).strip()
        stdout, plain = read(os.path.join(o, f"{self.name}.stdout")), read(os.path.join(o, f"{self.name}.plain.stdout"))
        self.need(plain_rc == "0", f"the program alone exited {plain_rc or '?'}")
        self.need(rc == "0", f"under measure the status was {rc or '?'} ({'timed out' if rc == '124' else read(os.path.join(o, self.name + '.stderr')).strip().splitlines()[-1:]})")
        self.need(stdout == plain and stdout.strip() != "", "stdout differs from the plain run's")
        self.need("WRONG" not in stdout, "the program found a wrong result")
        self.facts.append(f"{read(os.path.join(o, self.name + '.seconds')).strip()} s under measure")
        for f in failed(self.ev):
            self.problems.append(f"failed event: {f.get('message')}")

    def launches(self, symbol, at_least, exactly=None):
        m = measured(self.ev, symbol)
        if exactly is not None:
            self.need(len(m) == exactly, f"{short(symbol)}: {len(m)} launches measured, not {exactly}")
        else:
            self.need(len(m) >= at_least, f"{short(symbol)}: {len(m)} launches measured, fewer than {at_least}")
        for r in m:
            c = r["replayed"]["candidates"]
            plain = c[0]
            self.need(plain["identical"] and r["replayed"]["deterministic"], f"{short(symbol)}: plain not deterministic")
            timed = [x for x in c[1:] if x["times_ms"] and not x.get("error")]
            self.need(len(plain["times_ms"]) > 0 and timed, f"{short(symbol)}: no candidate timed beside plain")
            self.need(any(x["identical"] for x in timed), f"{short(symbol)}: no candidate byte-identical to plain")
        return m

    def program(self, m, want):
        for r in m:
            self.need(r.get("program_identical") is want, f"{short(r['symbol'])}: program_identical {r.get('program_identical')}, not {want}")

    def verdict(self):
        word = "PASS" if not self.problems else "FAIL"
        why = "; ".join(self.problems) if self.problems else "; ".join(self.facts)
        lines = [f"{word} {self.name}: {why}"]
        for r in [e for e in self.ev if e.get("event") == "measured"]:
            c = r["replayed"]["candidates"]
            timed = sum(1 for x in c if x["times_ms"])
            errs = sorted({x["error"].split(" (")[0] for x in c if x.get("error")})
            lines.append(
                f"    {short(r['symbol'])}: grid {r['launch']['grid'][0]} x {r['launch']['block'][0]}"
                f"{' cooperative' if r['launch'].get('cooperative') else ''}, {r['bytes']} bytes, {timed}/{len(c)} candidates timed,"
                f" identical {sum(1 for x in c if x['identical'])}, program {r.get('program_identical')}"
                + (f", refused: {'; '.join(errs)}" if errs else "")
            )
        for n in [e for e in self.ev if e.get("event") == "note"]:
            lines.append(f"    note {short(n['symbol'])}: {n['message']} ({n['launches']})")
        return "\n".join(lines)


def short(symbol):
    for k, v in SYMBOLS.items():
        if v == symbol:
            return {"t": "t_kernel", "coop": "c_coop", "v": "v_count"}.get(k, "g_" + k)
    return symbol


def check(out, name):
    c = Case(out, name)
    if not os.path.exists(os.path.join(out, f"{name}.rc")):
        return None
    c.ran_as_plainly()
    if name == "capture":
        c.program(c.launches(SYMBOLS["capture"], 3, exactly=3), True)
    elif name == "explicit":
        m = c.launches(SYMBOLS["root"], 2, exactly=2)
        c.program(m, None)
        c.need(not measured(c.ev, SYMBOLS["after"]), "g_after was measured though g_root was measured at both launches")
        c.need(any("another kernel of its CUDA graph was measured" in n["message"] for n in notes(c.ev, SYMBOLS["after"])),
               "no note why g_after was not measured")
        c.need(any("not compared" in n["message"] for n in notes(c.ev, SYMBOLS["root"])), "no note that g_root's program bytes were not compared")
    elif name == "explicit-later":
        c.program(c.launches(SYMBOLS["root"], 1, exactly=1), None)
        c.program(c.launches(SYMBOLS["after"], 1, exactly=1), True)
        c.need(any("ran in three parts" in n["message"] for n in notes(c.ev, SYMBOLS["after"])), "no note that g_after's graph ran in parts")
    elif name == "destroyed-driver":
        c.program(c.launches(SYMBOLS["root"], 1, exactly=1), None)
        c.program(c.launches(SYMBOLS["after"], 1, exactly=1), True)
        after = notes(c.ev, SYMBOLS["after"])
        c.need(any("ran in three parts" in n["message"] for n in after), "no note that g_after's graph ran in parts")
        c.need(any(HELD_BACK in n["message"] for n in after), "no note that the destroyed source graph was held back")
    elif name in ("destroyed-entry", "destroyed-runtime"):
        c.program(c.launches(SYMBOLS["root"], 1, exactly=1), None)
        after = notes(c.ev, SYMBOLS["after"])
        if measured(c.ev, SYMBOLS["after"]):
            c.program(c.launches(SYMBOLS["after"], 1, exactly=1), True)
            c.need(any(HELD_BACK in n["message"] for n in after), "g_after measured but no note that the source was held back")
            c.facts.append("the destroy held back: g_after measured in parts")
        else:
            c.need(any(NOT_HELD_BACK in n["message"] for n in after), "g_after not measured and no note saying why")
            c.facts.append("the destroy not held back: g_after ran whole, unmeasured, with its note")
    elif name == "update":
        m = c.launches(SYMBOLS["update"], 3, exactly=3)
        c.program(m, True)
        grids = [r["launch"]["grid"][0] for r in m]
        c.need(grids == [64, 128, 192], f"grids measured {grids}, not [64, 128, 192]")
        c.facts.append(f"grids {grids}, bytes {[r['bytes'] for r in m]}")
    elif name == "coop":
        m = c.launches(SYMBOLS["coop"], 2, exactly=2)
        c.program(m, True)
        c.need(all(r["launch"].get("cooperative") for r in m), "not replayed as cooperative launches")
    elif name == "coop-fat":
        m = measured(c.ev, SYMBOLS["coop"])
        c.need(len(m) == 2, f"c_coop: {len(m)} launches measured, not 2")
        for r in m:
            cands = r["replayed"]["candidates"]
            c.need(cands[0]["identical"] and cands[0]["times_ms"], "plain not measured")
            c.need(any(COOP_TOO_LARGE in (x.get("error") or "") for x in cands), f"no candidate reported '{COOP_TOO_LARGE}'")
        c.program(m, True)
        report = json.loads(read(os.path.join(out, "coop-fat.json"), "{}") or "{}")
        rows = [r for r in report.get("kernels", []) if r.get("symbol") == SYMBOLS["coop"]]
        too_large = [r for r in rows if COOP_TOO_LARGE in r.get("verdict", "")]
        c.need(too_large, "the report has no row saying so")
        c.need(not any(r.get("built") for r in too_large), "a candidate that cannot launch was chosen")
        c.facts.append(f"{len(too_large)} candidates: {too_large[0]['verdict'] if too_large else '-'}")
    elif name == "threads":
        m = c.launches(SYMBOLS["t"], 2)
        c.program(m, True)
        waited = [n for n in notes(c.ev, SYMBOLS["t"]) if "waiting" in n["message"]]
        c.facts.append(f"{len(m)} launches measured, {'some waited too long' if waited else 'none waited too long'}")
    elif name == "capture-beside":
        m = c.launches(SYMBOLS["t"], 1, exactly=1)
        c.program(m, True)
        c.need(any("being captured" in n["message"] for n in notes(c.ev, SYMBOLS["t"])), "no note for the launch beside the capture")
    elif name == "device1":
        c.program(c.launches(SYMBOLS["t"], 3, exactly=3), True)
        c.facts.append(f"on {measured(c.ev, SYMBOLS['t'])[0]['device'] if measured(c.ev, SYMBOLS['t']) else '?'}")
    elif name == "devices":
        c.program(c.launches(SYMBOLS["t"], 6, exactly=6), True)
    elif name == "variables":
        c.program(c.launches(SYMBOLS["v"], 2, exactly=2), True)
        conf = [e for e in c.ev if e.get("event") == "confirmed" and e["symbol"] == SYMBOLS["v"]]
        c.need(len(conf) == 1, f"{len(conf)} confirmations of v_count, not 1")
        for e in conf:
            c.need(not e.get("failure"), f"not confirmed: {e.get('failure')}")
            c.need(not e.get("whole_runs"), "confirmed over whole runs, not the program's own launches")
            c.need(len(e.get("plain_ms", [])) >= 20, f"{len(e.get('plain_ms', []))} pairs, fewer than 20")
            if e.get("plain_ms") and e.get("choice_ms"):
                ratio = sorted(e["plain_ms"])[len(e["plain_ms"]) // 2] / sorted(e["choice_ms"])[len(e["choice_ms"]) // 2]
                c.facts.append(f"{e['candidate']} confirmed over {e['launches']} launches, {ratio:.2f}x")
        stdout = read(os.path.join(out, "variables.stdout"))
        c.need("counted 6553600," in stdout, f"the counter did not count every launch: {stdout.strip()}")
    return c.verdict()


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "out")
    print(read(os.path.join(out, "date.txt")).strip(), read(os.path.join(out, "gpu.txt")).strip().replace("\n", " | "))
    fails = 0
    for name in ["capture", "explicit", "explicit-later", "destroyed-driver", "destroyed-entry", "destroyed-runtime", "update", "coop", "coop-fat", "threads", "capture-beside", "device1", "devices", "variables"]:
        v = check(out, name)
        if v is None:
            continue
        print(v)
        fails += v.startswith("FAIL")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
