//! `regtune fix`: the db's decisions as a reviewable source patch, so any
//! compiler (ROCm's hipcc, nvcc) builds the tuned kernel without regtune.
//!
//! Per file: the decisions current for this build (input hash, as the
//! wrapper computes it), where they apply in the source (locate.rs: the
//! plugin run on an IR with line tables; ast.rs: clang's AST for ranges),
//! one source edit per transform (attributes, restrict, unroll, pow2,
//! sink), then verification: the patched copy is compiled plainly (no
//! plugin) and every kernel must show the usage the tuner promised (the
//! db's `after`); a kernel that does not loses its edits, and the rest is
//! checked again. What is left is the patch.

pub mod ast;
pub mod attributes;
pub mod copy;
pub mod debug_ir;
pub mod edit;
pub mod locate;
pub mod pow2;
pub mod restrict;
pub mod sink;
pub mod unroll;
pub mod unrolled;
pub mod write;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use regtune_decisions::{Db, Transforms, Usage};

use crate::compile::{self, Unit};
use crate::measure;
use crate::output::Failure;
use crate::report;
use crate::session;
use crate::target::Arch;
use crate::toolchain::Toolchain;

use ast::Node;
use copy::PatchedCopy;
use edit::Edit;

/// What `regtune fix` was asked to do.
pub struct Options {
    pub db: PathBuf,
    /// Also express the suggestions the user has not confirmed (noalias,
    /// launch bounds), promising their measured usage.
    pub with_suggestions: bool,
}

/// One kernel's decision on one target, as the patch must express it.
#[derive(Debug, Clone)]
pub struct Decision {
    pub symbol: String,
    pub arch: Arch,
    pub transforms: Transforms,
    /// The usage the tuner measured with `transforms`.
    pub promised: Option<Usage>,
    pub before: Option<Usage>,
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
}

/// One file's patch and what it says.
pub struct FilePatch {
    pub path: PathBuf,
    pub original: String,
    pub patched: String,
    pub kernels: Vec<KernelResult>,
    pub notes: Vec<String>,
}

impl FilePatch {
    /// The unified diff, naming the file relative to the current
    /// directory when it lies below it (as `git apply` wants).
    pub fn diff(&self) -> String {
        let cwd = std::env::current_dir().unwrap_or_default();
        let name = self.path.strip_prefix(&cwd).unwrap_or(&self.path);
        edit::unified_diff(&name.display().to_string(), &self.original, &self.patched)
    }

    /// Every decided kernel is in the patch, verified.
    pub fn complete(&self) -> bool {
        self.kernels.iter().all(|k| k.outcome == Outcome::Verified)
    }

    /// The patch's preamble: one line per kernel, then the notes.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        for k in &self.kernels {
            let change = |f: fn(&Usage) -> u32| match (k.before, k.after) {
                (Some(b), Some(a)) if f(&b) != f(&a) => format!("{} → {}", f(&b), f(&a)),
                (_, Some(a)) => f(&a).to_string(),
                _ => "?".into(),
            };
            let what = k.applied.join(" + ");
            match &k.outcome {
                Outcome::Verified => out.push_str(&format!(
                    "{}: {} ({}): {what}; verified by a plain build: VGPRs {}, occupancy {}\n",
                    self.path.display(),
                    k.name,
                    k.arch,
                    change(|u| u.vgpr),
                    change(|u| u.occupancy)
                )),
                Outcome::Dropped(why) => out.push_str(&format!("{}: {} ({}): {what}: not in the patch: {why}\n", self.path.display(), k.name, k.arch)),
            }
        }
        for n in &self.notes {
            out.push_str(n);
            out.push('\n');
        }
        out
    }
}

/// Notes for the user about what the patch does not express, by line.
pub struct Notes {
    path: String,
    lines: Vec<String>,
}

impl Notes {
    fn new(path: &Path) -> Notes {
        Notes { path: path.display().to_string(), lines: vec![] }
    }

    pub fn file(&mut self, line: Option<u32>, text: String) {
        let at = line.map_or(String::new(), |l| format!("{l}:"));
        self.push(format!("{}:{at} note: {text}", self.path));
    }

