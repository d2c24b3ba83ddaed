//! tune's nvcc builds of source rewrites: a variant's sink, pow2, unroll
//! caps and noalias written in the source exactly as `regtune fix` writes
//! them (unit_patch.rs's edits for that decision, nothing else), the unit's
//! directory mirrored with the patched files (nvcc.rs, `#line` directives
//! naming the originals), and that mirror built by nvcc with the user's
//! flags. The session edits the entries of this build's PTX for the
//! variant's register cap and launch bounds (`session.rs`), so the
//! candidate tune measures is what nvcc builds from the patch fix writes
//! for that decision.
//!
//! A rewrite fix cannot write for the kernel (a file it may not edit, a
//! construct it does not handle, a patched file outside the unit's
//! directory) is not built: the variant fails, with fix's reason. One fix
//! writes as nothing (a sink with nothing to move, a cap that changes no
//! loop) is not built either: its build would be another's.
//!
//! What clang reads of the unit is read once and kept: its frontend with
//! line tables (the plugin's inspection reads it too: which rewrites could
//! change each kernel), the plain compile's unrolling, each function's AST.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use regtune_decisions::plugin::Inspection;
use regtune_decisions::{Db, Transforms, Usage};

use crate::gpu::compile::Unit;
use crate::gpu::nvptx::nvcc as build;
use crate::gpu::{Arch, SourceCompiler};
use crate::names;
use crate::output::Failure;
use crate::session::{RewriteError, Rewriter};
use crate::toolchain::nvcc::Nvcc;
use crate::toolchain::Toolchain;

use super::ast::{self, Node};
use super::debug_ir::Changes;
use super::edit;
use super::files::{Files, Project};
use super::locate::{self, Lines};
use super::nvcc::{self, Mirror};
use super::unit_patch::{self, Fixing, Planned, Reader};
use super::{Decision, Notes, Options};

/// One file on one target, built by nvcc: its rewrites as fix writes them.
/// (It owns what it reads: a session's drop may not outlive its borrows.)
pub(crate) struct Speller {
    toolchain: Toolchain,
    plugin: PathBuf,
    nvcc: Nvcc,
    arch: Arch,
    source: PathBuf,
    /// The user's nvcc flags, and as clang reads them.
    user_args: Vec<String>,
    clang_args: Vec<String>,
    /// Every kernel of the file (those a variant leaves alone decide nothing).
    kernels: Vec<String>,
    project: Project,
    files: Files,
    reads: BTreeSet<Arc<str>>,
    /// fix's plan reads no db here: every decision is the variant's.
    db: Db,
    options: Options,
    lines: OnceLock<Result<Lines, String>>,
    asts: Mutex<HashMap<String, Vec<Node>>>,
}

