//! A patched copy of a source file in a temporary directory, that compiles
//! as the original would:
//!   - it has the original's file name and starts with `#line 1
//!     "<original>"`, so `__FILE__`, `assert` messages and diagnostics
//!     name the original (lines the patch added shift later ones);
//!   - `#include "x.h"` is looked up first in the including file's own
//!     directory, which for the copy is the temporary one (holding nothing
//!     else): `-iquote <original's directory>`, put before the user's own
//!     flags, makes it the original directory again, and quoted includes
//!     resolve as they did; `<x.h>` includes never looked there.

use std::path::{Path, PathBuf};

pub struct PatchedCopy {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl PatchedCopy {
    pub fn new(original: &Path, patched: &str) -> std::io::Result<PatchedCopy> {
        let dir = tempfile::Builder::new().prefix("regtune-fix").tempdir()?;
        let name = original.file_name().ok_or_else(|| std::io::Error::other(format!("{} names no file", original.display())))?;
        let path = dir.path().join(name);
        let quoted = original.display().to_string().replace('\\', "\\\\").replace('"', "\\\"");
        std::fs::write(&path, format!("#line 1 \"{quoted}\"\n{patched}"))?;
        Ok(PatchedCopy { _dir: dir, path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Flags that go before the user's: the original directory for quoted includes.
    pub fn include_args(original: &Path) -> Vec<String> {
        let dir = match original.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
        vec!["-iquote".to_string(), dir.display().to_string()]
    }
}
