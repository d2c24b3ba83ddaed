#!/usr/bin/env python3
"""regtune-lds-spill computes bit-identical results: one NVPTX kernel, plain
and with `regtune-lds-spill<8>`, run on the same inputs (NaNs with payloads,
infinities, denormals, signed zeros) under 1-D, 2-D and 3-D blocks of 256
threads; every output word must match.

Its values are floats and its multiply-adds explicit `llvm.fma`, built by
llc without contraction: it passed while every lds-spill build of the LBM
example differed (64-bit halves on NVPTX, contracted products; see
passes/src/lds_spill/mod.rs). lds_spill_examples.py checks every example
kernel as clang builds it.

    python3 bench/gpu/lds_spill_identity.py build   # CPU: opt-22, llc-22, the plugin
    python3 bench/gpu/lds_spill_identity.py run     # GPU: libcuda only (PTX JIT)

`build` writes bench/gpu/build/lds-spill/{plain,spill}.ll and .ptx (ignored
by git; carry bench/gpu/build to the GPU machine) and checks that the spill
survived llc (st/ld.volatile.shared). `run` prints each kernel's registers
and shared memory as the driver compiled it, then compares the outputs.
"""

import os
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
BUILD = os.path.join(HERE, "build", "lds-spill")
# Accumulators live in the loop; values live across it (the ones spilled).
NACC, NKEEP = 16, 8


def kernel_ir():
    """A kernel whose pressure peaks in a loop (16 accumulators) with eight
    values loaded before it and read after it; indexed by the flat thread id,
    so any block shape of 256 threads covers distinct elements."""
    L = []
    w = L.append
    w('target triple = "nvptx64-nvidia-cuda"')
    w('define ptx_kernel void @pressure(ptr addrspace(1) %in, ptr addrspace(1) %out, i32 %n, i32 %total) #0 {')
    w('entry:')
    for r in ['tid.x','tid.y','tid.z','ntid.x','ntid.y','ctaid.x']:
        w(f'  %{r.replace(".","")} = call i32 @llvm.nvvm.read.ptx.sreg.{r}()')
    w('  %f1 = mul i32 %ntidy, %tidz'); w('  %f2 = add i32 %tidy, %f1'); w('  %f3 = mul i32 %ntidx, %f2'); w('  %flat = add i32 %tidx, %f3')
    w('  %base = mul i32 %ctaidx, 256'); w('  %tid = add i32 %base, %flat')
    for k in range(NKEEP):
        w(f'  %koff{k} = mul i32 %total, {k+1}')
        w(f'  %kidx{k} = add i32 %tid, %koff{k}')
        w(f'  %kp{k} = getelementptr inbounds float, ptr addrspace(1) %in, i32 %kidx{k}')
        w(f'  %keep{k} = load float, ptr addrspace(1) %kp{k}, align 4')
    w('  %op = getelementptr inbounds float, ptr addrspace(1) %out, i32 %tid')
    w('  br label %loop')
    w('loop:')
    w('  %i = phi i32 [ 0, %entry ], [ %i.next, %loop ]')
    for j in range(NACC):
        w(f'  %acc{j} = phi float [ 0.0, %entry ], [ %acc{j}.next, %loop ]')
    w('  %row = mul i32 %i, %total'); w('  %xi = add i32 %row, %tid')
    w('  %xp = getelementptr inbounds float, ptr addrspace(1) %in, i32 %xi')
    w('  %x = load float, ptr addrspace(1) %xp, align 4')
    for j in range(NACC):
        w(f'  %acc{j}.next = call float @llvm.fma.f32(float %x, float {float(j)+1.5:.6e}, float %acc{j})')
    w('  store float %acc0.next, ptr addrspace(1) %op, align 4')
    w('  %i.next = add i32 %i, 1'); w('  %more = icmp slt i32 %i.next, %n')
    w('  br i1 %more, label %loop, label %exit')
    w('exit:')
    prev = '%acc0.next'
    for j in range(1, NACC):
        w(f'  %s{j} = fadd float {prev}, %acc{j}.next'); prev = f'%s{j}'
    for k in range(NKEEP):
        w(f'  %r{k} = fmul float {prev}, %keep{k}'); prev = f'%r{k}'
    w(f'  store float {prev}, ptr addrspace(1) %op, align 4')
    w('  ret void')
    w('}')
    for r in ['tid.x','tid.y','tid.z','ntid.x','ntid.y','ctaid.x']:
        w(f'declare i32 @llvm.nvvm.read.ptx.sreg.{r}()')
    w('declare float @llvm.fma.f32(float, float, float)')
    w('attributes #0 = { nounwind "nvvm.maxntid"="256" "target-cpu"="sm_90" }')
    return '\n'.join(L) + '\n'


