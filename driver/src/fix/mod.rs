//! `regtune fix`: the db's decisions as a reviewable source patch, so any
//! compiler (ROCm's hipcc, nvcc) builds the tuned kernel without regtune.
//!
//! Per translation unit (unit_patch.rs): the decisions current for its build
//! (input hash, as the wrapper computes it), the files it reads and which
//! of them are the project's (files.rs), where the decisions apply in the
//! source (locate.rs: the plugin run on an IR with line tables; ast.rs:
//! clang's AST for ranges), one source edit per transform (attributes,
//! restrict, unroll, pow2, sink) in whichever file holds the code: the
//! unit's own, an included header or `.cu`, never a system header.
//!
//! Then every unit's edits together, as one patch: kernels sharing a
//! definition (a template's instantiations, a macro's expansions) take one
//! decision (shared.rs), and every unit that reads a patched file is
//! rebuilt plainly with the patched files in place (verify.rs); a kernel
//! that misses its promise loses its edits, and the rest is checked again.
//! What is left is the patch.
//!
//! Built with nvcc (`fix --compiler nvcc`, nvcc.rs): the decisions of nvcc's
//! build, its register caps as a guarded `__maxnreg__`, verified by nvcc's
//! own build, each kernel's cubin against the candidate tune measured.
//! A kernel template whose instantiations decided different caps (or some
//! none) takes each one's cap from a trait the patch defines, its
//! undecided instantiations held to plain's registers, spills and
//! occupancy (instances.rs). tune's nvcc builds of rewrites are this very
//! spelling (spell.rs). A decision for nvcc's `-maxrregcount=R`
//! is written as the kernel's own cap too, `__maxnreg__(R)` or, where that
//! misses the candidate's registers, spills and occupancy, another cap that
//! reaches them (nvcc.rs: `AsMaxnreg`); none does: not patched, the flag
//! suggested.

pub(crate) mod ast;
pub(crate) mod attributes;
pub(crate) mod copy;
pub(crate) mod debug_ir;
pub(crate) mod edit;
pub(crate) mod files;
pub(crate) mod instances;
pub(crate) mod locate;
pub(crate) mod nvcc;
pub(crate) mod overlay;
pub(crate) mod pow2;
pub(crate) mod restrict;
pub(crate) mod shared;
pub(crate) mod sink;
pub(crate) mod spell;
pub(crate) mod unit_patch;
pub(crate) mod unroll;
pub(crate) mod unrolled;
pub(crate) mod verify;
pub mod write;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use regtune_decisions::{Db, Transforms, Usage};

use crate::context::Context;
use crate::gpu::{Arch, SourceCompiler};
use crate::names;
use crate::output::Failure;

use ast::Node;
use edit::Edit;
use files::{Files, Project};
use overlay::Overlay;
use shared::Group;
use unit_patch::{Fixing, Planned};
use verify::{Build, Promise};

/// What `regtune fix` was asked to do.
pub struct Options {
    pub db: PathBuf,
    /// Also express the suggestions the user has not confirmed (noalias,
    /// launch bounds), promising their measured usage.
    pub with_suggestions: bool,
}

/// One kernel's decision on one target, as the patch must express it.
#[derive(Debug, Clone)]
pub(crate) struct Decision {
    pub symbol: String,
    pub arch: Arch,
    pub transforms: Transforms,
    /// The usage the tuner measured with `transforms`.
    pub promised: Option<Usage>,
    pub before: Option<Usage>,
    /// The code object tune kept of this candidate (nvcc's builds: the
    /// patched build's cubin is compared with it).
    pub code: Option<PathBuf>,
    /// nvcc's `-maxrregcount=R` alone, written as the kernel's
    /// own `__maxnreg__`: the caps to try and the one written (nvcc.rs).
    pub as_maxnreg: Option<nvcc::AsMaxnreg>,
}

/// How one kernel came out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Its edits are in the patch and the plain build reaches the promise.
    Verified,
    /// Its edits were left out: why.
    Dropped(String),
}

#[derive(Debug, Clone)]
pub struct KernelResult {
    pub name: String,
    pub symbol: String,
    pub arch: String,
    pub applied: Vec<String>,
    pub before: Option<Usage>,
    pub after: Option<Usage>,
    pub outcome: Outcome,
    /// The files its edits are in, other than the unit's own.
    pub elsewhere: Vec<String>,
    /// It shares its definition with kernels that decided otherwise, and
    /// is patched with this decision of theirs (labels).
    pub instead: Option<String>,
    /// Verified by nvcc's build: how its cubin compares with the candidate
    /// tune measured.
    pub(crate) nvcc: Option<nvcc::Sameness>,
    /// Its cap is its template's per instantiation: the trait's name.
    pub(crate) through: Option<String>,
    /// nvcc's `-maxrregcount=R` written as its own cap: which
    /// cap, and why (nvcc.rs).
    pub(crate) spelled: Option<String>,
}

