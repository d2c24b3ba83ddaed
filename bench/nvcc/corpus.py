#!/usr/bin/env python3
"""The development corpus built by nvcc (issue 38, item 5): the programs of
bench/calibrate/corpus_programs.py, from the same sources (mirrors, commits,
fixups: bench/calibrate/corpus.py's functions, imported), each compiled by
nvcc with the flags its own build gives nvcc (the table's "nvcc_flags",
"-arch=sm_90", its defines and includes) and linked by nvcc (static
cudart), plus the hand sweep a user of nvcc would try: every kernel file
as `nvcc -cubin` with each `-maxrregcount=R` of corpus.py's SWEEP, for
`regtune measure --compare`. Host-only files: g++/gcc, as the programs'
builds compile them. Runs on the CPU machine (ci/bootstrap.sh's nvcc 13.5;
regtune for the report).

    build/corpus-nvcc/<program>/src/             the sources (as for clang, from the mirror)
    build/corpus-nvcc/<program>/<program>        the program, nvcc-built, stripped
    build/corpus-nvcc/<program>/sweep/<tu>.plain.cubin, <tu>.r<R>.cubin
                                                 nvcc -cubin [-maxrregcount=R] of each kernel file
                                                 (a cubin equal to one written before names that one)
    build/corpus-nvcc/<program>.tar.xz           the above, packed (--keep: not); `unpack` unpacks
    build/corpus-nvcc/programs.json              as corpus.py's, with "compiler": "nvcc" and each TU's nvcc
                                                 line ("flags") and its flags for `regtune --compiler nvcc`
                                                 ("regtune_args")
    build/corpus-nvcc/summary.txt                per program: kernels, register-limited kernels (nvcc's code)

(build/ is bench/calibrate/build, ignored by git.)

    python3 bench/nvcc/corpus.py build [--only P...] [--no-sweep] [--keep] [-j N] [--arch sm_90]
    python3 bench/nvcc/corpus.py summary | pack | unpack [--only P...]

bench/calibrate/corpus.py --compiler nvcc ARGS... runs this. A program nvcc
cannot build is listed in programs.json and summary.txt with the one-line
reason (the others are built regardless).
"""

import argparse
import concurrent.futures
import hashlib
import importlib.util
import json
import os
import shutil
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "bench"))
from cubin import sections as cubin_sections  # noqa: E402