    pub fn kernel(&mut self, kernel: &Kernel<'_>, text: String) {
        let line = kernel.decl.loc.as_ref().map_or(0, |l| ast::line_col(kernel.text, l.offset).0);
        self.at(kernel, line, text);
    }

    pub fn at(&mut self, kernel: &Kernel<'_>, line: u32, text: String) {
        self.push(format!("{}:{line}: note: {}: {text}", self.path, kernel.name));
    }

    pub fn push(&mut self, line: String) {
        if !self.lines.contains(&line) {
            self.lines.push(line);
        }
    }
}

/// The file being patched, with its AST.
pub struct Source<'a> {
    pub path: &'a Path,
    /// The name clang's AST gives the file (the path as passed to it).
    pub file: &'a str,
    pub text: &'a str,
    pub nodes: &'a [Node],
}

impl Source<'_> {
    /// Every node with its parent.
    pub fn nodes_with_parents(&self) -> Vec<(&Node, Option<&Node>)> {
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

    /// A function's definition (by symbol) with every node below it and its parent.
    pub fn function_nodes(&self, symbol: &str) -> Vec<(&Node, Option<&Node>)> {
        let all = self.nodes_with_parents();
        let Some(&(decl, _)) = all.iter().find(|(n, _)| n.kind == "FunctionDecl" && n.mangled_name.as_deref() == Some(symbol)) else {
            return vec![];
        };
        let inside: std::collections::HashSet<*const Node> = decl.walk().into_iter().map(|n| n as *const Node).collect();
        all.into_iter().filter(|(n, _)| inside.contains(&(*n as *const Node))).collect()
    }

    /// A function's name as a reader knows it.
    pub fn function_name(&self, symbol: &str) -> String {
        report::short_name(&report::demangle(symbol)).to_string()
    }
}

/// A kernel's definition in the source.
pub struct Kernel<'a> {
    pub symbol: &'a str,
    pub name: String,
    pub decl: &'a Node,
    pub file: &'a str,
    pub text: &'a str,
}

/// Patch every file; files are independent, so one that fails is
/// reported and the others still come back.
pub fn run(
    toolchain: &Toolchain,
    plugin: &Path,
    files: &[PathBuf],
    archs: &[Arch],
    user_args: &[String],
    options: &Options,
) -> Result<(Vec<FilePatch>, Vec<Failure>), Failure> {
    crate::rdc::unsupported("fix", user_args).map_err(Failure::new)?;
    let db = Db::load(&options.db).map_err(|e| Failure::new(e.to_string()))?;
    let mut patches = Vec::new();
    let mut failures = Vec::new();
    // Each file takes a few compiles (locate, AST, verify): say so on a terminal.
    let bar = crate::progress::Progress::new(files.len() as u64, "patching");
    for file in files {
        match fix_file(toolchain, plugin, file, archs, user_args, &db, options) {
            Ok(p) => patches.push(p),
            Err(f) => failures.push(f),
        }
        bar.inc();
    }
    bar.finish();
    Ok((patches, failures))
}

/// The patch: what it expresses and what it leaves out, then the diffs
/// (`git apply` and `patch -p1` skip the text before the first diff).
pub fn patch_text(patches: &[FilePatch]) -> String {
    let mut out = String::new();
    for p in patches {
        out.push_str(&p.summary());
    }
    if !out.is_empty() {
        out.push('\n');
    }
    for p in patches {
        out.push_str(&p.diff());
    }
    out
}