/// One unit's lines in the patch's preamble.
pub struct UnitReport {
    pub path: PathBuf,
    pub kernels: Vec<KernelResult>,
    pub notes: Vec<String>,
}

/// One patched file.
pub struct FileChange {
    /// Canonical.
    pub path: PathBuf,
    /// As the diff names it: relative to the current directory when below it.
    pub shown: String,
    /// Every absolute name clang reaches it by.
    pub names: Vec<String>,
    pub original: String,
    pub patched: String,
}

/// The patch across every file the units' decisions touch.
#[derive(Default)]
pub struct Patch {
    pub units: Vec<UnitReport>,
    pub files: Vec<FileChange>,
}

impl Patch {
    /// Every decided kernel is in the patch, verified.
    pub fn complete(&self) -> bool {
        self.kernels().all(|k| k.outcome == Outcome::Verified)
    }

    pub(crate) fn kernels(&self) -> impl Iterator<Item = &KernelResult> {
        self.units.iter().flat_map(|u| u.kernels.iter())
    }

    /// The patched text of `path` (as given or canonical), if the patch changes it.
    pub(crate) fn patched(&self, path: &Path) -> Option<&FileChange> {
        let canon = std::fs::canonicalize(path).ok()?;
        self.files.iter().find(|f| f.path == canon)
    }

    /// The preamble: one line per kernel, then the notes.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        for u in &self.units {
            for k in &u.kernels {
                out.push_str(&k.line(&u.path));
                out.push('\n');
            }
            for n in &u.notes {
                out.push_str(n);
                out.push('\n');
            }
        }
        out
    }

    /// The patch: what it expresses and what it leaves out, then the diffs
    /// (`git apply` and `patch -p1` skip the text before the first diff).
    pub fn text(&self) -> String {
        let mut out = self.summary();
        if !out.is_empty() {
            out.push('\n');
        }
        for f in &self.files {
            out.push_str(&edit::unified_diff(&f.shown, &f.original, &f.patched));
        }
        out
    }

    /// The last line `regtune fix` prints: what it did, in one line.
    pub fn verdict(&self, applied: bool) -> String {
        let decided = self.kernels().count();
        let verified = self.kernels().filter(|k| k.outcome == Outcome::Verified).count();
        let files = self.files.len();
        let place = if applied { "patched in place" } else { "in the patch" };
        if decided == 0 {
            return "regtune fix: nothing to patch: no decision of these builds asks for an edit".into();
        }
        if verified == decided {
            return format!("regtune fix: all {decided} decision(s) {place}, {files} file(s), verified by a plain build");
        }
        format!(
            "regtune fix: {} of {decided} decision(s) could not be expressed (see above); {verified} {place}, {files} file(s), verified by a plain build",
            decided - verified
        )
    }
}

impl KernelResult {
    fn line(&self, unit: &Path) -> String {
        let change = |f: fn(&Usage) -> u32| match (self.before, self.after) {
            (Some(b), Some(a)) if f(&b) != f(&a) => format!("{} → {}", f(&b), f(&a)),
            (_, Some(a)) => f(&a).to_string(),
            _ => "?".into(),
        };
        let mut what = self.applied.join(" + ");
        if let Some(s) = &self.spelled {
            what = format!("{what} {s}");
        }
        if let Some(other) = &self.instead {
            what = format!("{other} (its definition's choice, in place of its own {what})");
        }
        if let Some(t) = &self.through {
            what = format!("{what} (its template's cap per instantiation, {t})");
        }
        if !self.elsewhere.is_empty() {
            what = format!("{what}, in {}", self.elsewhere.join(", "));
        }
        let head = format!("{}: {} ({}): {what}", unit.display(), self.name, self.arch);
        match (&self.outcome, &self.nvcc) {
            (Outcome::Verified, Some(same)) => format!(
                "{head}; verified by nvcc's build: registers {}, spill stores {} bytes, occupancy {}; {}",
                change(|u| u.vgpr),
                change(|u| u.vgpr_spills),
                change(|u| u.occupancy),
                same.phrase()
            ),
            (Outcome::Verified, None) => {
                format!("{head}; verified by a plain build: VGPRs {}, occupancy {}", change(|u| u.vgpr), change(|u| u.occupancy))
            }
            (Outcome::Dropped(why), _) => format!("{head}: not in the patch: {why}"),
        }
    }
}

