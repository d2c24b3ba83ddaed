//! The candidate code objects `regtune measure` runs: for each kernel with
//! a decision or a suggestion, the plain build, the decided one and each
//! suggested one, kept by `tune` beside the db (they are the very objects
//! it measured, compiled from the same IR):
//!
//! ```text
//! .regtune/decisions.json                 the db
//! .regtune/decisions.code/<input hash>/plain.cubin
//! .regtune/decisions.code/<input hash>/<hash of kernel and transforms>.cubin
//! .regtune/decisions.code/<input hash>/other-clang.cubin   (or other-nvcc.cubin)
//! ```
//!
//! (`.hsaco` for AMDGPU code objects.) `other-<compiler>` is the file's
//! plain build by the other CUDA compiler (clang's for a file tuned as nvcc
//! builds it, nvcc's for clang's CUDA): `measure` times it beside the
//! candidates and says whether it is faster; it is never a candidate.

use std::path::{Path, PathBuf};

use regtune_decisions::{Entry, Measured, Transforms};

use crate::hash;
use crate::session::{OtherBuild, Session, SessionError};

/// The other compiler's build's name: `other-clang.cubin`.
const OTHER: &str = "other-";

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
pub(crate) fn path(dir: &Path, entry: &Entry, t: &Transforms) -> PathBuf {
    let name = if t.is_empty() {
        "plain".to_string()
    } else {
        // As dbs spelled it before `warps_per_sm`: an older tune's files are found.
        let spec = serde_json::to_string(&t.older_spelling()).expect("transforms serialize");
        hash::of_parts([entry.symbol.as_bytes(), spec.as_bytes()])[..16].to_string()
    };
    dir.join(&entry.input_hash).join(format!("{name}.{}", extension(&entry.arch)))
}

/// One entry's candidates: name, transforms, file. Plain first; then the
/// decision; then each suggestion ("suggested", "suggested-2", ...); then
/// the measured search's, named by their labels ("warps-per-sm=40").
pub fn candidates(dir: &Path, entry: &Entry) -> Vec<(String, Transforms, PathBuf)> {
    let mut out = vec![("plain".to_string(), Transforms::default())];
    if !entry.transforms.is_empty() {
        out.push(("decided".into(), entry.transforms.clone()));
    }
    for (i, s) in entry.suggested.iter().enumerate() {
        if !out.iter().any(|(_, t)| t == &s.transforms) {
            out.push((suggestion_name(i), s.transforms.clone()));
        }
    }
    for c in &entry.candidates {
        if !out.iter().any(|(_, t)| t == &c.transforms) {
            out.push((label(&c.transforms), c.transforms.clone()));
        }
    }
    out.into_iter().map(|(n, t)| (n, t.clone(), path(dir, entry, &t))).collect()
}

/// The name of an entry's `i`th suggestion (from 0) in measure's report
/// and `regtune confirm`: "suggested", "suggested-2", ...
pub(crate) fn suggestion_name(i: usize) -> String {
    if i == 0 {
        "suggested".into()
    } else {
        format!("suggested-{}", i + 1)
    }
}

/// Whether `regtune measure` has anything to time for the entry.
pub(crate) fn has_candidates(entry: &Entry) -> bool {
    !entry.transforms.is_empty() || !entry.suggested.is_empty() || !entry.candidates.is_empty()
}

/// A build's name, as tune labels it: "sink + warps-per-sm=40".
pub(crate) fn label(t: &Transforms) -> String {
    t.labels().join(" + ")
}

/// A hash of a code object's bytes (None: unreadable): a measurement of
/// a candidate stays valid while its code object hashes the same.
pub fn hash_of(path: &Path) -> Option<String> {
    std::fs::read(path).ok().map(|b| hash::of_parts([b.as_slice()]))
}

