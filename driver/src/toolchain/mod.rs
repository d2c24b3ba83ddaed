//! Find the compiler: clang and its LLVM tools, the HIP device libraries'
//! place, and (for NVPTX) a CUDA installation.
//!
//! A real ROCm install (`$ROCM_PATH`, else `/opt/rocm`) wins. Otherwise we use
//! Debian's LLVM 22 with its HIP 5.2 headers and device libraries, which need
//! some help under clang 22; that help (the device-library overlay, the
//! prelude, the HIP device flags) is AMDGPU's own, in
//! `gpu/amdgpu/device_libs.rs`.
//!
//! NVPTX targets (`sm_XX`) use the same clang in CUDA mode with a CUDA
//! installation ([`cuda`]); the ROCm packages are then not needed.
//!
//! Below the targets: which toolchain a set of targets needs is theirs to
//! say (`gpu::toolchain_for`).

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

pub mod cuda;
pub mod nvcc;
pub mod translate;

use crate::tools;
use cuda::{Cuda, CudaError};

const DEBIAN_LLVM: &str = "/usr/lib/llvm-22";

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
        let missing: Vec<String> = debian_checks(false).into_iter().filter(|c| c.found.is_none()).map(|c| c.what.to_string()).collect();
        if !missing.is_empty() {
            return Err(ToolchainError::Missing { missing: missing.join(", ") });
        }
        let llvm_bin = Path::new(DEBIAN_LLVM).join("bin");
        let clang = llvm_bin.join("clang");
        let version = clang_version(&clang)?;
        Ok(Toolchain { flavor: Flavor::Debian, device_libs: overlay_dir(&version), clang, llvm_bin, version })
    }

    /// The toolchain for targets of which `needs_hip` says whether one
    /// compiles HIP: [`Toolchain::detect`] if so; else (NVPTX alone) clang 22
    /// and a CUDA installation suffice (Debian's ROCm packages may be missing).
    pub fn detect_for(needs_hip: bool) -> Result<Toolchain, ToolchainError> {
        if needs_hip || rocm_root().is_some() {
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
    pub(crate) fn cuda(&self) -> Result<&'static Cuda, ToolchainError> {
        Ok(Cuda::get()?)
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
        checks.push(Check {
            what: "nvcc, for CUDA built with nvcc (--compiler nvcc)",
            found: nvcc::Nvcc::detect().ok().map(|n| format!("{} ({}, ptxas {})", n.path.display(), n.version, n.ptxas().display())),
            fix: "optional: sudo ci/bootstrap.sh (assembles nvcc 13 from NVIDIA's PyPI wheels), set CUDA_PATH or REGTUNE_NVCC".into(),
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