/// Notes for the user about what the patch does not express, by line; and
/// per kernel, the edits it needs that fix may not make.
pub(crate) struct Notes {
    unit: String,
    lines: Vec<String>,
    blocked: BTreeMap<String, Vec<String>>,
}

impl Notes {
    fn new(unit: &Path) -> Notes {
        Notes { unit: unit.display().to_string(), lines: vec![], blocked: BTreeMap::new() }
    }

    /// About the unit as a whole.
    pub(crate) fn unit(&mut self, text: String) {
        let line = format!("{}: note: {text}", self.unit);
        self.push(line);
    }

    /// At a line of a file (as shown).
    pub(crate) fn file(&mut self, shown: &str, line: Option<u32>, text: String) {
        let at = line.map_or(String::new(), |l| format!("{l}:"));
        self.push(format!("{shown}:{at} note: {text}"));
    }

    pub(crate) fn kernel(&mut self, kernel: &Kernel<'_>, text: String) {
        let line = kernel.decl.loc.as_ref().map_or(0, |l| ast::line_col(kernel.text, l.offset).0);
        self.at(kernel, line, text);
    }

    pub(crate) fn at(&mut self, kernel: &Kernel<'_>, line: u32, text: String) {
        self.push(format!("{}:{line}: note: {}: {text}", kernel.shown, kernel.name));
    }

    /// An edit the kernel's decision needs in a file fix may not edit.
    pub(crate) fn blocked(&mut self, kernel: &Kernel<'_>, text: String) {
        self.blocked.entry(kernel.symbol.to_string()).or_default().push(text.clone());
        self.kernel(kernel, format!("{text}; not patched"));
    }

    /// The same, for a change in code several kernels reach.
    pub(crate) fn block(&mut self, kernels: &[String], shown: &str, line: Option<u32>, text: String) {
        for k in kernels {
            let place = line.map_or(shown.to_string(), |l| format!("{shown}:{l}"));
            let why = text.trim_end_matches("; not patched");
            self.blocked.entry(k.clone()).or_default().push(format!("{why} ({place})"));
        }
        self.file(shown, line, text);
    }

    pub(crate) fn push(&mut self, line: String) {
        if !self.lines.contains(&line) {
            self.lines.push(line);
        }
    }
}

/// The AST nodes that define a function (a class template's member functions included).
const FUNCTIONS: &[&str] = &["FunctionDecl", "CXXMethodDecl", "CXXConstructorDecl", "CXXDestructorDecl", "CXXConversionDecl"];

/// The unit's AST: the definitions the edits touch, in every file.
pub(crate) struct Source<'a> {
    pub files: &'a Files,
    pub nodes: &'a [Node],
}

impl Source<'_> {
    /// Every node with its parent.
    pub(crate) fn nodes_with_parents(&self) -> Vec<(&Node, Option<&Node>)> {
        fn collect<'a>(n: &'a Node, parent: Option<&'a Node>, out: &mut Vec<(&'a Node, Option<&'a Node>)>) {
            out.push((n, parent));
            for c in &n.inner {
                collect(c, Some(n), out);
            }
        }
        let mut out = Vec::new();
        for n in self.nodes {
            collect(n, None, &mut out);
        }
        out
    }

    /// A function's definition (the declaration with a body, by symbol),
    /// with its parent.
    ///
    /// clang's symbol is the db's, or (nvcc's builds) names the same
    /// function: nvcc writes a `static` kernel's symbol without the
    /// internal-linkage `L` clang writes (`_Z11fasten_mainILm2EEv...` for
    /// clang's `_ZL11fasten_mainILm2EEv...`), so a template's instantiation
    /// is also found by its demangled name.
    pub(crate) fn definition(&self, symbol: &str) -> Option<(&Node, Option<&Node>)> {
        let all = self.nodes_with_parents();
        let function = |n: &Node| FUNCTIONS.contains(&n.kind.as_str());
        let has_body = |n: &Node| n.inner.iter().any(|c| c.kind == "CompoundStmt");
        let exact = |n: &Node| function(n) && n.mangled_name.as_deref() == Some(symbol);
        let found = all.iter().find(|(n, _)| exact(n) && has_body(n)).or_else(|| all.iter().find(|(n, _)| exact(n)));
        if found.is_some() {
            return found.copied();
        }
        let name = names::unqualified(symbol);
        let same = |n: &Node| {
            function(n)
                && n.name.as_deref() == Some(name.as_str())
                && n.mangled_name.as_deref().is_some_and(|m| names::same_function(m, symbol))
        };
        let found = all.iter().find(|(n, _)| same(n) && has_body(n));
        found.or_else(|| all.iter().find(|(n, _)| same(n))).copied()
    }

    /// A function's definition with every node below it and its parent.
    pub(crate) fn function_nodes(&self, symbol: &str) -> Vec<(&Node, Option<&Node>)> {
        let Some((decl, _)) = self.definition(symbol) else { return vec![] };
        let inside: std::collections::HashSet<*const Node> = decl.walk().into_iter().map(|n| n as *const Node).collect();
        self.nodes_with_parents().into_iter().filter(|(n, _)| inside.contains(&(*n as *const Node))).collect()
    }

    /// A function's name as a reader knows it.
    pub(crate) fn function_name(&self, symbol: &str) -> String {
        names::short(symbol)
    }
}

