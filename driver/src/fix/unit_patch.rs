//! One translation unit's part of the patch, before any verification: the
//! decisions current for its build, the files it reads (files.rs), and the
//! edits each kernel's decision asks for, in whichever of the project's
//! files holds the code (the unit's own, an included header or `.cu`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use regtune_decisions::{Db, Transforms};

use crate::gpu::compile::{self, Unit};
use crate::gpu::{Arch, SourceCompiler};
use crate::names;
use crate::output::Failure;
use crate::toolchain::nvcc::Nvcc;
use crate::toolchain::Toolchain;

use super::ast::{self, Node};
use super::debug_ir::{self, Changes};
use super::edit::Edit;
use super::files::{Files, Project};
use super::{attributes, instances, locate, nvcc, pow2, restrict, sink, unroll};
use super::{Decision, Kernel, Notes, Options, Source};

/// What every unit is built with.
pub(crate) struct Fixing<'a> {
    pub toolchain: &'a Toolchain,
    pub plugin: &'a Path,
    pub archs: &'a [Arch],
    /// The user's flags: clang's, or nvcc's where nvcc builds the units.
    pub user_args: &'a [String],
    /// The flags of what fix reads with clang (its AST, its debug IR): the
    /// user's, or the nvcc flags clang reads alike ([`nvcc::clang_args`]).
    pub clang_args: &'a [String],
    /// nvcc builds the units (`--compiler nvcc`).
    pub nvcc: Option<&'a Nvcc>,
    /// Whose attributes the patch writes.
    pub compiler: SourceCompiler,
    pub db: &'a Db,
    pub options: &'a Options,
    pub project: &'a Project,
}

/// A unit's decisions and edits.
pub(crate) struct Planned {
    /// The unit's file, as given.
    pub path: PathBuf,
    /// Every kernel's decision per target, empty ones included.
    pub decisions: Vec<Decision>,
    /// The files it reads (canonical paths).
    pub reads: BTreeSet<Arc<str>>,
    /// One per kernel and transform, before they are merged.
    pub edits: Vec<Edit>,
    /// Kernels left out before any build, and why.
    pub skipped: BTreeMap<String, String>,
    /// Each decided kernel's definition: (file, start, end).
    pub spans: BTreeMap<String, (Arc<str>, usize, usize)>,
    /// Where each decided kernel's body is spelled, and what it shares it
    /// with (a template's instantiations, a macro's expansions).
    pub bodies: BTreeMap<String, ((Arc<str>, usize), &'static str)>,
    /// nvcc: kernel templates whose instantiations take register caps of
    /// their own (instances.rs); theirs take no other edit.
    pub capped: Vec<instances::Capped>,
    /// nvcc: a kernel's `-maxrregcount` decision as its own cap,
    /// the edits of each further cap to try (by symbol and cap).
    pub retries: BTreeMap<(String, u32), Vec<Edit>>,
    pub notes: Notes,
}

impl Planned {
    /// A unit's plan before any edit: its decisions and the files it reads.
    pub(crate) fn new(path: &Path, decisions: Vec<Decision>, reads: BTreeSet<Arc<str>>) -> Planned {
        Planned {
            path: path.to_path_buf(),
            decisions,
            reads,
            edits: vec![],
            skipped: BTreeMap::new(),
            spans: BTreeMap::new(),
            bodies: BTreeMap::new(),
            capped: vec![],
            retries: BTreeMap::new(),
            notes: Notes::new(path),
        }
    }