def _load_clang_corpus():
    """bench/calibrate/corpus.py as a module (its name clashes with this file's)."""
    path = os.path.join(REPO, "bench", "calibrate", "corpus.py")
    if "calibrate_corpus" in sys.modules:
        return sys.modules["calibrate_corpus"]
    spec = importlib.util.spec_from_file_location("calibrate_corpus", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["calibrate_corpus"] = mod
    spec.loader.exec_module(mod)
    return mod


C = _load_clang_corpus()
ROOT = os.path.join(C.OUT, "corpus-nvcc")
SWEEP = C.SWEEP
# Included first in every CUDA file nvcc compiles here: what nvcc 13 needs of the older sources and of
# bootstrap's toolkit (13.5's nvcc with 13.0's CCCL); see the header.
COMPAT_HEADER = os.path.join(HERE, "compat", "regtune_nvcc_compat.h")


def nvcc_path():
    for c in [os.environ.get("REGTUNE_NVCC"), "/opt/regtune-nvcc/bin/nvcc"]:
        if c and os.path.isfile(c):
            return c
    sys.exit("no nvcc: run ci/bootstrap.sh (or set REGTUNE_NVCC)")


def extra_includes(src, nvcc):
    """cuRAND's device headers where the program includes them and nvcc's
    toolkit has none (bootstrap's nvcc comes without cuRAND; a real toolkit
    has it): those of the CUDA clang builds with (bootstrap's 12.9, header
    only), copied alone into build/corpus-nvcc/include-curand, so both
    compilers read the same."""
    toolkit = os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
    if os.path.exists(os.path.join(toolkit, "include", "curand_kernel.h")):
        return []
    uses = False
    for d, _, fs in os.walk(src):
        for f in fs:
            if f.endswith(C.SOURCE_EXT) and b"curand" in open(os.path.join(d, f), "rb").read():
                uses = True
    if not uses:
        return []
    dest = os.path.join(ROOT, "include-curand")
    if not os.path.isdir(dest):
        cuda = C.cuda_root()
        os.makedirs(dest + ".part", exist_ok=True)
        for f in os.listdir(os.path.join(cuda, "include")):
            if f.startswith("curand"):
                shutil.copy(os.path.join(cuda, "include", f), dest + ".part")
        os.replace(dest + ".part", dest)
    return [f"-I{dest}"]


def tu_flags(p, src, kind, nvcc, arch):
    """The command that compiles one translation unit (without -c FILE -o
    OBJ) and, for CUDA files, the flags regtune takes after `--` with
    --compiler nvcc (the same, less the compiler)."""
    includes = [f"-I{os.path.join(src, d)}" for d in p.get("includes", ["."])]
    defines = [f"-D{d}" for d in p.get("nvcc_defines", p.get("defines", []))]
    if kind == "cuda":
        common = list(p["nvcc_flags"]) + [f"-arch={arch}", "-include", COMPAT_HEADER] + defines + includes \
            + extra_includes(src, nvcc)
        return [nvcc] + common, common
    include_cuda = [f"-I{os.path.join(os.path.dirname(os.path.dirname(nvcc)), 'include')}"] + extra_includes(src, nvcc)
    host = p.get("nvcc_host_flags", ["-O3"])
    if kind == "c":
        return ["gcc"] + host + ["-w"] + p.get("c_flags", []) + defines + includes + include_cuda, None
    return ["g++"] + host + ["-w"] + p.get("cxx_flags", []) + defines + includes + include_cuda, None


def build_program(name, p, nvcc, arch, jobs):
    """The program built by nvcc, as corpus.build_program builds it by clang."""
    if "nvcc_flags" not in p:
        raise RuntimeError("the table gives no nvcc_flags for it")
    here = os.path.join(ROOT, name)
    if os.path.isdir(here):
        shutil.rmtree(here)
    os.makedirs(here)
    src = C.prepare_sources(name, p, here)
    C.apply_fixups(src, p.get("nvcc_fixups", {}))  # what nvcc 13 alone needs (APIs CUDA 13 removed)
    obj_dir = os.path.join(here, "obj")
    os.makedirs(obj_dir)
    units, compiles = [], []
    for kind, files in [("cuda", p["cuda"]), ("cxx", p.get("cxx", [])), ("c", p.get("c", []))]:
        for f in files:
            flags, regtune_args = tu_flags(p, src, kind, nvcc, arch)
            path = os.path.join(src, f)
            obj = os.path.join(obj_dir, f.replace("/", "_") + ".o")
            compiles.append(flags + ["-c", path, "-o", obj])
            unit = {"file": C.rel(path), "lang": kind, "flags": [C.rel_flag(x) for x in flags]}
            if kind == "cuda":
                unit["regtune_args"] = [C.rel_flag(x) for x in regtune_args]
                unit["kernels"] = f in p.get("kernels", p["cuda"])
            units.append(unit)
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        list(pool.map(C.run, compiles))
    binary = os.path.join(here, name)
    C.run([nvcc, f"-arch={arch}"] + [c[-1] for c in compiles] + ["-o", binary, "-lm"] + p.get("libs", []))
    C.run(["llvm-strip-22", "--strip-all", binary])
    shutil.rmtree(obj_dir)
    cwd = os.path.join(src, p["cwd"]) if "cwd" in p else here
    return {
        "compiler": "nvcc", "nvcc": nvcc, "nvcc_version": nvcc_version(nvcc),
        "source": {"repo": p["repo"], "dir": p["dir"], "commit": C.mirror_commit(p)},
        "binary": C.rel(binary), "args": p["args"], "cwd": C.rel(cwd), "check": p.get("check", ""),
        "note": p.get("note", ""), "unlaunched": p.get("unlaunched", []), "units": units,
    }


def nvcc_version(nvcc):
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout.strip().splitlines()
    return out[-1] if out else "?"


def sweep_program(name, entry, jobs):
    """Each kernel file as a cubin, `nvcc <its flags> -cubin` plainly and
    with -maxrregcount=R for every R of SWEEP: what a user's hand sweep
    builds (nvcc hands the cap to cicc as well as to ptxas, so each is a
    whole nvcc run, not one PTX assembled many times). A cubin equal to one
    already written for the same file names that one."""
    sweep_dir = os.path.join(ROOT, name, "sweep")
    if os.path.isdir(sweep_dir):
        shutil.rmtree(sweep_dir)
    os.makedirs(sweep_dir)
    jobs_list = []
    for unit in (u for u in entry["units"] if u.get("kernels")):
        stem = C.tu_stem(unit, entry)
        unit["sweep_command"] = unit["flags"] + ["-cubin", "[-maxrregcount=R]", unit["file"], "-o", "CUBIN"]
        for r in ["plain"] + SWEEP:
            out = os.path.join(sweep_dir, f"{stem}.{'plain' if r == 'plain' else f'r{r}'}.cubin")
            cmd = unit["flags"] + ["-cubin"] + ([] if r == "plain" else [f"-maxrregcount={r}"]) + [unit["file"], "-o", out]
            jobs_list.append((unit, r, out, cmd))
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:  # from the repository root, as regtune tune runs nvcc
        list(pool.map(lambda j: C.run(j[3], cwd=REPO), jobs_list))
    seen = {}
    for unit, r, out, _ in jobs_list:
        data = open(out, "rb").read()
        if data[:4] != b"\x7fELF":
            raise RuntimeError(f"{out}: not a cubin (ELF)")
        key = (unit["file"], hashlib.sha256(data).hexdigest())
        if key in seen:
            os.remove(out)
            out = seen[key]
        else:
            seen[key] = out
        unit.setdefault("sweep", {})["plain" if r == "plain" else str(r)] = C.rel(out)


def cubin_code(path):
    """What of a cubin is the code (the sections regtune measure compares
    with the loaded module, .text and .nv.info, and the constant and shared
    banks the kernels declare): nvcc's cubins of one file differ in their
    notes (.note.nv.tkinfo records ptxas's command line), line tables and
    .nv.info's EIATTR_MAXREG_COUNT (the -maxrregcount given) even where a
    cap changes no instruction; those are left out."""
    out = []
    for name, _, size, body in cubin_sections(open(path, "rb").read()):
        if name.startswith((".text", ".nv.info", ".nv.constant", ".nv.shared", ".nv.global")):
            out.append((name, size, without_maxreg(body) if name.startswith(".nv.info") else body))
    return hashlib.sha256(repr(sorted(out)).encode()).hexdigest()


def without_maxreg(info):
    """An .nv.info section's attributes less EIATTR_MAXREG_COUNT (0x1b)."""
    out, off = b"", 0
    while off + 4 <= len(info):
        fmt, attr, size = struct.unpack_from("<BBH", info, off)
        n = 4 + (size if fmt == 0x04 else 0)  # EIFMT_SVAL: a payload of `size` bytes; else the value is `size`
        if attr != 0x1B:
            out += info[off:off + n]
        off += n
    return out


def dedupe_sweep(entry):
    """Each kernel file's sweep: a cap whose cubin has the code of an
    earlier one (plain first, then from the highest cap down) names that
    one, its own file removed, so `--compare` times each different code
    once, under the highest cap that gives it. Idempotent."""
    for unit in entry["units"]:
        seen = {}
        order = sorted(unit.get("sweep", {}).items(), key=lambda kv: -1 if kv[0] == "plain" else -int(kv[0]))
        for r, path in order:
            full = os.path.join(REPO, path)
            key = cubin_code(full)
            if key in seen and seen[key] != path:
                if path not in seen.values() and os.path.exists(full):
                    os.remove(full)
                unit["sweep"][r] = seen[key]
            else:
                seen.setdefault(key, path)


def one_line(e):
    """A failed build's cause, in one line."""
    if isinstance(e, subprocess.CalledProcessError):
        text = (e.stderr or "") + (e.stdout or "")
        err = [l.strip() for l in text.splitlines() if "error" in l or "undefined reference" in l][:2]
        return f"{os.path.basename(e.cmd[0])} failed: " + " | ".join(err or text.strip().splitlines()[-2:])
    return str(e)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("command", nargs="?", default="build", choices=["build", "summary", "pack", "unpack"])
    p.add_argument("--arch", default="sm_90")
    p.add_argument("--regtune", default=None, help="regtune binary (default: target/release/regtune, else target/debug/regtune)")
    p.add_argument("--programs", default=os.path.join(REPO, "bench", "calibrate", "corpus_programs.py"))
    p.add_argument("--only", nargs="*", help="programs (default: all)")
    p.add_argument("--no-sweep", action="store_true", help="build: skip the -maxrregcount cubins")
    p.add_argument("--keep", action="store_true", help="leave build/corpus-nvcc/<program>/ unpacked")
    p.add_argument("-j", "--jobs", type=int, default=2)
    p.add_argument("-v", "--verbose", action="store_true")
    a = p.parse_args(argv)
    C.VERBOSE = a.verbose
    os.makedirs(ROOT, exist_ok=True)
    manifest_path = os.path.join(ROOT, "programs.json")
    programs = json.load(open(manifest_path)) if os.path.exists(manifest_path) else {}
    table = C.load_programs(a.programs)
    order = list(table)
    programs = {n: programs[n] for n in table if n in programs}
    unknown = set(a.only or []) - set(order)
    if unknown:
        sys.exit(f"unknown programs: {sorted(unknown)}")
    names = [n for n in order if not a.only or n in a.only]
    if a.command in ["pack", "unpack"]:
        for name in names:
            (C.pack if a.command == "pack" else C.unpack)(name, ROOT)
        return
    nvcc = nvcc_path()
    regtune = a.regtune or next((os.path.join(REPO, "target", b, "regtune") for b in ["release", "debug"]
                                 if os.path.exists(os.path.join(REPO, "target", b, "regtune"))), None)
    regtune = os.path.abspath(regtune) if regtune and os.path.exists(regtune) else None
    if not regtune:
        print("no regtune binary: no report of the kernels (--regtune)", file=sys.stderr)

    def save():
        json.dump(programs, open(manifest_path, "w"), indent=1)

    started = time.time()
    for name in names:
        if a.command == "build":
            t0 = time.time()
            try:
                if os.path.exists(C.archive_path(name, ROOT)):
                    os.remove(C.archive_path(name, ROOT))
                entry = build_program(name, table[name], nvcc, a.arch, a.jobs)
                entry["built"] = True
                if not a.no_sweep:
                    sweep_program(name, entry, a.jobs)
                entry["build_seconds"] = round(time.time() - t0, 1)
                programs[name] = entry
                print(f"{name}: built by nvcc ({entry['build_seconds']:.0f} s)", file=sys.stderr)
            except (subprocess.CalledProcessError, RuntimeError, OSError) as e:
                programs[name] = {"built": False, "compiler": "nvcc", "error": one_line(e)}
                print(f"{name}: FAILED: {programs[name]['error']}", file=sys.stderr)
                if os.path.isdir(os.path.join(ROOT, name)):
                    shutil.rmtree(os.path.join(ROOT, name))
                save()
                continue
        entry = programs.get(name)
        if not entry or not entry.get("built"):
            continue
        C.unpack(name, ROOT)
        dedupe_sweep(entry)
        C.annotate_sweep(entry)
        if regtune:
            entry["kernels"], failures = C.report_program(regtune, entry, a.arch, compiler=entry.get("nvcc", nvcc))
            for f in failures:
                print(f"{name}: {f}", file=sys.stderr)
        if not a.keep:
            C.pack(name, ROOT)
        save()

    text = C.summarize(programs, order).replace("reg-lim: occupancy limited", "reg-lim: nvcc's code, occupancy limited")
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(ROOT) for f in fs)
    text += f"{C.rel(ROOT)}: {size / 2**20:.1f} MiB" + (" (programs unpacked)" if a.keep else "")
    text += f"; {a.command} took {time.time() - started:.0f} s\n" if a.command == "build" else "\n"
    open(os.path.join(ROOT, "summary.txt"), "w").write(text)
    print(text, end="")


if __name__ == "__main__":
    main()
