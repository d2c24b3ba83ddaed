//! `regtune tune`: per file and target, run the frontend once, search each
//! kernel's variants with the backend in the loop, keep the minimal set that
//! helps, verify the kept sets together, and record them in the decisions db.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use rayon::prelude::*;
use regtune_decisions::{Db, Entry, Param, Suggestion, Transforms, Usage};
use serde::Serialize;

use crate::measure::Measured;
use crate::occupancy::Limiter;
use crate::output::{Failure, Tabular};
use crate::report::{self, KernelReport};
use crate::search::{self, Objective, Outcome, Rule, Space};
use crate::session::{Inspection, Listing, Session};
use crate::target::Arch;
use crate::toolchain::Toolchain;
use crate::{launch, progress};

/// Whether noalias (an assumption about the caller) is tried and applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Noalias {
    Off,
    /// Measure and report, never apply (the default).
    Suggest,
    Apply,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockSize {
    /// Leave the launch bounds alone.
    Unset,
    /// The user states every launch uses at most N threads: apply it.
    Given(u32),
    /// Infer from the file's launch sites and only suggest.
    Auto,
}

impl std::str::FromStr for BlockSize {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s == "auto" {
            return Ok(BlockSize::Auto);
        }
        match s.parse::<u32>() {
            Ok(n) if (1..=1024).contains(&n) => Ok(BlockSize::Given(n)),
            _ => Err(format!("`{s}` is not a block size: use 1..1024 or `auto`")),
        }
    }
}

pub struct Options {
    pub objective: Objective,
    pub noalias: Noalias,
    pub block_size: BlockSize,
    pub allow_scratch: bool,
    pub diff: bool,
    /// How many noalias candidates to try, in the heuristic's order.
    pub noalias_candidates: usize,
}

/// One kernel's tuning result: the report's keys (with the usage after
/// tuning) plus before/after, what was applied and what is only suggested.
#[derive(Debug, Clone, Serialize)]
pub struct KernelTuning {
    #[serde(flatten)]
    pub report: KernelReport,
    pub before: Usage,
    pub after: Usage,
    pub applied: Vec<String>,
    pub suggested: Vec<String>,
    /// One line of why.
    pub why: String,
    /// What each suggestion would do, and what to check before accepting it.
    pub suggestions: Vec<String>,
    /// Variants compiled for this kernel.
    pub variants: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// What limited occupancy before tuning (`report.limiter` is after).
    #[serde(skip)]
    pub limiter_before: Limiter,
    /// Every variant compiled for this kernel, for `batch --record-all`.
    #[serde(skip)]
    pub measured: Vec<Measurement>,
    #[serde(skip)]
    pub(crate) entry: Entry,
}

/// One variant compile of one kernel: its transforms, the usage the backend
/// reported (None: it failed to build) and the compile's wall time.
#[derive(Debug, Clone, Serialize)]
pub struct Measurement {
    pub transforms: Transforms,
    pub usage: Option<Usage>,
    pub seconds: f64,
}

/// Tune every kernel of every file on every target, and update the db.
pub fn run(
    toolchain: &Toolchain,
    plugin: &Path,
    files: &[PathBuf],
    archs: &[Arch],
    user_args: &[String],
    options: &Options,
    db_path: &Path,
) -> (Vec<KernelTuning>, Vec<Failure>) {
    let confirmed = Db::load(db_path).unwrap_or_default();
    let jobs: Vec<(&PathBuf, &Arch)> = files.iter().flat_map(|f| archs.iter().map(move |a| (f, a))).collect();
    let bar = progress::bar(jobs.len() as u64, "tuning");
    let results: Vec<Result<Vec<KernelTuning>, Failure>> = jobs
        .par_iter()
        .map(|(file, arch)| {
            let r = tune_unit(toolchain, plugin, file, arch, user_args, options, &confirmed).and_then(|rows| {
                if rows.is_empty() {
                    Err(Failure::new(format!("{} defines no kernels (no __global__ functions for {arch})", file.display())))
                } else {
                    Ok(rows)
                }
            });
            bar.inc(1);
            r
        })
        .collect();
    bar.finish_and_clear();
    let mut rows = Vec::new();
    let mut failures = Vec::new();
    for r in results {
        match r {
            Ok(mut v) => rows.append(&mut v),
            Err(f) => failures.push(f),
        }
    }
    if !rows.is_empty() {
        let saved = Db::update(db_path, |db| {
            for row in &rows {
                db.insert(row.entry.clone());
            }
        });
        if let Err(e) = saved {
            failures.push(Failure::new(e.to_string()));
        }
    }
    (rows, failures)
}

