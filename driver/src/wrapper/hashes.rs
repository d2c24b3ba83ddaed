//! The input hash of a source on a target, as `regtune tune` records it:
//! compiler version, target, the user's device flags and the preprocessed
//! device source (`compile::Unit::input_hash`). A db entry is current for a build
//! exactly when its hash equals this one.
//!
//! Preprocessing costs a few percent of a compile, so the answer is
//! remembered in a manifest (as ccache's direct mode does): the files the
//! preprocessor read (from its line markers) with their size, modification
//! time and SHA-256. A later build with the same command whose files all
//! still match reuses the hash without running the preprocessor; a file
//! whose time changed but whose contents did not still matches.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::gpu::compile::Unit;
use crate::gpu::Arch;
use crate::toolchain::Toolchain;

use super::cache::{mtime_ns, Cache};

/// The optimization level the tuner's builds start from (compile.rs): it
/// reaches the preprocessor as `__OPTIMIZE__`; the user's own -O comes later.
const TUNER_OPT: &str = "-O3";

/// Environment the preprocessor reads besides its arguments.
const PREPROCESSOR_ENV: &[&str] = &["CPATH", "CPLUS_INCLUDE_PATH", "C_INCLUDE_PATH", "SOURCE_DATE_EPOCH"];

#[derive(Debug, thiserror::Error)]
pub(crate) enum HashError {
    #[error("cannot run {tool}: {source}")]
    Spawn { tool: String, source: std::io::Error },
    #[error("cannot preprocess {file} for {arch}: {first_error}")]
    Preprocess { file: String, arch: String, first_error: String },
    #[error(transparent)]
    Toolchain(#[from] crate::toolchain::ToolchainError),
}

#[derive(Debug, Serialize, Deserialize)]
struct Manifest {
    input_hash: String,
    files: Vec<Dependency>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Dependency {
    path: PathBuf,
    len: u64,
    mtime_ns: u128,
    sha256: String,
}

/// Where a hash came from (for `REGTUNE_VERBOSE` and the benchmark).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    Manifest,
    Preprocessor,
}

/// The input hash of `source` on `arch` with `device_args`.
pub(crate) fn input_hash(
    toolchain: &Toolchain,
    arch: &Arch,
    source: &Path,
    device_args: &[String],
    cache: &Cache,
) -> Result<(String, Source), HashError> {
    let cwd = std::env::current_dir().unwrap_or_default();
    let mut parts: Vec<String> = vec![
        "manifest-v1".into(),
        toolchain.version.clone(),
        toolchain.clang.display().to_string(),
        arch.name().to_string(),
        source.display().to_string(),
        cwd.display().to_string(),
    ];
    parts.extend(PREPROCESSOR_ENV.iter().map(|v| format!("{v}={}", std::env::var(v).unwrap_or_default())));
    parts.extend(device_args.iter().cloned());
    let key = crate::hash::of_parts(&parts);
    if let Some(hash) = from_manifest(cache, &key) {
        return Ok((hash, Source::Manifest));
    }
    let started = SystemTime::now();
    let preprocessed = preprocess(toolchain, arch, source, device_args)?;
    let hash = Unit { toolchain, arch, source, user_args: device_args }.input_hash(&preprocessed);
    if let Some(files) = dependencies(&preprocessed, &cwd, started) {
        let manifest = Manifest { input_hash: hash.clone(), files };
        if let Ok(json) = serde_json::to_vec(&manifest) {
            let _ = cache.write("hashes", &key, &json);
        }
    }
    Ok((hash, Source::Preprocessor))
}

/// The device-side preprocessor output, byte for byte what the tuner's
/// `-save-temps` build keeps (same flags, same order).
fn preprocess(toolchain: &Toolchain, arch: &Arch, source: &Path, device_args: &[String]) -> Result<Vec<u8>, HashError> {
    crate::gpu::of(arch).prepare(toolchain)?;
    let out = Command::new(&toolchain.clang)
        .args(crate::gpu::of(arch).device_args(toolchain, device_args)?)
        .arg(TUNER_OPT)
        .args(device_args)
        .args(["-E", "-o", "-"])
        .arg(source)
        .output()
        .map_err(|source| HashError::Spawn { tool: toolchain.clang.display().to_string(), source })?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let first_error = stderr.lines().find(|l| l.contains("error")).unwrap_or("the preprocessor failed").trim().to_string();
        return Err(HashError::Preprocess { file: source.display().to_string(), arch: arch.to_string(), first_error });
    }
    Ok(out.stdout)
}