def run(build):
    import ctypes
    import random


    cu = ctypes.CDLL("libcuda.so.1")
    def ck(r, what):
        if r != 0:
            s = ctypes.c_char_p()
            cu.cuGetErrorString(r, ctypes.byref(s))
            sys.exit(f"{what}: error {r} {s.value}")
    ck(cu.cuInit(0), "cuInit")
    dev = ctypes.c_int(); ck(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
    name = ctypes.create_string_buffer(100); cu.cuDeviceGetName(name, 100, dev)
    ctx = ctypes.c_void_p(); ck(cu.cuCtxCreate_v2(ctypes.byref(ctx), 0, dev), "cuCtxCreate")
    print("device:", name.value.decode())

    def load(path):
        ptx = open(path, "rb").read() + b"\0"
        mod = ctypes.c_void_p()
        ck(cu.cuModuleLoadData(ctypes.byref(mod), ptx), f"load {path}")
        fn = ctypes.c_void_p()
        ck(cu.cuModuleGetFunction(ctypes.byref(fn), mod, b"pressure"), "getfunction")
        regs = ctypes.c_int(); cu.cuFuncGetAttribute(ctypes.byref(regs), 4, fn)   # NUM_REGS
        smem = ctypes.c_int(); cu.cuFuncGetAttribute(ctypes.byref(smem), 1, fn)   # SHARED_SIZE_BYTES
        local = ctypes.c_int(); cu.cuFuncGetAttribute(ctypes.byref(local), 3, fn) # LOCAL_SIZE_BYTES
        print(f"{path}: {regs.value} registers, {smem.value} B static shared, {local.value} B local")
        return fn

    plain, spill = load(os.path.join(build, "plain.ptx")), load(os.path.join(build, "spill.ptx"))

    GRID, N = 64, 16
    TOTAL = GRID * 256
    random.seed(1)
    specials = [float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1e-40, -1e-45, 3.4e38]
    words = []
    for _ in range(N * TOTAL):
        r = random.random()
        if r < 0.01:
            words.append(0x7FC00000 | random.getrandbits(22))  # NaN with a payload
        elif r < 0.03:
            words.append(struct.unpack("<I", struct.pack("<f", random.choice(specials)))[0])
        else:
            words.append(struct.unpack("<I", struct.pack("<f", random.uniform(-4, 4)))[0])
    host_in = (ctypes.c_uint32 * len(words))(*words)

    def alloc(nbytes):
        p = ctypes.c_uint64(); ck(cu.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(nbytes)), "alloc"); return p
    d_in = alloc(4 * len(words)); d_out = alloc(4 * TOTAL)
    ck(cu.cuMemcpyHtoD_v2(d_in, host_in, ctypes.c_size_t(4 * len(words))), "htod")

    def run(fn, block):
        ck(cu.cuMemsetD32_v2(d_out, 0xDEADBEEF, ctypes.c_size_t(TOTAL)), "memset")
        n = ctypes.c_int(N); total = ctypes.c_int(TOTAL)
        args = (ctypes.c_void_p * 4)(ctypes.addressof(d_in), ctypes.addressof(d_out), ctypes.addressof(n), ctypes.addressof(total))
        ck(cu.cuLaunchKernel(fn, GRID, 1, 1, block[0], block[1], block[2], 0, None, args, None), "launch")
        ck(cu.cuCtxSynchronize(), "sync")
        out = (ctypes.c_uint32 * TOTAL)()
        ck(cu.cuMemcpyDtoH_v2(out, d_out, ctypes.c_size_t(4 * TOTAL)), "dtoh")
        return bytes(out)

    ok = True
    for block in [(256, 1, 1), (16, 16, 1), (8, 8, 4), (32, 2, 4)]:
        a, b = run(plain, block), run(spill, block)
        same = a == b
        ok &= same
        nan = sum(1 for i in range(0, len(a), 4) if (struct.unpack_from("<I", a, i)[0] & 0x7F800000) == 0x7F800000 and struct.unpack_from("<I", a, i)[0] & 0x7FFFFF)
        print(f"block {block}: {'identical' if same else 'DIFFERENT'} ({TOTAL} outputs, {nan} NaN)")
        if not same:
            diff = [i // 4 for i in range(0, len(a), 4) if a[i:i+4] != b[i:i+4]]
            print("  first differences at", diff[:10])
    print("bit-identical" if ok else "MISMATCH")
    return 0 if ok else 1


def build(plugin):
    os.makedirs(BUILD, exist_ok=True)
    plain = os.path.join(BUILD, "plain.ll")
    with open(plain, "w") as f:
        f.write(kernel_ir())
    spill = os.path.join(BUILD, "spill.ll")
    subprocess.run(["opt-22", f"-load-pass-plugin={plugin}", "-passes=regtune-lds-spill<8>", "-S", plain, "-o", spill], check=True)
    for name in ("plain", "spill"):
        subprocess.run(["llc-22", "-O3", "-mcpu=sm_90", os.path.join(BUILD, name + ".ll"), "-o", os.path.join(BUILD, name + ".ptx")], check=True)
    with open(os.path.join(BUILD, "spill.ptx")) as f:
        shared = f.read().count("volatile.shared")
    print(f"{BUILD}: plain.ptx, spill.ptx ({shared} volatile shared accesses)")
    return 0 if shared else 1


def main():
    what = sys.argv[1] if len(sys.argv) > 1 else ""
    if what == "build":
        plugin = sys.argv[2] if len(sys.argv) > 2 else os.path.join(REPO, "target", "debug", "libregtune_passes.so")
        return build(plugin)
    if what == "run":
        return run(BUILD)
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