fn session_failure(e: crate::session::SessionError) -> Failure {
    match e {
        crate::session::SessionError::Compile(c) => report::compile_failure(c),
        other => Failure::new(other.to_string()),
    }
}

/// One file on one target; no rows when it defines no kernels. `known` is
/// the db as loaded: confirmed suggestions in it are applied.
pub fn tune_unit(
    toolchain: &Toolchain,
    plugin: &Path,
    file: &Path,
    arch: &Arch,
    user_args: &[String],
    options: &Options,
    known: &Db,
) -> Result<Vec<KernelTuning>, Failure> {
    let (session, baseline, locations) = Session::start(toolchain, arch, plugin, file, user_args).map_err(session_failure)?;
    if baseline.is_empty() {
        return Ok(vec![]);
    }
    let inspections = session.inspect().map_err(session_failure)?;
    let source = std::fs::read_to_string(file).unwrap_or_default();

    let mut plans: Vec<Plan> = baseline
        .par_iter()
        .map(|base| {
            let previous = known.lookup(&base.symbol, arch.processor(), Some(&session.input_hash)).next();
            plan_kernel(&session, base, &source, inspections.get(&base.symbol), previous, options)
        })
        .collect();

    // The kept sets together, as the build will apply them: a kernel whose
    // result changes for the worse next to the others falls back to plain.
    let finals = loop {
        let variant: Vec<(String, Transforms)> = plans.iter().map(|p| (p.symbol.clone(), p.outcome.transforms.clone())).collect();
        let measured = session.measure(&variant).map_err(session_failure)?;
        let regressed: Vec<usize> = plans
            .iter()
            .enumerate()
            .filter(|(_, p)| !p.outcome.transforms.is_empty())
            .filter(|(_, p)| measured.iter().find(|m| m.symbol == p.symbol).is_none_or(|m| !p.rule.improves(&m.usage)))
            .map(|(i, _)| i)
            .collect();
        if regressed.is_empty() {
            break measured;
        }
        for i in regressed {
            plans[i].outcome = Outcome { transforms: Transforms::default(), usage: plans[i].rule.baseline, tried: vec![] };
            plans[i].combined_regressed = true;
        }
    };

    let file_name = file.display().to_string();
    plans
        .into_iter()
        .map(|plan| {
            let base = baseline.iter().find(|m| m.symbol == plan.symbol).expect("planned from baseline");
            let after = finals.iter().find(|m| m.symbol == plan.symbol).cloned().unwrap_or_else(|| base.clone());
            let location = locations.iter().find(|l| l.symbol == plan.symbol);
            let diff = if options.diff && !plan.outcome.transforms.is_empty() {
                Some(diff_listings(&session, &plan.symbol, &plan.outcome.transforms).map_err(session_failure)?)
            } else {
                None
            };
            Ok(finish(plan, base, after, arch, location, &file_name, &session, diff))
        })
        .collect()
}

/// One kernel's searches and their outcome.
struct Plan {
    symbol: String,
    rule: Rule,
    outcome: Outcome,
    /// Better results that need an assumption about the caller.
    suggestion: Option<(Transforms, Usage, String)>,
    variants: usize,
    combined_regressed: bool,
    measured: Vec<Measurement>,
}