/// Patch one file from the db's decisions for it on `archs`.
pub fn fix_file(
    toolchain: &Toolchain,
    plugin: &Path,
    path: &Path,
    archs: &[Arch],
    user_args: &[String],
    db: &Db,
    options: &Options,
) -> Result<FilePatch, Failure> {
    let text = std::fs::read_to_string(path).map_err(|e| Failure::new(format!("cannot read {}: {e}", path.display())))?;
    let mut notes = Notes::new(path);
    let mut patch = FilePatch { path: path.to_path_buf(), original: text.clone(), patched: text.clone(), kernels: vec![], notes: vec![] };

    // The decisions current for this build, per target.
    let mut decisions: Vec<Decision> = Vec::new();
    for arch in archs {
        let unit = Unit { toolchain, arch, source: path, user_args };
        let hash = input_hash(&unit)?;
        let found: Vec<Decision> = db
            .kernels
            .values()
            .filter(|e| e.arch == arch.processor() && e.input_hash == hash)
            .map(|e| {
                let mut d = Decision {
                    symbol: e.symbol.clone(),
                    arch: arch.clone(),
                    transforms: e.effective(),
                    promised: e.after,
                    before: e.before,
                };
                if options.with_suggestions {
                    if let Some(s) = e.suggested.iter().find(|s| !s.confirmed) {
                        d.transforms = s.transforms.clone();
                        d.promised = Some(s.usage);
                    }
                }
                d
            })
            .collect();
        if found.is_empty() {
            notes.file(
                None,
                format!(
                    "no decisions for {arch} match this build (input hash {}); run `regtune tune` on it with the same flags first",
                    &hash[..12]
                ),
            );
        }
        decisions.extend(found);
    }
    let active: Vec<&Decision> = decisions.iter().filter(|d| !d.transforms.is_empty()).collect();
    if active.is_empty() {
        patch.notes = notes.lines;
        return Ok(patch);
    }

    // Where the early transforms (pow2, unroll caps) act, per target.
    let mut changes: Vec<(&Arch, debug_ir::Changes)> = Vec::new();
    for arch in archs {
        let here: Vec<&Decision> = active.iter().copied().filter(|d| &d.arch == arch).collect();
        if here.iter().any(|d| d.transforms.pow2 || d.transforms.unroll_cap.is_some()) {
            let unit = Unit { toolchain, arch, source: path, user_args };
            let c = locate::changes(&unit, plugin, &here).map_err(|e| Failure::new(format!("{}: {e}", path.display())))?;
            changes.push((arch, c));
        }
    }

    // The AST of every function the edits touch, once per GPU family.
    let mut names: BTreeSet<String> = active.iter().map(|d| compile::unqualified_name(&d.symbol)).collect();
    for (_, c) in &changes {
        names.extend(c.removed_calls.iter().map(|r| compile::unqualified_name(&r.function)));
        names.extend(c.loops.iter().map(|l| compile::unqualified_name(&l.function)));
    }
    let names: Vec<String> = names.into_iter().filter(|n| !n.is_empty()).collect();
    let mut nodes: Vec<Node> = Vec::new();
    let mut families_seen = Vec::new();
    for arch in archs {
        if families_seen.contains(&arch.vendor()) {
            continue;
        }
        families_seen.push(arch.vendor());
        let unit = Unit { toolchain, arch, source: path, user_args };
        nodes.extend(ast::dump(&unit, &names).map_err(|e| Failure::new(e.to_string()))?);
    }
    let file_name = path.display().to_string();
    let source = Source { path, file: &file_name, text: &text, nodes: &nodes };

    // The edits, per kernel and target.
    let mut edits: Vec<Edit> = Vec::new();
    let mut skipped: BTreeMap<String, String> = BTreeMap::new();
    let by_symbol = group_by_symbol(&active);
    let all_nodes = source.nodes_with_parents();
    let definition = |symbol: &str| all_nodes.iter().find(|(n, _)| n.kind == "FunctionDecl" && n.mangled_name.as_deref() == Some(symbol));
    for (symbol, ds) in &by_symbol {
        let name = source.function_name(symbol);
        let Some(&(decl, parent)) = definition(symbol) else {
            skipped.insert(symbol.clone(), "its definition is not in this file's AST".into());
            continue;
        };
        if decl.loc.as_ref().is_none_or(|l| l.in_macro || &*l.file != source.file) {
            skipped.insert(symbol.clone(), "it is defined by a macro or in another file".into());
            continue;
        }
        // A template's instantiations share its source: they must have decided alike.
        if let Some(template) = parent.filter(|p| p.kind == "FunctionTemplateDecl") {
            let siblings: Vec<&str> = template.inner.iter().filter_map(|n| n.mangled_name.as_deref()).collect();
            let differs = siblings.iter().any(|s| {
                decisions.iter().any(|d| d.symbol == *s && ds.iter().any(|o| o.arch == d.arch && o.transforms != d.transforms))
            });
            if differs {
                skipped.insert(symbol.clone(), "the instantiations of its template decided differently".into());
                continue;
            }
        }
        let kernel = Kernel { symbol, name, decl, file: source.file, text: &text };
        edits.extend(attributes::edit(&kernel, ds, &mut notes));
        for d in ds {
            edits.extend(restrict::edits(&kernel, &d.transforms.noalias, &mut notes));
        }
        if ds.iter().any(|d| d.transforms.sink) {
            edits.extend(sink::edits(&kernel, &mut notes));
        }
    }
    for (arch, c) in &changes {
        let (active, skipped) = (&active, &skipped);
        let unrolled = move |f: &str| owners(active, skipped, arch, |t| t.unroll_cap.is_some(), f);
        let squared = move |f: &str| owners(active, skipped, arch, |t| t.pow2, f);
        edits.extend(unroll::edits(&source, arch, &c.loops, &unrolled, &mut notes));
        for (at, why) in &c.unpatchable {
            let line = ast::same_file(&at.file, path).then_some(at.line);
            notes.file(line, format!("{why} ({arch}, {}:{})", at.file, at.line));
        }
        edits.extend(pow2::edits(&source, &c.removed_calls, &squared, &mut notes));
    }

    // One set of edits; kernels whose edits disagree are left out, unless
    // they are whole lines that targets asked for differently.
    let (mut edits, conflicts) = edit::merge(edits);
    let mut unresolved = Vec::new();
    let mut by_range: BTreeMap<(usize, usize, String), Vec<Edit>> = BTreeMap::new();
    for (a, b) in conflicts {
        let same_range = (a.start, a.end, &a.what) == (b.start, b.end, &b.what);
        if same_range {
            by_range.entry((b.start, b.end, b.what.clone())).or_default().push(b);
        } else {
            unresolved.push((a, b));
        }
    }
    for ((start, end, what), others) in by_range {
        let at = |e: &Edit| (e.start, e.end) == (start, end) && e.what == what;
        let mut group: Vec<Edit> = edits.iter().filter(|e| at(e)).cloned().collect();
        group.extend(others.iter().cloned());
        match edit::per_target(&text, &group) {
            Some(joined) => {
                edits.retain(|e| !at(e));
                edits.push(joined);
            }
            None => unresolved.extend(others.into_iter().map(|b| (group[0].clone(), b))),
        }
    }
    edits.sort_by_key(|e| e.start);
    for (a, b) in unresolved {
        let line = ast::line_col(&text, a.start).0;
        for k in a.kernels.iter().chain(&b.kernels) {
            skipped.entry(k.clone()).or_insert_with(|| format!("its edits at line {line} disagree with another kernel's or target's"));
        }
    }
    drop_kernels(&mut edits, skipped.keys());

    // Verify: a plain build of the patched copy, per target. A kernel that
    // misses its promise loses its edits, and the rest is built again.
    let mut mismatched: BTreeMap<String, String> = BTreeMap::new();
    for d in &active {
        if d.promised.is_none() && !skipped.contains_key(&d.symbol) {
            skipped.insert(d.symbol.clone(), "the db holds no measured usage to verify it against".into());
        }
    }
    drop_kernels(&mut edits, skipped.keys());
    let mut rounds = 0;
    loop {
        let patched = edit::apply(&text, &with_helper(&source, &edits));
        if patched == text {
            break;
        }
        rounds += 1;
        let left_out = |symbol: &str| skipped.contains_key(symbol) || mismatched.contains_key(symbol);
        let build = Build { toolchain, archs, path, user_args };
        let (wrong, side_effects) = verify(&build, (&text, &patched), &decisions, &left_out, &edits);
        if wrong.is_empty() {
            for n in side_effects {
                notes.push(n);
            }
            break;
        }
        let before = edits.len();
        for (symbol, why) in &wrong {
            if !edits.iter().any(|e| e.kernels.contains(symbol)) {
                // Not its own edits: others' edits in code it shares (a template's
                // body, a helper). Their kernels lose them, and are told why.
                let span = source.function_nodes(symbol).first().and_then(|(d, _)| Some((d.begin.as_ref()?.offset, d.end.as_ref()?.token_end())));
                let shared = |e: &Edit| span.map_or(e.kernels.len() > 1, |(a, b)| a <= e.start && e.start < b);
                let name = source.function_name(symbol);
                for e in edits.iter().filter(|e| shared(e)) {
                    for k in &e.kernels {
                        mismatched.entry(k.clone()).or_insert_with(|| format!("its edits change {name} too, where {why}"));
                    }
                }
                let owners: BTreeSet<String> = edits.iter().filter(|e| shared(e)).flat_map(|e| e.kernels.iter().cloned()).collect();
                drop_kernels(&mut edits, owners.iter());
            }
            mismatched.insert(symbol.clone(), why.clone());
        }
        drop_kernels(&mut edits, wrong.keys());
        if edits.len() == before || rounds > by_symbol.len() {
            // Nothing left to take out, yet not verified: keep nothing.
            for k in edits.iter().flat_map(|e| e.kernels.iter()) {
                mismatched.entry(k.clone()).or_insert_with(|| "the patched file could not be verified".into());
            }
            edits.clear();
        }
    }

    patch.patched = edit::apply(&text, &with_helper(&source, &edits));
    let expressed: BTreeSet<&String> = edits.iter().flat_map(|e| e.kernels.iter()).collect();
    for d in &active {
        let applied = d.transforms.labels();
        let outcome = if let Some(why) = skipped.get(&d.symbol) {
            Outcome::Dropped(why.clone())
        } else if let Some(why) = mismatched.get(&d.symbol) {
            Outcome::Dropped(why.clone())
        } else if !expressed.contains(&d.symbol) {
            Outcome::Dropped("nothing of it could be written in the source (see the notes)".into())
        } else {
            Outcome::Verified
        };
        patch.kernels.push(KernelResult {
            name: source.function_name(&d.symbol),
            symbol: d.symbol.clone(),
            arch: d.arch.to_string(),
            applied,
            before: d.before,
            after: d.promised,
            outcome,
        });
    }
    // A kernel without decisions whose numbers moved: say so too.
    for (symbol, why) in mismatched.iter().filter(|(s, _)| !active.iter().any(|d| &d.symbol == *s)) {
        notes.file(None, format!("{}: {why}; the edits it shares with others were left out", source.function_name(symbol)));
    }
    patch.notes = notes.lines;
    Ok(patch)
}

