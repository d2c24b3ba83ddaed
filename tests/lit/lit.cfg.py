# -*- Python -*-
# lit configuration for regtune's passes: `lit-22 -sv tests/lit`.
#
# The plugin under test is $REGTUNE_PLUGIN, or `--param plugin=...`, or
# target/debug/libregtune_passes.so under the repository root (build it with
# `cargo build -p regtune-passes`). LLVM's tools come from
# `--param llvm_bin=...`, else `llvm-config-22 --bindir`, else
# /usr/lib/llvm-22/bin.

import os
import shutil
import subprocess

import lit.formats

config.name = "regtune"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".ll", ".hip", ".test"]
config.excludes = ["Inputs", "lit.cfg.py"]
config.test_source_root = os.path.dirname(os.path.abspath(__file__))
config.test_exec_root = os.path.join(config.test_source_root, "Output")

repo_root = os.path.abspath(os.path.join(config.test_source_root, "..", ".."))


def llvm_bindir():
    given = lit_config.params.get("llvm_bin")
    if given:
        return given
    llvm_config = shutil.which("llvm-config-22")
    if llvm_config:
        out = subprocess.run([llvm_config, "--bindir"], capture_output=True, text=True)
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip()
    return "/usr/lib/llvm-22/bin"


bindir = llvm_bindir()
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

for tool in ["opt", "clang", "FileCheck", "not", "count", "llvm-stress", "llvm-nm", "llvm-readelf"]:
    if not os.path.exists(os.path.join(bindir, tool)):
        lit_config.fatal(f"{tool} not found in {bindir} (set --param llvm_bin=)")

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
    ]
)
