//! `REGTUNE_MODE=patch`: build each HIP source from a patched copy (the
//! `regtune fix` patch of its current decisions, verified) in a temporary
//! directory, with the compiler as given. No plugin reaches the compiler,
//! so any compiler builds the decisions: ROCm's hipcc with its own LLVM, or
//! Debian's clang.
//!
//! The copy compiles as the original would (fix/copy.rs: `#line` keeps
//! file names and line numbers, `-iquote <original dir>` keeps quoted
//! includes); a dependency file names the original again. The headers and
//! included `.cu` files the patch also edits reach the compiler through a
//! file-system overlay (`-ivfsoverlay`, fix/overlay.rs) under their own
//! names, as `regtune fix` verified them. Patches are
//! cached by everything they depend on (the source's bytes and input
//! hashes, its db entries, this regtune), so an unchanged source is not
//! patched twice.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use regtune_decisions::{Db, Entry};
use serde::{Deserialize, Serialize};

use crate::context::Context;
use crate::fix::copy::PatchedCopy;
use crate::fix::overlay::Overlay;
use crate::fix::{self, Outcome};
use crate::gpu::Arch;

use super::command::CompileCommand;
use super::{hashes, verbose, Wrapper};

/// The sources of one command that build from patched copies.
pub(crate) struct Patched {
    /// (the source as the command names it, its copy)
    copies: Vec<(String, PatchedCopy)>,
    /// The other files the patches edit, by their own names.
    overlays: Vec<Overlay>,
}

/// A patch as the cache keeps it.
#[derive(Serialize, Deserialize)]
struct Cached {
    patched: String,
    /// The other files it edits (headers, included `.cu` files): (each
    /// absolute name clang reaches one by, its patched text).
    #[serde(default)]
    others: Vec<(String, String)>,
    /// Kernels left out of the patch, and why.
    left_out: Vec<String>,
}

impl Wrapper {
    /// The patched copies to build from, or `None` to build plainly.
    pub(super) fn plan_patch(&mut self, cmd: &CompileCommand) -> Result<Option<Patched>, String> {
        if !self.compiler.cu_is_hip() && !cmd.sets_optimization() {
            return Ok(None); // as `use`: clang builds device code at -O0 then
        }
        let db = Db::load(&self.db).map_err(|e| e.to_string())?;
        let arch_names = self.archs(cmd);
        let processor = |a: &str| a.split(':').next().unwrap_or(a).to_string();
        if !db.kernels.values().any(|e| arch_names.iter().any(|a| processor(a) == e.arch)) {
            return Ok(None);
        }
        let archs: Vec<Arch> = arch_names.iter().filter_map(|a| Arch::parse(a).ok()).collect();
        let toolchain = self.toolchain()?.clone();
        let cache = self.cache.clone();
        let mut copies = Vec::new();
        let mut overlays = Vec::new();
        for source in cmd.hip_sources(self.compiler.cu_is_hip()) {
            let path = PathBuf::from(&source.path);
            let mut key = vec!["patch-v2".to_string(), env!("CARGO_PKG_VERSION").to_string(), toolchain.version.clone()];
            let mut decided = false;
            for arch in &archs {
                let (hash, _) = hashes::input_hash(&toolchain, arch, &path, &cmd.device_args, &cache).map_err(|e| e.to_string())?;
                let entries: Vec<&Entry> = db.kernels.values().filter(|e| e.arch == arch.processor() && e.input_hash == hash).collect();
                decided |= entries.iter().any(|e| !e.effective().is_empty());
                key.push(serde_json::to_string(&entries).unwrap_or_default());
                key.push(hash);
            }
            if !decided {
                continue;
            }
            if !self.original.iter().any(|a| a.to_str() == Some(source.path.as_str())) {
                return Err(format!("{} is named in a response file; patch mode needs it on the command line", source.path));
            }
            let original = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            key.push(original.clone());
            key.extend(cmd.device_args.iter().cloned());
            let key = crate::hash::of_parts(&key);
            let cached: Cached = match cache.read("patches", &key).and_then(|b| serde_json::from_slice(&b).ok()) {
                Some(c) => c,
                None => {
                    let c = make_patch(&toolchain, &path, &archs, &cmd.device_args, &db)?;
                    if let Ok(json) = serde_json::to_vec(&c) {
                        let _ = cache.write("patches", &key, &json);
                    }
                    c
                }
            };
            if let Some(first) = cached.left_out.first() {
                let rest = if cached.patched == original { "compiling it without regtune" } else { "building the rest patched" };
                eprintln!("regtune: warning: {}: {} kernel(s) not patched ({first}); {rest}", source.path, cached.left_out.len());
            }
            if !cached.others.is_empty() {
                let overlay = Overlay::new(cached.others.iter().map(|(p, t)| (p.as_str(), t.as_str())))
                    .map_err(|e| format!("cannot write the patched headers of {}: {e}", path.display()))?;
                overlays.push(overlay);
            }
            if cached.patched == original {
                continue;
            }
            if verbose() {
                eprintln!("regtune: note: building {} from a patched copy", source.path);
            }
            let copy = PatchedCopy::new(&path, &original, &cached.patched)
                .map_err(|e| format!("cannot write a patched copy of {}: {e}", path.display()))?;
            copies.push((source.path.clone(), copy));
        }
        Ok((!copies.is_empty() || !overlays.is_empty()).then_some(Patched { copies, overlays }))
    }

