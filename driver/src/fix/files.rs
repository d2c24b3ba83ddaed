//! The files fix may edit. A translation unit reads its own file, the
//! project's headers and included `.cu` files, and the toolchain's headers;
//! fix edits a file only when it lies under the directory of an input or
//! one of the inputs' `-I`/`-iquote` paths, and clang reads it as a user
//! header: never a system header (`-isystem`, the toolchain's include
//! paths, flag 3 in the line markers of the preprocessed unit), never a
//! file under the toolchain's own directories (HIP's, CUDA's, clang's),
//! even when an `-I` reaches it. An edit such a file would need is
//! reported with the decision it blocks.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::toolchain::cuda::Cuda;
use crate::toolchain::{Flavor, Toolchain};

use super::ast;

/// Where the user's project is, and where the toolchain is.
pub(crate) struct Project {
    roots: Vec<PathBuf>,
    toolchain: Vec<PathBuf>,
}

impl Project {
    pub(crate) fn new(inputs: &[PathBuf], user_args: &[String], toolchain: &Toolchain) -> Project {
        let canon = |p: &Path| std::fs::canonicalize(p).ok();
        let mut roots: Vec<PathBuf> = inputs
            .iter()
            .filter_map(|f| match f.parent() {
                Some(d) if !d.as_os_str().is_empty() => canon(d),
                _ => canon(Path::new(".")),
            })
            .collect();
        roots.extend(include_dirs(user_args).iter().filter_map(|d| canon(d)));
        let mut dirs: Vec<PathBuf> = vec!["/usr/include".into(), "/usr/lib".into(), toolchain.device_libs.clone()];
        dirs.extend(toolchain.llvm_bin.parent().map(Path::to_path_buf));
        if let Flavor::Rocm { root } = &toolchain.flavor {
            dirs.push(root.clone());
        }
        dirs.extend(Cuda::candidates());
        let toolchain = dirs.iter().filter_map(|d| canon(d)).collect();
        Project { roots, toolchain }
    }

    /// Files under `dir` are the toolchain's too (nvcc's installation).
    pub(crate) fn add_toolchain_dir(&mut self, dir: &Path) {
        self.toolchain.extend(std::fs::canonicalize(dir).ok());
    }

    /// Why fix may not edit `path` (canonical), read as a system header or not.
    fn refuses(&self, path: &Path, system: bool) -> Option<String> {
        if system || self.toolchain.iter().any(|d| path.starts_with(d)) {
            return Some("a system or toolchain header".into());
        }
        if !self.roots.iter().any(|d| path.starts_with(d)) {
            return Some("outside the directories of the inputs and their -I paths".into());
        }
        None
    }
}

/// The directories of `-I DIR`, `-IDIR`, `-iquote DIR`, `--include-directory=DIR`.
fn include_dirs(args: &[String]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let dir = match a.as_str() {
            "-I" | "-iquote" | "--include-directory" => it.next().cloned(),
            _ => ["-I", "-iquote", "--include-directory="]
                .iter()
                .find_map(|p| a.strip_prefix(p))
                .filter(|d| !d.is_empty())
                .map(str::to_string),
        };
        out.extend(dir.map(PathBuf::from));
    }
    out
}

/// One file a unit reads.
pub(crate) struct File {
    /// The absolute names clang reaches it by (before links are resolved):
    /// where the verifying build must find its patched text.
    pub names: Vec<String>,
    /// Its name as the diff and the notes give it: relative to the current
    /// directory when below it.
    pub shown: String,
    /// Its text, when fix may edit it.
    pub text: Option<String>,
    /// Why fix may not edit it.
    pub refused: Option<String>,
}

/// Every file the units read, by canonical path.
#[derive(Default)]
pub(crate) struct Files {
    by_path: BTreeMap<Arc<str>, File>,
}