fn from_manifest(cache: &Cache, key: &str) -> Option<String> {
    let manifest: Manifest = serde_json::from_slice(&cache.read("hashes", key)?).ok()?;
    manifest.files.iter().all(unchanged).then_some(manifest.input_hash)
}

fn unchanged(dep: &Dependency) -> bool {
    let Ok(meta) = std::fs::metadata(&dep.path) else { return false };
    if meta.len() != dep.len {
        return false;
    }
    mtime_ns(&meta) == dep.mtime_ns || sha256_file(&dep.path).is_some_and(|h| h == dep.sha256)
}

fn sha256_file(path: &Path) -> Option<String> {
    let bytes = std::fs::read(path).ok()?;
    Some(hex::encode(Sha256::digest(&bytes)))
}

/// Every file the preprocessor read, with what identifies its contents.
/// `None` when one changed while we preprocessed (or moments before: a
/// write within the clock's resolution could go unseen), so the manifest
/// is not written and the next build preprocesses again.
fn dependencies(preprocessed: &[u8], cwd: &Path, started: SystemTime) -> Option<Vec<Dependency>> {
    let settle = started.checked_sub(Duration::from_secs(2)).unwrap_or(started);
    let settle_ns = settle.duration_since(std::time::UNIX_EPOCH).ok()?.as_nanos();
    line_marker_files(preprocessed)
        .into_iter()
        .map(|p| {
            let path = cwd.join(p);
            let meta = std::fs::metadata(&path).ok()?;
            let mtime = mtime_ns(&meta);
            if mtime >= settle_ns {
                return None;
            }
            Some(Dependency { len: meta.len(), mtime_ns: mtime, sha256: sha256_file(&path)?, path })
        })
        .collect()
}

/// The files named by the preprocessor's line markers (`# 12 "path" 1 3`),
/// in first-seen order, less `<built-in>` and friends.
pub(crate) fn line_marker_files(preprocessed: &[u8]) -> Vec<PathBuf> {
    let mut seen = BTreeSet::new();
    let mut files = Vec::new();
    for line in preprocessed.split(|&b| b == b'\n') {
        let Some(rest) = line.strip_prefix(b"# ") else { continue };
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        let Some(quoted) = rest.get(digits..).and_then(|r| r.strip_prefix(b" \"")) else { continue };
        if digits == 0 {
            continue;
        }
        let mut name = Vec::new();
        let mut bytes = quoted.iter();
        while let Some(&b) = bytes.next() {
            match b {
                b'"' => break,
                b'\\' => name.extend(bytes.next()),
                _ => name.push(b),
            }
        }
        if name.starts_with(b"<") || name.is_empty() {
            continue;
        }
        let path = PathBuf::from(String::from_utf8_lossy(&name).into_owned());
        if seen.insert(path.clone()) {
            files.push(path);
        }
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_markers_name_each_file_once() {
        let text = b"# 1 \"k.hip\"\n# 1 \"<built-in>\" 1\n# 1 \"<command line>\" 1\n# 1 \"/inc/a b.h\" 1 3\nint x;\n# 7 \"k.hip\" 2\n# 1 \"dir\\\\q\\\"x.h\" 1\n#pragma once\n";
        assert_eq!(line_marker_files(text), [PathBuf::from("k.hip"), PathBuf::from("/inc/a b.h"), PathBuf::from("dir\\q\"x.h")]);
    }

    #[test]
    fn a_changed_file_invalidates_the_manifest_but_a_touched_one_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("k.h");
        std::fs::write(&file, "int k;").unwrap();
        let meta = std::fs::metadata(&file).unwrap();
        let dep = Dependency { path: file.clone(), len: meta.len(), mtime_ns: mtime_ns(&meta), sha256: sha256_file(&file).unwrap() };
        assert!(unchanged(&dep));
        let touched = Dependency { mtime_ns: 1, ..dep };
        assert!(unchanged(&touched), "same contents, other time");
        std::fs::write(&file, "int q;").unwrap();
        assert!(!unchanged(&touched), "same size, other contents");
    }
}
