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
use crate::output::{self, Failure, Tabular};
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
    /// Where to keep each decided kernel's candidate code objects (plain,
    /// decided, suggested) for `regtune measure`; None: nowhere.
    pub code_dir: Option<PathBuf>,
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
    let (rows, mut failures) = output::partition(results);
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
    let measure_options = crate::measure::Options {
        block_size: match options.block_size {
            BlockSize::Given(n) => Some(n),
            _ => None,
        },
    };
    let (session, baseline, locations) =
        Session::start_with(toolchain, arch, plugin, file, user_args, measure_options).map_err(session_failure)?;
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
    let rows = plans
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
        .collect::<Result<Vec<KernelTuning>, Failure>>()?;
    if let Some(dir) = &options.code_dir {
        crate::runtime::code::store(&session, rows.iter().map(|r| &r.entry), dir).map_err(session_failure)?;
    }
    Ok(rows)
}

/// A better result that rests on assumptions about the caller.
struct Proposal {
    /// What only the user can vouch for (noalias, launch bounds).
    assumed: Transforms,
    /// The whole measured set, assumptions included: what confirming applies.
    transforms: Transforms,
    usage: Usage,
    message: String,
}

/// One kernel's searches and their outcome.
struct Plan {
    symbol: String,
    rule: Rule,
    outcome: Outcome,
    /// Better results that need an assumption about the caller.
    suggestion: Option<Proposal>,
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
    let rule = Rule { objective: options.objective, allow_scratch: options.allow_scratch, baseline: base.usage };
    if at_best(&rule, occupancy_ceiling(session.arch, base)) {
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
    let waves = occupancy_targets(session.arch, base);
    let confirmed: Transforms = previous.map(Entry::tuned).unwrap_or_default();
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
        // An assumption is only worth the user's review if it reaches what
        // the facts alone cannot: fewer registers or code alone do not count.
        if rule.improves_on(&better.usage, &outcome.usage) {
            let assumed = Transforms {
                noalias: better.transforms.noalias.iter().filter(|p| !facts.noalias.contains(p)).cloned().collect(),
                launch_bounds: better.transforms.launch_bounds.filter(|_| facts.launch_bounds.is_none()),
                ..Default::default()
            };
            if !assumed.is_empty() {
                let mut message = suggestion_message(&assumed, &better.transforms, &outcome.usage, &better.usage);
                if session.arch.is_nvptx() {
                    message = message.replace(" VGPRs", " registers");
                }
                suggestion =
                    Some(Proposal { assumed, transforms: better.transforms, usage: better.usage, message });
            }
        }
    }
    let measured = log.into_inner().expect("variant log lock");
    Plan { symbol: base.symbol.clone(), rule, outcome, suggestion, variants, combined_regressed: false, measured }
}

/// The most occupancy fewer registers could bring: the target's maximum
/// waves per SIMD on AMDGPU; on NVPTX the warps per SM that the kernel's
/// block size, shared memory and barriers allow.
fn occupancy_ceiling(arch: &Arch, base: &Measured) -> u32 {
    match (arch.nvidia(), &base.nvidia) {
        (Some(sm), Some(n)) => sm.max_warps(&nvidia_resources(n), n.block_size),
        (Some(sm), None) => sm.max_warps_per_sm,
        (None, _) => arch.target().max_waves_per_simd,
    }
}

fn nvidia_resources(n: &crate::measure::NvidiaUsage) -> crate::nvidia::KernelResources {
    crate::nvidia::KernelResources { regs: n.registers, static_smem: n.shared_bytes, dynamic_smem: 0, barriers: n.barriers }
}

/// Occupancy steps the register allocator could plausibly reach: each step
/// above the current one whose register budget is within a third of what
/// the kernel uses now. On NVPTX the steps are whole blocks of warps; the
/// plugin turns a step into a register cap (`nvvm.maxnreg`).
fn occupancy_targets(arch: &Arch, base: &Measured) -> Vec<u32> {
    let plausible = |budget: u32| 3 * budget >= 2 * base.usage.vgpr;
    match (arch.nvidia(), &base.nvidia) {
        (Some(sm), Some(n)) => {
            let k = nvidia_resources(n);
            let step = n.block_size.div_ceil(crate::nvidia::WARP_SIZE).max(1);
            let first = (base.usage.occupancy / step + 1) * step;
            (first..=sm.max_warps(&k, n.block_size))
                .step_by(step as usize)
                .filter(|&w| sm.max_regs_for_warps(&k, n.block_size, w).is_some_and(plausible))
                .collect()
        }
        (Some(_), None) => vec![],
        (None, _) => {
            let target = arch.target();
            (base.usage.occupancy + 1..=target.max_waves_per_simd).filter(|&w| plausible(target.max_vgprs_for_waves(w))).collect()
        }
    }
}

/// Transform labels as the target names them: on NVPTX an occupancy target
/// is in warps per SM ("warps-per-sm=48"; the db keeps it as `waves_per_eu`).
fn labels(t: &Transforms, arch: &Arch) -> Vec<String> {
    let labels = t.labels();
    if !arch.is_nvptx() {
        return labels;
    }
    labels.into_iter().map(|l| l.replace("waves-per-eu=", "warps-per-sm=")).collect()
}

/// What the register column counts.
fn registers_word(arch: &Arch) -> &'static str {
    if arch.is_nvptx() {
        "registers"
    } else {
        "VGPRs"
    }
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

