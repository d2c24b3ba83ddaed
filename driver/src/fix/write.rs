//! `regtune fix --apply`: write the patched files in place, all or none.
//! Each file is written to a temporary file beside it (same permissions),
//! and only when all are written are they renamed over the originals; a
//! file that changed since regtune read it stops everything first, and a
//! rename that fails puts back the files already replaced.

use std::io::Write;
use std::path::Path;

use super::FileChange;

#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("{path} changed while regtune worked on it; nothing was written")]
    Changed { path: String },
    #[error("cannot write {path}: {source}; nothing was written")]
    Io { path: String, source: std::io::Error },
}

/// Replace every changed file with its patched text; the number written.
pub fn apply(patches: &[FileChange]) -> Result<usize, WriteError> {
    let changed: Vec<&FileChange> = patches.iter().filter(|p| p.patched != p.original).collect();
    let mut staged = Vec::new();
    for p in &changed {
        let io = |source| WriteError::Io { path: p.path.display().to_string(), source };
        let now = std::fs::read_to_string(&p.path).map_err(io)?;
        if now != p.original {
            return Err(WriteError::Changed { path: p.path.display().to_string() });
        }
        let dir = match p.path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(io)?;
        tmp.write_all(p.patched.as_bytes()).map_err(io)?;
        let permissions = std::fs::metadata(&p.path).map_err(io)?.permissions();
        tmp.as_file().set_permissions(permissions).map_err(io)?;
        tmp.as_file().sync_all().map_err(io)?;
        staged.push((p, tmp));
    }
    let mut done: Vec<&FileChange> = Vec::new();
    for (p, tmp) in staged {
        if let Err(e) = tmp.persist(&p.path) {
            for d in &done {
                // Best effort: the original text is in memory.
                let _ = std::fs::write(&d.path, &d.original);
            }
            return Err(WriteError::Io { path: p.path.display().to_string(), source: e.error });
        }
        done.push(p);
    }
    Ok(done.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn patch(path: &Path, original: &str, patched: &str) -> FileChange {
        FileChange {
            path: path.into(),
            shown: path.display().to_string(),
            names: vec![],
            original: original.into(),
            patched: patched.into(),
        }
    }

    #[test]
    fn all_files_or_none() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.hip"), dir.path().join("b.hip"));
        std::fs::write(&a, "a\n").unwrap();
        std::fs::write(&b, "b\n").unwrap();
        assert_eq!(apply(&[patch(&a, "a\n", "A\n"), patch(&b, "b\n", "B\n")]).unwrap(), 2);
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "A\n");
        // b changed under us: a is not touched either.
        let e = apply(&[patch(&a, "A\n", "AA\n"), patch(&b, "old\n", "B2\n")]).unwrap_err();
        assert!(e.to_string().contains("changed while regtune worked on it"), "{e}");
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "A\n");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2, "no temporary file left behind");
    }
}