fn plan_kernel(
    session: &Session<'_>,
    base: &Measured,
    source: &str,
    inspection: Option<&Inspection>,
    previous: Option<&Entry>,
    options: &Options,
) -> Plan {
    let noalias: Vec<Param> = match (options.noalias, inspection) {
        (Noalias::Off, _) | (_, None) => vec![],
        (_, Some(i)) => i.noalias_candidates.iter().take(options.noalias_candidates).cloned().collect(),
    };
    let target = session.arch.target();
    let rule = Rule { objective: options.objective, allow_scratch: options.allow_scratch, baseline: base.usage };
    if at_best(&rule, target.max_waves_per_simd) {
        let outcome = Outcome { transforms: Transforms::default(), usage: base.usage, tried: vec![] };
        return Plan {
            symbol: base.symbol.clone(),
            rule,
            outcome,
            suggestion: None,
            variants: 0,
            combined_regressed: false,
            measured: vec![],
        };
    }
    // Occupancy steps the register allocator could plausibly reach: each
    // step above the current one whose VGPR budget is within a third of
    // what the kernel uses now.
    let waves: Vec<u32> = (base.usage.occupancy + 1..=target.max_waves_per_simd)
        .filter(|&w| 3 * target.max_vgprs_for_waves(w) >= 2 * base.usage.vgpr)
        .collect();
    let confirmed: Transforms = previous.map(Entry::effective).unwrap_or_default();
    // Transforms that would change nothing are not tried (no inspection:
    // try everything).
    let facts = Space {
        pow2: inspection.is_none_or(|i| i.pow2),
        sink: true,
        unroll_caps: if inspection.is_none_or(|i| i.unroll_cap) { vec![1, 2, 4, 8] } else { vec![] },
        noalias: if options.noalias == Noalias::Apply { noalias.clone() } else { confirmed.noalias.clone() },
        waves,
        launch_bounds: match options.block_size {
            BlockSize::Given(n) => Some(n),
            _ => confirmed.launch_bounds,
        },
    };
    let log: Mutex<Vec<Measurement>> = Mutex::new(Vec::new());
    let eval = |t: &Transforms| -> Option<Usage> {
        let start = Instant::now();
        let usage = session
            .measure(&[(base.symbol.clone(), t.clone())])
            .ok()
            .and_then(|measured| measured.into_iter().find(|m| m.symbol == base.symbol).map(|m| m.usage));
        // The session caches: a variant the second search repeats is logged once, with its real compile time.
        let mut log = log.lock().expect("variant log lock");
        if !log.iter().any(|m| &m.transforms == t) {
            log.push(Measurement { transforms: t.clone(), usage, seconds: start.elapsed().as_secs_f64() });
        }
        usage
    };
    let outcome = search::search(&facts, &rule, &eval);

    // The same search with the caller assumptions the user has not stated.
    let kernel_name = base_name(&report::demangle(&base.symbol));
    let inferred_block = match options.block_size {
        BlockSize::Auto if facts.launch_bounds.is_none() => launch::block_size(source, &kernel_name),
        _ => None,
    };
    let assumed_noalias = options.noalias == Noalias::Suggest && !noalias.is_empty();
    let mut suggestion = None;
    let mut variants = outcome.tried.len() - 1;
    if assumed_noalias || inferred_block.is_some() {
        let mut wider = facts.clone();
        if assumed_noalias {
            wider.noalias = noalias;
        }
        wider.launch_bounds = wider.launch_bounds.or(inferred_block);
        let better = search::search(&wider, &rule, &eval);
        variants += better.tried.iter().filter(|(t, _)| !outcome.tried.iter().any(|(o, _)| o == t)).count() - 1;
        if rule.improves(&better.usage) && rule.compare(&better.usage, &outcome.usage) == std::cmp::Ordering::Greater {
            let assumed = Transforms {
                noalias: better.transforms.noalias.iter().filter(|p| !facts.noalias.contains(p)).cloned().collect(),
                launch_bounds: better.transforms.launch_bounds.filter(|_| facts.launch_bounds.is_none()),
                ..Default::default()
            };
            if !assumed.is_empty() {
                let message = suggestion_message(&assumed, &outcome.usage, &better.usage);
                suggestion = Some((assumed, better.usage, message));
            }
        }
    }
    let measured = log.into_inner().expect("variant log lock");
    Plan { symbol: base.symbol.clone(), rule, outcome, suggestion, variants, combined_regressed: false, measured }
}

/// Nothing can beat the plain build: top occupancy and, for `no-spill`,
/// nothing spilled.
fn at_best(rule: &Rule, max_waves: u32) -> bool {
    let b = &rule.baseline;
    let clean = b.vgpr_spills + b.sgpr_spills == 0 && (rule.allow_scratch || b.scratch_bytes == 0);
    b.occupancy >= max_waves && (rule.objective == Objective::Occupancy || clean)
}

/// "ns::lbm_collide<float>(double*, ...)" → "lbm_collide", as launches name it.
fn base_name(demangled: &str) -> String {
    let no_args = report::short_name(demangled);
    let no_template = no_args.split('<').next().unwrap_or(no_args);
    no_template.rsplit("::").next().unwrap_or(no_template).trim().to_string()
}

