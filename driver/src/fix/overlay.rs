//! The patched files as the verifying build sees them: clang's virtual
//! file system overlay (`-ivfsoverlay`), each patched text standing in for
//! its original at the original's path. Everything else about the build is
//! the user's: include lookup from the same directories, the same
//! `__FILE__` and line numbers (`use-external-names: false` keeps the
//! original names in diagnostics, debug info and dependency files), the
//! same flags; nothing is copied but the patched texts.

use std::path::{Path, PathBuf};

pub(crate) struct Overlay {
    dir: tempfile::TempDir,
    yaml: PathBuf,
}

impl Overlay {
    /// An overlay of `files`: (the original's canonical path, its patched text).
    pub(crate) fn new<'a>(files: impl IntoIterator<Item = (&'a str, &'a str)>) -> std::io::Result<Overlay> {
        let dir = tempfile::Builder::new().prefix("regtune-fix").tempdir()?;
        let mut roots = Vec::new();
        for (i, (original, text)) in files.into_iter().enumerate() {
            let name = Path::new(original).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let copy = dir.path().join(format!("{i}-{name}"));
            std::fs::write(&copy, text)?;
            roots.push(serde_json::json!({"type": "file", "name": original, "external-contents": copy}));
        }
        let doc = serde_json::json!({"version": 0, "case-sensitive": "true", "use-external-names": false, "roots": roots});
        let yaml = dir.path().join("overlay.yaml");
        // JSON is YAML, and clang reads it as such.
        std::fs::write(&yaml, doc.to_string())?;
        Ok(Overlay { dir, yaml })
    }

    /// The flags that make a compile read the patched texts.
    pub(crate) fn args(&self) -> Vec<String> {
        vec!["-ivfsoverlay".into(), self.yaml.display().to_string()]
    }

    /// Where the build's own temporary files may go.
    pub(crate) fn dir(&self) -> &Path {
        self.dir.path()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_overlay_names_each_original() {
        let o = Overlay::new([("/src/a.h", "int a;\n"), ("/src/k.hip", "k\n")]).unwrap();
        let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&o.yaml).unwrap()).unwrap();
        assert_eq!(doc["roots"][1]["name"], "/src/k.hip");
        let copy = doc["roots"][0]["external-contents"].as_str().unwrap();
        assert_eq!(std::fs::read_to_string(copy).unwrap(), "int a;\n");
        assert_eq!(o.args()[0], "-ivfsoverlay");
    }
}