/// What of `old` (a measurement of the entry a re-tune replaces) still
/// holds for `entry`: the candidates it still offers whose code objects,
/// as now written in `dir`, hash as they did when measured, and as
/// `earlier` what it no longer offers. When the
/// plain build changed or nothing else is left, only what the launches
/// showed, which outlives edits to the source: the block size, with no
/// candidate (None without one).
pub(crate) fn still_measured(dir: &Path, entry: &Entry, old: &Measured) -> Option<Measured> {
    let now = candidates(dir, entry);
    let holds = |c: &regtune_decisions::measured::Candidate| {
        now.iter().any(|(_, t, p)| *t == c.transforms && c.code.is_some() && hash_of(p) == c.code)
    };
    let kept: Vec<_> = old.candidates.iter().filter(|c| holds(c)).cloned().collect();
    let plain_holds = kept.first().is_some_and(|c| c.transforms.is_empty());
    // What is no longer offered stays as what an earlier run timed.
    let offered = |t: &Transforms| now.iter().any(|(_, n, _)| n == t);
    let earlier: Vec<_> = old.candidates.iter().chain(&old.earlier).filter(|c| !offered(&c.transforms)).cloned().collect();
    if plain_holds && (kept.len() > 1 || !earlier.is_empty()) {
        return Some(Measured { candidates: kept, earlier, ..old.clone() });
    }
    old.block.map(|_| Measured {
        candidates: vec![],
        earlier: vec![],
        control: None,
        program_identical: None,
        program: None,
        ..old.clone()
    })
}

/// Keep the candidates of every entry that has something to measure. Each
/// is written anew from this tune's build: a measurement of the old one
/// stays only if the bytes did not change ([`hash_of`]).
pub(crate) fn store<'a>(session: &Session<'_>, entries: impl Iterator<Item = &'a Entry>, dir: &Path) -> Result<(), SessionError> {
    for entry in entries.filter(|e| has_candidates(e)) {
        for (_, t, dest) in candidates(dir, entry) {
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

/// The other CUDA compiler's build of `entry`'s file, if tune kept one:
/// the compiler ("clang", "nvcc") and the code object.
pub(crate) fn other(dir: &Path, entry: &Entry) -> Option<(String, PathBuf)> {
    let suffix = format!(".{}", extension(&entry.arch));
    let mut found: Vec<(String, PathBuf)> = std::fs::read_dir(dir.join(&entry.input_hash))
        .ok()?
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            let compiler = name.strip_prefix(OTHER)?.strip_suffix(&suffix)?;
            Some((compiler.to_string(), dir.join(&entry.input_hash).join(&name)))
        })
        .collect();
    found.sort();
    found.into_iter().next()
}