    /// The compile with each patched source replaced by its copy.
    pub(super) fn build_patched(&self, cmd: &CompileCommand, front: &[OsString], patched: &Patched) -> std::process::ExitCode {
        let copy_of = |a: &OsString| patched.copies.iter().find(|(s, _)| a.to_str() == Some(s.as_str())).map(|(_, c)| c.path());
        let args: Vec<OsString> = self.original.iter().map(|a| copy_of(a).map_or_else(|| a.clone(), |c| c.as_os_str().into())).collect();
        let mut copied = cmd.clone();
        for input in &mut copied.inputs {
            if let Some((_, c)) = patched.copies.iter().find(|(s, _)| *s == input.path) {
                input.path = c.path().display().to_string();
            }
        }
        let mut with_includes = front.to_vec();
        for overlay in &patched.overlays {
            with_includes.extend(overlay.args().iter().map(OsString::from));
        }
        let mut seen = Vec::new();
        for (source, _) in &patched.copies {
            let include = PatchedCopy::include_args(Path::new(source));
            if !seen.contains(&include) {
                with_includes.extend(include.iter().map(OsString::from));
                seen.push(include);
            }
        }
        let mut command = self.compiler.plain(&args, Some(&copied), &with_includes);
        if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            command.arg("-fcolor-diagnostics");
        }
        let out = match command.output() {
            Ok(out) => out,
            Err(e) => return self.fallback(Some(cmd), front, format!("cannot run {}: {e}", self.compiler.path.display())),
        };
        if !out.status.success() {
            let cause = format!("the build of the patched copy failed ({})", super::describe(&out));
            return self.fallback(Some(cmd), front, cause);
        }
        for (source, copy) in &patched.copies {
            if let Some(dep) = dependency_file(cmd, source) {
                rename_in_dependency_file(&dep, copy.path(), source);
            }
        }
        super::forward(&out)
    }
}