/// The kernels a change in `function` on `arch` belongs to: a kernel's own
/// code is its own; a function several kernels reach is theirs together
/// (the plugin changes it only when all of them decided alike).
fn owners(
    active: &[&Decision],
    skipped: &BTreeMap<String, String>,
    arch: &Arch,
    wants: fn(&Transforms) -> bool,
    function: &str,
) -> Vec<String> {
    let here: Vec<&&Decision> =
        active.iter().filter(|d| &d.arch == arch && wants(&d.transforms) && !skipped.contains_key(&d.symbol)).collect();
    match here.iter().find(|d| d.symbol == function) {
        Some(d) => vec![d.symbol.clone()],
        None if active.iter().any(|d| d.symbol == function) => vec![],
        None => here.iter().map(|d| d.symbol.clone()).collect(),
    }
}

fn group_by_symbol<'a>(active: &[&'a Decision]) -> BTreeMap<String, Vec<&'a Decision>> {
    let mut by: BTreeMap<String, Vec<&Decision>> = BTreeMap::new();
    for d in active {
        by.entry(d.symbol.clone()).or_default().push(d);
    }
    by
}

/// How the file builds: the toolchain, its targets, its path and flags.
#[derive(Clone, Copy)]
struct Build<'a> {
    toolchain: &'a Toolchain,
    archs: &'a [Arch],
    path: &'a Path,
    user_args: &'a [String],
}

