#!/usr/bin/env python3
"""PASS or FAIL per case of reach.cu under `regtune measure` (reach.sh runs
them on the GPU and keeps each run's files): the verdict each case must
get, read from the interposer's events (`--keep DIR`/events.jsonl).

    python3 bench/runtime/check.py bench/runtime/out-reach

A case "measured, identical" needs, on every launch of its kernel: plain's
bytes the same on its second run and as the program's own launch left
them, at least one candidate besides plain run, and every candidate that
ran byte-identical to plain (other compilers' builds aside). Where the
replay ran (at the program's addresses, or relocated with the stored
pointers moved) is a case of its own. Exit status 1 when any case fails.
"""

import json
import os
import sys


def events(out, run):
    path = os.path.join(out, f"run-{run}", "events.jsonl")
    if not os.path.exists(path):
        return []
    found = []
    for line in open(path):
        try:
            found.append(json.loads(line))
        except ValueError:
            pass
    return found


def of(evs, kernel):
    measured = [e for e in evs if e.get("event") == "measured" and kernel in e["symbol"]]
    failed = [e for e in evs if e.get("event") == "failed" and kernel in e.get("symbol", "")]
    return measured, failed


def measured_identical(evs, kernel, reached=0, globals_=0, relocated=None):
    """Why not, or None when the kernel was measured and identical
    (relocated: True, it must have been; False, it must not)."""
    measured, failed = of(evs, kernel)
    if failed:
        return "failed: " + failed[0]["message"]
    if not measured:
        return "not measured (no launch seen)"
    for m in measured:
        r = m["replayed"]
        if relocated is False and r.get("relocated"):
            return "relocated: " + r["relocated"]
        if relocated is True and not r.get("relocated"):
            return "not relocated"
        if not r["deterministic"]:
            return "plain's second run differs"
        if m.get("program_identical") is not True:
            return f"program's launch vs plain: {m.get('program_identical')} {m.get('program_difference', '')}"
        # Other compilers' builds and the user's own may differ: they are reported, never chosen.
        ran = [c for c in r["candidates"] if not c.get("error") and not c["name"].startswith(("other:", "compare:"))]
        if len(ran) < 2:
            return "no candidate besides plain ran: " + "; ".join(f"{c['name']}: {c.get('error')}" for c in r["candidates"])
        differ = [c for c in ran if not c["identical"]]
        if differ:
            return f"{differ[0]['name']} differs: {differ[0].get('difference')}"
        if m.get("reached", 0) < reached:
            return f"reached {m.get('reached', 0)} allocations through memory, expected at least {reached}"
        if m.get("globals", 0) < globals_:
            return f"copied {m.get('globals', 0)} module variables, expected at least {globals_}"
    return None


def describe(evs, kernel):
    measured, _ = of(evs, kernel)
    if not measured:
        return ""
    m = measured[0]
    r = m["replayed"]
    cands = ", ".join(c["name"] for c in r["candidates"] if not c.get("error"))
    where = f"relocated, {r.get('moved', 0)} stored pointers moved" if r.get("relocated") else "at the program's addresses"
    return f" [{len(measured)} launch(es), {where}; {m['ranges']} allocations, {m['bytes']} bytes, {m.get('reached', 0)} reached through memory, {m.get('globals', 0)} variables; ran {cands}]"


