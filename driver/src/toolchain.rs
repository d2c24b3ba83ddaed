//! Find the HIP toolchain and build the device-compile command line.
//!
//! A real ROCm install (`$ROCM_PATH`, else `/opt/rocm`) wins. Otherwise we use
//! Debian's LLVM 22 with its HIP 5.2 headers and device libraries, which need
//! some help under clang 22: an explicit device-library path, code object v5,
//! `hip.bc` and `oclc_daz_opt_*.bc` linked by hand (clang 22 no longer links
//! them for a library this old), a prelude for two things the 5.2 headers
//! expect from the compiler, and isa-version bitcode for targets newer than
//! the 5.2 libraries (gfx942, gfx950, gfx11xx, gfx12xx).
//!
//! NVPTX targets (`sm_XX`) use the same clang in CUDA mode with a CUDA
//! installation ([`crate::target::nvptx::cuda`]); the ROCm packages are then not needed.

use std::env;
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::target::nvptx::cuda::{Cuda, CudaError};
use crate::target::Arch;
use crate::tools;

const DEBIAN_LLVM: &str = "/usr/lib/llvm-22";
const DEBIAN_DEVICE_LIBS: &str = "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode";

#[derive(Debug, thiserror::Error)]
pub enum ToolchainError {
    #[error("no HIP toolchain found: {missing}; run `ci/bootstrap.sh` (as root) or set ROCM_PATH")]
    Missing { missing: String },
    #[error("cannot prepare device libraries in {dir}: {source}")]
    Overlay { dir: PathBuf, source: std::io::Error },
    #[error("`{tool}` failed: {detail}")]
    Tool { tool: String, detail: String },
    #[error(transparent)]
    Cuda(#[from] CudaError),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Flavor {
    /// A ROCm install: its clang knows its own device libraries.
    Rocm { root: PathBuf },
    /// Debian's clang-22 with the HIP 5.2 packages.
    Debian,
}

#[derive(Debug, Clone)]
pub struct Toolchain {
    pub flavor: Flavor,
    /// The clang that compiles HIP device code.
    pub clang: PathBuf,
    /// Directory with opt, llvm-as, ld.lld... matching `clang`.
    pub llvm_bin: PathBuf,
    /// Device libraries as clang should see them (Debian: our overlay).
    pub device_libs: PathBuf,
    /// First line of `clang --version`: part of every cache key.
    pub version: String,
}

/// One line of `regtune doctor`.
pub struct Check {
    pub what: &'static str,
    pub found: Option<String>,
    pub fix: String,
    /// regtune cannot work without it (others are optional, or only for
    /// tests and scripts).
    pub required: bool,
}

impl Toolchain {
    /// Detect the toolchain from the environment.
    pub fn detect() -> Result<Toolchain, ToolchainError> {
        if let Some(root) = rocm_root() {
            let clang = root.join("llvm/bin/clang");
            let device_libs = ["amdgcn/bitcode", "lib/llvm/lib/clang/amdgcn/bitcode"]
                .iter()
                .map(|d| root.join(d))
                .find(|d| d.is_dir())
                .unwrap_or_else(|| root.join("amdgcn/bitcode"));
            let version = clang_version(&clang)?;
            return Ok(Toolchain {
                flavor: Flavor::Rocm { root: root.clone() },
                llvm_bin: root.join("llvm/bin"),
                clang,
                device_libs,
                version,
            });
        }
        let missing: Vec<String> = debian_checks(false)
            .into_iter()
            .filter(|c| c.found.is_none())
            .map(|c| c.what.to_string())
            .collect();
        if !missing.is_empty() {
            return Err(ToolchainError::Missing { missing: missing.join(", ") });
        }
        let llvm_bin = Path::new(DEBIAN_LLVM).join("bin");
        let clang = llvm_bin.join("clang");
        let version = clang_version(&clang)?;
        Ok(Toolchain {
            flavor: Flavor::Debian,
            device_libs: overlay_dir(&version),
            clang,
            llvm_bin,
            version,
        })
    }