/// Build the patched file plainly for every target; the kernels whose
/// usage is not what the tuner promised, with what differs.
fn verify(
    build: &Build<'_>,
    (text, patched): (&str, &str),
    decisions: &[Decision],
    left_out: &dyn Fn(&str) -> bool,
    edits: &[Edit],
) -> (BTreeMap<String, String>, Vec<String>) {
    let Build { toolchain, archs, path, user_args } = *build;
    let mut wrong: BTreeMap<String, String> = BTreeMap::new();
    let mut side_effects = Vec::new();
    for arch in archs {
        let measured = match measure_patched(toolchain, arch, path, text, patched, user_args) {
            Ok(m) => m,
            Err(e) => {
                // It does not compile: nothing of it can be kept.
                for k in edits.iter().flat_map(|e| e.kernels.iter()) {
                    wrong.entry(k.clone()).or_insert_with(|| format!("the patched file does not compile for {arch}: {e}"));
                }
                continue;
            }
        };
        for d in decisions.iter().filter(|d| &d.arch == arch) {
            let got = measured.iter().find(|m| m.symbol == d.symbol).map(|m| m.usage);
            // Where nothing was decided, or the decisions are left out, code
            // shared with a kernel that decided may change it, as long as the
            // tuner would not call that worse than it was.
            let problem = if d.transforms.is_empty() {
                worse(got, d.promised)
            } else if left_out(&d.symbol) {
                worse(got, d.before)
            } else {
                mismatch(got, d.promised)
            };
            if let Some(why) = problem {
                wrong.entry(d.symbol.clone()).or_insert(format!("the plain build of the patched file on {arch} gives {why}"));
            } else if let (true, Some(g), Some(p)) = (d.transforms.is_empty(), got, d.promised) {
                if mismatch(Some(g), Some(p)).is_some() {
                    let name = report::short_name(&report::demangle(&d.symbol)).to_string();
                    side_effects.push(format!(
                        "{}: {name} on {arch}, where nothing was decided, changes too (code it shares with another target's decision): VGPRs {} → {}, occupancy {} → {}",
                        path.display(),
                        p.vgpr,
                        g.vgpr,
                        p.occupancy,
                        g.occupancy
                    ));
                }
            }
        }
    }
    (wrong, side_effects)
}