impl Speller {
    /// For `source` as nvcc built it for `arch` with `user_args`, keeping
    /// its files in `kept` (the preprocessed source names the files the
    /// unit reads).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        toolchain: &Toolchain,
        plugin: &Path,
        nvcc: &Nvcc,
        arch: &Arch,
        source: &Path,
        user_args: &[String],
        kept: &Path,
        kernels: Vec<String>,
    ) -> Result<Speller, String> {
        let clang_args = nvcc::clang_args(user_args);
        let mut project = Project::new(&[source.to_path_buf()], &clang_args, toolchain);
        if let Some(root) = nvcc.path.parent().and_then(Path::parent) {
            project.add_toolchain_dir(root);
        }
        let mut files = Files::default();
        let reads = files.add_unit(&project, &nvcc::preprocessed(kept)?);
        Ok(Speller {
            toolchain: toolchain.clone(),
            plugin: plugin.to_path_buf(),
            nvcc: nvcc.clone(),
            arch: arch.clone(),
            source: source.to_path_buf(),
            user_args: user_args.to_vec(),
            clang_args,
            kernels,
            project,
            files,
            reads,
            db: Db::default(),
            options: Options { db: PathBuf::new(), with_suggestions: false },
            lines: OnceLock::new(),
            asts: Mutex::new(HashMap::new()),
        })
    }

    fn unit(&self) -> Unit<'_> {
        Unit { toolchain: &self.toolchain, arch: &self.arch, source: &self.source, user_args: &self.clang_args }
    }

    fn lines(&self) -> Result<&Lines, String> {
        self.lines.get_or_init(|| Lines::new(&self.unit())).as_ref().map_err(Clone::clone)
    }

    /// The patched files for `rewrites` (per kernel symbol), as fix writes
    /// them: (canonical path, text).
    pub(crate) fn patched(&self, rewrites: &[(String, Transforms)]) -> Result<Vec<(Arc<str>, String)>, RewriteError> {
        let wanted: BTreeMap<&str, &Transforms> = rewrites.iter().map(|(s, t)| (s.as_str(), t)).collect();
        let mut symbols: Vec<&str> = self.kernels.iter().map(String::as_str).collect();
        symbols.extend(wanted.keys().filter(|s| !self.kernels.iter().any(|k| k == *s)));
        let decisions = symbols
            .iter()
            .map(|s| Decision {
                symbol: s.to_string(),
                arch: self.arch.clone(),
                transforms: wanted.get(s).map(|t| (*t).clone()).unwrap_or_default(),
                // Promised nothing: nothing is verified against it here.
                promised: Some(Usage::default()),
                before: None,
                code: None,
                as_maxnreg: None,
            })
            .collect();
        let planned = Planned::new(&self.source, decisions, self.reads.clone());
        let fixing = Fixing {
            toolchain: &self.toolchain,
            plugin: &self.plugin,
            archs: std::slice::from_ref(&self.arch),
            user_args: &self.user_args,
            clang_args: &self.clang_args,
            nvcc: Some(&self.nvcc),
            compiler: SourceCompiler::Nvcc { maxnreg: self.nvcc.has_maxnreg() },
            db: &self.db,
            options: &self.options,
            project: &self.project,
        };
        let planned = unit_patch::plan_edits(&fixing, self, &self.source, &self.files, planned, Notes::new(&self.source), BTreeMap::new())
            .map_err(|f| unwritable(rewrites, format!("it cannot read {}: {}", self.source.display(), f.message)))?;
        for (symbol, t) in rewrites {
            unwritten(&planned, symbol, t)?;
        }
        let (edits, conflicts) = edit::merge(planned.edits);
        if let Some((a, _)) = conflicts.first() {
            let line = self.files.text(&a.file).map_or(0, |t| ast::line_col(t, a.start).0);
            return Err(unwritable(rewrites, format!("the kernels' rewrites disagree at {}:{line}", self.files.shown(&a.file))));
        }
        let changes = super::patched_files(&self.files, &edits);
        if changes.is_empty() {
            return Err(RewriteError::Nothing("fix's rewrites change nothing in the source".into()));
        }
        Ok(changes)
    }
}

/// `rewrites` cannot be written, as a whole: why.
fn unwritable(rewrites: &[(String, Transforms)], why: String) -> RewriteError {
    let kernels: Vec<String> = rewrites.iter().map(|(s, _)| names::short(s)).collect();
    let what: Vec<String> = rewrites.iter().flat_map(|(_, t)| t.labels()).collect();
    RewriteError::Unwritable { kernel: kernels.join(", "), what: what.join(" + "), why }
}

/// Why fix did not write all of `t` for `symbol`, if it did not: a note
/// of its that leaves something out (a sink that leaves declarations where
/// they are is still a sink: the source move is its own), or a rewrite
/// without an edit.
fn unwritten(planned: &Planned, symbol: &str, t: &Transforms) -> Result<(), RewriteError> {
    let name = names::short(symbol);
    let unwritable = |why: String| Err(RewriteError::Unwritable { kernel: name.clone(), what: t.labels().join(" + "), why });
    if let Some(why) = planned.skipped.get(symbol) {
        return unwritable(why.clone());
    }
    if let Some(why) = planned.notes.blocked.get(symbol) {
        return unwritable(why.join("; "));
    }
    let left_out = |l: &&String| {
        let sink_stays = l.contains(": sink: `") && l.contains("` stays");
        !sink_stays && (l.contains("not patched") || l.contains("not written") || l.contains("only pow(x, 2) is patched"))
    };
    if let Some(line) = planned.notes.lines.iter().find(left_out) {
        return unwritable(line.split(": note: ").last().unwrap_or(line).to_string());
    }
    let wanted = [("sink", t.sink), ("pow2", t.pow2), ("unroll-cap", t.unroll_cap.is_some()), ("noalias", !t.noalias.is_empty())];
    for (what, _) in wanted.iter().filter(|(_, on)| *on) {
        if !planned.edits.iter().any(|e| e.what == *what && e.kernels.contains(symbol)) {
            return Err(RewriteError::Nothing(format!("{name}: {what} as fix writes it changes nothing in its source")));
        }
    }
    Ok(())
}