/// The verified patch of one source; what it leaves out, said once.
fn make_patch(
    toolchain: &crate::toolchain::Toolchain,
    path: &Path,
    archs: &[Arch],
    device_args: &[String],
    db: &Db,
) -> Result<Cached, String> {
    let ctx = Context::with_toolchain(toolchain.clone(), archs.to_vec(), device_args.to_vec()).with_plugin().map_err(|e| e.to_string())?;
    let options = fix::Options { db: PathBuf::new(), with_suggestions: false };
    let patch = fix::fix_unit(&ctx, path, db, &options).map_err(|f| f.message)?;
    let left_out = patch
        .kernels()
        .filter_map(|k| match &k.outcome {
            Outcome::Dropped(why) => Some(format!("{} on {}: {why}", k.name, k.arch)),
            Outcome::Verified => None,
        })
        .collect();
    let own = patch.patched(path).map(|f| f.path.clone());
    let patched = patch.patched(path).map_or_else(|| std::fs::read_to_string(path).unwrap_or_default(), |f| f.patched.clone());
    let others = patch
        .files
        .iter()
        .filter(|f| Some(&f.path) != own.as_ref())
        .flat_map(|f| f.names.iter().map(|n| (n.clone(), f.patched.clone())))
        .collect();
    Ok(Cached { patched, others, left_out })
}

/// Where the compile writes `source`'s dependencies, if it does: `-MF`,
/// `-Wp,-MD,file`, else next to the output (`-o x.o` → `x.d`) or, with
/// no `-o`, `<stem>.d` in the current directory.
fn dependency_file(cmd: &CompileCommand, source: &str) -> Option<PathBuf> {
    let args = &cmd.args;
    let mut wants = false;
    let mut explicit = None;
    let mut output = None;
    for (i, a) in args.iter().enumerate() {
        let next = args.get(i + 1);
        match a.as_str() {
            "-MD" | "-MMD" => wants = true,
            "-MF" => explicit = next.cloned(),
            "-o" => output = next.cloned(),
            _ if a.starts_with("-MF") => explicit = Some(a[3..].to_string()),
            _ if a.starts_with("-Wp,-MD,") || a.starts_with("-Wp,-MMD,") => explicit = a.splitn(3, ',').nth(2).map(str::to_string),
            _ if a.starts_with("-o") && a.len() > 2 && !a.starts_with("-objcmt") => output = Some(a[2..].to_string()),
            _ => {}
        }
    }
    if let Some(f) = explicit {
        return Some(PathBuf::from(f));
    }
    if !wants {
        return None;
    }
    match output {
        Some(o) => Some(Path::new(&o).with_extension("d")),
        None => Path::new(source).file_stem().map(|s| PathBuf::from(s).with_extension("d")),
    }
}

/// Name the original instead of the copy in a dependency file (make's
/// escaping: a space is `\ `). Best effort: the build itself succeeded.
fn rename_in_dependency_file(dep: &Path, copy: &Path, original: &str) {
    let Ok(text) = std::fs::read_to_string(dep) else { return };
    let escape = |s: &str| s.replace(' ', "\\ ");
    let copy = copy.display().to_string();
    if text.contains(&escape(&copy)) {
        let _ = std::fs::write(dep, text.replace(&escape(&copy), &escape(original)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(args: &[&str]) -> CompileCommand {
        CompileCommand::parse(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn dependency_files_are_where_the_compiler_writes_them() {
        assert_eq!(dependency_file(&parsed(&["-c", "k.hip", "-o", "b/k.o", "-MD"]), "k.hip"), Some("b/k.d".into()));
        assert_eq!(dependency_file(&parsed(&["-c", "k.hip", "-MD", "-MF", "deps/k.d"]), "k.hip"), Some("deps/k.d".into()));
        assert_eq!(dependency_file(&parsed(&["-c", "src/k.hip", "-MMD"]), "src/k.hip"), Some("k.d".into()));
        assert_eq!(dependency_file(&parsed(&["-c", "k.hip", "-o", "k.o"]), "k.hip"), None);
    }

    #[test]
    fn dependency_files_name_the_original() {
        let dir = tempfile::tempdir().unwrap();
        let dep = dir.path().join("k.d");
        std::fs::write(&dep, "k.o: /tmp/regtune-fixAB/k.hip \\\n  x.h\n").unwrap();
        rename_in_dependency_file(&dep, Path::new("/tmp/regtune-fixAB/k.hip"), "src dir/k.hip");
        assert_eq!(std::fs::read_to_string(&dep).unwrap(), "k.o: src\\ dir/k.hip \\\n  x.h\n");
    }
}