    pub(crate) fn active(&self) -> impl Iterator<Item = &Decision> {
        self.decisions.iter().filter(|d| !d.transforms.is_empty())
    }
}

/// Plan one unit; the files it reads go into `files`.
pub(crate) fn plan(ctx: &Fixing<'_>, path: &Path, files: &mut Files) -> Result<Planned, Failure> {
    std::fs::File::open(path).map_err(|e| Failure::new(format!("cannot read {}: {e}", path.display())))?;
    let mut notes = Notes::new(path);
    let mut planned = Planned::new(path, vec![], BTreeSet::new());

    // The decisions current for this build, per target.
    let code_dir = crate::measure::code::dir(&ctx.options.db);
    for arch in ctx.archs {
        let unit = Unit { toolchain: ctx.toolchain, arch, source: path, user_args: ctx.clang_args };
        let (hash, preprocessed) = match ctx.nvcc {
            Some(n) => nvcc::input(n, arch, path, ctx.user_args)?,
            None => input_hash(&unit)?,
        };
        planned.reads.extend(files.add_unit(ctx.project, &preprocessed));
        let found: Vec<Decision> = ctx
            .db
            .kernels
            .values()
            .filter(|e| e.arch == arch.processor() && e.input_hash == hash)
            .map(|e| {
                let transforms = e.effective();
                // A suggestion the user confirmed in the db is promised its own measurement.
                // (One a measurement chose among the search's candidates, its own.)
                let promised = match transforms == e.transforms {
                    true => e.after,
                    false => e
                        .suggested
                        .iter()
                        .find(|s| s.transforms == transforms)
                        .map(|s| s.usage)
                        .or_else(|| e.candidates.iter().find(|c| c.transforms == transforms).map(|c| c.usage))
                        .or(e.after),
                };
                let mut d = Decision {
                    symbol: e.symbol.clone(),
                    arch: arch.clone(),
                    transforms,
                    promised,
                    before: e.before,
                    code: None,
                    as_maxnreg: None,
                };
                if ctx.options.with_suggestions {
                    if let Some(s) = e.suggested.iter().find(|s| !s.confirmed) {
                        d.transforms = s.transforms.clone();
                        d.promised = Some(s.usage);
                    }
                }
                // nvcc's patch is compared with the cubin tune kept of the candidate.
                if ctx.nvcc.is_some() && !d.transforms.is_empty() {
                    d.code = Some(crate::measure::code::path(&code_dir, e, &d.transforms)).filter(|p| p.is_file());
                }
                // nvcc's -maxrregcount=R alone: the kernel's own __maxnreg__ (nvcc.rs).
                let alone = d.transforms.maxrregcount_alone();
                if let (Some(r), SourceCompiler::Nvcc { maxnreg: true }) = (alone, ctx.compiler) {
                    let measured = e.candidates.iter().map(|c| (&c.transforms, &c.usage));
                    d.as_maxnreg = Some(nvcc::AsMaxnreg::new(r, d.promised, measured, path));
                }
                d
            })
            .collect();
        if found.is_empty() {
            notes.unit(format!(
                "no decisions for {arch} match this build (input hash {}); run `regtune tune` on it with the same flags first",
                &hash[..12]
            ));
        }
        planned.decisions.extend(found);
    }
    // What nvcc's builds cannot be given in the source.
    let refused: BTreeMap<String, String> = match ctx.nvcc {
        Some(_) => {
            let spelled = ctx.compiler == (SourceCompiler::Nvcc { maxnreg: true });
            planned
                .decisions
                .iter()
                .filter_map(|d| nvcc::refused(&d.transforms, path, spelled).map(|why| (d.symbol.clone(), why)))
                .collect()
        }
        None => BTreeMap::new(),
    };
    plan_edits(ctx, &Fresh { plugin: ctx.plugin }, path, files, planned, notes, refused)
}

/// How [`plan_edits`] reads a unit with clang: `regtune fix` reads afresh;
/// tune's nvcc builds of rewrites (spell.rs) keep what no variant changes.
pub(crate) trait Reader {
    /// The AST of the functions named (ast::dump).
    fn ast(&self, unit: &Unit<'_>, names: &[String]) -> Result<Vec<Node>, Failure>;
    /// Where the decisions' early transforms act ([`locate::changes`]).
    fn changes(&self, unit: &Unit<'_>, decisions: &[&Decision], uncapped: &BTreeSet<String>) -> Result<Changes, String>;
}

/// Each read its own clang run.
struct Fresh<'a> {
    plugin: &'a Path,
}

impl Reader for Fresh<'_> {
    fn ast(&self, unit: &Unit<'_>, names: &[String]) -> Result<Vec<Node>, Failure> {
        ast::dump(unit, names).map_err(|e| Failure::new(e.to_string()))
    }