/// A kernel's definition in the source.
pub(crate) struct Kernel<'a> {
    pub symbol: &'a str,
    pub name: String,
    pub decl: &'a Node,
    /// The file its definition begins in (canonical), and its text.
    pub file: &'a Arc<str>,
    pub text: &'a str,
    pub shown: String,
    pub files: &'a Files,
    /// An instantiation of a template.
    pub template: bool,
}

impl Kernel<'_> {
    pub(crate) fn body(&self) -> Option<&Node> {
        self.decl.inner.iter().rev().find(|n| n.kind == "CompoundStmt")
    }

    /// A macro spells its body (`KERNEL(name)` expands to the definition).
    pub(crate) fn defined_by_macro(&self) -> bool {
        self.body().and_then(|b| b.begin.as_ref()).is_some_and(|b| b.in_macro)
    }
}

/// A decision as the tuner labels it on `arch` (its occupancy target in
/// the target's words: `warps-per-sm=44` on NVPTX).
pub(crate) fn labels(t: &Transforms, arch: &Arch) -> Vec<String> {
    let target = crate::gpu::of(arch);
    let mut out = Transforms { launch_bounds: None, ..t.without_occupancy() }.labels();
    out.extend(t.occupancy().map(|w| target.occupancy_label(w)));
    out.extend(t.launch_bounds.map(|n| format!("launch-bounds={n}")));
    out
}

/// Patch every file; a unit that fails is reported and the others still
/// come back.
pub fn run(ctx: &Context, inputs: &[PathBuf], options: &Options) -> Result<(Patch, Vec<Failure>), Failure> {
    crate::rdc::unsupported("fix", &ctx.user_args).map_err(Failure::new)?;
    let db = Db::load(&options.db).map_err(|e| Failure::new(e.to_string()))?;
    Ok(run_with(ctx, inputs, options, &db))
}

/// [`run`] with the db already read.
pub(crate) fn run_with(ctx: &Context, inputs: &[PathBuf], options: &Options, db: &Db) -> (Patch, Vec<Failure>) {
    let (toolchain, plugin, archs, user_args) = (&ctx.toolchain, ctx.plugin(), &ctx.archs[..], &ctx.user_args[..]);
    // nvcc builds the units: its flags as clang reads them, its attributes, its install a toolchain's.
    let clang_args = match &ctx.nvcc {
        Some(_) => nvcc::clang_args(user_args),
        None => user_args.to_vec(),
    };
    let compiler = match &ctx.nvcc {
        Some(n) => SourceCompiler::Nvcc { maxnreg: n.has_maxnreg() },
        None => SourceCompiler::Clang,
    };
    let mut project = Project::new(inputs, &clang_args, toolchain);
    if let Some(root) = ctx.nvcc.as_ref().and_then(|n| n.path.parent()?.parent()) {
        project.add_toolchain_dir(root);
    }
    let nvcc = ctx.nvcc.as_ref();
    let fixing = Fixing { toolchain, plugin, archs, user_args, clang_args: &clang_args, nvcc, compiler, db, options, project: &project };
    let mut files = Files::default();
    let mut units = Vec::new();
    let mut failures = Vec::new();
    // Each file takes a few compiles (locate, AST, verify): say so on a terminal.
    let bar = crate::progress::Progress::new(inputs.len() as u64, "patching");
    for input in inputs {
        match unit_patch::plan(&fixing, input, &mut files) {
            Ok(p) => units.push(p),
            Err(f) => failures.push(f),
        }
        bar.inc();
    }
    bar.finish();
    let build = Build { toolchain, archs, user_args, nvcc };
    (settle(&build, &files, units), failures)
}

