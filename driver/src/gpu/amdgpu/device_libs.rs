//! The HIP device libraries as clang 22 needs them, and the flags of a
//! device-only HIP compile.
//!
//! A ROCm install's clang knows its own device libraries. Debian's HIP 5.2
//! headers and device libraries need some help under clang 22: an explicit
//! device-library path, code object v5, `hip.bc` and `oclc_daz_opt_*.bc`
//! linked by hand (clang 22 no longer links them for a library this old), a
//! prelude for two things the 5.2 headers expect from the compiler, and
//! isa-version bitcode for targets newer than the 5.2 libraries (gfx942,
//! gfx950, gfx11xx, gfx12xx). All of it lives in an overlay directory
//! ([`Toolchain::device_libs`]) that [`prepare`] fills once per target.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::gpu::Arch;
use crate::toolchain::{Flavor, Toolchain, ToolchainError};

const DEBIAN_DEVICE_LIBS: &str = "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode";

/// What a HIP device compile for `arch` needs on disk: on Debian, the
/// device-library overlay and the prelude; ROCm needs nothing.
pub(crate) fn prepare(toolchain: &Toolchain, arch: &Arch) -> Result<(), ToolchainError> {
    if toolchain.flavor != Flavor::Debian {
        return Ok(());
    }
    let dir = &toolchain.device_libs;
    let err = |source| ToolchainError::Overlay { dir: dir.clone(), source };
    fs::create_dir_all(dir).map_err(err)?;
    for entry in fs::read_dir(DEBIAN_DEVICE_LIBS).map_err(err)? {
        let entry = entry.map_err(err)?;
        let link = dir.join(entry.file_name());
        if !link.exists() {
            symlink_if_absent(&entry.path(), &link).map_err(err)?;
        }
    }
    let isa = dir.join(format!("oclc_isa_version_{}.bc", arch.isa_suffix()));
    if !isa.exists() {
        // The 5.2 libraries predate this target; all they read from the
        // isa-version library is one constant. Copy gfx940's file (its
        // data layout included, so the linker stays quiet) with ours.
        let template = disassemble(toolchain, &Path::new(DEBIAN_DEVICE_LIBS).join("oclc_isa_version_940.bc"))?;
        let ir = template.replace("constant i32 9400", &format!("constant i32 {}", arch.isa_version()));
        assemble(toolchain, &ir, &isa)?;
    }
    let prelude = prelude(toolchain, arch);
    if !prelude.exists() {
        write_atomic(&prelude, &prelude_text(arch.wave_size())).map_err(err)?;
    }
    Ok(())
}

fn prelude(toolchain: &Toolchain, arch: &Arch) -> PathBuf {
    toolchain.device_libs.join(format!("regtune-prelude-wave{}.h", arch.wave_size()))
}

/// `llvm-dis` a bitcode file to text.
fn disassemble(toolchain: &Toolchain, bc: &Path) -> Result<String, ToolchainError> {
    let tool_error = |detail: String| ToolchainError::Tool { tool: "llvm-dis".into(), detail };
    let out =
        Command::new(toolchain.llvm_bin.join("llvm-dis")).arg(bc).args(["-o", "-"]).output().map_err(|e| tool_error(e.to_string()))?;
    if !out.status.success() {
        return Err(tool_error(String::from_utf8_lossy(&out.stderr).trim().to_string()));
    }
    String::from_utf8(out.stdout).map_err(|e| tool_error(e.to_string()))
}

/// `llvm-as` the text `ir` into `out`, atomically.
fn assemble(toolchain: &Toolchain, ir: &str, out: &Path) -> Result<(), ToolchainError> {
    let tmp = out.with_extension(format!("tmp{}", std::process::id()));
    let status = Command::new(toolchain.llvm_bin.join("llvm-as"))
        .arg("-o")
        .arg(&tmp)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().expect("piped stdin").write_all(ir.as_bytes())?;
            child.wait()
        })
        .map_err(|e| ToolchainError::Tool { tool: "llvm-as".into(), detail: e.to_string() })?;
    if !status.success() {
        return Err(ToolchainError::Tool { tool: "llvm-as".into(), detail: status.to_string() });
    }
    fs::rename(&tmp, out).map_err(|source| ToolchainError::Overlay { dir: toolchain.device_libs.clone(), source })
}