fn suggestion_message(assumed: &Transforms, now: &Usage, then: &Usage) -> String {
    let spills = |u: &Usage| u.vgpr_spills + u.sgpr_spills;
    let mut effect = format!("would reach occupancy {} ({} → {} VGPRs", then.occupancy, now.vgpr, then.vgpr);
    if spills(now) != spills(then) {
        effect.push_str(&format!(", spills {} → {}", spills(now), spills(then)));
    }
    effect.push(')');
    let mut parts = Vec::new();
    if !assumed.noalias.is_empty() {
        let names: Vec<String> = assumed.noalias.iter().map(|p| format!("`{p}`")).collect();
        parts.push(format!(
            "`__restrict__` on {} {effect} — verify that {} never overlap{} another argument",
            names.join(", "),
            names.join(", "),
            if names.len() == 1 { "s" } else { "" }
        ));
    }
    if let Some(n) = assumed.launch_bounds {
        parts.push(format!(
            "`__launch_bounds__({n})` {effect} — every launch in this file uses {n} threads; confirm no other caller uses more"
        ));
    }
    parts.join("; ")
}

#[allow(clippy::too_many_arguments)]
fn finish(
    plan: Plan,
    base: &Measured,
    after: Measured,
    arch: &Arch,
    location: Option<&crate::compile::Location>,
    file: &str,
    session: &Session<'_>,
    diff: Option<String>,
) -> KernelTuning {
    let applied = plan.outcome.transforms.labels();
    let (before_u, after_u) = (base.usage, after.usage);
    let max_waves = arch.target().max_waves_per_simd;
    let why = if at_best(&plan.rule, max_waves) {
        format!("already at {}'s maximum occupancy ({max_waves} waves/SIMD); nothing to gain", arch.processor())
    } else if plan.combined_regressed {
        "its best variant lost its gain when combined with the other kernels' decisions; kept the plain compile".to_string()
    } else if applied.is_empty() {
        match plan.objective_gap() {
            Some(g) => g,
            None => "nothing tried improved on the plain compile; kept it".to_string(),
        }
    } else {
        format!(
            "{}: occupancy {} → {}, VGPRs {} → {}, spills {} → {}",
            applied.join(" + "),
            before_u.occupancy,
            after_u.occupancy,
            before_u.vgpr,
            after_u.vgpr,
            before_u.vgpr_spills + before_u.sgpr_spills,
            after_u.vgpr_spills + after_u.sgpr_spills
        )
    };
    let (suggested, suggestions, suggested_entries) = match &plan.suggestion {
        Some((t, u, msg)) => (
            t.labels(),
            vec![msg.clone()],
            vec![Suggestion { transforms: t.clone(), usage: *u, message: msg.clone(), confirmed: false }],
        ),
        None => (vec![], vec![], vec![]),
    };
    let report = KernelReport::new(after, arch, location, file);
    let entry = Entry {
        symbol: plan.symbol.clone(),
        arch: arch.processor().to_string(),
        input_hash: session.input_hash.clone(),
        name: report.name.clone(),
        file: report.file.clone(),
        transforms: plan.outcome.transforms.clone(),
        suggested: suggested_entries,
        before: Some(before_u),
        after: Some(after_u),
    };
    KernelTuning {
        report,
        before: before_u,
        after: after_u,
        applied,
        suggested,
        why,
        suggestions,
        variants: plan.variants,
        diff,
        limiter_before: base.limiter,
        measured: plan.measured,
        entry,
    }
}

impl Plan {
    /// Why nothing was applied, from the closest miss.
    fn objective_gap(&self) -> Option<String> {
        let best = self
            .outcome
            .tried
            .iter()
            .filter(|(t, u)| !t.is_empty() && self.rule.admissible(u))
            .max_by(|a, b| self.rule.compare(&a.1, &b.1))?;
        let goal = match self.rule.objective {
            Objective::Occupancy => "raised occupancy without more spills",
            Objective::NoSpill => "removed spills or raised occupancy",
        };
        Some(format!(
            "no variant {goal} (closest: {}, {} → {} VGPRs at occupancy {}); kept the plain compile",
            best.0.labels().join(" + "),
            self.rule.baseline.vgpr,
            best.1.vgpr,
            best.1.occupancy
        ))
    }
}

