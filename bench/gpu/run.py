#!/usr/bin/env python3
"""Run the original and the regtune-tuned cubin of every example kernel on a
GPU, check they compute bit-identical results, and time them.

    python3 bench/gpu/run.py [--build bench/gpu/build] [--out results.json]
    python3 bench/gpu/run.py --dry-run        # CPU: check manifest, cubins, inputs
    python3 bench/gpu/run.py compare A B      # compare two output dumps
    python3 bench/gpu/run.py self-test        # the comparison, on made-up dumps

bench/gpu/build.py makes the cubins and build/manifest.json here (regtune,
clang and ptxas run on the CPU machine); this script needs only the cubins,
numpy and CuPy on the GPU machine.

For each kernel: one pseudo-random input set (fixed seed), built per kernel
so that every index the kernel computes stays in bounds. Every variant runs
once on a fresh copy of it; every buffer the kernel can write is then
compared byte for byte with the original's, and the first differing element
is reported (kernel, buffer, element, both values). Timing: each variant is
warmed up, then run RUNS times, the variants interleaved (A B, then B A, ...),
each launch between two CUDA events; the median is the figure, and the
speedup is median(original) / median(variant). The geometric mean is over
all kernels, changed or not.
"""

import argparse
import json
import math
import os
import struct
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RUNS = 30
WARMUP = 3
SEED = 20261122

# dtype name -> (struct code, bytes)
DTYPES = {"float64": ("d", 8), "float32": ("f", 4), "int32": ("i", 4), "uint8": ("B", 1)}


# --------------------------------------------------------------------------
# Output comparison (pure Python, so it is testable on any machine).


def first_difference(a, b, dtype):
    """Index of the first element where the byte strings a and b differ, and
    how many elements differ; (None, 0) when they are identical."""
    if a == b:
        return None, 0
    size = DTYPES[dtype][1]
    if len(a) != len(b):
        return min(len(a), len(b)) // size, abs(len(a) - len(b)) // size
    try:
        import numpy as np

        ua = np.frombuffer(a, dtype=np.uint8).reshape(-1, size)
        ub = np.frombuffer(b, dtype=np.uint8).reshape(-1, size)
        diff = np.flatnonzero((ua != ub).any(axis=1))
        return int(diff[0]), int(diff.size)
    except ImportError:
        first, count = None, 0
        for i in range(0, len(a), size):
            if a[i : i + size] != b[i : i + size]:
                count += 1
                if first is None:
                    first = i // size
        return first, count


def element(data, dtype, index):
    code, size = DTYPES[dtype]
    return struct.unpack_from("<" + code, data, index * size)[0]


def compare(kernel, variant, reference, outputs):
    """Compare two {buffer: (dtype, bytes)} dicts. Returns a list of mismatch
    messages (empty: bit-identical)."""
    problems = []
    for name, (dtype, want) in reference.items():
        if name not in outputs:
            problems.append(f"MISMATCH {kernel} [{variant}]: buffer {name} missing")
            continue
        got = outputs[name][1]
        index, count = first_difference(want, got, dtype)
        if index is None:
            continue
        n = len(want) // DTYPES[dtype][1]
        a = element(want, dtype, index) if index < n else "-"
        b = element(got, dtype, index) if index * DTYPES[dtype][1] < len(got) else "-"
        problems.append(
            f"MISMATCH {kernel} [{variant}]: {name}[{index}] original={a!r} {variant}={b!r}"
            f" ({count} of {n} elements differ)"
        )
    return problems


def write_dump(path, kernel, buffers):
    """A dump: a directory with meta.json and one raw file per buffer."""
    os.makedirs(path, exist_ok=True)
    meta = {"kernel": kernel, "buffers": []}
    for name, (dtype, data) in buffers.items():
        with open(os.path.join(path, name + ".bin"), "wb") as f:
            f.write(data)
        meta["buffers"].append({"name": name, "dtype": dtype})
    with open(os.path.join(path, "meta.json"), "w") as f:
        json.dump(meta, f)


def read_dump(path):
    with open(os.path.join(path, "meta.json")) as f:
        meta = json.load(f)
    buffers = {}
    for b in meta["buffers"]:
        with open(os.path.join(path, b["name"] + ".bin"), "rb") as f:
            buffers[b["name"]] = (b["dtype"], f.read())
    return meta["kernel"], buffers


