//! The wrapper's own cache: input-hash manifests, "this plugin loads into
//! this compiler" marks, and Debian's linked device bitcode. Everything in it
//! can be rebuilt; deleting it costs one preprocessor run per source.
//! Entries are keyed by file identity (path, size, modification time), which
//! lives here too, so the rest of the wrapper depends on this module and
//! never the other way round.
//!
//! `$REGTUNE_CACHE_DIR`, else `$XDG_CACHE_HOME/regtune/wrapper`, else
//! `~/.cache/regtune/wrapper`. Concurrent wrappers write whole files
//! atomically, so a reader sees an old entry or a new one, never half.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::toolchain::Toolchain;

pub(crate) const CACHE_ENV: &str = "REGTUNE_CACHE_DIR";

#[derive(Debug, Clone)]
pub struct Cache {
    root: PathBuf,
}

impl Cache {
    pub fn from_env() -> Cache {
        let root = std::env::var_os(CACHE_ENV).map(PathBuf::from).unwrap_or_else(|| {
            let base = std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
                .unwrap_or_else(std::env::temp_dir);
            base.join("regtune").join("wrapper")
        });
        Cache { root }
    }

    pub(crate) fn path(&self, kind: &str, key: &str) -> PathBuf {
        self.root.join(kind).join(key)
    }

    pub(crate) fn has_mark(&self, kind: &str, key: &str) -> bool {
        self.path(kind, key).exists()
    }

    /// Best effort: a cache that cannot be written only costs time.
    pub(crate) fn set_mark(&self, kind: &str, key: &str) {
        let _ = self.write(kind, key, b"");
    }

    pub(crate) fn read(&self, kind: &str, key: &str) -> Option<Vec<u8>> {
        std::fs::read(self.path(kind, key)).ok()
    }

    /// Write atomically (temporary file, then rename).
    pub(crate) fn write(&self, kind: &str, key: &str, bytes: &[u8]) -> std::io::Result<PathBuf> {
        let path = self.path(kind, key);
        let dir = path.parent().unwrap_or(&self.root);
        std::fs::create_dir_all(dir)?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        std::io::Write::write_all(&mut tmp, bytes)?;
        tmp.persist(&path).map_err(|e| e.error)?;
        Ok(path)
    }

    /// `libs` linked into one bitcode file with the toolchain's llvm-link,
    /// in order (Debian's `hip.bc` and `oclc_daz_opt_*.bc`).
    pub(crate) fn linked_bitcode(&self, toolchain: &Toolchain, libs: &[PathBuf]) -> Result<PathBuf, String> {
        let mut parts = vec![toolchain.version.clone()];
        parts.extend(libs.iter().map(|l| file_identity(l)));
        let key = format!("{}.bc", &crate::hash::of_parts(&parts)[..24]);
        let path = self.path("bitcode", &key);
        if path.is_file() {
            return Ok(path);
        }
        let dir = path.parent().unwrap_or(&self.root).to_path_buf();
        let fail = |e: &dyn std::fmt::Display| format!("cannot link the device bitcode {}: {e}", join(libs));
        std::fs::create_dir_all(&dir).map_err(|e| fail(&e))?;
        let tmp = tempfile::Builder::new().suffix(".bc").tempfile_in(&dir).map_err(|e| fail(&e))?;
        let out = Command::new(toolchain.llvm_bin.join("llvm-link")).args(libs).arg("-o").arg(tmp.path()).output().map_err(|e| fail(&e))?;
        if !out.status.success() {
            return Err(fail(&String::from_utf8_lossy(&out.stderr).trim()));
        }
        tmp.persist(&path).map_err(|e| fail(&e.error))?;
        Ok(path)
    }
}

fn join(paths: &[PathBuf]) -> String {
    paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(" + ")
}

/// Modification time in nanoseconds since the epoch (0 when unknown).
pub(crate) fn mtime_ns(meta: &std::fs::Metadata) -> u128 {
    meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos())
}

/// Path, size and modification time: changes when the file is rebuilt.
pub(crate) fn file_identity(path: &Path) -> String {
    let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let meta = std::fs::metadata(&canonical).ok();
    let (len, mtime) = meta.as_ref().map_or((0, 0), |m| (m.len(), mtime_ns(m)));
    format!("{}:{len}:{mtime}", canonical.display())
}