/// Unified diffs of the kernel's optimized IR and assembly, plain vs tuned.
fn diff_listings(session: &Session<'_>, symbol: &str, t: &Transforms) -> Result<String, crate::session::SessionError> {
    let tuned = [(symbol.to_string(), t.clone())];
    let mut out = String::new();
    for (kind, extract, label) in [
        (Listing::Ir, ir_function as fn(&str, &str) -> String, "IR"),
        (Listing::Asm, asm_function as fn(&str, &str) -> String, "asm"),
    ] {
        let before = extract(&session.listing(&[], kind)?, symbol);
        let after = extract(&session.listing(&tuned, kind)?, symbol);
        let diff = similar::TextDiff::from_lines(&before, &after);
        out.push_str(
            &diff
                .unified_diff()
                .context_radius(3)
                .header(&format!("{symbol} ({label}, plain)"), &format!("{symbol} ({label}, tuned)"))
                .to_string(),
        );
    }
    Ok(out)
}

/// The `define ... @symbol(...) { ... }` block of an IR listing.
fn ir_function(listing: &str, symbol: &str) -> String {
    let start = format!("@{symbol}(");
    let mut out = String::new();
    let mut inside = false;
    for line in listing.lines() {
        if line.starts_with("define") && line.contains(&start) {
            inside = true;
        }
        if inside {
            out.push_str(line);
            out.push('\n');
            if line == "}" {
                break;
            }
        }
    }
    out
}

/// The assembly from `symbol:` to its `.Lfunc_end` label.
fn asm_function(listing: &str, symbol: &str) -> String {
    let start = format!("{symbol}:");
    let mut out = String::new();
    let mut inside = false;
    for line in listing.lines() {
        if line.starts_with(&start) {
            inside = true;
        }
        if inside {
            if line.starts_with(".Lfunc_end") {
                break;
            }
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

impl Tabular for KernelTuning {
    fn header() -> Vec<&'static str> {
        vec!["kernel", "arch", "VGPR", "spills", "occupancy", "applied", "suggested", "why"]
    }

    fn cells(&self) -> Vec<String> {
        let (b, a) = (&self.before, &self.after);
        let arrow = |x: u32, y: u32| if x == y { x.to_string() } else { format!("{x} → {y}") };
        let list = |v: &[String]| if v.is_empty() { "-".to_string() } else { v.join(", ") };
        vec![
            report::short_name(&self.report.name).to_string(),
            self.report.arch.clone(),
            arrow(b.vgpr, a.vgpr),
            arrow(b.vgpr_spills + b.sgpr_spills, a.vgpr_spills + a.sgpr_spills),
            arrow(b.occupancy, a.occupancy),
            list(&self.applied),
            list(&self.suggested),
            self.why.clone(),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_names_match_how_launches_spell_kernels() {
        assert_eq!(base_name("lbm_collide(double*, double*)"), "lbm_collide");
        assert_eq!(base_name("void ns::stencil<float, 4>(float*)"), "stencil");
    }

    #[test]
    fn suggestions_say_what_to_verify() {
        let t = Transforms { noalias: vec![Param { index: 13, name: "g14".into() }], ..Default::default() };
        let now = Usage { vgpr: 96, occupancy: 5, ..Default::default() };
        let then = Usage { vgpr: 84, occupancy: 6, ..Default::default() };
        assert_eq!(
            suggestion_message(&t, &now, &then),
            "`__restrict__` on `g14` would reach occupancy 6 (96 → 84 VGPRs) — verify that `g14` never overlaps another argument"
        );
    }

    #[test]
    fn kernel_functions_are_cut_from_listings() {
        let ir = "define void @a() {\n  ret void\n}\ndefine amdgpu_kernel void @k(ptr %p) #0 {\nentry:\n  ret void\n}\n";
        assert_eq!(ir_function(ir, "k"), "define amdgpu_kernel void @k(ptr %p) #0 {\nentry:\n  ret void\n}\n");
        let asm = "a:\n  s_endpgm\n.Lfunc_end0:\nk:\n  s_load_dword s0\n  s_endpgm\n.Lfunc_end1:\n";
        assert_eq!(asm_function(asm, "k"), "k:\n  s_load_dword s0\n  s_endpgm\n");
    }
}
