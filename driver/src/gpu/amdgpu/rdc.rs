//! Relocatable device code (`-fgpu-rdc`) on AMDGPU, as clang 22 builds it.
//!
//! Each translation unit's device compile runs the whole O3 pipeline and
//! stops at bitcode (no `-flto` pre-link split: `-fpass-plugin` runs there,
//! both phases, as in a whole-file compile). The device link
//! (`amdgcn-link`) is lld: it links every unit's bitcode, internalizes all
//! but the kernels, optimizes the whole again at the link's `-O` (LTO) and
//! generates the one code object. No pass plugin runs in lld.
//!
//!   clang -x hip --offload-arch=gfx90a -fgpu-rdc -c a.hip b.hip
//!   clang -fgpu-rdc --hip-link --offload-arch=gfx90a a.o b.o     # lld -flavor gnu -m elf64_amdgpu ...

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::device_libs;
use crate::gpu::compile::{self, CompileError, Compiled, Emit, Variant};
use crate::gpu::Arch;
use crate::toolchain::Toolchain;

/// Pre-optimization IR to the unit's optimized bitcode, as the `-fgpu-rdc`
/// compile's last job does: [`device_libs::ir_args`] less the
/// internalization (the unit's functions are other units' callees).
pub(crate) fn ir_to_bitcode(
    toolchain: &Toolchain,
    arch: &Arch,
    ir: &Path,
    out: &Path,
    variant: &Variant,
) -> Result<Compiled, CompileError> {
    let args: Vec<OsString> =
        device_libs::ir_args(toolchain, arch).into_iter().filter(|a| a != "-mllvm" && a != "-amdgpu-internalize-symbols").collect();
    let mut cmd = Command::new(&toolchain.clang);
    cmd.args(args).arg(compile::DEFAULT_OPT).args(&variant.args);
    cmd.args(["-c", "-emit-llvm", "-o"]).arg(out).arg(ir);
    compile::run_variant(cmd, toolchain, arch, ir, variant)
}

/// lld's device link as clang's HIP toolchain runs it, at the link's
/// optimization level: the compile's `-O` (the build links as it
/// compiles; hipcc's default is -O3). `Emit::Asm` and `Emit::Ir` give one
/// listing of the whole (a single LTO partition) instead of the object.
pub(crate) fn device_link(
    toolchain: &Toolchain,
    arch: &Arch,
    inputs: &[PathBuf],
    out: &Path,
    emit: Emit,
    user_args: &[String],
    variant: &Variant,
) -> Result<Compiled, CompileError> {
    let level = link_opt_level(user_args);
    let mut cmd = Command::new(toolchain.llvm_bin.join("ld.lld"));
    cmd.args(["-m", "elf64_amdgpu", "--no-undefined", "-shared", "-plugin-opt=-amdgpu-internalize-symbols"]);
    cmd.arg(format!("-plugin-opt=mcpu={}", arch.name()));
    cmd.arg(format!("-plugin-opt=O{level}")).arg(format!("--lto-CGO{level}"));
    // lld names a single listing after the output.
    let written = match emit {
        Emit::Object => {
            cmd.arg("--lto-partitions=8");
            out.to_path_buf()
        }
        Emit::Asm => {
            cmd.args(["--lto-partitions=1", "--lto-emit-asm"]);
            PathBuf::from(format!("{}.lto.s", out.display()))
        }
        Emit::Ir => {
            cmd.args(["--lto-partitions=1", "--plugin-opt=emit-llvm"]);
            out.to_path_buf()
        }
    };
    cmd.arg("--whole-archive").arg("-o").arg(out).args(inputs).arg("--no-whole-archive");
    let linked = compile::run_tool(cmd, toolchain.llvm_bin.join("ld.lld"), arch, out, variant.deadline)?;
    if written != out {
        std::fs::rename(&written, out).map_err(|source| CompileError::Input { file: written, source })?;
    }
    Ok(linked)
}

/// The `-O` level clang's HIP toolchain gives lld for the user's last `-O`
/// flag: `-Ofast`/`-O4` → 3, `-Os`/`-Oz` → 2, `-Og` → 1.
fn link_opt_level(user_args: &[String]) -> String {
    let last = user_args.iter().rev().find(|a| a.starts_with("-O")).map_or(compile::DEFAULT_OPT, String::as_str);
    match &last[2..] {
        "" => "1".into(),
        "fast" | "4" => "3".into(),
        "s" | "z" => "2".into(),
        "g" => "1".into(),
        n => n.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_link_optimizes_at_the_compiles_level() {
        let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(link_opt_level(&args(&[])), "3");
        assert_eq!(link_opt_level(&args(&["-O2", "-DX"])), "2");
        assert_eq!(link_opt_level(&args(&["-O3", "-Os"])), "2");
        assert_eq!(link_opt_level(&args(&["-Ofast"])), "3");
        assert_eq!(link_opt_level(&args(&["-O"])), "1");
    }
}