impl Reader for Speller {
    fn ast(&self, unit: &Unit<'_>, names: &[String]) -> Result<Vec<Node>, Failure> {
        let mut out = Vec::new();
        for name in names {
            let known = self.asts.lock().expect("ast lock").get(name).cloned();
            let nodes = match known {
                Some(n) => n,
                None => {
                    let n = ast::dump(unit, std::slice::from_ref(name)).map_err(|e| Failure::new(e.to_string()))?;
                    self.asts.lock().expect("ast lock").insert(name.clone(), n.clone());
                    n
                }
            };
            out.extend(nodes);
        }
        Ok(out)
    }

    fn changes(&self, unit: &Unit<'_>, decisions: &[&Decision], uncapped: &BTreeSet<String>) -> Result<Changes, String> {
        locate::changes_in(self.lines()?, unit, &self.plugin, decisions, uncapped)
    }
}

impl Rewriter for Speller {
    fn build(
        &self,
        rewrites: &[(String, Transforms)],
        plain: &build::Kept,
        dir: &Path,
        deadline: Option<Instant>,
    ) -> Result<build::Kept, RewriteError> {
        let changes = self.patched(rewrites)?;
        let mirror =
            Mirror::new(&self.files, &self.user_args, &self.source, &self.reads, &changes).map_err(|why| unwritable(rewrites, why))?;
        Ok(build::keep_ptx(&self.nvcc, &self.arch, &mirror.source, &mirror.args, dir, deadline, plain)?)
    }

    fn inspect(&self) -> Result<HashMap<String, Inspection>, String> {
        crate::session::inspect_ir(&self.toolchain, &self.plugin, self.lines()?.bitcode())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn planned(notes: &[&str], edits: &[(&str, &str)]) -> Planned {
        let path = Path::new("k.cu");
        let mut n = Notes::new(path);
        for line in notes {
            n.push(line.to_string());
        }
        let file: Arc<str> = Arc::from("/p/k.cu");
        Planned {
            path: path.to_path_buf(),
            decisions: vec![],
            reads: BTreeSet::new(),
            edits: edits.iter().map(|(k, what)| edit::Edit::new(&file, 0, 0, "x", k, what)).collect(),
            skipped: BTreeMap::new(),
            spans: BTreeMap::new(),
            bodies: BTreeMap::new(),
            capped: vec![],
            retries: BTreeMap::new(),
            notes: n,
        }
    }

    #[test]
    fn a_rewrite_is_built_only_where_fix_writes_all_of_it() {
        let sink = Transforms { sink: true, ..Default::default() };
        let capped = Transforms { sink: true, unroll_cap: Some(2), ..Default::default() };
        // Written: a sink that leaves some declarations where they are is still fix's sink.
        let stays = "k.cu:9: note: k: sink: `a` stays: moving it down past a call; not patched";
        assert!(unwritten(&planned(&[stays], &[("_Z1kv", "sink")]), "_Z1kv", &sink).is_ok());
        // A loop fix cannot give its pragma: the variant is not built, with fix's reason.
        let macro_loop = "k.cu:12: note: unroll-cap: the loop has a `#pragma clang loop` hint; not patched";
        let e = unwritten(&planned(&[macro_loop], &[("_Z1kv", "sink"), ("_Z1kv", "unroll-cap")]), "_Z1kv", &capped).unwrap_err();
        assert_eq!(
            e.to_string(),
            "k: regtune fix cannot write sink + unroll-cap=2 in the source: unroll-cap: the loop has a `#pragma clang loop` hint; not patched"
        );
        // Nothing written for one of them: nothing to build.
        let e = unwritten(&planned(&[], &[("_Z1kv", "sink")]), "_Z1kv", &capped).unwrap_err();
        assert!(matches!(e, RewriteError::Nothing(_)), "{e}");
        // Another kernel's edit is not this one's.
        assert!(unwritten(&planned(&[], &[("_Z1jv", "sink")]), "_Z1kv", &sink).is_err());
    }
}
