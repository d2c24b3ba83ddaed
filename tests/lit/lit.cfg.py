# -*- Python -*-
# lit configuration for regtune's passes: `lit-22 -sv tests/lit`.
#
# The plugin under test is $REGTUNE_PLUGIN, or `--param plugin=...`, or
# target/debug/libregtune_passes.so under the repository root (build it with
# `cargo build -p regtune-passes`). LLVM's tools (opt, clang, FileCheck...)
# come from `--param llvm_bin=...`, else $REGTUNE_LLVM_BIN, else the LLVM the
# plugin was built for: `llvm-config-N --bindir`, else /usr/lib/llvm-N/bin.
# So the LLVM-19 plugin runs under LLVM 19's tools:
#   REGTUNE_PLUGIN=$PWD/target/llvm19/debug/libregtune_passes.so lit-22 -sv tests/lit
# Tests see the plugin's LLVM as the feature `llvm19` or `llvm22`.

import os
import re
import shutil
import struct
import subprocess

import lit.formats

config.name = "regtune"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".ll", ".hip", ".test"]
config.excludes = ["Inputs", "lit.cfg.py"]
config.test_source_root = os.path.dirname(os.path.abspath(__file__))
config.test_exec_root = os.path.join(config.test_source_root, "Output")

repo_root = os.path.abspath(os.path.join(config.test_source_root, "..", ".."))


def plugin_llvm_version(path):
    """The LLVM version the plugin was built for: its `.regtune_llvm` section
    (passes/src/ffi/mod.rs), read from the ELF64 file; None if it has none."""
    with open(path, "rb") as f:
        elf = f.read()
    if elf[:5] != b"\x7fELF\x02":
        return None
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)

    def section(i):
        # name, type, flags, addr, offset, size
        return struct.unpack_from("<IIQQQQ", elf, shoff + i * shentsize)

    names_at = section(shstrndx)[4]
    for i in range(shnum):
        name, _, _, _, offset, size = section(i)
        if elf[names_at + name:].split(b"\0", 1)[0] == b".regtune_llvm":
            return elf[offset:offset + size].rstrip(b"\0").decode()
    return None


def llvm_bindir(major):
    given = lit_config.params.get("llvm_bin") or os.environ.get("REGTUNE_LLVM_BIN")
    if given:
        return given
    llvm_config = shutil.which(f"llvm-config-{major}")
    if llvm_config:
        out = subprocess.run([llvm_config, "--bindir"], capture_output=True, text=True)
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip()
    return f"/usr/lib/llvm-{major}/bin"


plugin = (
    lit_config.params.get("plugin")
    or os.environ.get("REGTUNE_PLUGIN")
    or os.path.join(repo_root, "target", "debug", "libregtune_passes.so")
)
plugin = os.path.abspath(plugin)
if not os.path.isfile(plugin):
    lit_config.fatal(
        f"regtune plugin not found at {plugin}: run `cargo build -p regtune-passes`, "
        "or point REGTUNE_PLUGIN (or --param plugin=) at it"
    )
plugin_version = plugin_llvm_version(plugin)
if not plugin_version:
    lit_config.fatal(f"{plugin} does not say which LLVM it was built for (no .regtune_llvm section)")
llvm_major = plugin_version.split(".")[0]
config.available_features.add(f"llvm{llvm_major}")
bindir = llvm_bindir(llvm_major)

for tool in ["opt", "clang", "FileCheck", "not", "count", "llvm-stress", "llvm-nm", "llvm-readelf"]:
    if not os.path.exists(os.path.join(bindir, tool)):
        lit_config.fatal(f"{tool} not found in {bindir} (set --param llvm_bin=)")

# A plugin loads only into the LLVM it was built for.
opt_version = subprocess.run([os.path.join(bindir, "opt"), "--version"], capture_output=True, text=True).stdout
found = re.search(r"LLVM version (\d+)", opt_version)
if not found or found.group(1) != llvm_major:
    lit_config.fatal(
        f"{plugin} is built for LLVM {plugin_version}, but {bindir}/opt is "
        f"{'LLVM ' + found.group(1) if found else 'not an LLVM opt'}: point --param llvm_bin= "
        f"(or REGTUNE_LLVM_BIN) at LLVM {llvm_major}'s tools"
    )
lit_config.note(f"plugin built for LLVM {plugin_version}; tools from {bindir}")

# LLVM's tools first on PATH, so RUN lines can say FileCheck, not, opt.
config.environment["PATH"] = os.pathsep.join([bindir, os.environ.get("PATH", "")])
# Whatever the caller's shell has set must not leak into the tests.
for var in ["REGTUNE_DECISIONS", "REGTUNE_INPUT_HASH"]:
    config.environment.pop(var, None)

opt = os.path.join(bindir, "opt")
clang = os.path.join(bindir, "clang")

# A HIP device compile for gfx90a that links the ROCm device libraries, as
# the tuner does; -cuid keeps the output independent of the command line.
device_libs = lit_config.params.get("device_libs", "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode")
hip_common = f"{clang} -x hip --offload-arch=gfx90a --rocm-path=/usr -cuid=regtune -O3"
hip_device = (
    f"{hip_common} --cuda-device-only --no-gpu-bundle-output"
    f" --rocm-device-lib-path={device_libs} -mcode-object-version=5"
    f" -Xclang -mlink-builtin-bitcode -Xclang {device_libs}/hip.bc"
    f" -Xclang -mlink-builtin-bitcode -Xclang {device_libs}/oclc_daz_opt_off.bc"
)
hip_host = f"{hip_common} --cuda-host-only"
if os.path.isfile(os.path.join(device_libs, "hip.bc")) and os.path.isfile("/usr/include/hip/hip_runtime.h"):
    config.available_features.add("hip")

config.substitutions.extend(
    [
        # opt with the plugin, running the IR verifier after every pass.
        ("%opt", f"{opt} -load-pass-plugin={plugin} -verify-each"),
        ("%plugin", plugin),
        ("%hip-device", hip_device),
        ("%hip-host", hip_host),
        ("%inputs", os.path.join(config.test_source_root, "Inputs")),
        # The FileCheck prefix for what the plugin's LLVM spells its own way:
        # `--check-prefixes=CHECK,%llvm` checks LLVM19: or LLVM22: lines too.
        ("%llvm", f"LLVM{llvm_major}"),
    ]
)
