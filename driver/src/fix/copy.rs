//! A patched copy of a source file in a temporary directory, that compiles
//! as the original would:
//!   - it has the original's file name, and `#line` directives give every
//!     line the patch left alone its original file and line number, so
//!     `__FILE__`, `__LINE__`, `assert` messages, debug line tables and
//!     diagnostics are the original's (lines the patch wrote keep the
//!     number of the line before them);
//!   - `#include "x.h"` is looked up first in the including file's own
//!     directory, which for the copy is the temporary one (holding nothing
//!     else): `-iquote <original's directory>`, put before the user's own
//!     flags, makes it the original directory again, so quoted includes
//!     resolve as they did; `<x.h>` includes never looked there.

use std::path::{Path, PathBuf};

pub(crate) struct PatchedCopy {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl PatchedCopy {
    pub(crate) fn new(original: &Path, original_text: &str, patched: &str) -> std::io::Result<PatchedCopy> {
        let dir = tempfile::Builder::new().prefix("regtune-fix").tempdir()?;
        let name = original.file_name().ok_or_else(|| std::io::Error::other(format!("{} names no file", original.display())))?;
        let path = dir.path().join(name);
        std::fs::write(&path, with_line_directives(&original.display().to_string(), original_text, patched))?;
        Ok(PatchedCopy { _dir: dir, path })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Flags that go before the user's: the original directory for quoted includes.
    pub(crate) fn include_args(original: &Path) -> Vec<String> {
        let dir = match original.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
        vec!["-iquote".to_string(), dir.display().to_string()]
    }
}

/// `patched`, with a `#line N "name"` before each run of lines it shares
/// with `original` whose numbers the patch shifted.
pub(crate) fn with_line_directives(name: &str, original: &str, patched: &str) -> String {
    let quoted = name.replace('\\', "\\\\").replace('"', "\\\"");
    let diff = similar::TextDiff::from_lines(original, patched);
    let mut out = format!("#line 1 \"{quoted}\"\n");
    // The line number the preprocessor gives the next line written.
    let mut presumed = 1;
    for op in diff.ops() {
        for change in diff.iter_changes(op) {
            match change.old_index() {
                Some(old) if change.tag() == similar::ChangeTag::Equal && presumed != old + 1 => {
                    out.push_str(&format!("#line {} \"{quoted}\"\n", old + 1));
                    presumed = old + 1;
                }
                Some(_) if change.tag() != similar::ChangeTag::Equal => continue, // deleted: not written
                _ => {} // kept in place, or inserted (numbered after the line before)
            }
            out.push_str(&change.to_string_lossy());
            if !change.to_string_lossy().ends_with('\n') {
                out.push('\n');
            }
            presumed += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unchanged_lines_keep_their_numbers() {
        let original = "a\nb\nc\nd\n";
        let patched = "a\nnew\nb\nd\n";
        let copy = with_line_directives("k.hip", original, patched);
        assert_eq!(copy, "#line 1 \"k.hip\"\na\nnew\n#line 2 \"k.hip\"\nb\n#line 4 \"k.hip\"\nd\n");
    }
}