def fails_with(evs, kernel, *words):
    measured, failed = of(evs, kernel)
    if measured and not failed:
        return "measured, not failed"
    if not failed:
        return "no launch seen"
    message = failed[0]["message"]
    missing = [w for w in words if w not in message]
    return f"failed, but without {missing}: {message}" if missing else None


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "out-reach")
    measure, every, relocated, arguments, budget = (events(out, r) for r in ["measure", "all", "relocated", "arguments", "budget"])
    kernels = ["chase_rows", "chase_list", "chase_global", "constant_table", "device_counter", "managed_heavy", "async_heavy", "pool_heavy"]
    cases = [
        ("rows: a kernel reading through an array of 64 device pointers is measured, byte-identical",
         lambda: measured_identical(measure, "chase_rows", reached=64), "chase_rows", measure),
        ("list: a kernel walking a linked list (16 nodes, 16 payloads, each its own allocation) is measured, byte-identical",
         lambda: measured_identical(measure, "chase_list", reached=31), "chase_list", measure),
        ("global: the same list reached from a __device__ pointer is measured, byte-identical",
         lambda: measured_identical(measure, "chase_global", reached=32, globals_=1), "chase_global", measure),
        ("constant: a kernel reading a __constant__ table the program set is measured, byte-identical",
         lambda: measured_identical(measure, "constant_table", globals_=1), "constant_table", measure),
        ("counter: a kernel adding to a __device__ counter is measured, byte-identical (the counter compared)",
         lambda: measured_identical(measure, "device_counter", globals_=1), "device_counter", measure),
        ("managed: a kernel on cudaMallocManaged memory is measured, byte-identical",
         lambda: measured_identical(measure, "managed_heavy"), "managed_heavy", measure),
        ("async: a kernel on cudaMallocAsync memory (default pool) is measured, byte-identical",
         lambda: measured_identical(measure, "async_heavy"), "async_heavy", measure),
        ("pool: a kernel on cudaMallocFromPoolAsync memory (the program's pool) is measured, byte-identical",
         lambda: measured_identical(measure, "pool_heavy"), "pool_heavy", measure),
    ]
    cases.append(("at the program's addresses: every launch above replayed there (cuMemAddressReserve at the program's own addresses)",
                  lambda: next((f"{k}: {why}" for k in kernels for why in [at_program(measure, k)] if why), None), kernels[0], measure))
    for kernel in kernels:
        cases.append((f"--capture-all: {kernel} is measured, byte-identical", lambda k=kernel: measured_identical(every, k), kernel, every))
    for kernel, reached in [("chase_rows", 64), ("chase_list", 31), ("chase_global", 32), ("constant_table", 0), ("device_counter", 0)]:
        cases.append((f"REGTUNE_REPLAY_RELOCATE=1 (copies of the replayer's own, stored pointers moved): {kernel} is measured, byte-identical",
                      lambda k=kernel, n=reached: measured_identical(relocated, k, reached=n, relocated=True), kernel, relocated))
    cases += [
        ("REGTUNE_REPLAY_RELOCATE=arguments (the argument buffer's pointers alone moved, as measure replayed before): chase_rows faults in the replay",
         lambda: fails_with(arguments, "chase_rows", "faulted"), "chase_rows", arguments),
        ("REGTUNE_REPLAY_RELOCATE=arguments: constant_table (no stored pointer) is measured, byte-identical",
         lambda: measured_identical(arguments, "constant_table", relocated=True), "constant_table", arguments),
        ("--capture-budget 0: chase_list's list is left out, said in the failure (plain faults in the replay)",
         lambda: fails_with(budget, "chase_list", "faulted", "capture budget"), "chase_list", budget),
    ]
    failed = 0
    for name, check, kernel, evs in cases:
        why = check()
        failed += why is not None
        print(f"{'PASS' if why is None else 'FAIL'}  {name}{describe(evs, kernel)}" + ("" if why is None else f"\n      {why}"))
    for run in ["measure", "all", "relocated", "budget"]:
        a, b = os.path.join(out, "plain.stdout"), os.path.join(out, f"{run}.stdout")
        if run in ("measure", "all") and os.path.exists(b):
            same = open(a).read() == open(b).read()
            failed += not same
            print(f"{'PASS' if same else 'FAIL'}  {run}: the program printed what it prints unmeasured")
    print(f"{failed} failed" if failed else "all passed")
    return 1 if failed else 0


def at_program(evs, kernel):
    """Why a kernel's launches were not replayed at the program's addresses, or None."""
    measured, failed = of(evs, kernel)
    if not measured:
        return "not measured"
    return next((m["replayed"]["relocated"] for m in measured if m["replayed"].get("relocated")), None)


if __name__ == "__main__":
    sys.exit(main())