/// Keep the other CUDA compiler's build of the session's file beside the
/// candidates of its entries ([`other`]), where any has something to
/// measure and `build` says to; an earlier tune's goes either way. A line
/// to tell the user when the other compiler was there and did not build it
/// (not a failure of the tune: measure then times no other build).
pub(crate) fn store_other<'a>(
    session: &Session<'_>,
    mut entries: impl Iterator<Item = &'a Entry>,
    dir: &Path,
    build: bool,
) -> Option<String> {
    let entry = entries.find(|e| has_candidates(e))?;
    let parent = dir.join(&entry.input_hash);
    while let Some((_, old)) = other(dir, entry) {
        if std::fs::remove_file(&old).is_err() {
            break;
        }
    }
    if !build {
        return None;
    }
    let tmp = match tempfile::NamedTempFile::new_in(&parent) {
        Ok(t) => t,
        Err(e) => return Some(format!("cannot write {}: {e}", parent.display())),
    };
    match session.build_with_other_compiler(tmp.path()) {
        OtherBuild::Built(compiler) => {
            let dest = parent.join(format!("{OTHER}{compiler}.{}", extension(&entry.arch)));
            tmp.persist(&dest).err().map(|e| format!("cannot write {}: {}", dest.display(), e.error))
        }
        OtherBuild::Unavailable => None,
        OtherBuild::Failed(compiler, why) => Some(format!(
            "{compiler} did not build it with the flags translated ({why}); measure will time no {compiler} code beside the candidates (--no-other-compiler skips trying)"
        )),
    }
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
            candidates: vec![],
            left_out: vec![],
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

    #[test]
    fn a_step_s_file_keeps_the_name_an_older_tune_gave_it() {
        // Tunes before `warps_per_sm` named NVIDIA's step by its `waves_per_eu` spelling.
        let e = entry("sm_90");
        let older = hash::of_parts([e.symbol.as_bytes(), br#"{"sink":true,"waves_per_eu":32}"#.as_slice()]);
        let step = Transforms { sink: true, warps_per_sm: Some(32), ..Default::default() };
        assert_eq!(path(Path::new("d"), &e, &step), Path::new("d/abc").join(format!("{}.cubin", &older[..16])));
        // The label, though, is NVIDIA's.
        assert_eq!(label(&step), "sink + warps-per-sm=32");
    }

    #[test]
    fn the_other_compilers_build_is_found_by_its_name_beside_plain() {
        let tmp = tempfile::tempdir().unwrap();
        let e = entry("sm_90");
        assert_eq!(other(tmp.path(), &e), None, "no directory yet");
        let unit = tmp.path().join("abc");
        std::fs::create_dir_all(&unit).unwrap();
        for name in ["plain.cubin", "other-clang.hsaco", "other-.ptx", "0123456789abcdef.cubin"] {
            std::fs::write(unit.join(name), b"x").unwrap();
        }
        assert_eq!(other(tmp.path(), &e), None, "not a cubin");
        std::fs::write(unit.join("other-clang.cubin"), b"x").unwrap();
        assert_eq!(other(tmp.path(), &e), Some(("clang".to_string(), unit.join("other-clang.cubin"))));
        assert_eq!(other(tmp.path(), &entry("gfx90a")).map(|(c, _)| c), Some("clang".to_string()), "by the arch's extension");
        // Never one of the candidates.
        assert!(candidates(tmp.path(), &e).iter().all(|(n, _, p)| !n.contains("clang") && !p.ends_with("other-clang.cubin")));
    }

    #[test]
    fn what_an_earlier_run_timed_outlives_a_re_tune_only_with_plain_s_code() {
        use regtune_decisions::measured::Candidate;
        let tmp = tempfile::tempdir().unwrap();
        let e = entry("sm_90");
        for (_, t, path) in candidates(tmp.path(), &e) {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, format!("{t:?}")).unwrap();
        }
        let timed = |transforms: Transforms, code| Candidate { transforms, time: None, identical: true, error: None, code, paired: None };
        let plain_path = candidates(tmp.path(), &e).remove(0).2;
        let gone = Transforms { unroll_cap: Some(2), ..Default::default() };
        let old = |plain_code| Measured {
            device: "gpu".into(),
            launches: 1,
            runs: 20,
            deterministic: true,
            program_identical: None,
            block: Some(256),
            candidates: vec![timed(Transforms::default(), plain_code), timed(gone.clone(), Some("x".into()))],
            control: None,
            earlier: vec![timed(Transforms { unroll_cap: Some(1), ..Default::default() }, Some("y".into()))],
            program: None,
        };
        // The same plain code: the build no longer offered joins the earlier one.
        let kept = still_measured(tmp.path(), &e, &old(hash_of(&plain_path))).unwrap();
        assert_eq!(kept.candidates.len(), 1);
        let earlier: Vec<Option<u32>> = kept.earlier.iter().map(|c| c.transforms.unroll_cap).collect();
        assert_eq!(earlier, [Some(2), Some(1)]);
        // Plain's code changed: only the launches' block size is left.
        let changed = still_measured(tmp.path(), &e, &old(Some("another".into()))).unwrap();
        assert!(changed.candidates.is_empty() && changed.earlier.is_empty() && changed.block == Some(256), "{changed:?}");
    }
}