def cmd_compare(a, b):
    kernel, ref = read_dump(a)
    _, out = read_dump(b)
    problems = compare(kernel, "tuned", ref, out)
    for p in problems:
        print(p)
    if not problems:
        print(f"{kernel}: bit-identical ({len(ref)} buffers)")
    return 1 if problems else 0


def cmd_self_test():
    """Two dumps of a made-up kernel, one deliberately wrong in one element:
    the comparison must name the kernel, the buffer and that element."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        values = [0.5 * i for i in range(1000)]
        good = struct.pack("<1000d", *values)
        values[617] = math.nextafter(values[617], math.inf)
        bad = struct.pack("<1000d", *values)
        counts = struct.pack("<4i", 1, 2, 3, 4)
        write_dump(os.path.join(d, "a"), "demo_kernel", {"out": ("float64", good), "n": ("int32", counts)})
        write_dump(os.path.join(d, "b"), "demo_kernel", {"out": ("float64", bad), "n": ("int32", counts)})
        write_dump(os.path.join(d, "c"), "demo_kernel", {"out": ("float64", good), "n": ("int32", counts)})
        _, ref = read_dump(os.path.join(d, "a"))
        _, wrong = read_dump(os.path.join(d, "b"))
        _, same = read_dump(os.path.join(d, "c"))
        problems = compare("demo_kernel", "tuned", ref, wrong)
        assert len(problems) == 1, problems
        assert "demo_kernel" in problems[0] and "out[617]" in problems[0], problems
        assert "original=308.5" in problems[0] and "1 of 1000 elements differ" in problems[0], problems
        assert compare("demo_kernel", "tuned", ref, same) == []
        assert cmd_compare(os.path.join(d, "a"), os.path.join(d, "b")) == 1
        assert cmd_compare(os.path.join(d, "a"), os.path.join(d, "c")) == 0
    print("self-test: ok")
    return 0


# --------------------------------------------------------------------------
# Kernel cases: launch shape, buffers (numpy arrays), arguments. Each one
# fills its inputs so that every index the kernel computes is in bounds.


class Case:
    def __init__(self, grid, block, buffers, args):
        self.grid, self.block = grid, block
        self.buffers = buffers  # name -> numpy array
        self.args = args  # ("buf", name) | ("i32", v) | ("f64", v)


def case_lbm(np, rng):
    nx, ny, nz = 256, 64, 64
    n = nx * ny * nz
    flags = np.zeros(n, dtype=np.int32)
    flags[rng.random(n) < 0.05] = 1  # scattered wall cells
    b = {"flags": flags}
    for i in range(19):
        b[f"f{i}"] = rng.uniform(0.01, 0.1, 2 * n)
    for name in ["rho_out", "ux_out", "uy_out", "uz_out"]:
        b[name] = rng.standard_normal(n)
    for name in ["force_x", "force_y", "force_z"]:
        b[name] = rng.uniform(-1e-4, 1e-4, n)
    b["omega_cell"] = rng.uniform(0.6, 1.9, n)
    args = [("buf", "flags")] + [("buf", f"f{i}") for i in range(19)]
    args += [("buf", x) for x in ["rho_out", "ux_out", "uy_out", "uz_out", "force_x", "force_y", "force_z", "omega_cell"]]
    args += [("i32", nx), ("i32", ny), ("i32", nz), ("i32", 0), ("i32", n)]
    return Case(((nx + 255) // 256, ny, nz), (256, 1, 1), b, args)


def case_lbm_trt(np, rng):
    nx, ny, nz = 256, 64, 64
    n = nx * ny * nz
    flags = np.zeros(n, dtype=np.int32)
    flags[rng.random(n) < 0.05] = 1  # scattered wall cells
    b = {"flags": flags}
    for i in range(19):
        b[f"f{i}"] = rng.uniform(0.01, 0.1, 2 * n)
    for name in ["rho_out", "ux_out", "uy_out", "uz_out"]:
        b[name] = rng.standard_normal(n)
    for name in ["force_x", "force_y", "force_z"]:
        b[name] = rng.uniform(-1e-4, 1e-4, n)
    b["omega_cell"] = rng.uniform(0.6, 1.9, n)
    b["weight"] = np.array([1 / 3] + [1 / 18] * 6 + [1 / 36] * 12)
    b["rate"] = rng.uniform(0.8, 1.2, 18)
    names = ["rho_out", "ux_out", "uy_out", "uz_out", "force_x", "force_y", "force_z", "omega_cell", "weight", "rate"]
    args = [("buf", "flags")] + [("buf", f"f{i}") for i in range(19)] + [("buf", x) for x in names]
    args += [("i32", nx), ("i32", ny), ("i32", nz), ("i32", 0), ("i32", n)]
    return Case(((nx + 255) // 256, ny, nz), (256, 1, 1), b, args)


def case_laplacian(np, rng):
    radius, tile = 4, 16
    nx = ny = 256 + 2 * radius
    nz = 16 * tile + 2 * radius
    b = {"lap": rng.standard_normal(nx * ny * nz), "u": rng.standard_normal(nx * ny * nz)}
    args = [("buf", "lap"), ("buf", "u"), ("i32", nx), ("i32", ny), ("f64", 1.0 / (0.01 * 0.01))]
    return Case(((nx - 2 * radius + 255) // 256, ny - 2 * radius, (nz - 2 * radius) // tile), (256, 1, 1), b, args)


def case_jacobi(np, rng):
    nv, ncell = 8, 1 << 20
    jac = rng.uniform(-1.0, 1.0, (nv, nv, ncell))
    for r in range(nv):
        jac[r, r] += 10.0 + rng.random(ncell)  # diagonally dominant
    b = {
        "jac": jac.reshape(-1),
        "rhs": rng.standard_normal(nv * ncell),
        "dq": rng.standard_normal(nv * ncell),
        "q": rng.standard_normal(nv * ncell),
    }
    args = [("buf", "jac"), ("buf", "rhs"), ("buf", "dq"), ("buf", "q"), ("i32", ncell), ("f64", 0.8)]
    return Case(((ncell + 255) // 256, 1, 1), (256, 1, 1), b, args)


def case_md(np, rng):
    n, max_nbr, ntypes, box = 1 << 20, 24, 2, 100.0
    idx = np.arange(n)
    count = rng.integers(0, max_nbr + 1, n).astype(np.int32)
    # Neighbours of i: i + 1 .. n - 1 cyclically, never i itself.
    lst = ((idx[None, :] + rng.integers(1, n, (max_nbr, n))) % n).astype(np.int32)
    b = {
        "pos_x": rng.uniform(0, box, n), "pos_y": rng.uniform(0, box, n), "pos_z": rng.uniform(0, box, n),
        "vel_x": rng.standard_normal(n), "vel_y": rng.standard_normal(n), "vel_z": rng.standard_normal(n),
        "force_x": rng.standard_normal(n), "force_y": rng.standard_normal(n), "force_z": rng.standard_normal(n),
        "inv_mass": rng.uniform(0.5, 2.0, n),
        "type": rng.integers(0, ntypes, n).astype(np.int32),
        "lambda_thermo": rng.uniform(0.9, 1.1, n),
        "nbr_count": count,
        "nbr_list": lst.reshape(-1),
        "lj_eps": rng.uniform(0.5, 1.5, ntypes * ntypes),
        "lj_sig2": rng.uniform(0.5, 1.5, ntypes * ntypes),
        "kinetic": rng.standard_normal(n), "potential": rng.standard_normal(n),
    }
    names = ["pos_x", "pos_y", "pos_z", "vel_x", "vel_y", "vel_z", "force_x", "force_y", "force_z",
             "inv_mass", "type", "lambda_thermo", "nbr_count", "nbr_list", "lj_eps", "lj_sig2"]
    args = [("buf", x) for x in names] + [("i32", ntypes), ("buf", "kinetic"), ("buf", "potential")]
    args += [("i32", n), ("f64", box), ("f64", 30.0 ** 2), ("f64", 0.005)]
    return Case(((n + 255) // 256, 1, 1), (256, 1, 1), b, args)


def case_entropy(np, rng):
    width, height = 4096, 2048
    b = {"img": rng.integers(0, 256, width * height).astype(np.uint8), "entropy": rng.standard_normal(width * height).astype(np.float32)}
    args = [("buf", "img"), ("buf", "entropy"), ("i32", width), ("i32", height)]
    return Case(((width + 255) // 256, height, 1), (256, 1, 1), b, args)


def case_kalman(np, rng):
    ns, nm, steps, tracks = 8, 2, 32, 1 << 16
    # As examples/kalman_private.hip's host: constant velocity (position i
    # moves by 0.1 times velocity i + 4), process and measurement noise.
    model = np.zeros(ns * ns + 2, dtype=np.float32)
    for i in range(ns):
        model[i * ns + i] = 1.0
    for i in range(ns // 2):
        model[i * ns + i + ns // 2] = 0.1
    model[ns * ns], model[ns * ns + 1] = 1e-3, 0.25
    p = np.arange(steps * tracks * nm, dtype=np.uint64)
    z = ((p * np.uint64(2654435761)) >> np.uint64(24)).astype(np.float32) / np.float32(256.0)
    b = {"model": model, "z": z, "state": rng.standard_normal(tracks * (ns + 1)).astype(np.float32)}
    args = [("buf", "model"), ("buf", "z"), ("buf", "state"), ("i32", steps), ("i32", tracks)]
    return Case(((tracks + 255) // 256, 1, 1), (256, 1, 1), b, args)


CASES = {
    "kalman_track": case_kalman,
    "lbm_d3q19_collide_stream": case_lbm,
    "lbm_d3q19_trt": case_lbm_trt,
    "laplacian3d_o8_ztile": case_laplacian,
    "block_jacobi_solve": case_jacobi,
    "md_lj_force_kick": case_md,
    "local_entropy_filter": case_entropy,
}


def base_name(name):
    """'md_lj_force_kick(double const*, ...)' -> 'md_lj_force_kick'."""
    return name.split("(")[0].split("<")[0].split("::")[-1].strip()


def dtype_name(arr):
    return str(arr.dtype)


# --------------------------------------------------------------------------
# The GPU run.


def load_manifest(build):
    with open(os.path.join(build, "manifest.json")) as f:
        return json.load(f)


def run_gpu(build, out_path, dump_dir):
    import cupy as cp
    import numpy as np

    manifest = load_manifest(build)
    variants = manifest["variants"]  # ["plain", "tuned", ...]; plain first
    props = cp.cuda.runtime.getDeviceProperties(0)
    gpu = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    print(f"GPU: {gpu}, {props['multiProcessorCount']} SMs; driver {cp.cuda.runtime.driverGetVersion()}", flush=True)
    results = {"gpu": gpu, "sms": props["multiProcessorCount"], "arch": manifest["arch"], "runs": RUNS,
               "warmup": WARMUP, "seed": SEED, "toolchain": manifest.get("toolchain", {}), "kernels": []}
    failures = []
    modules = {}
    for k in manifest["kernels"]:
        name = base_name(k["name"])
        case = CASES[name](np, np.random.default_rng(SEED))
        fns = {}
        for v in variants:
            path = os.path.join(build, v, k["example"] + ".cubin")
            if path not in modules:
                modules[path] = cp.RawModule(path=path)
            fns[v] = modules[path].get_function(k["symbol"])

        def upload():
            return {n: cp.asarray(a) for n, a in case.buffers.items()}

        def launch(fn, dev):
            args = []
            for kind, v in case.args:
                args.append(dev[v] if kind == "buf" else (np.int32(v) if kind == "i32" else np.float64(v)))
            fn(case.grid, case.block, tuple(args))

        # Correctness: each variant once, from the same inputs.
        outputs = {}
        for v in variants:
            dev = upload()
            launch(fns[v], dev)
            cp.cuda.runtime.deviceSynchronize()
            outputs[v] = {n: (dtype_name(case.buffers[n]), cp.asnumpy(d).tobytes()) for n, d in dev.items()}
            del dev
        identical = {}
        for v in variants[1:]:
            problems = compare(name, v, outputs["plain"], outputs[v])
            identical[v] = not problems
            for p in problems:
                print(p, flush=True)
                failures.append(p)
            if problems and dump_dir:
                write_dump(os.path.join(dump_dir, f"{name}.plain"), name, outputs["plain"])
                write_dump(os.path.join(dump_dir, f"{name}.{v}"), name, outputs[v])
        del outputs

        # Timing: interleaved, one launch between two events.
        dev = upload()
        for _ in range(WARMUP):
            for v in variants:
                launch(fns[v], dev)
        cp.cuda.runtime.deviceSynchronize()
        times = {v: [] for v in variants}
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        for r in range(RUNS):
            order = variants if r % 2 == 0 else list(reversed(variants))
            for v in order:
                start.record()
                launch(fns[v], dev)
                stop.record()
                stop.synchronize()
                times[v].append(cp.cuda.get_elapsed_time(start, stop))
        del dev
        cp.get_default_memory_pool().free_all_blocks()
        median = {v: sorted(t)[len(t) // 2] if len(t) % 2 else sum(sorted(t)[len(t) // 2 - 1 : len(t) // 2 + 1]) / 2 for v, t in times.items()}
        row = {
            "kernel": name, "symbol": k["symbol"], "example": k["example"],
            "tune": k["tune"], "same_cubin": k.get("same_cubin", {}),
            "median_ms": median, "times_ms": times,
            "speedup": {v: median["plain"] / median[v] for v in variants[1:]},
            "bit_identical": identical,
        }
        results["kernels"].append(row)
        print(f"{name}: " + ", ".join(f"{v} {median[v]:.4f} ms" for v in variants)
              + " | " + ", ".join(f"{v} x{row['speedup'][v]:.3f} {'identical' if identical[v] else 'DIFFERENT'}" for v in variants[1:]), flush=True)

    results["geomean_speedup"] = {
        v: math.exp(sum(math.log(r["speedup"][v]) for r in results["kernels"]) / len(results["kernels"]))
        for v in variants[1:]
    }
    results["all_bit_identical"] = not failures
    results["mismatches"] = failures
    with open(out_path, "w") as f:
        json.dump(results, f, indent=1)
    print(table(results))
    return 0 if not failures else 1


def table(results):
    variants = ["plain"] + list(results["geomean_speedup"].keys())
    lines = [f"GPU: {results['gpu']} ({results['arch']}), median of {results['runs']} interleaved runs"]
    head = ["kernel"] + [f"{v} ms" for v in variants] + [f"speedup {v}" for v in variants[1:]] + ["bit-identical"]
    rows = []
    for r in results["kernels"]:
        rows.append([r["kernel"]] + [f"{r['median_ms'][v]:.4f}" for v in variants]
                    + [f"{r['speedup'][v]:.3f}" for v in variants[1:]]
                    + [", ".join("yes" if r["bit_identical"][v] else "NO" for v in variants[1:])])
    rows.append(["geometric mean"] + [""] * len(variants) + [f"{results['geomean_speedup'][v]:.3f}" for v in variants[1:]] + [""])
    widths = [max(len(str(x[i])) for x in [head] + rows) for i in range(len(head))]
    for row in [head] + rows:
        lines.append("  ".join(str(c).ljust(w) for c, w in zip(row, widths)))
    return "\n".join(lines)


# --------------------------------------------------------------------------
# The dry run: everything but the GPU.


def run_dry(build):
    manifest = load_manifest(build)
    ok = True
    for k in manifest["kernels"]:
        name = base_name(k["name"])
        if name not in CASES:
            print(f"no case for kernel {name}")
            ok = False
            continue
        for v in manifest["variants"]:
            path = os.path.join(build, v, k["example"] + ".cubin")
            with open(path, "rb") as f:
                data = f.read()
            if not data.startswith(b"\x7fELF") or k["symbol"].encode() not in data:
                print(f"{path}: not a cubin holding {k['symbol']}")
                ok = False
        try:
            import numpy as np
        except ImportError:
            print(f"{name}: numpy missing, inputs not checked")
            continue
        t = time.time()
        c = CASES[name](np, np.random.default_rng(SEED))
        total = sum(a.nbytes for a in c.buffers.values())
        nargs = len(c.args)
        for kind, v in c.args:
            if kind == "buf":
                assert v in c.buffers, (name, v)
        print(f"{name}: grid {c.grid} block {c.block}, {nargs} arguments, {total / 2**20:.0f} MiB of buffers ({time.time() - t:.1f} s)")
    cmd_self_test()
    return 0 if ok else 1


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("command", nargs="*", help="compare A B | self-test (default: run on the GPU)")
    p.add_argument("--build", default=os.path.join(HERE, "build"))
    p.add_argument("--out", default=os.path.join(HERE, "results.json"))
    p.add_argument("--dump", help="write the outputs of mismatching kernels here")
    p.add_argument("--dry-run", action="store_true")
    a = p.parse_args()
    if a.command[:1] == ["compare"] and len(a.command) == 3:
        return cmd_compare(a.command[1], a.command[2])
    if a.command == ["self-test"]:
        return cmd_self_test()
    if a.command:
        p.error("unknown command")
    if a.dry_run:
        return run_dry(a.build)
    return run_gpu(a.build, a.out, a.dump)


if __name__ == "__main__":
    sys.exit(main())