fn suggestion_message(assumed: &Transforms, with: &Transforms, now: &Usage, then: &Usage) -> String {
    let spills = |u: &Usage| u.vgpr_spills + u.sgpr_spills;
    let mut effect = format!("would reach occupancy {} ({} → {} VGPRs", then.occupancy, now.vgpr, then.vgpr);
    if spills(now) != spills(then) {
        effect.push_str(&format!(", spills {} → {}", spills(now), spills(then)));
    }
    effect.push(')');
    let assumed_labels = assumed.labels();
    let others: Vec<String> = with.labels().into_iter().filter(|l| !assumed_labels.contains(l)).collect();
    if !others.is_empty() {
        effect.push_str(&format!(" with {}", others.join(" + ")));
    }
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
    let applied = labels(&plan.outcome.transforms, arch);
    let (before_u, after_u) = (base.usage, after.usage);
    let max_waves = occupancy_ceiling(arch, base);
    let registers = registers_word(arch);
    let why = if at_best(&plan.rule, max_waves) {
        match &base.nvidia {
            Some(n) => format!(
                "already at the most warps per SM {} allows at {} threads per block ({max_waves}); nothing to gain",
                arch.processor(),
                n.block_size
            ),
            None => format!("already at {}'s maximum occupancy ({max_waves} waves/SIMD); nothing to gain", arch.processor()),
        }
    } else if plan.combined_regressed {
        "its best variant lost its gain when combined with the other kernels' decisions; kept the plain compile".to_string()
    } else if applied.is_empty() {
        match plan.objective_gap(arch) {
            Some(g) => g,
            None => "nothing tried improved on the plain compile; kept it".to_string(),
        }
    } else {
        format!(
            "{}: occupancy {} → {}, {registers} {} → {}, spills {} → {}",
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
        Some(p) => (
            labels(&p.assumed, arch),
            vec![p.message.clone()],
            vec![Suggestion { transforms: p.transforms.clone(), usage: p.usage, message: p.message.clone(), confirmed: false }],
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
        measured: None,
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
    fn objective_gap(&self, arch: &Arch) -> Option<String> {
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
            "no variant {goal} (closest: {}, {} → {} {} at occupancy {}); kept the plain compile",
            labels(&best.0, arch).join(" + "),
            self.rule.baseline.vgpr,
            best.1.vgpr,
            registers_word(arch),
            best.1.occupancy
        ))
    }
}

/// Unified diffs of the kernel's optimized IR and assembly, plain vs tuned.
fn diff_listings(session: &Session<'_>, symbol: &str, t: &Transforms) -> Result<String, crate::session::SessionError> {
    let tuned = [(symbol.to_string(), t.clone())];
    let mut out = String::new();
    let asm = if session.arch.is_nvptx() { ptx_function as fn(&str, &str) -> String } else { asm_function };
    for (kind, extract, label) in [(Listing::Ir, ir_function as fn(&str, &str) -> String, "IR"), (Listing::Asm, asm, "asm")] {
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

/// The `.entry symbol(` ... `}` block of a PTX listing.
fn ptx_function(listing: &str, symbol: &str) -> String {
    let start = format!(".entry {symbol}(");
    cut(listing, |l| l.contains(&start), |l| l == "}", true)
}

/// The `define ... @symbol(...) { ... }` block of an IR listing.
fn ir_function(listing: &str, symbol: &str) -> String {
    let start = format!("@{symbol}(");
    cut(listing, |l| l.starts_with("define") && l.contains(&start), |l| l == "}", true)
}

/// The assembly from `symbol:` to its `.Lfunc_end` label.
fn asm_function(listing: &str, symbol: &str) -> String {
    let start = format!("{symbol}:");
    cut(listing, |l| l.starts_with(&start), |l| l.starts_with(".Lfunc_end"), false)
}

/// The lines from the first that `starts` to the next that `ends` (that
/// one kept when `keep_end`).
fn cut(listing: &str, starts: impl Fn(&str) -> bool, ends: impl Fn(&str) -> bool, keep_end: bool) -> String {
    let mut out = String::new();
    let mut lines = listing.lines().skip_while(|l| !starts(l));
    for line in lines.by_ref() {
        let last = ends(line);
        if !last || keep_end {
            out.push_str(line);
            out.push('\n');
        }
        if last {
            break;
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
            match &self.report.nvidia {
                Some(n) => format!("{} @{} ({})", arrow(b.occupancy, a.occupancy), n.block_size, n.block_size_from),
                None => arrow(b.occupancy, a.occupancy),
            },
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
            suggestion_message(&t, &t, &now, &then),
            "`__restrict__` on `g14` would reach occupancy 6 (96 → 84 VGPRs) — verify that `g14` never overlaps another argument"
        );
        let with = Transforms { pow2: true, waves_per_eu: Some(6), ..t.clone() };
        assert!(suggestion_message(&t, &with, &now, &then).contains("(96 → 84 VGPRs) with pow2 + waves-per-eu=6 — verify"));
    }

    #[test]
    fn kernel_functions_are_cut_from_listings() {
        let ir = "define void @a() {\n  ret void\n}\ndefine amdgpu_kernel void @k(ptr %p) #0 {\nentry:\n  ret void\n}\n";
        assert_eq!(ir_function(ir, "k"), "define amdgpu_kernel void @k(ptr %p) #0 {\nentry:\n  ret void\n}\n");
        let asm = "a:\n  s_endpgm\n.Lfunc_end0:\nk:\n  s_load_dword s0\n  s_endpgm\n.Lfunc_end1:\n";
        assert_eq!(asm_function(asm, "k"), "k:\n  s_load_dword s0\n  s_endpgm\n");
    }
}