/// Every unit's edits together, verified: the patch.
fn settle(build: &Build<'_>, files: &Files, mut units: Vec<Planned>) -> Patch {
    let mut dropped: BTreeMap<String, String> = BTreeMap::new();
    for u in &units {
        dropped.extend(u.skipped.iter().map(|(k, v)| (k.clone(), v.clone())));
        // Nothing to write: nothing to verify either.
        for d in u.active() {
            if !u.edits.iter().any(|e| e.kernels.contains(&d.symbol)) {
                dropped.entry(d.symbol.clone()).or_insert_with(|| "nothing of it could be written in the source (see the notes)".into());
            }
        }
    }
    let mut groups = shared::groups(&units, build.archs, &|s| dropped.contains_key(s));
    // nvcc: kernel templates with a register cap per instantiation, and why one was left out.
    let mut capped: Vec<instances::Capped> = Vec::new();
    for c in units.iter().flat_map(|u| u.capped.iter()) {
        if !capped.iter().any(|x| x.same(c)) {
            capped.push(c.clone());
        }
    }
    let mut capped_out: BTreeMap<String, String> = BTreeMap::new();
    let mut found = verify::Found::default();
    let mut rounds = 0;
    let decided: usize = units.iter().map(|u| u.active().count()).sum();
    let tries: usize = units.iter().flat_map(|u| u.decisions.iter()).filter_map(|d| d.as_maxnreg.as_ref()).map(|f| f.tries.len()).sum();
    let (edits, changes) = loop {
        let edits = assemble(&units, files, &groups, &mut dropped);
        let changes = patched_files(files, &edits);
        if changes.is_empty() {
            break (edits, changes);
        }
        rounds += 1;
        // Each patched text under every name clang reaches its file by.
        let named: Vec<(String, &str)> =
            changes.iter().flat_map(|(p, t)| files.names(p).into_iter().map(move |n| (n, t.as_str()))).collect();
        let overlay = match Overlay::new(named.iter().map(|(n, t)| (n.as_str(), *t))) {
            Ok(o) => o,
            Err(e) => {
                for k in edits.iter().flat_map(|e| e.kernels.iter()) {
                    dropped.entry(k.clone()).or_insert_with(|| format!("cannot write the patched files for the check: {e}"));
                }
                continue;
            }
        };
        let changed: BTreeSet<Arc<str>> = changes.iter().map(|(p, _)| p.clone()).collect();
        // Each decision held to its promise; one left out, or taking another's
        // (a shared definition), to nothing worse than it was or was promised.
        let in_patch = |c: &instances::Capped| c.capped.iter().any(|k| edits.iter().any(|e| e.kernels.contains(k)));
        let promise = |d: &Decision| {
            if capped.iter().any(|c| c.is_plain(&d.symbol, &d.arch) && in_patch(c)) {
                Promise::Plain(d.before)
            } else if dropped.contains_key(&d.symbol) {
                Promise::NoWorseThan(d.before)
            } else if groups.iter().any(|g| g.donor_for(&d.symbol).is_some()) {
                Promise::NoWorseThan(d.promised)
            } else if d.as_maxnreg.is_some() {
                Promise::Numbers
            } else {
                Promise::Exact
            }
        };
        let edited = |symbol: &str| edits.iter().any(|e| e.kernels.contains(symbol));
        found = verify::check(build, &units, &changed, &changes, files, &overlay, &promise);
        // A unit the patched files break: the edits it reads go.
        for (i, why) in &found.broken {
            let reads = &units[*i].reads;
            for k in edits.iter().filter(|e| reads.contains(&e.file)).flat_map(|e| e.kernels.iter()) {
                found.wrong.entry(k.clone()).or_insert_with(|| why.clone());
            }
        }
        if found.wrong.is_empty() {
            break (edits, changes);
        }
        let (dropped_before, choices_before) =
            (dropped.len(), groups.iter().map(|g| g.chosen().map(<[String]>::to_vec)).collect::<Vec<_>>());
        let mut rejected: BTreeSet<usize> = BTreeSet::new();
        let mut switched: Vec<instances::Capped> = Vec::new();
        let mut retried = false;
        for (symbol, why) in &found.wrong {
            // A -maxrregcount written as the kernel's own cap that
            // missed the candidate's numbers: its next cap, else not patched.
            let as_maxnreg = units.iter().flat_map(|u| u.decisions.iter()).find(|d| &d.symbol == symbol && d.as_maxnreg.is_some());
            if let Some((arch, f)) = as_maxnreg.and_then(|d| Some((d.arch.clone(), d.as_maxnreg.clone()?))) {
                let gives = why.strip_prefix(&format!("the plain build of the patched files on {arch} gives ")).unwrap_or(why);
                let next = f.next(gives);
                let template = capped.iter().position(|c| c.capped.contains(symbol) && in_patch(c));
                let in_group = groups.iter().any(|g| g.has(symbol));
                if !in_group && (template.is_some() || next.is_some()) {
                    let switch = match (template, &next) {
                        (Some(i), Some(n)) => capped[i].with_cap(symbol, &arch, n.cap()).map(|c| (i, c)),
                        (Some(i), None) => capped[i].without(symbol, &arch).map(|c| (i, c)),
                        (None, _) => None,
                    };
                    if let Some((i, c)) = switch {
                        let (old, new) = (capped[i].edits(), if c.capped.is_empty() { vec![] } else { c.edits() });
                        for u in units.iter_mut() {
                            if let Some(k) = u.capped.iter().position(|x| x.same(&c)) {
                                u.edits.retain(|e| !old.contains(e));
                                u.edits.extend(new.iter().cloned());
                                u.capped[k] = c.clone();
                            }
                        }
                        capped[i] = c;
                    } else if let Some(n) = &next {
                        for u in units.iter_mut() {
                            if let Some(edits) = u.retries.get(&(symbol.clone(), n.cap())).cloned() {
                                u.edits.retain(|e| !(e.kernels.contains(symbol) && e.what == "occupancy"));
                                u.edits.extend(edits);
                            }
                        }
                    }
                    for d in units.iter_mut().flat_map(|u| u.decisions.iter_mut()).filter(|d| &d.symbol == symbol && d.arch == arch) {
                        d.as_maxnreg = next.clone().or(d.as_maxnreg.take());
                    }
                    if next.is_none() {
                        dropped.entry(symbol.clone()).or_insert_with(|| f.refusal(gives));
                    }
                    retried = true;
                    continue;
                }
                if next.is_none() && !in_group {
                    dropped.entry(symbol.clone()).or_insert_with(|| f.refusal(gives));
                    continue;
                }
            }
            // A template's caps per instantiation: one without a decision that
            // the default cap changes takes its plain register count instead;
            // else all of them go, for any instantiation's miss.
            if let Some(i) = capped.iter().position(|c| c.has(symbol) && in_patch(c)) {
                let c = &capped[i];
                if switched.iter().any(|s| s.same(c)) {
                    continue;
                }
                let name = names::short(symbol);
                let undecided = c.plain.iter().any(|(s, _)| s == symbol);
                let rest = why.strip_prefix("the plain build of the patched files on ").unwrap_or(why);
                if let Some(next) = undecided
                    .then(|| c.at_plain_counts(&format!("with the default cap {}, {name} on {rest}", instances::DEFAULT)))
                    .flatten()
                {
                    let (old, new) = (c.edits(), next.edits());
                    for u in units.iter_mut() {
                        if let Some(k) = u.capped.iter().position(|x| x.same(&next)) {
                            u.edits.retain(|e| !old.contains(e));
                            u.edits.extend(new.iter().cloned());
                            u.capped[k] = next.clone();
                        }
                    }
                    switched.push(next.clone());
                    capped[i] = next;
                    continue;
                }
                let undecided = match (&c.at_plain_count, undecided) {
                    (_, false) => String::new(),
                    (None, true) => format!(" (no decision: the default cap, {})", instances::DEFAULT),
                    (Some(before), true) => format!(" (no decision: its plain register count as its cap, as {before})"),
                };
                let reason = format!("with the register caps per instantiation ({}), {name}{undecided}: {why}", c.trait_name);
                capped_out.entry(c.trait_name.clone()).or_insert(reason);
                for k in &c.capped {
                    let why = format!("its template's register caps per instantiation were left out (see the note on {})", c.trait_name);
                    dropped.entry(k.clone()).or_insert(why);
                }
                continue;
            }
            if let Some(i) = groups.iter().position(|g| g.has(symbol) && g.chosen().is_some()) {
                // One try per round: a shared definition's next decision.
                if rejected.insert(i) && !groups[i].reject(symbol, why) {
                    let reason = groups[i].reason();
                    for m in groups[i].members() {
                        dropped.entry(m.clone()).or_insert_with(|| reason.clone());
                    }
                }
                continue;
            }
            if !edited(symbol) {
                // Not its own edits: others' in code it shares (a helper, a
                // header). Their kernels lose them, and are told why.
                let span = units.iter().find_map(|u| u.spans.get(symbol));
                let name = names::short(symbol);
                for e in
                    edits.iter().filter(|e| span.map_or(e.kernels.len() > 1, |(f, a, b)| e.file == *f && *a <= e.start && e.start < *b))
                {
                    for k in &e.kernels {
                        dropped.entry(k.clone()).or_insert_with(|| format!("its edits change {name} too, where {why}"));
                    }
                }
            }
            dropped.entry(symbol.clone()).or_insert_with(|| why.clone());
        }
        let choices_after: Vec<_> = groups.iter().map(|g| g.chosen().map(<[String]>::to_vec)).collect();
        let stuck = dropped.len() == dropped_before && choices_after == choices_before && switched.is_empty() && !retried;
        if stuck || rounds > decided + 2 * groups.len() + capped.len() + tries + 1 {
            // Nothing left to take out, yet not verified: keep nothing.
            for k in edits.iter().flat_map(|e| e.kernels.iter()) {
                dropped.entry(k.clone()).or_insert_with(|| "the patched files could not be verified".into());
            }
        }
    };

    // What each unit's kernels came to.
    let mut patch = Patch::default();
    let units_decisions: Vec<Decision> = units.iter().flat_map(|u| u.decisions.iter().cloned()).collect();
    let expressed: BTreeSet<&String> = edits.iter().flat_map(|e| e.kernels.iter()).collect();
    for u in &mut units {
        let mut kernels = Vec::new();
        let own = files::shown(&ast::canonical(&u.path.display().to_string()));
        for d in u.active() {
            let group = groups.iter().find(|g| g.has(&d.symbol));
            let donor = group.and_then(|g| g.donor_for(&d.symbol));
            // An edit fix may not make comes first: it is the cause.
            let blocked = u.notes.blocked.get(&d.symbol).map(|b| format!("it needs an edit fix does not make ({}); ", b.join("; ")));
            let outcome = if let Some(why) = dropped.get(&d.symbol) {
                Outcome::Dropped(format!("{}{why}", blocked.unwrap_or_default()))
            } else if !expressed.contains(&d.symbol) && donor.is_none() {
                Outcome::Dropped(format!("{}its edits were left out", blocked.unwrap_or_default()))
            } else {
                Outcome::Verified
            };
            let owner = donor.unwrap_or(&d.symbol);
            let mut elsewhere: Vec<String> =
                edits.iter().filter(|e| e.kernels.contains(owner)).map(|e| files.shown(&e.file)).filter(|f| *f != own).collect();
            elsewhere.sort();
            elsewhere.dedup();
            let measured = found.usage.get(&(d.symbol.clone(), d.arch.to_string())).copied();
            let verified = outcome == Outcome::Verified;
            let through = capped.iter().find(|c| c.capped.contains(&d.symbol)).filter(|_| verified).map(|c| c.trait_name.clone());
            kernels.push(KernelResult {
                name: names::short(&d.symbol),
                symbol: d.symbol.clone(),
                arch: d.arch.to_string(),
                applied: labels(&d.transforms, &d.arch),
                before: d.before,
                after: if donor.is_some() { measured.or(d.promised) } else { d.promised },
                outcome,
                elsewhere: if verified { elsewhere } else { vec![] },
                nvcc: found.nvcc.get(&(d.symbol.clone(), d.arch.to_string())).filter(|_| verified).cloned(),
                through,
                spelled: d.as_maxnreg.as_ref().filter(|_| verified && donor.is_none()).map(nvcc::AsMaxnreg::spelled),
                instead: donor.zip(group).map(|(o, g)| {
                    let theirs = units_decisions
                        .iter()
                        .find(|x| x.symbol == o && x.arch == d.arch)
                        .map(|x| x.transforms.clone())
                        .unwrap_or_default();
                    let t = shared::patched_with(g, &theirs, &d.transforms);
                    if t.is_empty() {
                        "nothing".to_string()
                    } else {
                        labels(&t, &d.arch).join(" + ")
                    }
                }),
            });
        }
        let mut notes = std::mem::take(&mut u.notes.lines);
        // A kernel without decisions whose numbers moved: say so too.
        for d in u.decisions.iter().filter(|d| d.transforms.is_empty()) {
            if let Some(why) = dropped.get(&d.symbol) {
                let name = names::short(&d.symbol);
                let line = format!("{}: note: {name}: {why}; the edits it shares with others were left out", u.path.display());
                if !notes.contains(&line) {
                    notes.push(line);
                }
            }
        }
        notes.extend(found.side_effects.iter().filter(|n| n.starts_with(&format!("{}: ", u.path.display()))).cloned());
        for c in &u.capped {
            let line = match capped_out.get(&c.trait_name) {
                Some(why) => format!("{}: note: {why}; the template's edit is left out", u.path.display()),
                None if !c.capped.iter().any(|k| expressed.contains(k)) => continue,
                None => format!("{}: note: {}", u.path.display(), instances::verified_plain(c, &found.usage)),
            };
            if !notes.contains(&line) {
                notes.push(line);
            }
        }
        for g in &groups {
            if let Some(s) = g.settled().filter(|_| u.active().any(|d| g.has(&d.symbol))) {
                notes.push(format!("{}: note: {s}", u.path.display()));
            }
        }
        patch.units.push(UnitReport { path: u.path.clone(), kernels, notes });
    }
    for (path, patched) in changes {
        let original = files.text(&path).unwrap_or_default().to_string();
        patch.files.push(FileChange {
            path: PathBuf::from(&*path),
            shown: files.shown(&path),
            names: files.names(&path),
            original,
            patched,
        });
    }
    patch.files.sort_by(|a, b| a.shown.cmp(&b.shown));
    patch
}

