//! The candidate code objects `regtune measure` runs: for each kernel with
//! a decision or a suggestion, the plain build, the decided one and each
//! suggested one, kept by `tune` beside the db (they are the very objects
//! it measured, compiled from the same IR):
//!
//! ```text
//! .regtune/decisions.json                 the db
//! .regtune/decisions.code/<input hash>/plain.cubin
//! .regtune/decisions.code/<input hash>/<hash of kernel and transforms>.cubin
//! ```
//!
//! (`.hsaco` for AMDGPU code objects.)

use std::path::{Path, PathBuf};

use regtune_decisions::{Entry, Transforms};

use crate::hash;
use crate::session::{Session, SessionError};

/// The code directory of a db: `decisions.json` → `decisions.code`.
pub fn dir(db: &Path) -> PathBuf {
    let stem = db.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "decisions".into());
    db.with_file_name(format!("{stem}.code"))
}

fn extension(arch: &str) -> &'static str {
    if arch.starts_with("sm_") {
        "cubin"
    } else {
        "hsaco"
    }
}

/// Where the code object of `entry`'s kernel built with `t` lives.
pub fn path(dir: &Path, entry: &Entry, t: &Transforms) -> PathBuf {
    let name = if t.is_empty() {
        "plain".to_string()
    } else {
        let spec = serde_json::to_string(t).expect("transforms serialize");
        hash::of_parts([entry.symbol.as_bytes(), spec.as_bytes()])[..16].to_string()
    };
    dir.join(&entry.input_hash).join(format!("{name}.{}", extension(&entry.arch)))
}

/// One entry's candidates: name, transforms, file. Plain first; then the
/// decision; then each suggestion ("suggested", "suggested-2", ...).
pub fn candidates(dir: &Path, entry: &Entry) -> Vec<(String, Transforms, PathBuf)> {
    let mut out = vec![("plain".to_string(), Transforms::default())];
    if !entry.transforms.is_empty() {
        out.push(("decided".into(), entry.transforms.clone()));
    }
    for (i, s) in entry.suggested.iter().enumerate() {
        if !out.iter().any(|(_, t)| t == &s.transforms) {
            out.push((if i == 0 { "suggested".into() } else { format!("suggested-{}", i + 1) }, s.transforms.clone()));
        }
    }
    out.into_iter().map(|(n, t)| (n, t.clone(), path(dir, entry, &t))).collect()
}

/// Keep the candidates of every entry that has something to measure.
pub fn store<'a>(session: &Session<'_>, entries: impl Iterator<Item = &'a Entry>, dir: &Path) -> Result<(), SessionError> {
    for entry in entries.filter(|e| !e.transforms.is_empty() || !e.suggested.is_empty()) {
        for (_, t, dest) in candidates(dir, entry) {
            if dest.is_file() {
                continue;
            }
            let parent = dest.parent().expect("under the code directory");
            let io = |e: std::io::Error| SessionError::Io(format!("cannot write {}: {e}", parent.display()));
            std::fs::create_dir_all(parent).map_err(io)?;
            // Written aside and renamed: concurrent tunes never see half a file.
            let tmp = tempfile::NamedTempFile::new_in(parent).map_err(io)?;
            session.save_code_object(&[(entry.symbol.clone(), t)], tmp.path())?;
            tmp.persist(&dest).map_err(|e| io(e.error))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use regtune_decisions::{Suggestion, Usage};

    fn entry(arch: &str) -> Entry {
        Entry {
            symbol: "_Z1kPd".into(),
            arch: arch.into(),
            input_hash: "abc".into(),
            name: "k".into(),
            file: "k.cu".into(),
            transforms: Transforms { sink: true, ..Default::default() },
            suggested: vec![Suggestion {
                transforms: Transforms { sink: true, launch_bounds: Some(256), ..Default::default() },
                usage: Usage::default(),
                message: String::new(),
                reasons: vec![],
                confirmed: false,
            }],
            reason: None,
            before: None,
            after: None,
            measured: None,
        }
    }

    #[test]
    fn the_code_directory_sits_beside_the_db() {
        assert_eq!(dir(Path::new(".regtune/decisions.json")), Path::new(".regtune/decisions.code"));
        assert_eq!(dir(Path::new("shard3.json")), Path::new("shard3.code"));
    }

    #[test]
    fn candidates_are_plain_then_decided_then_suggested_with_stable_names() {
        let c = candidates(Path::new("d"), &entry("sm_90"));
        let names: Vec<&str> = c.iter().map(|(n, _, _)| n.as_str()).collect();
        assert_eq!(names, ["plain", "decided", "suggested"]);
        assert_eq!(c[0].2, Path::new("d/abc/plain.cubin"));
        assert!(c[1].2.extension().unwrap() == "cubin" && c[1].2 != c[2].2);
        assert_eq!(candidates(Path::new("d"), &entry("sm_90")), c, "the same names every time");
        assert_eq!(candidates(Path::new("d"), &entry("gfx90a"))[0].2, Path::new("d/abc/plain.hsaco"));
    }
}