/// Is `got` worse than `promised` by the tuner's rule (lower occupancy,
/// more spills or scratch)?
fn worse(got: Option<Usage>, promised: Option<Usage>) -> Option<String> {
    let (Some(got), Some(promised)) = (got, promised) else { return None };
    let spills = |u: &Usage| u.vgpr_spills + u.sgpr_spills;
    let fields = [
        ("occupancy", got.occupancy, promised.occupancy, got.occupancy < promised.occupancy),
        ("spills", spills(&got), spills(&promised), spills(&got) > spills(&promised)),
        ("scratch bytes", got.scratch_bytes, promised.scratch_bytes, got.scratch_bytes > promised.scratch_bytes),
    ];
    let diffs: Vec<String> = fields.iter().filter(|f| f.3).map(|(what, g, p, _)| format!("{what} {g} where it was {p}")).collect();
    (!diffs.is_empty()).then(|| diffs.join(", "))
}

/// Leave out every edit that belongs to one of `kernels`.
fn drop_kernels<'a>(edits: &mut Vec<Edit>, kernels: impl IntoIterator<Item = &'a String>) {
    let kernels: BTreeSet<&String> = kernels.into_iter().collect();
    edits.retain(|e| !e.kernels.iter().any(|k| kernels.contains(k)));
}

/// The edits plus the pow2 helper's definition, when one of them calls it:
/// above the first function that does.
fn with_helper(source: &Source<'_>, edits: &[Edit]) -> Vec<Edit> {
    let mut out = edits.to_vec();
    let first_use = edits.iter().filter(|e| e.text.contains(pow2::HELPER_NAME)).map(|e| e.start).min();
    let Some(first_use) = first_use else { return out };
    // The outermost declaration around it, from the line it starts.
    let around = source
        .nodes
        .iter()
        .flat_map(|n| n.walk())
        .filter(|n| matches!(n.kind.as_str(), "FunctionDecl" | "FunctionTemplateDecl"))
        .filter_map(|n| Some((n.begin.as_ref()?, n.end.as_ref()?)))
        .filter(|(b, e)| &*b.file == source.file && b.offset <= first_use && first_use <= e.token_end())
        .map(|(b, _)| b.offset)
        .min();
    if let Some(begin) = around {
        let at = edit::above_comments(source.text, edit::line_start(source.text, begin));
        let mut helper = Edit::new(at, at, pow2::HELPER, "", "pow2");
        helper.kernels.clear();
        out.push(helper);
        out.sort_by_key(|e| e.start);
    }
    out
}