/// The units' edits that are still in, as one set: a shared definition's
/// members that take another's decision leave theirs out; kernels whose
/// edits disagree are left out (into `dropped`), unless the edits are whole
/// lines that targets asked for differently, which go under `#if`.
fn assemble(units: &[Planned], files: &Files, groups: &[Group], dropped: &mut BTreeMap<String, String>) -> Vec<Edit> {
    let takes_other = |k: &String, what: &str| groups.iter().any(|g| g.donor_for(k).is_some() && !shared::keeps_own(g, what));
    let mut raw: Vec<Edit> = units.iter().flat_map(|u| u.edits.iter().cloned()).collect();
    loop {
        raw.retain(|e| !e.kernels.iter().any(|k| dropped.contains_key(k) || takes_other(k, &e.what)));
        let (mut edits, conflicts) = edit::merge(raw.clone());
        let mut unresolved = Vec::new();
        let mut by_range: BTreeMap<(Arc<str>, usize, usize, String), Vec<Edit>> = BTreeMap::new();
        for (a, b) in conflicts {
            if (&a.file, a.start, a.end, &a.what) == (&b.file, b.start, b.end, &b.what) {
                by_range.entry((b.file.clone(), b.start, b.end, b.what.clone())).or_default().push(b);
            } else {
                unresolved.push((a, b));
            }
        }
        for ((file, start, end, what), others) in by_range {
            let at = |e: &Edit| e.file == file && (e.start, e.end) == (start, end) && e.what == what;
            let mut group: Vec<Edit> = edits.iter().filter(|e| at(e)).cloned().collect();
            group.extend(others.iter().cloned());
            match files.text(&file).and_then(|text| edit::per_target(text, &group)) {
                Some(joined) => {
                    edits.retain(|e| !at(e));
                    edits.push(joined);
                }
                None => unresolved.extend(others.into_iter().map(|b| (group[0].clone(), b))),
            }
        }
        if unresolved.is_empty() {
            edits.sort_by(|a, b| (&a.file, a.start).cmp(&(&b.file, b.start)));
            return edits;
        }
        for (a, b) in unresolved {
            let line = files.text(&a.file).map_or(0, |t| ast::line_col(t, a.start).0);
            let place = format!("{}:{line}", files.shown(&a.file));
            for k in a.kernels.iter().chain(&b.kernels) {
                dropped.entry(k.clone()).or_insert_with(|| format!("its edits at {place} disagree with another kernel's or target's"));
            }
        }
    }
}

