//! Find nvcc, NVIDIA's CUDA compiler, for CUDA code built with it
//! (`--compiler nvcc`, regtune-nvcc): the compile whose PTX and cubins
//! regtune tunes is then nvcc's own, not clang's.
//!
//! In order: `$REGTUNE_NVCC` (a path to nvcc), `$CUDA_PATH/bin/nvcc`,
//! `/usr/local/cuda/bin/nvcc`, `nvcc` on `PATH`: a real toolkit; then
//! `/opt/regtune-nvcc/bin/nvcc` and `${XDG_CACHE_HOME:-~/.cache}/regtune/nvcc`,
//! which `ci/bootstrap.sh` assembles from NVIDIA's PyPI wheels (nvcc, cicc
//! and the crt headers of one version, with the runtime and CCCL).
//! nvcc runs its own ptxas (beside it in `bin/`, found through its
//! `nvcc.profile`): that ptxas, not clang's CUDA's, decides the registers.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Debug, thiserror::Error)]
pub enum NvccError {
    #[error("no nvcc found (looked in {looked}); run `ci/bootstrap.sh` (it assembles nvcc 13 from NVIDIA's PyPI wheels), set CUDA_PATH, or name it with --compiler PATH")]
    Missing { looked: String },
    #[error("{} is not nvcc: `--version` says {said:?}", path.display())]
    NotNvcc { path: PathBuf, said: String },
}

/// An nvcc and the ptxas it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nvcc {
    pub path: PathBuf,
    /// `nvcc --version`'s last line: "Build cuda_13.5.r13.5/compiler.39125733_0".
    pub version: String,
    /// "13.5", from "release 13.5, V13.5.37": whether it has `__maxnreg__` (12.4 on).
    pub release: (u32, u32),
}

impl Nvcc {
    /// Where detection looks, in order.
    pub fn candidates() -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = Vec::new();
        v.extend(env::var_os("REGTUNE_NVCC").filter(|p| !p.is_empty()).map(PathBuf::from));
        v.extend(env::var_os("CUDA_PATH").filter(|p| !p.is_empty()).map(|p| PathBuf::from(p).join("bin/nvcc")));
        v.push(PathBuf::from("/usr/local/cuda/bin/nvcc"));
        if let Some(path) = env::var_os("PATH") {
            v.extend(env::split_paths(&path).map(|d| d.join("nvcc")));
        }
        v.push(PathBuf::from("/opt/regtune-nvcc/bin/nvcc"));
        v.push(super::cuda::cache_dir().join("regtune/nvcc/bin/nvcc"));
        v
    }

    /// The first nvcc among [`Nvcc::candidates`].
    pub fn detect() -> Result<Nvcc, NvccError> {
        let candidates = Nvcc::candidates();
        match candidates.iter().find(|p| p.is_file()) {
            Some(path) => Nvcc::at(path),
            None => {
                let looked = candidates.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ");
                Err(NvccError::Missing { looked })
            }
        }
    }

    /// The nvcc at `path` (a name without a slash is looked up on `PATH`).
    pub fn at(path: &Path) -> Result<Nvcc, NvccError> {
        let path = if path.components().count() == 1 && !path.is_file() {
            let dirs = env::var_os("PATH").map(|p| env::split_paths(&p).collect::<Vec<_>>()).unwrap_or_default();
            match dirs.iter().map(|d| d.join(path)).find(|p| p.is_file()) {
                Some(found) => found,
                None => return Err(NvccError::Missing { looked: format!("{} on PATH", path.display()) }),
            }
        } else {
            path.to_path_buf()
        };
        let said =
            Command::new(&path).arg("--version").output().map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
        let release = said
            .lines()
            .find_map(release)
            .ok_or_else(|| NvccError::NotNvcc { path: path.clone(), said: said.lines().last().unwrap_or_default().to_string() })?;
        let version = said.lines().last().unwrap_or_default().trim().to_string();
        Ok(Nvcc { path, version, release })
    }

    /// The ptxas nvcc runs: the one beside it.
    pub fn ptxas(&self) -> PathBuf {
        self.path.with_file_name("ptxas")
    }

    /// `__maxnreg__(N)` is nvcc's from CUDA 12.4 on.
    pub fn has_maxnreg(&self) -> bool {
        self.release >= (12, 4)
    }
}

/// (13, 5) from "Cuda compilation tools, release 13.5, V13.5.37".
fn release(line: &str) -> Option<(u32, u32)> {
    let rest = line.split("release ").nth(1)?;
    let number = rest.split(',').next()?.trim();
    let (major, minor) = number.split_once('.')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_release_comes_from_the_version_banner() {
        assert_eq!(release("Cuda compilation tools, release 13.5, V13.5.37"), Some((13, 5)));
        assert_eq!(release("Cuda compilation tools, release 12.4, V12.4.131"), Some((12, 4)));
        assert_eq!(release("Build cuda_13.5.r13.5/compiler.39125733_0"), None);
    }

    #[test]
    fn a_program_that_is_not_nvcc_is_named() {
        let e = Nvcc::at(Path::new("/bin/true")).unwrap_err();
        assert!(e.to_string().starts_with("/bin/true is not nvcc"), "{e}");
    }
}