/// The input hash of the unit, as `tune` recorded it and the wrapper looks it up.
fn input_hash(unit: &Unit<'_>) -> Result<String, Failure> {
    let dir = tempfile::tempdir().map_err(|e| Failure::new(format!("cannot create a temporary directory: {e}")))?;
    let out = dir.path().join("unit.i");
    unit.preprocess(&out).map_err(report::compile_failure)?;
    let bytes = std::fs::read(&out).map_err(|e| Failure::new(format!("cannot read {}: {e}", out.display())))?;
    Ok(session::input_hash(unit, &bytes))
}

/// Every kernel's usage in a plain build of `patched` standing in for `original`.
pub fn measure_patched(
    toolchain: &Toolchain,
    arch: &Arch,
    original: &Path,
    original_text: &str,
    patched: &str,
    user_args: &[String],
) -> Result<Vec<measure::Measured>, String> {
    let copy = PatchedCopy::new(original, original_text, patched).map_err(|e| format!("cannot write the patched copy: {e}"))?;
    let mut args = PatchedCopy::include_args(original);
    args.extend(user_args.iter().cloned());
    let unit = Unit { toolchain, arch, source: copy.path(), user_args: &args };
    let obj = copy.path().with_extension("o");
    let compiled = unit.code_object(&obj).map_err(|e| {
        let first = e.diagnostics().and_then(|d| d.lines().find(|l| l.contains("error"))).map(str::to_string);
        first.unwrap_or_else(|| e.to_string())
    })?;
    measure::object_file_with(&obj, arch, &compiled.stderr, &measure::Options::default()).map_err(|e| e.to_string())
}

/// How `got` differs from the promise, if it does (code size aside).
fn mismatch(got: Option<Usage>, promised: Option<Usage>) -> Option<String> {
    let promised = promised?;
    let Some(got) = got else { return Some("no such kernel".into()) };
    let fields: [(&str, u32, u32); 8] = [
        ("VGPRs", got.vgpr, promised.vgpr),
        ("AGPRs", got.agpr, promised.agpr),
        ("SGPRs", got.sgpr, promised.sgpr),
        ("scratch bytes", got.scratch_bytes, promised.scratch_bytes),
        ("VGPR spills", got.vgpr_spills, promised.vgpr_spills),
        ("SGPR spills", got.sgpr_spills, promised.sgpr_spills),
        ("LDS bytes", got.lds_bytes, promised.lds_bytes),
        ("occupancy", got.occupancy, promised.occupancy),
    ];
    let diffs: Vec<String> =
        fields.iter().filter(|(_, g, p)| g != p).map(|(what, g, p)| format!("{what} {g} where the tuner measured {p}")).collect();
    (!diffs.is_empty()).then(|| diffs.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mismatches_name_every_number_but_code_size() {
        let promised = Usage { vgpr: 48, occupancy: 8, code_bytes: 100, ..Default::default() };
        assert_eq!(mismatch(Some(Usage { code_bytes: 120, ..promised }), Some(promised)), None);
        assert_eq!(
            mismatch(Some(Usage { vgpr: 50, occupancy: 7, ..promised }), Some(promised)).as_deref(),
            Some("VGPRs 50 where the tuner measured 48, occupancy 7 where the tuner measured 8")
        );
        assert_eq!(mismatch(None, Some(promised)).as_deref(), Some("no such kernel"));
    }

    #[test]
    fn undecided_kernels_may_change_but_not_for_the_worse() {
        let was = Usage { vgpr: 90, occupancy: 16, ..Default::default() };
        assert_eq!(worse(Some(Usage { vgpr: 84, ..was }), Some(was)), None);
        assert_eq!(worse(Some(Usage { occupancy: 12, ..was }), Some(was)).as_deref(), Some("occupancy 12 where it was 16"));
    }
}
