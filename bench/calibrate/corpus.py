#!/usr/bin/env python3
"""The development corpus for GPU measurement (issues 19 and 25): whole CUDA
programs from public sources, built with clang-22 for sm_90, for
bench/calibrate/run.sh (and later scripts) to run and time on the GPU
machine. Runs on the CPU machine (clang-22, the CUDA directory of
ci/bootstrap.sh with cudart and CUPTI; regtune for the report, the summary
and the optional tune step).

What to build is not in this file: the table of programs (which repository
at which commit, which files, flags, arguments, the few source fixups clang
needs) is bench/calibrate/corpus_programs.py, in git; the third-party sources
are not. --programs names another table. The sources come from git mirrors:
$REGTUNE_MIRRORS/<owner>+<name>/repo (default /work/.mirror, read-only) where
one holds the pinned commit, else a copy fetched from GitHub into
build/mirrors/<owner>+<name> (only that commit, blobs as needed):

    build/mirrors/<owner>+<name>/            a fetched mirror (where $REGTUNE_MIRRORS has none)

    build/corpus/<program>/src/              the program's sources and its input files (from the mirror)
    build/corpus/<program>/<program>         built plainly (clang-22 CUDA, static cudart, stripped)
    build/corpus/<program>/sweep/<tu>.r<R>.cubin   each kernel file's device code with --maxrregcount=R
                                             (and <tu>.plain.cubin without), R in SWEEP
    build/corpus/<program>/db/, predict.json regtune tune's db and predict's estimates (the tune step)
    build/corpus/<program>.tar.xz            all of the above, packed (a tenth of the size): each command
                                             ends with the programs packed (--keep: not), `unpack` unpacks
    build/corpus/programs.json               every program: source and commit, binary, args, cwd, check,
                                             translation units (file, exact flags, regtune_args, kernels?,
                                             sweep cubins), kernels (registers, warps/SM, limiter), db
    build/corpus/summary.txt                 per program: kernels, register-limited kernels, build ok
    build/bin/, build/lib/                   regtune, regtune-replay, the interposer, CUPTI (--tools)

    python3 bench/calibrate/corpus.py build [--only P...] [--no-sweep] [--tune] [--tools] [--keep] [-j N]
    python3 bench/calibrate/corpus.py tune --regtune R [--db-dir D] [--only P...]   # tune + predict, again
    python3 bench/calibrate/corpus.py summary [--regtune R]                         # report + summary, again
    python3 bench/calibrate/corpus.py unpack | pack [--only P...]                   # on the GPU machine: unpack
    python3 bench/calibrate/corpus.py --compiler nvcc build|summary|pack|unpack ...  # the same programs built by
                                            nvcc, into build/corpus-nvcc/ (bench/nvcc/corpus.py; its docstring)

Paths in programs.json are relative to the repository root; run each binary
from its "cwd" (programs that read input files look for them there), and
regtune from the repository root with a TU's "regtune_args" after `--`
(tune_program() and report_program() do). The build needs clang-22 and the
table (and git; network to GitHub where no mirror holds a pinned commit);
unpack needs only Python.
"""

import argparse
import concurrent.futures
import functools
import hashlib
import importlib.util
import json
import os
import shutil
import struct
import subprocess
import sys
import tarfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(HERE, "build")
ROOT = os.path.join(OUT, "corpus")
COMPAT = os.path.join(HERE, "compat")
MIRRORS = os.environ.get("REGTUNE_MIRRORS", "/work/.mirror")  # read-only: never written
FETCHED = os.path.join(OUT, "mirrors")  # where a mirror missing from MIRRORS is fetched
UPSTREAM = "https://github.com/{}"  # owner/name
SWEEP = [32, 40, 48, 56, 64, 72, 80, 96, 128, 168, 255]
SOURCE_EXT = (".c", ".h", ".cu", ".cuh", ".cpp", ".hpp", ".cc", ".hh", ".cxx", ".hxx", ".inl", ".inc")

sys.path.insert(0, os.path.join(REPO, "bench", "runtime"))
from build import cuda_root  # noqa: E402  (bench/runtime/build.py: where CUDA is)

VERBOSE = False


def rel(path):
    return os.path.relpath(path, REPO)


def run(cmd, **kw):
    if VERBOSE:
        print("+", " ".join(cmd), file=sys.stderr)
    kw.setdefault("stdout", subprocess.PIPE)
    kw.setdefault("stderr", subprocess.PIPE)
    r = subprocess.run(cmd, text=True, **kw)
    if r.returncode != 0:
        raise subprocess.CalledProcessError(r.returncode, cmd, r.stdout, r.stderr)
    return r