/// Flags for a HIP device-only compile for `arch` (no input, no output,
/// no optimization level: the caller adds those and the user's flags).
pub(crate) fn device_args(toolchain: &Toolchain, arch: &Arch, user_args: &[String]) -> Vec<OsString> {
    let mut args: Vec<OsString> = ["-x", "hip", "--cuda-device-only", "--no-gpu-bundle-output"].iter().map(OsString::from).collect();
    args.push(format!("--offload-arch={}", arch.name()).into());
    match &toolchain.flavor {
        Flavor::Rocm { root } => args.push(format!("--rocm-path={}", root.display()).into()),
        Flavor::Debian => {
            let libs = &toolchain.device_libs;
            args.push("--rocm-path=/usr".into());
            args.push(format!("--rocm-device-lib-path={}", libs.display()).into());
            args.push("-mcode-object-version=5".into());
            let daz = if user_args.iter().any(|a| a == "-fgpu-flush-denormals-to-zero") { "on" } else { "off" };
            for lib in [libs.join("hip.bc"), libs.join(format!("oclc_daz_opt_{daz}.bc"))] {
                args.extend(["-Xclang".into(), "-mlink-builtin-bitcode".into(), "-Xclang".into(), lib.into()]);
            }
            args.push("-include".into());
            args.push(prelude(toolchain, arch).into());
        }
    }
    args
}

/// Flags that compile pre-optimization device IR (from the frontend run)
/// exactly as the HIP compile would have compiled it.
pub(crate) fn ir_args(toolchain: &Toolchain, arch: &Arch) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec![
        "-x".into(),
        "ir".into(),
        "--target=amdgcn-amd-amdhsa".into(),
        format!("-mcpu={}", arch.name()).into(),
        // The frontend run already linked the device libraries into the
        // IR; letting clang link OpenCL's set again would change the code.
        "-nogpulib".into(),
        // What the HIP driver passes to the device job beyond the IR.
        "-ffp-contract=fast-honor-pragmas".into(),
        "-fno-autolink".into(),
        "-mllvm".into(),
        "-amdgpu-internalize-symbols".into(),
    ];
    if toolchain.flavor == Flavor::Debian {
        args.push("-mcode-object-version=5".into());
    }
    args
}

fn prelude_text(wave_size: u32) -> String {
    format!(
        "// regtune: what HIP 5.2's headers expect from the compiler, which clang 22 no longer provides.\n\
         #pragma once\n\
         #ifndef __AMDGCN_WAVEFRONT_SIZE\n\
         #define __AMDGCN_WAVEFRONT_SIZE {wave_size}\n\
         #endif\n\
         extern \"C\" __attribute__((device)) _Float16 __llvm_amdgcn_rcp_f16(_Float16);\n\
         typedef _Float16 __regtune_half2 __attribute__((ext_vector_type(2)));\n\
         extern \"C\" __attribute__((device)) __regtune_half2 __llvm_amdgcn_rcp_2f16(__regtune_half2);\n"
    )
}

/// Concurrent regtune runs may race to create the same link: first one wins.
fn symlink_if_absent(target: &Path, link: &Path) -> std::io::Result<()> {
    match std::os::unix::fs::symlink(target, link) {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        other => other,
    }
}

fn write_atomic(path: &Path, text: &str) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    std::io::Write::write_all(&mut tmp, text.as_bytes())?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prelude_defines_the_wave_size() {
        assert!(prelude_text(32).contains("#define __AMDGCN_WAVEFRONT_SIZE 32\n"));
        assert!(prelude_text(64).contains("__llvm_amdgcn_rcp_2f16"));
    }
}
