//! Find a CUDA installation for NVPTX targets (the flags of a CUDA compile
//! are NVPTX's own: `gpu/nvptx/flags.rs`).
//!
//! clang compiles CUDA itself; from CUDA it needs `bin/ptxas`,
//! `nvvm/libdevice/libdevice.10.bc`, the headers in `include/` and a version
//! file. In order, regtune takes:
//!   1. `$CUDA_PATH`, then `/usr/local/cuda`: a real CUDA toolkit;
//!   2. `$REGTUNE_CUDA_PATH`, then `/opt/regtune-cuda`, then
//!      `${XDG_CACHE_HOME:-~/.cache}/regtune/cuda`: the directory
//!      `ci/bootstrap.sh` assembles from NVIDIA's PyPI wheels
//!      (nvidia-cuda-nvcc-cu12 for ptxas and libdevice, nvidia-cuda-runtime-cu12,
//!      nvidia-cuda-cccl-cu12 and nvidia-curand-cu12 for the headers clang's
//!      CUDA wrapper includes).
//!
//! clang 22 knows CUDA up to 12.8 and compiles 12.9 with a "partially
//! supported" warning, which regtune silences (`-Wno-unknown-cuda-version`).

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

#[derive(Debug, thiserror::Error)]
pub enum CudaError {
    #[error("no CUDA installation found for NVPTX targets (looked in {looked}); run `ci/bootstrap.sh` (it assembles one from NVIDIA's PyPI wheels) or set CUDA_PATH")]
    Missing { looked: String },
}

/// A CUDA installation clang can use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cuda {
    pub root: PathBuf,
    /// From `version.json` (or `version.txt`): "12.9.86".
    pub version: String,
    /// First line of `ptxas --version`'s last line: part of every cache key,
    /// since ptxas decides the registers.
    pub ptxas_version: String,
}

impl Cuda {
    pub(crate) fn ptxas(&self) -> PathBuf {
        self.root.join("bin/ptxas")
    }

    /// Where detection looks, in order.
    pub(crate) fn candidates() -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = Vec::new();
        v.extend(env::var_os("CUDA_PATH").filter(|p| !p.is_empty()).map(PathBuf::from));
        v.push(PathBuf::from("/usr/local/cuda"));
        v.extend(env::var_os("REGTUNE_CUDA_PATH").filter(|p| !p.is_empty()).map(PathBuf::from));
        v.push(PathBuf::from("/opt/regtune-cuda"));
        v.push(cache_dir().join("regtune/cuda"));
        v
    }

    /// The first complete installation among [`Cuda::candidates`].
    pub fn detect() -> Result<Cuda, CudaError> {
        let candidates = Cuda::candidates();
        for root in &candidates {
            if is_complete(root) {
                return Ok(Cuda { version: version(root), ptxas_version: ptxas_version(&root.join("bin/ptxas")), root: root.clone() });
            }
        }
        let looked = candidates.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ");
        Err(CudaError::Missing { looked })
    }

    /// [`Cuda::detect`], once per process.
    pub(crate) fn get() -> Result<&'static Cuda, CudaError> {
        static FOUND: OnceLock<Result<Cuda, CudaError>> = OnceLock::new();
        match FOUND.get_or_init(Cuda::detect) {
            Ok(c) => Ok(c),
            Err(CudaError::Missing { looked }) => Err(CudaError::Missing { looked: looked.clone() }),
        }
    }
}

/// Everything clang's CUDA detection and a device compile need.
fn is_complete(root: &Path) -> bool {
    root.join("bin/ptxas").is_file()
        && root.join("nvvm/libdevice/libdevice.10.bc").is_file()
        && root.join("include/cuda_runtime.h").is_file()
        && (root.join("version.json").is_file() || root.join("version.txt").is_file())
}

pub(super) fn cache_dir() -> PathBuf {
    env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(env::temp_dir)
}

/// "12.9.86" from `{"cuda": {"version": "12.9.86"}}` or "CUDA Version 12.9.86".
fn version(root: &Path) -> String {
    if let Ok(text) = std::fs::read_to_string(root.join("version.json")) {
        if let Some(v) =
            serde_json::from_str::<serde_json::Value>(&text).ok().and_then(|j| j["cuda"]["version"].as_str().map(str::to_string))
        {
            return v;
        }
    }
    std::fs::read_to_string(root.join("version.txt"))
        .ok()
        .and_then(|t| t.split_whitespace().last().map(str::to_string))
        .unwrap_or_else(|| "unknown".into())
}

/// `ptxas --version`'s last line ("Build cuda_12.9.r12.9/compiler.36037853_0").
pub(crate) fn ptxas_version(ptxas: &Path) -> String {
    Command::new(ptxas)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).lines().last().map(|l| l.trim().to_string()))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_come_from_version_json_or_txt() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("version.json"), r#"{"cuda": {"name": "CUDA SDK", "version": "12.9.86"}}"#).unwrap();
        assert_eq!(version(dir.path()), "12.9.86");
        let old = tempfile::tempdir().unwrap();
        std::fs::write(old.path().join("version.txt"), "CUDA Version 11.8.89\n").unwrap();
        assert_eq!(version(old.path()), "11.8.89");
    }

    #[test]
    fn an_incomplete_directory_is_not_an_installation() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("bin")).unwrap();
        std::fs::write(dir.path().join("bin/ptxas"), "").unwrap();
        assert!(!is_complete(dir.path()));
    }
}