def load_programs(path):
    """The table's programs, each with its "commit": its own, else the
    table's COMMITS for its repository, else None (the mirror's HEAD)."""
    if not os.path.exists(path):
        sys.exit(f"{path}: no table of programs")
    spec = importlib.util.spec_from_file_location("corpus_programs", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    commits = getattr(mod, "COMMITS", {})
    return {n: dict(p, commit=p.get("commit") or commits.get(p["repo"])) for n, p in mod.PROGRAMS.items()}


# ---------------------------------------------------------------- extraction

def offline():
    """The environment for git reads of a fetched (partial) mirror: a missing
    object is an answer, not a reason to go to the network."""
    return dict(os.environ, GIT_NO_LAZY_FETCH="1")


def last_line(e):
    """A failed git command's cause, in one line."""
    return ((e.stderr or "").strip().splitlines() or [f"exit status {e.returncode}"])[-1]


def has_commit(git_dir, commit):
    return subprocess.run(["git", "--git-dir", git_dir, "cat-file", "-e", commit + "^{commit}"], capture_output=True,
                          env=offline()).returncode == 0


def fetch_mirror(repo, commit, git_dir):
    """A bare repository at git_dir holding `commit` of github's `repo`
    (its default branch's head when commit is None): that commit and its
    trees only; read_blobs fetches the blobs a program takes (a promisor
    remote), so a large repository costs only those."""
    url = UPSTREAM.format(repo)
    print(f"{repo}: fetching {commit or 'HEAD'} from {url} into {rel(git_dir)}", file=sys.stderr)
    try:
        run(["git", "init", "--bare", "-q", git_dir])
        for k, v in [("remote.origin.url", url), ("remote.origin.promisor", "true"),
                     ("remote.origin.partialclonefilter", "blob:none"), ("extensions.partialclone", "origin")]:
            run(["git", "--git-dir", git_dir, "config", k, v])
        run(["git", "--git-dir", git_dir, "fetch", "-q", "--depth", "1", "--filter=blob:none", "origin",
             f"+{commit or 'HEAD'}:refs/heads/corpus"])
        run(["git", "--git-dir", git_dir, "symbolic-ref", "HEAD", "refs/heads/corpus"])
    except subprocess.CalledProcessError as e:
        raise RuntimeError(f"{repo}: could not fetch {commit or 'HEAD'} from {url}: {last_line(e)}")
    return git_dir


def mirror_for(p):
    """The git directory to read p's sources from: the table's "mirror", else
    MIRRORS' copy of its repository when that holds p's commit, else one
    fetched into FETCHED (MIRRORS is read-only; a newer mirror without the
    pinned commit would build other sources)."""
    return p.get("mirror") or find_mirror(p["repo"], p.get("commit"))


@functools.lru_cache(maxsize=None)
def find_mirror(repo, commit):
    """mirror_for's search, once per repository and commit (programs share
    repositories, and a program asks twice: its sources, its commit)."""
    name = repo.replace("/", "+")
    for d in [os.path.join(MIRRORS, name, "repo"), os.path.join(FETCHED, name)]:
        if os.path.isdir(d) and has_commit(d, commit or "HEAD"):
            return d
    return fetch_mirror(repo, commit, os.path.join(FETCHED, name))


def read_blobs(git_dir, oids):
    """{oid: bytes}. A fetched mirror has no blobs until asked (blob:none):
    the missing ones come in one fetch here, not one at a time; git archive
    would fetch every blob of the commit, not just these."""
    check = run(["git", "--git-dir", git_dir, "cat-file", "--batch-check"], input="\n".join(oids) + "\n", env=offline()).stdout
    missing = [line.split()[0] for line in check.splitlines() if line.endswith(" missing")]
    promisor = subprocess.run(["git", "--git-dir", git_dir, "config", "--get", "remote.origin.promisor"],
                              capture_output=True, text=True).stdout.strip() == "true"
    if missing and promisor:
        try:
            # as git's own lazy fetch: with no "have" lines, else the server omits blobs of the commit we hold
            run(["git", "--git-dir", git_dir, "-c", "fetch.negotiationAlgorithm=noop", "fetch", "-q", "--no-tags",
                 "--no-write-fetch-head", "--recurse-submodules=no", "--filter=blob:none", "origin", "--stdin"],
                input="\n".join(missing) + "\n")
        except subprocess.CalledProcessError as e:
            raise RuntimeError(f"{git_dir}: could not fetch {len(missing)} files: {last_line(e)}")
    out = subprocess.run(["git", "--git-dir", git_dir, "cat-file", "--batch"], input=b"".join(o.encode() + b"\n" for o in oids),
                         capture_output=True, check=True, env=offline()).stdout
    blobs, at = {}, 0
    while at < len(out):  # "<oid> blob <size>\n<bytes>\n", or "<oid> missing\n"
        eol = out.index(b"\n", at)
        head = out[at:eol].decode().split()
        if head[1] == "missing":
            at = eol + 1
            continue
        size = int(head[2])
        blobs[head[0]] = out[eol + 1:eol + 1 + size]
        at = eol + 1 + size + 1
    return blobs


def extract(mirror, path, dest, data=(), only=None, commit=None):
    """The source files under the folder `path` of `commit` (default HEAD) of
    the mirror (or just the files named in `only`; and the listed data
    files), all relative to `path`, into dest, `path` itself stripped. The
    mirror may lack the blobs of large files: only what is asked for is read."""
    prefix = path.strip("/") + "/"
    tree = {}  # path: (mode, oid) of every file under prefix
    for entry in run(["git", "--git-dir", mirror, "ls-tree", "-r", "-z", commit or "HEAD", "--", prefix]).stdout.split("\0"):
        if entry:
            meta, f = entry.split("\t", 1)
            mode, kind, oid = meta.split()
            if kind == "blob":
                tree[f] = (mode, oid)
    listed = list(tree)
    if not listed:
        raise RuntimeError(f"{path}: not in {mirror}")
    wanted = [f for f in listed if (f[len(prefix):] in only if only is not None else f.endswith(SOURCE_EXT))]
    if only is not None and len(wanted) != len(only):
        raise RuntimeError(f"{path}: not all of {only} in the mirror")
    missing = [d for d in data if prefix + d not in listed]
    if missing:
        raise RuntimeError(f"{path}: no {missing} in the mirror")
    wanted = sorted(set(wanted + [prefix + d for d in data]))
    blobs = read_blobs(mirror, [tree[f][1] for f in wanted])
    when = int(run(["git", "--git-dir", mirror, "show", "-s", "--format=%ct", commit or "HEAD"]).stdout)  # as git archive dates files
    for f in wanted:
        mode, oid = tree[f]
        if oid not in blobs:
            raise RuntimeError(f"{f}: its contents are not in {mirror}")
        out = os.path.join(dest, f[len(prefix):])
        os.makedirs(os.path.dirname(out), exist_ok=True)
        if mode == "120000":
            os.symlink(blobs[oid], out)
            continue
        open(out, "wb").write(blobs[oid])
        os.chmod(out, 0o755 if mode == "100755" else 0o644)
        os.utime(out, (when, when))


def prepare_sources(name, p, here):
    src = os.path.join(here, "src")
    if os.path.isdir(src):
        shutil.rmtree(src)
    mirror = mirror_for(p)
    extract(mirror, p["dir"], src, p.get("data", []), commit=p.get("commit"))
    for path, (sub, only) in p.get("also", {}).items():  # other folders of the same repository, e.g. cuda-samples' Common/
        extract(mirror, path, os.path.join(src, sub), only=only, commit=p.get("commit"))
    for f, text in p.get("files", {}).items():   # generated files (a configure step's header)
        os.makedirs(os.path.dirname(os.path.join(src, f)), exist_ok=True)
        open(os.path.join(src, f), "w").write(text)
    apply_fixups(src, p.get("fixups", {}))
    return src


def apply_fixups(src, fixups):
    """{file: [(before, after), ...]}: each `before` replaced in the file under src (it must be there)."""
    for f, pairs in fixups.items():
        path = os.path.join(src, f)
        text = open(path, errors="surrogateescape").read()
        for before, after in pairs:
            if before not in text:
                raise RuntimeError(f"fixup of {f}: {before!r} not found")
            text = text.replace(before, after)
        open(path, "w", errors="surrogateescape").write(text)


# ---------------------------------------------------------------- building

def tu_flags(p, src, kind, cuda, arch):
    """The flags that compile one translation unit (without -c FILE -o OBJ)
    and, for CUDA files, the part of them regtune wants after `--`."""
    includes = [f"-I{os.path.join(src, d)}" for d in p.get("includes", ["."])]
    includes += [f"-I{os.path.join(COMPAT, d)}" for d in p.get("compat_includes", [])]
    defines = [f"-D{d}" for d in p.get("defines", [])]
    if kind == "cuda":
        common = ["-O3", "-w", "-include", os.path.join(COMPAT, "regtune_cuda_compat.h")] + p.get("cuda_std", []) \
            + defines + includes + p.get("cuda_flags", [])
        flags = ["clang++-22", "-x", "cuda", f"--cuda-gpu-arch={arch}", f"--cuda-path={cuda}", "-Wno-unknown-cuda-version"] + common
        return flags, common
    if kind == "c":
        return ["clang-22", "-O3", "-w"] + p.get("c_flags", []) + defines + includes, None
    return ["clang++-22", "-O3", "-w"] + p.get("cxx_flags", []) + defines + includes \
        + [f"-I{cuda}/include"], None


def build_program(name, p, cuda, arch, jobs):
    here = os.path.join(ROOT, name)
    os.makedirs(here, exist_ok=True)
    src = prepare_sources(name, p, here)
    obj_dir = os.path.join(here, "obj")
    os.makedirs(obj_dir, exist_ok=True)
    units, compiles = [], []
    for kind, files in [("cuda", p["cuda"]), ("cxx", p.get("cxx", [])), ("c", p.get("c", []))]:
        for f in files:
            flags, regtune_args = tu_flags(p, src, kind, cuda, arch)
            path = os.path.join(src, f)
            obj = os.path.join(obj_dir, f.replace("/", "_") + ".o")
            compiles.append(flags + ["-c", path, "-o", obj])
            unit = {"file": rel(path), "lang": kind, "flags": [rel_flag(x) for x in flags]}
            if kind == "cuda":
                unit["regtune_args"] = [rel_flag(x) for x in regtune_args]
                unit["kernels"] = f in p.get("kernels", p["cuda"])
            units.append(unit)
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        for r in pool.map(lambda c: run(c), compiles):
            pass
    binary = os.path.join(here, name)
    objects = [c[-1] for c in compiles]
    run(["clang++-22"] + objects + ["-o", binary, f"-L{cuda}/lib64", "-lcudart_static", "-ldl", "-lrt", "-lpthread", "-lm"]
        + p.get("libs", []))
    run(["llvm-strip-22", "--strip-all", binary])
    shutil.rmtree(obj_dir)
    cwd = os.path.join(src, p["cwd"]) if "cwd" in p else here
    return {
        "source": {"repo": p["repo"], "dir": p["dir"], "commit": mirror_commit(p)},
        "binary": rel(binary), "args": p["args"], "cwd": rel(cwd), "check": p.get("check", ""),
        "note": p.get("note", ""), "unlaunched": p.get("unlaunched", []), "units": units,
    }


def rel_flag(flag):
    """A flag with an absolute path under the repository made relative to it."""
    for pre in ["-I", "-include=", ""]:
        if flag.startswith(pre) and flag[len(pre):].startswith(REPO + "/"):
            return pre + rel(flag[len(pre):])
    return flag


def mirror_commit(p):
    return run(["git", "--git-dir", mirror_for(p), "rev-parse", (p.get("commit") or "HEAD") + "^{commit}"]).stdout.strip()


def abs_flags(flags):
    """programs.json's flags, runnable from anywhere."""
    out = []
    for f in flags:
        for pre in ["-I", ""]:
            rest = f[len(pre):]
            if f.startswith(pre) and (rest.startswith("bench/") or rest.startswith("bench" + os.sep)):
                f = pre + os.path.join(REPO, rest)
                break
        out.append(f)
    return out


# ---------------------------------------------------------------- the hand sweep

def sweep_program(name, entry, arch, jobs, cuda):
    """Each kernel file's device code as a cubin, plainly and with
    --maxrregcount=R for every R of SWEEP. What `clang++-22 --cuda-device-only
    -c FILE -Xcuda-ptxas --maxrregcount=R` does, faster: clang once to PTX,
    then ptxas with the flags clang's driver gives it (clang -###), once per R;
    the cubins are the same bytes. A cubin identical to one already written
    for the same file is not written again: its entry names the first one."""
    here = os.path.join(ROOT, name)
    sweep_dir = os.path.join(here, "sweep")
    if os.path.isdir(sweep_dir):
        shutil.rmtree(sweep_dir)
    os.makedirs(sweep_dir)
    units = [u for u in entry["units"] if u.get("kernels")]
    ptx = {}
    for unit in units:
        flags = unit["flags"]
        assert flags[:3] == ["clang++-22", "-x", "cuda"]
        ptx[unit["file"]] = os.path.join(sweep_dir, tu_stem(unit, entry) + ".ptx")
        unit["sweep_ptx_command"] = flags[:3] + ["--cuda-device-only", "-S"] + flags[3:] + ["-c", unit["file"], "-o", "PTX"]
        unit["sweep_ptxas_command"] = [os.path.join(cuda, "bin", "ptxas"), "-m64", "-O3", "--gpu-name", arch, "--output-file", "CUBIN",
                                       "PTX", "--maxrregcount=R"]
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        list(pool.map(lambda u: run(abs_flags(u["sweep_ptx_command"][:-4]) + ["-c", os.path.join(REPO, u["file"]), "-o", ptx[u["file"]]]),
                      units))
    jobs_list = []
    for unit in units:
        stem = tu_stem(unit, entry)
        for r in ["plain"] + SWEEP:
            out = os.path.join(sweep_dir, f"{stem}.{'plain' if r == 'plain' else f'r{r}'}.cubin")
            cmd = [x.replace("CUBIN", out).replace("PTX", ptx[unit["file"]]) for x in unit["sweep_ptxas_command"][:-1]]
            jobs_list.append((unit, r, out, cmd + ([] if r == "plain" else [f"--maxrregcount={r}"])))
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        list(pool.map(lambda j: run(j[3]), jobs_list))
    for f in ptx.values():
        os.remove(f)
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
        unit.setdefault("sweep", {})["plain" if r == "plain" else str(r)] = rel(out)


def cubin_registers(path):
    """{kernel symbol: registers} from a cubin's .nv.info (EIATTR_REGCOUNT),
    to see which R of the sweep changed which kernel."""
    d = open(path, "rb").read()
    shoff, = struct.unpack_from("<Q", d, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", d, 0x3a)
    secs = [struct.unpack_from("<IIQQQQIIQQ", d, shoff + i * shentsize) for i in range(shnum)]

    def cstr(off):
        return d[off:d.index(b"\0", off)].decode()
    named = {cstr(secs[shstrndx][4] + s[0]): s for s in secs}
    symtab = named[".symtab"]
    strtab = secs[symtab[6]][4]
    syms = [cstr(strtab + struct.unpack_from("<I", d, symtab[4] + i * 24)[0]) for i in range(symtab[5] // 24)]
    out, info = {}, named[".nv.info"]
    off, end = info[4], info[4] + info[5]
    while off + 4 <= end:
        fmt, attr, size = struct.unpack_from("<BBH", d, off)
        if fmt == 0x04 and attr == 0x2F:  # EIFMT_SVAL, EIATTR_REGCOUNT: symbol index, registers
            idx, regs = struct.unpack_from("<II", d, off + 4)
            out[syms[idx]] = regs
        off += 4 + (size if fmt == 0x04 else 0)
    return out


def annotate_sweep(entry):
    """Each kernel file's sweep: the registers of every kernel in each cubin."""
    for unit in entry["units"]:
        if unit.get("sweep"):
            unit["sweep_registers"] = {r: cubin_registers(os.path.join(REPO, path)) for r, path in unit["sweep"].items()}


def tu_stem(unit, entry):
    names = [os.path.basename(u["file"]) for u in entry["units"]]
    base = os.path.basename(unit["file"])
    if names.count(base) > 1:
        src = os.path.join(os.path.dirname(entry["binary"]), "src")
        base = os.path.relpath(unit["file"], src).replace("/", "_")
    return base


# ---------------------------------------------------------------- regtune

def report_program(regtune, entry, arch, compiler=None):
    """regtune report for every kernel file: each kernel's registers,
    warps per SM and limiter (`compiler`: report's --compiler, e.g. nvcc's
    path, whose code is then read; the unit's regtune_args are its flags)."""
    kernels, failures = [], []
    for unit in entry["units"]:
        if not unit.get("kernels"):
            continue
        r = subprocess.run([regtune, "report", "--offload-arch", arch, "--format", "json"]
                           + (["--compiler", compiler] if compiler else []) + [unit["file"], "--"] + unit["regtune_args"],
                           cwd=REPO, capture_output=True, text=True)
        if r.returncode != 0 or not r.stdout.strip():
            failures.append(f"{unit['file']}: regtune report failed: {r.stderr.strip().splitlines()[-1:] }")
            continue
        for k in json.loads(r.stdout)["kernels"]:
            n = k.get("nvidia", {})
            kernels.append({"file": unit["file"], "symbol": k["symbol"], "name": k["name"], "registers": n.get("registers"),
                            "warps_per_sm": n.get("active_warps"), "block_size": n.get("block_size"),
                            "shared_bytes": n.get("shared_bytes"), "spill_bytes": n.get("spill_store_bytes"),
                            "limiter": k["limiter"]})
    return kernels, failures


def tune_program(regtune, entry, db, arch, predict=True):
    """`regtune tune` over a program's kernel files into `db` (a
    decisions.json path), and, with predict, `regtune predict`'s estimates
    beside it (predict.json, its candidates' cubins in the db's
    decisions.code/ where measure looks), every estimated candidate made a
    suggestion for `regtune measure` to time. Returns the paths."""
    units = [u for u in entry["units"] if u.get("kernels")]
    if os.path.isdir(os.path.dirname(db)):
        shutil.rmtree(os.path.dirname(db))
    os.makedirs(os.path.dirname(db))
    paths = {"db": rel(db)}
    for u in units:  # one file at a time: the files of a program may want different flags
        run([regtune, "tune", "--offload-arch", arch, "--db", db, u["file"], "--"] + u["regtune_args"], cwd=REPO)
    if predict:
        code = os.path.join(os.path.dirname(db), "decisions.code")
        doc = {"candidates": []}
        for u in units:
            out = os.path.join(os.path.dirname(db), "predict." + os.path.basename(u["file"]) + ".json")
            run([regtune, "predict", "--offload-arch", arch, "--code-dir", code, "-o", out, u["file"], "--"] + u["regtune_args"], cwd=REPO)
            part = json.load(open(out))
            for k, v in part.items():
                if k == "candidates":
                    doc["candidates"] += v
                else:
                    doc.setdefault(k, v)
            os.remove(out)
        predict_path = os.path.join(os.path.dirname(os.path.dirname(db)), "predict.json")
        json.dump(doc, open(predict_path, "w"), indent=1)
        every_candidate_measured(db, predict_path)
        paths["predict"] = rel(predict_path)
    return paths


def db_spelling(t, arch):
    """predict's `spec` as the db spells it for `arch`: NVIDIA's step is
    `warps_per_sm` in the db, `waves_per_eu` in predict's output."""
    if arch.startswith("sm_"):
        return {("warps_per_sm" if k == "waves_per_eu" else k): v for k, v in t.items()}
    return t


def every_candidate_measured(db_path, predict_path):
    """`regtune measure` times a kernel's plain build, decision and
    suggestions. For calibration every candidate predict estimated becomes
    an unconfirmed suggestion (measured, never applied); predict kept their
    cubins where measure looks (--code-dir, named as tune names them)."""
    db = json.load(open(db_path))
    by_symbol = {}
    for c in json.load(open(predict_path))["candidates"]:
        if c["transforms"]:
            by_symbol.setdefault(c["symbol"], []).append(c)
    for entry in db["kernels"].values():
        have = [s["transforms"] for s in entry.get("suggested", [])] + [entry["transforms"]]
        for c in by_symbol.get(entry["symbol"], []):
            spec = db_spelling(c["spec"], entry["arch"])
            if spec not in have:
                entry.setdefault("suggested", []).append({"transforms": spec, "usage": c["usage"],
                                                          "message": "calibration candidate", "reasons": [], "confirmed": False})
    json.dump(db, open(db_path, "w"), indent=1)


# ---------------------------------------------------------------- summary

LIBRARY_PREFIXES = ("cub::", "thrust::", "void cub::", "void thrust::")


def is_library(kernel):
    """A kernel instantiated from CUDA's libraries (CUB, Thrust) rather than written in the program."""
    return kernel["name"].startswith(LIBRARY_PREFIXES)


def short_name(name, width=40):
    name = name[5:] if name.startswith("void ") else name
    depth, out = 0, ""
    for ch in name:  # drop the parameter list, keep template arguments
        if ch == "(" and depth == 0:
            break
        depth += ch == "<"
        depth -= ch == ">"
        out += ch
    return out if len(out) <= width else out[:width - 3] + "..."


def summarize(programs, order):
    lines = [f"{'program':<22} {'build':<6} {'kernels':>7} {'reg-lim':>7} {'run':>4} {'(lib)':>5}  register-limited kernels of the "
             "program (registers/warps per SM; * not launched by the arguments)"]
    total_k = total_rl = total_run = total_lib = ok = 0
    for name in order:
        e = programs.get(name)
        if e is None or not e.get("built"):
            lines.append(f"{name:<22} {('FAIL' if e else '-'):<6} {'-':>7} {'-':>7} {'-':>4} {'-':>5}  "
                         f"{(e or {}).get('error', 'not built yet')}")
            continue
        ok += 1
        ks = e.get("kernels", [])
        rl = [k for k in ks if k["limiter"] == "vgpr" and not is_library(k)]
        lib = [k for k in ks if k["limiter"] == "vgpr" and is_library(k)]
        idle = [k for k in rl if short_name(k["name"], 1000).split("<")[0] in e.get("unlaunched", [])]
        total_k += len(ks)
        total_rl += len(rl)
        total_run += len(rl) - len(idle)
        total_lib += len(lib)
        short = ", ".join(f"{short_name(k['name'])}{'*' if k in idle else ''} {k['registers']}/{k['warps_per_sm']}" for k in rl)
        lines.append(f"{name:<22} {'ok':<6} {len(ks):>7} {len(rl):>7} {len(rl) - len(idle):>4} {len(lib) or '':>5}  {short}")
    lines.append(f"{'total':<22} {f'{ok}/{len(order)}':<6} {total_k:>7} {total_rl:>7} {total_run:>4} {total_lib:>5}")
    lines.append("kernels: every kernel in the program's kernel files; reg-lim: occupancy limited by registers on sm_90 "
                 "(regtune report: limiter vgpr, 256 threads a block unless launch bounds say otherwise), kernels written in "
                 "the program; run: those the program's arguments launch (as read from its source); (lib): register-limited CUB/Thrust kernels instantiated there as well (not all launched)")
    return "\n".join(lines) + "\n"


def build_size():
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(OUT) for f in fs)


def copy_tools(regtune, cuda):
    """regtune, regtune-replay and the interposer, stripped, and CUPTI, where run.sh looks."""
    tools = os.path.dirname(regtune)
    for d in ["bin", "lib"]:
        os.makedirs(os.path.join(OUT, d), exist_ok=True)
    for name in ["regtune", "regtune-replay", "libregtune_runtime.so"]:
        if not os.path.exists(os.path.join(tools, name)):
            print(f"tools: no {name} beside {regtune}", file=sys.stderr)
            continue
        dest = os.path.join(OUT, "bin", name)
        shutil.copy(os.path.join(tools, name), dest)
        run(["llvm-strip-22", "--strip-debug", dest])
    shutil.copy(os.path.join(cuda, "lib64", "libcupti.so.12"), os.path.join(OUT, "lib"))


def archive_path(name, root=ROOT):
    return os.path.join(root, name + ".tar.xz")


def pack(name, root=ROOT):
    """build/corpus/<name>/ into build/corpus/<name>.tar.xz (xz shares what the
    sweep's cubins of one file have in common: a tenth of the size), the
    folder removed. `root`: another corpus folder (bench/nvcc/corpus.py's)."""
    here = os.path.join(root, name)
    if not os.path.isdir(here):
        return
    tmp = archive_path(name, root) + ".part"
    with tarfile.open(tmp, "w:xz") as t:
        t.add(here, arcname=name)
    os.replace(tmp, archive_path(name, root))
    shutil.rmtree(here)


def unpack(name, root=ROOT):
    """build/corpus/<name>.tar.xz back into build/corpus/<name>/ (what
    programs.json's paths name); the archive is kept."""
    if not os.path.exists(archive_path(name, root)):
        return
    here = os.path.join(root, name)
    if os.path.isdir(here):
        shutil.rmtree(here)
    with tarfile.open(archive_path(name, root)) as t:
        t.extractall(root, filter="tar") if hasattr(tarfile, "tar_filter") else t.extractall(root)


def main():
    global VERBOSE
    if "--compiler" in sys.argv[1:] or any(x.startswith("--compiler=") for x in sys.argv[1:]):
        # --compiler nvcc: the same programs built by nvcc (bench/nvcc/corpus.py, which imports this file)
        argv, compiler, args = sys.argv[1:], None, []
        while argv:
            x = argv.pop(0)
            if x == "--compiler" and argv:
                compiler = argv.pop(0)
            elif x.startswith("--compiler="):
                compiler = x.split("=", 1)[1]
            else:
                args.append(x)
        if compiler == "nvcc":
            spec = importlib.util.spec_from_file_location("nvcc_corpus", os.path.join(REPO, "bench", "nvcc", "corpus.py"))
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            return mod.main(args)
        if compiler != "clang":
            sys.exit(f"--compiler {compiler}: clang (the default) or nvcc")
        sys.argv[1:] = args
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("command", nargs="?", default="build", choices=["build", "tune", "summary", "pack", "unpack"])
    p.add_argument("--arch", default="sm_90")
    p.add_argument("--regtune", default=None, help="regtune binary (default: target/release/regtune, else target/debug/regtune)")
    p.add_argument("--programs", default=os.path.join(HERE, "corpus_programs.py"), help="build: the table of programs")
    p.add_argument("--only", nargs="*", help="programs (default: all)")
    p.add_argument("--no-sweep", action="store_true", help="build: skip the --maxrregcount cubins")
    p.add_argument("--tune", action="store_true", help="build: also run regtune tune and predict (the tune command alone: later)")
    p.add_argument("--db-dir", help="tune: where each program's db goes (<dir>/<program>/decisions.json; default build/corpus/<program>/db)")
    p.add_argument("--no-predict", action="store_true", help="tune: tune only")
    p.add_argument("--tools", action="store_true", help="build: copy regtune's tools and CUPTI into build/bin, build/lib")
    p.add_argument("--keep", action="store_true", help="leave build/corpus/<program>/ unpacked (default: packed into <program>.tar.xz)")
    p.add_argument("-j", "--jobs", type=int, default=2)
    p.add_argument("-v", "--verbose", action="store_true")
    a = p.parse_args()
    VERBOSE = a.verbose
    os.makedirs(ROOT, exist_ok=True)
    manifest_path = os.path.join(ROOT, "programs.json")
    programs = json.load(open(manifest_path)) if os.path.exists(manifest_path) else {}
    table = load_programs(a.programs) if a.command == "build" else None
    order = list(table) if table else list(programs)
    if table:
        programs = {n: programs[n] for n in table if n in programs}  # drop programs no longer in the table
    unknown = set(a.only or []) - set(order)
    if unknown:
        sys.exit(f"unknown programs: {sorted(unknown)}")
    names = [n for n in order if not a.only or n in a.only]
    if a.command in ["pack", "unpack"]:
        for name in names:
            (pack if a.command == "pack" else unpack)(name)
        return
    cuda = cuda_root() if a.command == "build" or a.tools else None
    regtune = a.regtune or next((os.path.join(REPO, "target", b, "regtune") for b in ["release", "debug"]
                                 if os.path.exists(os.path.join(REPO, "target", b, "regtune"))), None)
    regtune = os.path.abspath(regtune) if regtune else None
    if a.command == "tune" and not regtune:
        sys.exit("tune: no regtune binary (--regtune)")

    def save():
        json.dump(programs, open(manifest_path, "w"), indent=1)

    for name in names:
        if a.command == "build":
            try:
                if os.path.exists(archive_path(name)):
                    os.remove(archive_path(name))
                entry = build_program(name, table[name], cuda, a.arch, a.jobs)
                entry["built"] = True
                if not a.no_sweep:
                    sweep_program(name, entry, a.arch, a.jobs, cuda)
                programs[name] = entry
                print(f"{name}: built", file=sys.stderr)
            except (subprocess.CalledProcessError, RuntimeError, OSError) as e:
                msg = str(e)
                if isinstance(e, subprocess.CalledProcessError):
                    err = [l for l in (e.stderr or "").splitlines() if "error" in l or "undefined reference" in l][:3]
                    msg = f"{os.path.basename(e.cmd[0])} failed: " + " | ".join(err or (e.stderr or "").splitlines()[-2:])
                programs[name] = {"built": False, "error": msg}
                print(f"{name}: FAILED: {msg}", file=sys.stderr)
                if os.path.isdir(os.path.join(ROOT, name)):
                    shutil.rmtree(os.path.join(ROOT, name))
                save()
                continue
        entry = programs.get(name)
        if not entry or not entry.get("built"):
            continue
        unpack(name)
        if a.command in ["build", "summary"]:
            annotate_sweep(entry)
        if regtune and a.command in ["build", "summary"]:
            entry["kernels"], failures = report_program(regtune, entry, a.arch)
            for f in failures:
                print(f"{name}: {f}", file=sys.stderr)
        if a.command == "tune" or (a.command == "build" and a.tune):
            db = os.path.join(a.db_dir, name, "decisions.json") if a.db_dir else os.path.join(ROOT, name, "db", "decisions.json")
            try:
                entry.update(tune_program(regtune, entry, os.path.abspath(db), a.arch, predict=not a.no_predict))
            except subprocess.CalledProcessError as e:
                print(f"{name}: regtune {e.cmd[1]} failed: {(e.stderr or '').strip().splitlines()[-3:]}", file=sys.stderr)
        if not a.keep:
            pack(name)
        save()

    if a.tools and regtune:
        copy_tools(regtune, cuda)
    text = summarize(programs, order)
    text += f"bench/calibrate/build: {build_size() / 2**20:.1f} MiB" + (" (programs unpacked)" if a.keep else "") + "\n"
    open(os.path.join(ROOT, "summary.txt"), "w").write(text)
    print(text, end="")


if __name__ == "__main__":
    main()