    /// The toolchain for `archs`: [`Toolchain::detect`] when one of them is
    /// an AMDGPU target; for NVPTX targets alone, clang 22 and a CUDA
    /// installation suffice (Debian's ROCm packages may be missing).
    pub fn detect_for(archs: &[Arch]) -> Result<Toolchain, ToolchainError> {
        if archs.iter().any(|a| crate::target::of(a).needs_hip()) || rocm_root().is_some() {
            return Toolchain::detect();
        }
        let llvm_bin = Path::new(DEBIAN_LLVM).join("bin");
        let clang = llvm_bin.join("clang");
        if !clang.is_file() {
            return Err(ToolchainError::Missing { missing: "clang 22".into() });
        }
        Cuda::get()?;
        let version = clang_version(&clang)?;
        Ok(Toolchain { flavor: Flavor::Debian, device_libs: overlay_dir(&version), clang, llvm_bin, version })
    }

    /// The CUDA installation NVPTX compiles use.
    pub fn cuda(&self) -> Result<&'static Cuda, ToolchainError> {
        Ok(Cuda::get()?)
    }

    /// Make sure everything a device compile for `arch` needs exists on
    /// disk (the target says what: [`crate::target::Target::prepare`]).
    pub fn prepare(&self, arch: &Arch) -> Result<(), ToolchainError> {
        crate::target::of(arch).prepare(self, arch)
    }

    /// HIP's part of [`Toolchain::prepare`]: on Debian, the device-library
    /// overlay and the prelude; ROCm needs nothing.
    pub fn prepare_hip(&self, arch: &Arch) -> Result<(), ToolchainError> {
        if self.flavor != Flavor::Debian {
            return Ok(());
        }
        let dir = &self.device_libs;
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
            let template = self.disassemble(&Path::new(DEBIAN_DEVICE_LIBS).join("oclc_isa_version_940.bc"))?;
            let ir = template.replace("constant i32 9400", &format!("constant i32 {}", arch.isa_version()));
            self.assemble(&ir, &isa)?;
        }
        let prelude = self.prelude(arch);
        if !prelude.exists() {
            write_atomic(&prelude, &prelude_text(arch.wave_size())).map_err(err)?;
        }
        Ok(())
    }

    fn prelude(&self, arch: &Arch) -> PathBuf {
        self.device_libs.join(format!("regtune-prelude-wave{}.h", arch.wave_size()))
    }

    /// `llvm-dis` a bitcode file to text.
    fn disassemble(&self, bc: &Path) -> Result<String, ToolchainError> {
        let tool_error = |detail: String| ToolchainError::Tool { tool: "llvm-dis".into(), detail };
        let out = Command::new(self.llvm_bin.join("llvm-dis"))
            .arg(bc)
            .args(["-o", "-"])
            .output()
            .map_err(|e| tool_error(e.to_string()))?;
        if !out.status.success() {
            return Err(tool_error(String::from_utf8_lossy(&out.stderr).trim().to_string()));
        }
        String::from_utf8(out.stdout).map_err(|e| tool_error(e.to_string()))
    }

    /// `llvm-as` the text `ir` into `out`, atomically.
    fn assemble(&self, ir: &str, out: &Path) -> Result<(), ToolchainError> {
        let tmp = out.with_extension(format!("tmp{}", std::process::id()));
        let status = Command::new(self.llvm_bin.join("llvm-as"))
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
        fs::rename(&tmp, out).map_err(|source| ToolchainError::Overlay { dir: self.device_libs.clone(), source })
    }

    /// Flags for a HIP device-only compile for `arch` (no input, no output,
    /// no optimization level: the caller adds those and the user's flags).
    pub fn hip_device_args(&self, arch: &Arch, user_args: &[String]) -> Vec<OsString> {
        let mut args: Vec<OsString> = ["-x", "hip", "--cuda-device-only", "--no-gpu-bundle-output"]
            .iter()
            .map(OsString::from)
            .collect();
        args.push(format!("--offload-arch={}", arch.name()).into());
        match &self.flavor {
            Flavor::Rocm { root } => args.push(format!("--rocm-path={}", root.display()).into()),
            Flavor::Debian => {
                let libs = &self.device_libs;
                args.push("--rocm-path=/usr".into());
                args.push(format!("--rocm-device-lib-path={}", libs.display()).into());
                args.push("-mcode-object-version=5".into());
                let daz = if user_args.iter().any(|a| a == "-fgpu-flush-denormals-to-zero") { "on" } else { "off" };
                for lib in [libs.join("hip.bc"), libs.join(format!("oclc_daz_opt_{daz}.bc"))] {
                    args.extend(["-Xclang".into(), "-mlink-builtin-bitcode".into(), "-Xclang".into(), lib.into()]);
                }
                args.push("-include".into());
                args.push(self.prelude(arch).into());
            }
        }
        args
    }

    /// Flags that compile pre-optimization device IR (from the frontend run)
    /// exactly as the HIP compile would have compiled it.
    pub fn ir_args(&self, arch: &Arch) -> Vec<OsString> {
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
        if self.flavor == Flavor::Debian {
            args.push("-mcode-object-version=5".into());
        }
        args
    }

    /// What `regtune doctor` prints: one check per line.
    pub fn doctor() -> Vec<Check> {
        let mut checks = Vec::new();
        let rocm = rocm_root();
        checks.push(Check {
            what: "ROCm install ($ROCM_PATH or /opt/rocm)",
            found: rocm.as_ref().map(|r| r.display().to_string()),
            fix: "optional: install ROCm and set ROCM_PATH; Debian's packages are used otherwise".into(),
            required: false,
        });
        if rocm.is_none() {
            checks.extend(debian_checks(true));
        }
        checks.push(Check {
            what: "CUDA for NVPTX targets (sm_XX)",
            found: Cuda::detect().ok().map(|c| format!("{} (CUDA {}, {})", c.root.display(), c.version, c.ptxas_version)),
            fix: "optional: sudo ci/bootstrap.sh (assembles it from NVIDIA's PyPI wheels), or set CUDA_PATH".into(),
            required: false,
        });
        let plugin = crate::plugin::find().ok();
        checks.push(Check {
            what: "regtune pass plugin",
            found: plugin.as_ref().map(|p| match crate::plugin::llvm_version(p) {
                Some(v) => format!("{} (built for LLVM {v})", p.display()),
                None => format!("{} (does not say which LLVM it was built for)", p.display()),
            }),
            fix: "cargo build --release --workspace".into(),
            required: true,
        });
        if let (Some(plugin), Ok(toolchain)) = (plugin, Toolchain::detect()) {
            let loads = crate::plugin::check_loads(&plugin, &toolchain.clang);
            checks.push(Check {
                what: "pass plugin loads into the compiler",
                found: loads.as_ref().ok().map(|v| format!("{v} ({})", toolchain.clang.display())),
                fix: match loads {
                    Err(e @ crate::plugin::LoadError::Probe { .. }) => format!(
                        "{e}; rebuild it: {}",
                        crate::plugin::build_command(crate::plugin::llvm_major(&toolchain.version).unwrap_or(0), &toolchain.clang)
                    ),
                    Err(e) => e.to_string(),
                    Ok(_) => String::new(),
                },
                required: true,
            });
        }
        checks
    }
}