impl Files {
    /// Take note of the files a unit reads, from its preprocessed text;
    /// their canonical paths.
    pub(crate) fn add_unit(&mut self, project: &Project, preprocessed: &str) -> BTreeSet<Arc<str>> {
        let mut read = BTreeSet::new();
        for (name, system) in line_markers(preprocessed) {
            let path = ast::canonical(&name);
            read.insert(path.clone());
            let absolute = absolute(&name);
            if let Some(f) = self.by_path.get_mut(&path) {
                if !f.names.contains(&absolute) {
                    f.names.push(absolute);
                }
                continue;
            }
            let refused =
                if Path::new(&*path).is_absolute() { project.refuses(Path::new(&*path), system) } else { Some("not a file".into()) };
            let (text, refused) = match refused {
                Some(why) => (None, Some(why)),
                None => match std::fs::read_to_string(&*path) {
                    Ok(t) => (Some(t), None),
                    Err(e) => (None, Some(format!("cannot be read as text ({e})"))),
                },
            };
            let names = if absolute == *path { vec![absolute] } else { vec![path.to_string(), absolute] };
            self.by_path.insert(path.clone(), File { names, shown: shown(&path), text, refused });
        }
        read
    }

    /// The text of a file fix may edit.
    pub(crate) fn text(&self, path: &str) -> Option<&str> {
        self.by_path.get(path)?.text.as_deref()
    }

    /// Why fix may not edit `path`, if it may not.
    pub(crate) fn refusal(&self, path: &str) -> Option<String> {
        match self.by_path.get(path) {
            Some(f) => f.refused.clone(),
            None => Some("not read by the unit".into()),
        }
    }

    /// Every name clang reaches `path` by.
    pub(crate) fn names(&self, path: &str) -> Vec<String> {
        self.by_path.get(path).map_or_else(|| vec![path.to_string()], |f| f.names.clone())
    }

    /// The name to show for `path`.
    pub(crate) fn shown(&self, path: &str) -> String {
        self.by_path.get(path).map_or_else(|| path.to_string(), |f| f.shown.clone())
    }
}

/// `path` relative to the current directory when below it.
pub(crate) fn shown(path: &str) -> String {
    let cwd = std::env::current_dir().ok().and_then(|d| std::fs::canonicalize(d).ok()).unwrap_or_default();
    Path::new(path).strip_prefix(&cwd).map_or_else(|_| path.to_string(), |p| p.display().to_string())
}

/// `name` made absolute against the current directory, `.` and `..`
/// taken out by their text (as clang's file-system overlay looks names up).
fn absolute(name: &str) -> String {
    let joined = std::env::current_dir().unwrap_or_default().join(name);
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out.display().to_string()
}

/// The files named by the line markers of a preprocessed unit
/// (`# 12 "k.h" 1 3`), with whether any marker flags it a system header.
fn line_markers(preprocessed: &str) -> BTreeMap<String, bool> {
    let mut out: BTreeMap<String, bool> = BTreeMap::new();
    for line in preprocessed.lines() {
        let Some(rest) = line.strip_prefix("# ") else { continue };
        let Some(rest) = rest.trim_start_matches(|c: char| c.is_ascii_digit()).strip_prefix(" \"") else { continue };
        let Some((name, flags)) = unquote(rest) else { continue };
        if name.starts_with('<') {
            continue; // <built-in>, <command line>
        }
        let system = flags.split_whitespace().any(|f| f == "3");
        *out.entry(name).or_default() |= system;
    }
    out
}

/// The quoted name that `text` holds up to its closing quote (the opening
/// one already taken), with C escapes undone, and what follows.
fn unquote(text: &str) -> Option<(String, &str)> {
    let mut name = String::new();
    let mut chars = text.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((name, &text[i + 1..])),
            '\\' => name.push(chars.next()?.1),
            _ => name.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_markers_name_files_and_system_headers() {
        let text = "# 1 \"k.hip\"\n# 1 \"<built-in>\" 1\n# 1 \"/usr/include/hip/x.h\" 1 3\nint x;\n# 2 \"./inc/a \\\"b\\\".h\" 1\n# 5 \"k.hip\" 2\n";
        let got = line_markers(text);
        assert_eq!(
            got.into_iter().collect::<Vec<_>>(),
            [("./inc/a \"b\".h".to_string(), false), ("/usr/include/hip/x.h".to_string(), true), ("k.hip".to_string(), false)]
        );
    }

    #[test]
    fn names_are_made_absolute_by_their_text() {
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(absolute("./inc/../k.h"), cwd.join("k.h").display().to_string());
        assert_eq!(absolute("/a/./b/../c.h"), "/a/c.h");
    }

    #[test]
    fn include_paths_in_every_spelling() {
        let args: Vec<String> = ["-I", "a", "-Ib", "-iquote", "c", "-iquoted", "--include-directory=e", "-isystem", "f", "-DI"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(include_dirs(&args), ["a", "b", "c", "d", "e"].map(PathBuf::from));
    }
}