    fn changes(&self, unit: &Unit<'_>, decisions: &[&Decision], uncapped: &BTreeSet<String>) -> Result<Changes, String> {
        locate::changes(unit, self.plugin, decisions, uncapped)
    }
}

/// The edits of `planned`'s decisions (those not `refused`), in the files
/// `files` holds: fix's plan once the decisions are found, and what tune's
/// nvcc builds write for a variant's rewrites (spell.rs).
pub(crate) fn plan_edits(
    ctx: &Fixing<'_>,
    reader: &dyn Reader,
    path: &Path,
    files: &Files,
    mut planned: Planned,
    mut notes: Notes,
    refused: BTreeMap<String, String>,
) -> Result<Planned, Failure> {
    let active: Vec<&Decision> =
        planned.decisions.iter().filter(|d| !d.transforms.is_empty() && !refused.contains_key(&d.symbol)).collect();
    if active.is_empty() {
        planned.skipped = refused;
        planned.notes = notes;
        return Ok(planned);
    }

    // Where the early transforms (pow2, unroll caps) act, per target.
    let mut changes: Vec<(&Arch, debug_ir::Changes)> = Vec::new();
    for arch in ctx.archs {
        let here: Vec<&Decision> = active.iter().copied().filter(|d| &d.arch == arch).collect();
        if here.iter().any(|d| d.transforms.pow2 || d.transforms.unroll_cap.is_some()) {
            let unit = Unit { toolchain: ctx.toolchain, arch, source: path, user_args: ctx.clang_args };
            let uncapped: BTreeSet<String> = planned
                .decisions
                .iter()
                .filter(|d| &d.arch == arch && d.transforms.unroll_cap.is_none())
                .map(|d| d.symbol.clone())
                .collect();
            let c = reader.changes(&unit, &here, &uncapped).map_err(|e| Failure::new(format!("{}: {e}", path.display())))?;
            changes.push((arch, c));
        }
    }

    // The AST of every function the edits touch, once per GPU family.
    let mut names: BTreeSet<String> = active.iter().map(|d| names::unqualified(&d.symbol)).collect();
    for (_, c) in &changes {
        names.extend(c.removed_calls.iter().map(|r| names::unqualified(&r.function)));
        names.extend(c.loops.iter().map(|l| names::unqualified(&l.function)));
    }
    let names: Vec<String> = names.into_iter().filter(|n| !n.is_empty()).collect();
    let mut nodes: Vec<Node> = Vec::new();
    let mut families_seen = Vec::new();
    for arch in ctx.archs {
        if families_seen.contains(&arch.vendor()) {
            continue;
        }
        families_seen.push(arch.vendor());
        let unit = Unit { toolchain: ctx.toolchain, arch, source: path, user_args: ctx.clang_args };
        nodes.extend(reader.ast(&unit, &names)?);
    }
    let source = Source { files, nodes: &nodes };

    // The edits, per kernel and target; nvcc: a kernel template's
    // instantiations with caps of their own, through a trait.
    let (mut edits, capped) = match ctx.compiler {
        SourceCompiler::Nvcc { maxnreg: true } => instances::plan(&source, files, &planned.decisions, &active, ctx.archs, &mut notes),
        _ => (vec![], vec![]),
    };
    let per_instance: BTreeSet<String> = capped.iter().flat_map(|c| c.capped.iter().cloned()).collect();
    let mut skipped: BTreeMap<String, String> = BTreeMap::new();
    for (symbol, ds) in &group_by_symbol(&active) {
        let Some((decl, parent)) = source.definition(symbol) else {
            skipped.insert(symbol.clone(), "its definition is not in the unit's AST".into());
            continue;
        };
        let Some(file) = decl.begin.as_ref().map(|b| b.file.clone()) else {
            skipped.insert(symbol.clone(), "clang gives its definition no place".into());
            continue;
        };
        let Some(text) = files.text(&file) else {
            let why = files.refusal(&file).unwrap_or_default();
            skipped.insert(symbol.clone(), format!("it is defined in {}, {why}; fix edits only the project's files", files.shown(&file)));
            continue;
        };
        let template = parent.is_some_and(|p| p.kind == "FunctionTemplateDecl");
        let kernel =
            Kernel { symbol, name: source.function_name(symbol), decl, file: &file, text, shown: files.shown(&file), files, template };
        if let (Some(b), Some(e)) = (&decl.begin, &decl.end) {
            planned.spans.insert(symbol.clone(), (file.clone(), b.offset, e.token_end()));
        }
        if per_instance.contains(symbol) {
            // Its cap is the trait's; nothing else of it is in the template's text.
            continue;
        }
        if let Some(at) = kernel.body().and_then(|b| b.begin.as_ref()).map(|b| b.spelled()) {
            let what = if template {
                "template"
            } else if kernel.defined_by_macro() {
                "macro"
            } else {
                "kernel"
            };
            planned.bodies.insert(symbol.clone(), ((at.file.clone(), at.offset), what));
        }
        edits.extend(attributes::edit(&kernel, ds, ctx.compiler, &mut notes));
        // A -maxrregcount as the kernel's own cap: the edit of each further cap to try.
        for f in ds.iter().filter_map(|d| d.as_maxnreg.as_ref()) {
            for &(cap, _) in &f.tries[1..] {
                let retried: Vec<Decision> = ds
                    .iter()
                    .map(|d| match &d.as_maxnreg {
                        Some(g) if g == f => {
                            let as_maxnreg = nvcc::AsMaxnreg { tries: vec![(cap, String::new())], at: 0, ..f.clone() };
                            Decision { as_maxnreg: Some(as_maxnreg), ..(*d).clone() }
                        }
                        _ => (*d).clone(),
                    })
                    .collect();
                let retried: Vec<&Decision> = retried.iter().collect();
                let edit = attributes::edit(&kernel, &retried, ctx.compiler, &mut Notes::new(path));
                planned.retries.insert((symbol.clone(), cap), edit.into_iter().collect());
            }
        }
        for d in ds {
            edits.extend(restrict::edits(&kernel, &d.transforms.noalias, &mut notes));
        }
        if ds.iter().any(|d| d.transforms.sink) {
            edits.extend(sink::edits(&kernel, &mut notes));
        }
    }
    for (arch, c) in &changes {
        let (active, skipped, callees) = (&active, &skipped, &c.callees);
        let unrolled = move |f: &str| owners(active, skipped, callees, arch, |t| t.unroll_cap.is_some(), f);
        let squared = move |f: &str| owners(active, skipped, callees, arch, |t| t.pow2, f);
        edits.extend(unroll::edits(&source, arch, &c.loops, &unrolled, ctx.compiler, &mut notes));
        for (at, why) in &c.unpatchable {
            let file = ast::canonical(&at.file);
            notes.file(&files.shown(&file), Some(at.line), format!("{why} ({arch})"));
        }
        edits.extend(pow2::edits(&source, &c.removed_calls, &squared, &mut notes));
    }
    for d in &active {
        if d.promised.is_none() {
            skipped.entry(d.symbol.clone()).or_insert_with(|| "the db holds no measured usage to verify it against".into());
        }
    }
    for (symbol, why) in refused {
        skipped.entry(symbol).or_insert(why);
    }
    planned.edits = edits;
    planned.skipped = skipped;
    planned.capped = capped;
    planned.notes = notes;
    Ok(planned)
}

/// The kernels a change in `function` on `arch` belongs to: a kernel's own
/// code is its own; a function several kernels reach is theirs together
/// (the plugin changes it only when all of them decided alike).
fn owners(
    active: &[&Decision],
    skipped: &BTreeMap<String, String>,
    callees: &BTreeMap<String, BTreeSet<String>>,
    arch: &Arch,
    wants: fn(&Transforms) -> bool,
    function: &str,
) -> Vec<String> {
    let here: Vec<&&Decision> =
        active.iter().filter(|d| &d.arch == arch && wants(&d.transforms) && !skipped.contains_key(&d.symbol)).collect();
    match here.iter().find(|d| d.symbol == function) {
        Some(d) => vec![d.symbol.clone()],
        None if active.iter().any(|d| d.symbol == function) => vec![],
        None => here.iter().filter(|d| debug_ir::reaches(callees, &d.symbol, function)).map(|d| d.symbol.clone()).collect(),
    }
}

fn group_by_symbol<'a>(active: &[&'a Decision]) -> BTreeMap<String, Vec<&'a Decision>> {
    let mut by: BTreeMap<String, Vec<&Decision>> = BTreeMap::new();
    for d in active {
        by.entry(d.symbol.clone()).or_default().push(d);
    }
    by
}

/// The input hash of the unit, as `tune` recorded it and the wrapper looks
/// it up, and the preprocessed text it hashes.
fn input_hash(unit: &Unit<'_>) -> Result<(String, String), Failure> {
    let dir = tempfile::tempdir().map_err(|e| Failure::new(format!("cannot create a temporary directory: {e}")))?;
    let out = dir.path().join("unit.i");
    let (hash, bytes) = unit.preprocess_and_hash(&out).map_err(compile::compile_failure)?;
    Ok((hash, String::from_utf8_lossy(&bytes).into_owned()))
}