fn rocm_root() -> Option<PathBuf> {
    let candidates = env::var_os("ROCM_PATH").map(PathBuf::from).into_iter().chain([PathBuf::from("/opt/rocm")]);
    candidates.into_iter().find(|r| r.join("llvm/bin/clang").is_file())
}

/// The Debian tools regtune itself needs (`all`: and those its tests and
/// scripts spawn), each with the package to install when missing.
fn debian_checks(all: bool) -> Vec<Check> {
    tools::DEBIAN
        .iter()
        .filter(|t| all || t.runtime)
        .map(|t| Check {
            what: t.what,
            found: t.present().then(|| t.path().display().to_string()),
            fix: format!(
                "sudo apt-get install -y {}{}   (or: sudo ci/bootstrap.sh installs everything)",
                t.package,
                if t.runtime { "" } else { "; tests and scripts only" }
            ),
            required: t.runtime,
        })
        .collect()
}

fn clang_version(clang: &Path) -> Result<String, ToolchainError> {
    let out = Command::new(clang)
        .arg("--version")
        .output()
        .map_err(|e| ToolchainError::Tool { tool: clang.display().to_string(), detail: e.to_string() })?;
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(text.lines().next().unwrap_or_default().trim().to_string())
}

/// Per-user cache for the overlay, keyed by compiler version so an upgrade
/// never mixes libraries.
fn overlay_dir(version: &str) -> PathBuf {
    let base = env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(env::temp_dir);
    base.join("regtune").join(format!("device-libs-{}", crate::hash::short(version.as_bytes())))
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