/// Each file the edits change, with its patched text (the pow2 helper
/// defined above its first use where an edit calls it; a guarded macro an
/// edit uses defined at the file's top).
fn patched_files(files: &Files, edits: &[Edit]) -> Vec<(Arc<str>, String)> {
    let touched: BTreeSet<&Arc<str>> = edits.iter().map(|e| &e.file).collect();
    let mut out = Vec::new();
    for file in touched {
        let Some(text) = files.text(file) else { continue };
        let mut mine: Vec<Edit> = edits.iter().filter(|e| e.file == *file).cloned().collect();
        if let Some(at) = mine.iter().filter_map(|e| e.helper).min() {
            let mut helper = Edit::new(file, at, at, pow2::HELPER, "", "pow2");
            helper.kernels.clear();
            mine.push(helper);
            mine.sort_by_key(|e| e.start);
        }
        // A guarded macro's definition, once, at the top (nvcc's register
        // cap); not again where the file has its guard (patched before).
        let defined: BTreeSet<&'static str> = mine.iter().filter_map(|e| e.defines).collect();
        let guard = |d: &'static str| d.lines().find(|l| l.starts_with("#ifndef ")).unwrap_or(d);
        for definition in defined.into_iter().filter(|d| !text.contains(guard(d))) {
            let at = edit::top(text);
            let mut define = Edit::new(file, at, at, definition, "", "definition");
            define.kernels.clear();
            mine.push(define);
            mine.sort_by_key(|e| e.start);
        }
        let patched = edit::apply(file, text, &mine);
        if patched != text {
            out.push((file.clone(), patched));
        }
    }
    out
}

/// The patch of one unit alone (the wrapper's patch mode), with the db
/// already read.
pub(crate) fn fix_unit(ctx: &Context, path: &Path, db: &Db, options: &Options) -> Result<Patch, Failure> {
    let (patch, mut failures) = run_with(ctx, &[path.to_path_buf()], options, db);
    match failures.pop() {
        Some(f) => Err(f),
        None => Ok(patch),
    }
}
