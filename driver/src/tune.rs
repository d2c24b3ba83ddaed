//! `regtune tune`: per file and target, run the frontend once, search each
//! kernel's variants with the backend in the loop, keep the minimal set that
//! helps, verify the kept sets together, and record them in the decisions db.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rayon::prelude::*;
use regtune_decisions::plugin::Inspection;
use regtune_decisions::{Db, Entry, Param, Reason, Suggestion, Transforms, Usage};
use serde::Serialize;

use crate::evidence::{Class, Evidence};
use crate::gpu::compile;
use crate::gpu::measure::Measured;
use crate::gpu::Limiter;
use crate::gpu::{self, Arch};
use crate::limits::Limits;
use crate::names;
use crate::output::{Failure, Tabular};
use crate::progress::{Progress, UnitProgress};
use crate::rdc::{self, LinkSet};
use crate::report::KernelReport;
use crate::search::{self, Objective, Outcome, Rule, Space};
use crate::session::{Listing, Session};
use crate::toolchain::Toolchain;
use crate::verdict::{self, Basis, Verdict};
use crate::{candidates, cost, launch};

/// Whether noalias (an assumption about the caller) is tried and applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Noalias {
    Off,
    /// Measure and report, never apply (the default).
    Suggest,
    Apply,
}

/// Whether pow2 may rewrite library pows that are not correctly rounded
/// (ocml's, libdevice's `__nv_pow`) where the call has no `afn`. Exact
/// rewrites, and any rewrite under `afn`, are always tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Pow2 {
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
    pub pow2: Pow2,
    pub block_size: BlockSize,
    pub allow_scratch: bool,
    pub diff: bool,
    /// How many noalias candidates to try, in the heuristic's order.
    pub noalias_candidates: usize,
    /// The longest one variant may compile [default: max(5 s, 10× the
    /// file's plain compile)].
    pub variant_timeout: Option<Duration>,
    /// The longest a file's search may run [default: 8× its plain compile].
    pub time_budget: Option<Duration>,
    /// Where to keep each decided kernel's candidate code objects (plain,
    /// decided, suggested) for `regtune measure`; None: nowhere.
    pub code_dir: Option<PathBuf>,
    /// Builds per kernel for `regtune measure` to choose from (the decision
    /// and suggestions count; [`crate::candidates`] adds the rest); 0: none.
    pub candidates: usize,
    /// What GPUs showed of each class of transform: the default applies
    /// unasked only what never lost ([`crate::evidence`]).
    pub evidence: Evidence,
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
    /// Why it was applied, suggested or left: "raises-occupancy",
    /// "removes-spills", "trades-ilp", "changes-rounding", ...
    pub reason: Reason,
    /// Why each suggested transform waits for the user.
    pub suggestion_reasons: Vec<Reason>,
    /// One line of why.
    pub why: String,
    /// What each suggestion would do, and what to check before accepting it.
    pub suggestions: Vec<String>,
    /// Variants compiled for this kernel.
    pub variants: usize,
    /// Variants stopped at the time limit (labels).
    pub timed_out: Vec<String>,
    /// The file's time budget ended this kernel's search early.
    pub budget_reached: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// What limited occupancy before tuning (`report.limiter` is after).
    #[serde(skip)]
    pub limiter_before: Limiter,
    /// The measured search's builds for `regtune measure` (labels), and
    /// those past `--candidates` or the time budget.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub candidates: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<String>,
    /// Every variant compiled for this kernel, for `batch --record-all`.
    #[serde(skip)]
    pub measured: Vec<Measurement>,
    #[serde(skip)]
    pub(crate) entry: Entry,
}

/// One variant compile of one kernel: its transforms, the usage the backend
/// reported (None: it did not build), how it ended and its wall time.
#[derive(Debug, Clone, Serialize)]
pub struct Measurement {
    pub transforms: Transforms,
    pub usage: Option<Usage>,
    pub status: VariantStatus,
    pub seconds: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum VariantStatus {
    #[serde(rename = "ok")]
    Ok,
    /// clang or ptxas failed on it.
    #[serde(rename = "failed")]
    Failed,
    /// Stopped at the variant time limit.
    #[serde(rename = "timed out")]
    TimedOut,
    /// Stopped because the file's time budget ended.
    #[serde(rename = "budget reached")]
    BudgetReached,
}

/// Tune every kernel of every file on every target, and update the db at
/// `db_path`. `confirmed` is that db as loaded (and checked writable,
/// [`Db::load_for_update`]) before anything compiled: confirmed
/// suggestions in it are applied.
#[allow(clippy::too_many_arguments)]
pub fn run(
    toolchain: &Toolchain,
    plugin: &Path,
    files: &[PathBuf],
    archs: &[Arch],
    user_args: &[String],
    options: &Options,
    confirmed: &Db,
    db_path: &Path,
) -> (Vec<KernelTuning>, Vec<Failure>) {
    let jobs: Vec<(&PathBuf, &Arch)> = files.iter().flat_map(|f| archs.iter().map(move |a| (f, a))).collect();
    let progress = Progress::new(jobs.len() as u64, "tuning");
    // -fgpu-rdc: every file compiled once per target, to link with the others.
    let sets = rdc::link_sets(toolchain, files, archs, user_args);
    let results: Vec<(Vec<KernelTuning>, Vec<Failure>)> = jobs
        .par_iter()
        .map(|(file, arch)| {
            let r = match sets.iter().find(|(a, _)| a.name() == arch.name()) {
                Some((_, Ok(set))) => tune_in_set(toolchain, plugin, set, file, files.len() > 1, options, confirmed, &progress),
                Some((_, Err(f))) => (vec![], vec![f.clone()]),
                None => match tune_unit(toolchain, plugin, file, arch, user_args, options, confirmed, &progress) {
                    Ok(rows) if rows.is_empty() => (vec![], vec![no_kernels(file, arch)]),
                    Ok(rows) => (rows, vec![]),
                    Err(f) => (vec![], vec![f]),
                },
            };
            progress.inc();
            r
        })
        .collect();
    progress.finish();
    let mut rows = Vec::new();
    let mut failures = Vec::new();
    for (r, f) in results {
        rows.extend(r);
        failures.extend(f);
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

fn no_kernels(file: &Path, arch: &Arch) -> Failure {
    Failure::new(format!("{} defines no kernels (no __global__ functions for {arch})", file.display()))
}

/// One file of a link set: its kernels tuned, and one failure per kernel
/// whose callees no file defines. With other files linked in, a file
/// without kernels is a library of device functions, not a failure.
#[allow(clippy::too_many_arguments)]
fn tune_in_set(
    toolchain: &Toolchain,
    plugin: &Path,
    set: &LinkSet,
    file: &Path,
    linked_with_others: bool,
    options: &Options,
    known: &Db,
    progress: &Progress,
) -> (Vec<KernelTuning>, Vec<Failure>) {
    if let Err(f) = set.unit(file) {
        return (vec![], vec![f]);
    }
    let mut failures = set.unresolved_failures(file, rdc::Given::Files { command: "tune", done: "tuned" });
    match tune_linked(toolchain, plugin, set, file, options, known, progress) {
        Ok(rows) if rows.is_empty() && failures.is_empty() && !linked_with_others => failures.push(no_kernels(file, &set.arch)),
        Ok(rows) => return (rows, failures),
        Err(f) => failures.insert(0, f),
    }
    (vec![], failures)
}

fn session_failure(e: crate::session::SessionError) -> Failure {
    match e {
        crate::session::SessionError::Compile(c) => compile::compile_failure(c),
        other => Failure::new(other.to_string()),
    }
}

/// One file on one target; no rows when it defines no kernels. `known` is
/// the db as loaded: confirmed suggestions in it are applied.
#[allow(clippy::too_many_arguments)]
pub(crate) fn tune_unit(
    toolchain: &Toolchain,
    plugin: &Path,
    file: &Path,
    arch: &Arch,
    user_args: &[String],
    options: &Options,
    known: &Db,
    progress: &Progress,
) -> Result<Vec<KernelTuning>, Failure> {
    let started = Instant::now();
    let line = progress.unit(format!("{} {}", file.display(), arch.processor()));
    let measure_options = crate::gpu::measure::Options {
        block_size: match options.block_size {
            BlockSize::Given(n) => Some(n),
            _ => None,
        },
    };
    let (session, baseline, locations) =
        Session::start_with(toolchain, arch, plugin, file, user_args, measure_options).map_err(session_failure)?;
    tune_session(&session, baseline, locations, started, options, known, progress, &line)
}

/// One `-fgpu-rdc` unit of `set`: its kernels measured through the device
/// link with the other units; those whose callees no unit defines are not
/// here ([`crate::rdc::LinkSet::unresolved_failures`] names them).
pub(crate) fn tune_linked(
    toolchain: &Toolchain,
    plugin: &Path,
    set: &crate::rdc::LinkSet,
    file: &Path,
    options: &Options,
    known: &Db,
    progress: &Progress,
) -> Result<Vec<KernelTuning>, Failure> {
    let started = Instant::now();
    let line = progress.unit(format!("{} {}", file.display(), set.arch.processor()));
    let measure_options = crate::gpu::measure::Options {
        block_size: match options.block_size {
            BlockSize::Given(n) => Some(n),
            _ => None,
        },
    };
    let (session, baseline, locations) = Session::start_linked(toolchain, plugin, set, file, measure_options).map_err(session_failure)?;
    tune_session(&session, baseline, locations, started, options, known, progress, &line)
}

/// The search, the joint verification and the rows, once the session's
/// plain build is measured.
#[allow(clippy::too_many_arguments)]
fn tune_session(
    session: &Session<'_>,
    baseline: Vec<Measured>,
    locations: Vec<crate::gpu::compile::Location>,
    started: Instant,
    options: &Options,
    known: &Db,
    progress: &Progress,
    line: &UnitProgress<'_>,
) -> Result<Vec<KernelTuning>, Failure> {
    let (file, arch) = (session.source, session.arch);
    if baseline.is_empty() {
        return Ok(vec![]);
    }
    let limits = Limits::new(started, session.plain_seconds, options.variant_timeout, options.time_budget);
    line.kernels(baseline.len());
    let inspections = session.inspect().map_err(session_failure)?;
    let source = std::fs::read_to_string(file).unwrap_or_default();

    let tuning = Tuning { session, options, limits: &limits, line };
    let mut plans: Vec<Plan> = baseline
        .par_iter()
        .map(|base| {
            let previous = known.lookup(&base.symbol, arch.processor(), Some(&session.input_hash)).next();
            let plan = plan_kernel(&tuning, base, &source, inspections.get(&base.symbol), previous);
            line.kernel_done();
            plan
        })
        .collect();
    say_what_limits_did(progress, file, arch, &limits, &plans);

    // The kept sets together, as the build will apply them (the whole file):
    // a kernel whose result changes for the worse next to the others falls
    // back to plain, and so do all when this build runs past the limit.
    let finals = loop {
        let variant: Vec<(String, Transforms)> = plans.iter().map(|p| (p.symbol.clone(), p.outcome.transforms.clone())).collect();
        let measured = match session.measure(&variant, Some(Instant::now() + limits.variant)) {
            Err(e) if e.timed_out() => {
                for p in plans.iter_mut().filter(|p| !p.outcome.transforms.is_empty()) {
                    p.outcome = Outcome { transforms: Transforms::default(), usage: p.rule.baseline };
                    p.combined_timed_out = true;
                }
                continue;
            }
            other => other.map_err(session_failure)?,
        };
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
            plans[i].outcome = Outcome { transforms: Transforms::default(), usage: plans[i].rule.baseline };
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
                Some(diff_listings(session, &plan.symbol, &plan.outcome.transforms).map_err(session_failure)?)
            } else {
                None
            };
            Ok(finish(plan, base, after, arch, location, &file_name, session, diff))
        })
        .collect::<Result<Vec<KernelTuning>, Failure>>()?;
    let mut rows = rows;
    if let Some(dir) = &options.code_dir {
        crate::runtime::code::store(session, rows.iter().map(|r| &r.entry), dir).map_err(session_failure)?;
        // A re-tune keeps what a GPU measured of code objects that did not change.
        for row in &mut rows {
            let old = known.kernels.get(&row.entry.key()).and_then(|e| e.measured.as_ref());
            row.entry.measured = old.and_then(|m| crate::runtime::code::still_measured(dir, &row.entry, m));
        }
    }
    Ok(rows)
}

/// Once per file on stderr: variants stopped at the time limit, and the end
/// of the budget.
fn say_what_limits_did(progress: &Progress, file: &Path, arch: &Arch, limits: &Limits, plans: &[Plan]) {
    let stopped = plans.iter().flat_map(|p| &p.measured).filter(|m| m.status == VariantStatus::TimedOut).count();
    if stopped > 0 {
        progress.note(&format!(
            "regtune: {} on {}: {stopped} variant{} ran past the {:.2} s limit and {} stopped (--variant-timeout)",
            file.display(),
            arch.processor(),
            if stopped == 1 { "" } else { "s" },
            limits.variant.as_secs_f64(),
            if stopped == 1 { "was" } else { "were" },
        ));
    }
    if limits.reached() {
        progress.note(&format!(
            "regtune: {} on {}: the time budget of {:.2} s is spent; keeping the best results found so far (--time-budget)",
            file.display(),
            arch.processor(),
            limits.budget.as_secs_f64(),
        ));
    }
}

/// What every kernel's search of one file shares.
struct Tuning<'a> {
    session: &'a Session<'a>,
    options: &'a Options,
    limits: &'a Limits,
    line: &'a UnitProgress<'a>,
}

/// A better result the tuner does not apply on its own: it trades
/// unrolling for occupancy, changes rounding, or rests on the caller.
struct Proposal {
    /// The transforms the user has not allowed (what needs their word).
    held: Transforms,
    /// The whole measured set, `held` included: what confirming applies.
    transforms: Transforms,
    usage: Usage,
    reasons: Vec<Reason>,
    message: String,
}

/// One kernel's searches and their outcome.
struct Plan {
    symbol: String,
    rule: Rule,
    outcome: Outcome,
    /// Why `outcome` is applied, when it is not empty.
    reason: Reason,
    /// A better result that waits for the user.
    suggestion: Option<Proposal>,
    variants: usize,
    combined_regressed: bool,
    /// The kept sets together ran past the time limit.
    combined_timed_out: bool,
    /// The file's budget ended the search early.
    budget_reached: bool,
    measured: Vec<Measurement>,
    /// Every pointer parameter, when "noalias on every pointer" was a
    /// candidate: labelled `noalias=all`.
    every_pointer: Vec<Param>,
    /// Builds for `regtune measure` beside the decision and suggestion.
    search: candidates::Selection,
}

fn plan_kernel(tuning: &Tuning<'_>, base: &Measured, source: &str, inspection: Option<&Inspection>, previous: Option<&Entry>) -> Plan {
    let (session, options) = (tuning.session, tuning.options);
    let ranked: Vec<Param> = match (options.noalias, inspection) {
        (Noalias::Off, _) | (_, None) => vec![],
        (_, Some(i)) => i.noalias_candidates.iter().take(options.noalias_candidates).cloned().collect(),
    };
    // nvcc's --restrict: one candidate, when there is more than the ranked ones.
    let every_pointer: Vec<Param> = match (options.noalias, inspection) {
        (Noalias::Off, _) | (_, None) => vec![],
        (_, Some(i)) if i.noalias_candidates.len() <= ranked.len() => vec![],
        (_, Some(i)) => {
            let mut all = i.noalias_candidates.clone();
            all.sort();
            all
        }
    };
    let rule = Rule {
        objective: options.objective,
        allow_scratch: options.allow_scratch,
        baseline: base.usage,
        lane_spills: gpu::of(session.arch).lane_spills(),
    };
    let mut plan = Plan {
        symbol: base.symbol.clone(),
        rule,
        outcome: Outcome { transforms: Transforms::default(), usage: base.usage },
        reason: Reason::NoGain,
        suggestion: None,
        variants: 0,
        combined_regressed: false,
        combined_timed_out: false,
        budget_reached: false,
        measured: vec![],
        every_pointer: every_pointer.clone(),
        search: candidates::Selection::default(),
    };
    if at_best(&rule, occupancy_ceiling(session.arch, base)) {
        return plan;
    }
    let waves = occupancy_targets(session.arch, base);
    // What the user confirmed in the db (not what an earlier tune decided:
    // the default changes with the evidence).
    let confirmed: Transforms = previous.map(|e| Entry { transforms: Transforms::default(), ..e.clone() }.tuned()).unwrap_or_default();
    // Transforms that would change nothing are not tried (no inspection:
    // try everything).
    let exact_pow2 = inspection.is_none_or(|i| i.pow2);
    let inexact_pow2 = inspection.is_none_or(|i| i.pow2_inexact);
    let caps: Vec<u32> = if inspection.is_none_or(|i| i.unroll_cap) { vec![1, 2, 4, 8] } else { vec![] };
    let (noalias_apply, noalias_suggest) = (options.noalias == Noalias::Apply, options.noalias == Noalias::Suggest);
    // The rewrites the user allows: exact ones, and what they stated or
    // confirmed (no assumption about the caller, no rounding change unasked).
    let allowed_rewrites = Space {
        pow2: exact_pow2,
        pow2_inexact: inexact_pow2 && (options.pow2 == Pow2::Apply || confirmed.pow2_inexact),
        sink: true,
        noalias: if noalias_apply { ranked.clone() } else { confirmed.noalias.clone() },
        noalias_all: if noalias_apply { every_pointer.clone() } else { vec![] },
        launch_bounds: match options.block_size {
            BlockSize::Given(n) => Some(n),
            _ => confirmed.launch_bounds,
        },
        ..Space::default()
    };
    // What may be applied without asking: the classes a GPU has shown
    // never to cost more than 2 % on real kernels (crate::evidence), and
    // what the user asked for or confirmed.
    let proven = |c| options.evidence.never_loses(c);
    let facts = Space {
        pow2: allowed_rewrites.pow2 && (proven(Class::Pow2) || confirmed.pow2),
        sink: proven(Class::Sink) || confirmed.sink,
        unroll_caps: confirmed.unroll_cap.filter(|_| !caps.is_empty()).into_iter().collect(),
        waves: if proven(Class::OccupancyTarget) { waves } else { confirmed.waves_per_eu.into_iter().collect() },
        ..allowed_rewrites.clone()
    };
    let log: Mutex<Vec<Measurement>> = Mutex::new(Vec::new());
    let budget_hit = AtomicBool::new(false);
    let eval = |t: &Transforms| -> Option<Usage> {
        // Each variant compiles once: later searches repeat some, and one
        // that failed or was stopped is not tried again.
        if let Some(m) = log.lock().expect("variant log lock").iter().find(|m| &m.transforms == t) {
            return m.usage;
        }
        if tuning.limits.spent() {
            budget_hit.store(true, Ordering::Relaxed);
            return None;
        }
        let start = Instant::now();
        let (deadline, at_budget) = tuning.limits.variant_deadline();
        let (usage, status) = match session.measure_kernel(&base.symbol, t, Some(deadline)) {
            Ok(m) => (Some(m.usage), VariantStatus::Ok),
            Err(e) if e.timed_out() && at_budget => {
                budget_hit.store(true, Ordering::Relaxed);
                (None, VariantStatus::BudgetReached)
            }
            Err(e) if e.timed_out() => (None, VariantStatus::TimedOut),
            Err(_) => (None, VariantStatus::Failed),
        };
        tuning.line.variant();
        let mut log = log.lock().expect("variant log lock");
        if !log.iter().any(|m| &m.transforms == t) {
            log.push(Measurement { transforms: t.clone(), usage, status, seconds: start.elapsed().as_secs_f64() });
        }
        usage
    };
    let mut outcome = search::search(&facts, &rule, &eval);
    let mut allowed = facts.clone();

    // Unrolling traded for registers, applied only where it removes the
    // memory traffic of spills or scratch the facts alone leave.
    if proven(Class::UnrollCap) && !caps.is_empty() && facts.unroll_caps.is_empty() && rule.memory_spills(&outcome.usage) > 0 {
        let trading = Space { unroll_caps: caps.clone(), ..facts.clone() };
        let traded = search::search(&trading, &rule, &eval);
        if let Verdict::Apply(_) = verdict::trade(&rule, &traded.usage, &outcome.usage, Basis::Static) {
            outcome = traded;
            allowed = trading;
        }
    }

    // An occupancy target forces a schedule with fewer registers; held back
    // where the cost model sees it give up more latency hiding than the
    // extra waves bring back. NVPTX: the PTX does not show what ptxas's
    // register cap does; the model adds the spills ptxas reports
    // (cost::estimate), which on an H100 is what made such targets slower.
    let mut held_target = None;
    if let Some(w) = outcome.transforms.waves_per_eu.filter(|w| confirmed.waves_per_eu != Some(*w)) {
        let without = Transforms { waves_per_eu: None, ..outcome.transforms.clone() };
        if let Some(time_ratio) = predicted_time_ratio(session, base, (&outcome.transforms, &outcome.usage), &without, &eval) {
            if let Verdict::Hold(_) = verdict::occupancy_target(Basis::Predicted { time_ratio }) {
                held_target = Some((w, time_ratio));
                allowed.waves.clear();
                outcome = search::search(&allowed, &rule, &eval);
            }
        }
    }

    // Everything held for the user: unroll caps, inexact pow2, and the
    // caller assumptions the user has not stated.
    let kernel_name = names::unqualified(&base.symbol);
    let inferred_block = match options.block_size {
        BlockSize::Auto if allowed.launch_bounds.is_none() => launch::block_size(source, &kernel_name),
        _ => None,
    };
    let wider = Space {
        pow2: allowed_rewrites.pow2,
        sink: allowed_rewrites.sink,
        pow2_inexact: allowed.pow2_inexact || (inexact_pow2 && options.pow2 == Pow2::Suggest),
        unroll_caps: if allowed.unroll_caps.is_empty() { caps.clone() } else { allowed.unroll_caps.clone() },
        noalias: if noalias_suggest { ranked } else { allowed.noalias.clone() },
        noalias_all: if noalias_suggest { every_pointer } else { allowed.noalias_all.clone() },
        launch_bounds: allowed.launch_bounds.or(inferred_block),
        waves: occupancy_targets(session.arch, base),
    };
    let mut suggestion = None;
    if wider != allowed {
        let better = search::search(&wider, &rule, &eval);
        // Worth the user's review only if it reaches what the allowed
        // transforms cannot: fewer registers or code alone do not count.
        if rule.improves_on(&better.usage, &outcome.usage) {
            let held = held_part(&better.transforms, &allowed);
            let reasons = verdict::held_reasons(&held);
            if !held.is_empty() {
                let mut message = suggestion_message(
                    &held,
                    &better.transforms,
                    &outcome.usage,
                    &better.usage,
                    &plan.every_pointer,
                    session.arch,
                    &options.evidence,
                );
                if let Some((w, ratio)) = held_target.filter(|(w, _)| held.waves_per_eu == Some(*w)) {
                    message.push_str(&format!(
                        "; {} alone was predicted {:.2}× as fast (its schedule keeps fewer loads in flight)",
                        gpu::of(session.arch).occupancy_label(w),
                        1.0 / ratio
                    ));
                }
                message = message.replace(" VGPRs", &format!(" {}", gpu::of(session.arch).registers_word()));
                suggestion = Some(Proposal { held, transforms: better.transforms, usage: better.usage, reasons, message });
            }
        }
    }
    let budget_reached = budget_hit.load(Ordering::Relaxed);

    // The measured search: every occupancy step, alone and with the best
    // allowed rewrites, and unroll caps, for `regtune measure` to time.
    if options.candidates > 0 {
        let mut known_builds = vec![Transforms::default(), outcome.transforms.clone()];
        known_builds.extend(suggestion.as_ref().map(|p| p.transforms.clone()));
        known_builds.dedup();
        let taken = known_builds.iter().filter(|t| !t.is_empty()).count();
        let known: Vec<String> = known_builds.iter().filter_map(|t| session.kernel_code_hash(&base.symbol, t).ok()).collect();
        // Spilling to shared memory needs the block size every launch keeps
        // to: the source's launch bounds, or the user's --block-size.
        let target = gpu::of(session.arch);
        let stated = match options.block_size {
            BlockSize::Given(n) => Some(n),
            _ => None,
        };
        let shared_spill =
            (stated.is_some() || target.promised_block(base).is_some()).then(|| Transforms { launch_bounds: stated, ..Default::default() });
        let pool = candidates::Pool {
            steps: gpu::of(session.arch).occupancy_steps(base),
            rewrites: search::best_rewrites(&allowed_rewrites, &rule, &eval),
            unroll_caps: caps.clone(),
            spill_to_shared: shared_spill.clone().filter(|_| target.backend_spills_to_shared()),
            // Offered again: the H100's lds-spill builds of the LBM example
            // differed from plain through two faults of the pass (NVPTX's
            // 64-bit halves, contractable products), both fixed; every
            // example is now bit-identical (no cap and 32/48/64 warps per
            // SM, 1 to 8 slots: bench/gpu/lds_spill_examples.json).
            lds_spill: shared_spill.map(|t| Transforms { lds_spill: Some(candidates::LDS_SLOTS), ..t }),
        };
        let build = |t: &Transforms| Some((eval(t)?, session.kernel_code_hash(&base.symbol, t).ok()?));
        plan.search = candidates::select(candidates::proposals(&pool), options.candidates.saturating_sub(taken), &known, build, || {
            // The first kernel to find the budget spent renews it for the candidates.
            tuning.limits.renew();
            tuning.limits.spent()
        });
    }
    let measured = log.into_inner().expect("variant log lock");
    plan.variants = measured.len();
    plan.budget_reached = budget_reached;
    plan.reason = verdict::applied_reason(&rule, &base.usage, &outcome.usage);
    plan.outcome = outcome;
    plan.suggestion = suggestion;
    plan.measured = measured;
    plan
}

/// The part of `t` that `allowed` does not allow: what needs the user.
fn held_part(t: &Transforms, allowed: &Space) -> Transforms {
    let allowed_noalias = |p: &Param| allowed.noalias.contains(p) || allowed.noalias_all.contains(p);
    let inexact_held = t.pow2_inexact && !allowed.pow2_inexact;
    Transforms {
        pow2: inexact_held || (t.pow2 && !allowed.pow2 && !allowed.pow2_inexact),
        pow2_inexact: inexact_held,
        sink: t.sink && !allowed.sink,
        unroll_cap: t.unroll_cap.filter(|c| !allowed.unroll_caps.contains(c)),
        noalias: t.noalias.iter().filter(|p| !allowed_noalias(p)).cloned().collect(),
        launch_bounds: t.launch_bounds.filter(|_| allowed.launch_bounds.is_none()),
        waves_per_eu: t.waves_per_eu.filter(|w| !allowed.waves.contains(w)),
        ..Default::default()
    }
}

/// The cost model's time with `t` over time with `without` (both compiled
/// once more to assembly); None when a listing fails.
fn predicted_time_ratio(
    session: &Session<'_>,
    base: &Measured,
    (t, usage): (&Transforms, &Usage),
    without: &Transforms,
    eval: &(dyn Fn(&Transforms) -> Option<Usage> + Sync),
) -> Option<f64> {
    let without_usage = if without.is_empty() { base.usage } else { eval(without)? };
    let estimate = |t: &Transforms, u: &Usage| -> Option<cost::Estimate> {
        let p = profile(session, &base.symbol, t).ok()?;
        Some(cost::estimate(&p, u, session.arch))
    };
    let (with, without) = (estimate(t, usage)?, estimate(without, &without_usage)?);
    Some(with.cycles / without.cycles)
}

/// The most occupancy fewer registers could bring (the target's model).
fn occupancy_ceiling(arch: &Arch, base: &Measured) -> u32 {
    gpu::of(arch).occupancy_ceiling(base)
}

/// Occupancy steps the register allocator could plausibly reach.
fn occupancy_targets(arch: &Arch, base: &Measured) -> Vec<u32> {
    gpu::of(arch).occupancy_targets(base)
}

/// What the register column counts.
fn registers_word(arch: &Arch) -> &'static str {
    gpu::of(arch).registers_word()
}

/// Nothing can beat the plain build: top occupancy and, for `no-spill`,
/// nothing spilled.
fn at_best(rule: &Rule, max_waves: u32) -> bool {
    let b = &rule.baseline;
    let clean = b.vgpr_spills + b.sgpr_spills == 0 && (rule.allow_scratch || b.scratch_bytes == 0);
    b.occupancy >= max_waves && (rule.objective == Objective::Occupancy || clean)
}

/// "<what> would reach occupancy N (a → b VGPRs) with <the rest> — <what
/// to check before confirming>", for the held part of a suggestion.
fn suggestion_message(
    held: &Transforms,
    with: &Transforms,
    now: &Usage,
    then: &Usage,
    every_pointer: &[Param],
    arch: &Arch,
    evidence: &Evidence,
) -> String {
    let spills = |u: &Usage| u.vgpr_spills + u.sgpr_spills;
    let mut effect = format!("would reach occupancy {} ({} → {} VGPRs", then.occupancy, now.vgpr, then.vgpr);
    if spills(now) != spills(then) {
        effect.push_str(&format!(", spills {} → {}", spills(now), spills(then)));
    }
    effect.push(')');
    let held_labels = gpu::labels(held, arch, every_pointer);
    let others: Vec<String> = gpu::labels(with, arch, every_pointer)
        .into_iter()
        .filter(|l| !(held_labels.contains(l) || (l == "pow2=inexact" && held.pow2_inexact)))
        .collect();
    if !others.is_empty() {
        effect.push_str(&format!(" with {}", others.join(" + ")));
    }
    let (mut what, mut checks) = (Vec::new(), Vec::new());
    // Held for speed alone: it computes the same values, but no GPU has
    // shown it never slows a real kernel.
    let mut unproven = Vec::new();
    if held.sink {
        what.push("moving definitions next to their first use (sink)".to_string());
        unproven.push(Class::Sink);
    }
    if held.pow2 && !held.pow2_inexact {
        what.push("`pow(x, 2.0)` → `x * x` (exact here)".to_string());
        unproven.push(Class::Pow2);
    }
    for class in unproven {
        checks.push(format!(
            "it computes the same values, but {} ({}); confirm it after timing the kernel",
            evidence.summary(class),
            class.name()
        ));
    }
    if held.pow2_inexact {
        let library = gpu::of(arch).pow_library().0;
        what.push("`pow(x, 2.0)` → `x * x`".to_string());
        checks.push(format!(
            "{library} is not correctly rounded, so results change in the last bit (for ~20% of doubles); \
             accept that, or build with -ffast-math or -fapprox-func"
        ));
    }
    if let Some(n) = held.unroll_cap {
        what.push(format!("capping unrolling at {n}"));
    }
    if let Some(w) = held.waves_per_eu {
        let target = gpu::of(arch).occupancy_label(w);
        what.push(format!("the occupancy target {target}"));
    }
    let trades: Vec<Class> = Class::of(held).into_iter().filter(|c| matches!(c, Class::UnrollCap | Class::OccupancyTarget)).collect();
    if !trades.is_empty() {
        let shown: Vec<String> = trades.iter().map(|c| format!("{}: {}", c.name(), evidence.summary(*c))).collect();
        checks.push(format!(
            "it gives up instruction-level parallelism (unrolling, loads in flight) for occupancy, which can cost speed ({}); \
             confirm it after timing the kernel",
            shown.join("; ")
        ));
    }
    if !held.noalias.is_empty() {
        if !every_pointer.is_empty() && with.noalias == every_pointer {
            what.push("`__restrict__` on every pointer parameter (nvcc's --restrict)".to_string());
            checks.push("verify that no two pointer arguments ever overlap".to_string());
        } else {
            let names: Vec<String> = held.noalias.iter().map(|p| format!("`{p}`")).collect();
            what.push(format!("`__restrict__` on {}", names.join(", ")));
            checks.push(format!(
                "verify that {} never overlap{} another argument",
                names.join(", "),
                if names.len() == 1 { "s" } else { "" }
            ));
        }
    }
    if let Some(n) = held.launch_bounds {
        what.push(format!("`__launch_bounds__({n})`"));
        checks.push(format!("every launch in this file uses {n} threads; confirm no other caller uses more"));
    }
    let mut message = format!("{} {effect} — {}", what.join(" and "), checks.join("; "));
    if held.unroll_cap.is_some() || held.waves_per_eu.is_some() || held.sink || (held.pow2 && !held.pow2_inexact) {
        message
            .push_str("; `regtune measure -- PROGRAM ARGS` times it inside your program and keeps it only if faster with the same results");
    }
    message
}

#[allow(clippy::too_many_arguments)]
fn finish(
    plan: Plan,
    base: &Measured,
    after: Measured,
    arch: &Arch,
    location: Option<&crate::gpu::compile::Location>,
    file: &str,
    session: &Session<'_>,
    diff: Option<String>,
) -> KernelTuning {
    let applied = gpu::labels(&plan.outcome.transforms, arch, &plan.every_pointer);
    let (before_u, after_u) = (base.usage, after.usage);
    let max_waves = occupancy_ceiling(arch, base);
    let registers = registers_word(arch);
    let suggestion_reasons = plan.suggestion.as_ref().map(|p| p.reasons.clone()).unwrap_or_default();
    let reason = if at_best(&plan.rule, max_waves) {
        Reason::AtBest
    } else if plan.combined_regressed || plan.combined_timed_out {
        Reason::LostWhenCombined
    } else if !applied.is_empty() {
        plan.reason
    } else {
        suggestion_reasons.first().copied().unwrap_or(Reason::NoGain)
    };
    let why = match reason {
        Reason::AtBest => match &base.nvidia {
            Some(n) => format!(
                "already at the most warps per SM {} allows at {} threads per block ({max_waves}); nothing to gain",
                arch.processor(),
                n.block_size
            ),
            None => format!("already at {}'s maximum occupancy ({max_waves} waves/SIMD); nothing to gain", arch.processor()),
        },
        Reason::LostWhenCombined if plan.combined_timed_out => {
            "the kept decisions of all kernels together ran past the time limit; kept the plain compile".to_string()
        }
        Reason::LostWhenCombined => {
            "its best variant lost its gain when combined with the other kernels' decisions; kept the plain compile".to_string()
        }
        _ if applied.is_empty()
            && plan.suggestion.is_none()
            && !plan.measured.is_empty()
            && plan.measured.iter().all(|m| m.status == VariantStatus::TimedOut) =>
        {
            "every variant ran past the time limit (--variant-timeout); kept the plain compile".to_string()
        }
        _ if !applied.is_empty() => format!(
            "{}: occupancy {} → {}, {registers} {} → {}, spills {} → {}",
            applied.join(" + "),
            before_u.occupancy,
            after_u.occupancy,
            before_u.vgpr,
            after_u.vgpr,
            before_u.vgpr_spills + before_u.sgpr_spills,
            after_u.vgpr_spills + after_u.sgpr_spills
        ),
        _ => match &plan.suggestion {
            Some(p) => format!(
                "suggested, not applied ({}): {} would reach occupancy {} → {}, {registers} {} → {}",
                p.reasons.iter().map(|r| r.as_str()).collect::<Vec<_>>().join(", "),
                gpu::labels(&p.transforms, arch, &plan.every_pointer).join(" + "),
                before_u.occupancy,
                p.usage.occupancy,
                before_u.vgpr,
                p.usage.vgpr
            ),
            None => plan.objective_gap(arch).unwrap_or_else(|| "nothing tried improved on the plain compile; kept it".to_string()),
        },
    };
    let why = if plan.budget_reached { format!("{why} (the file's time budget ended the search early: best result so far)") } else { why };
    let (suggested, suggestions, suggested_entries) = match &plan.suggestion {
        Some(p) => (
            gpu::labels(&p.held, arch, &plan.every_pointer),
            vec![p.message.clone()],
            vec![Suggestion {
                transforms: p.transforms.clone(),
                usage: p.usage,
                message: p.message.clone(),
                reasons: p.reasons.clone(),
                confirmed: false,
            }],
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
        reason: Some(reason),
        suggested: suggested_entries,
        before: Some(before_u),
        after: Some(after_u),
        candidates: plan.search.kept.clone(),
        left_out: plan.search.left_out.iter().map(|t| gpu::labels(t, arch, &plan.every_pointer).join(" + ")).collect(),
        measured: None,
    };
    KernelTuning {
        report,
        before: before_u,
        after: after_u,
        applied,
        suggested,
        reason,
        suggestion_reasons,
        why,
        suggestions,
        variants: plan.variants,
        timed_out: plan
            .measured
            .iter()
            .filter(|m| m.status == VariantStatus::TimedOut)
            .map(|m| gpu::labels(&m.transforms, arch, &plan.every_pointer).join(" + "))
            .collect(),
        budget_reached: plan.budget_reached,
        candidates: plan.search.kept.iter().map(|c| gpu::labels(&c.transforms, arch, &plan.every_pointer).join(" + ")).collect(),
        left_out: entry.left_out.clone(),
        diff,
        limiter_before: base.limiter,
        measured: plan.measured,
        entry,
    }
}

impl Plan {
    /// Why nothing was applied, from the closest miss among the variants
    /// compiled.
    fn objective_gap(&self, arch: &Arch) -> Option<String> {
        let best = self
            .measured
            .iter()
            .filter_map(|m| Some((&m.transforms, m.usage?)))
            .filter(|(t, u)| !t.is_empty() && self.rule.admissible(u))
            .max_by(|a, b| self.rule.compare(&a.1, &b.1))?;
        let goal = match self.rule.objective {
            Objective::Occupancy => "raised occupancy without more spills",
            Objective::NoSpill => "removed spills or raised occupancy",
        };
        Some(format!(
            "no variant {goal} (closest: {}, {} → {} {} at occupancy {}); kept the plain compile",
            gpu::labels(best.0, arch, &self.every_pointer).join(" + "),
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
    let target = gpu::of(session.arch);
    let asm = |listing: &str, symbol: &str| target.kernel_listing(listing, symbol);
    for (kind, extract, label) in
        [(Listing::Ir, &ir_function as &dyn Fn(&str, &str) -> String, "IR"), (Listing::Asm, &asm as &dyn Fn(&str, &str) -> String, "asm")]
    {
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

/// The cost model's profile of a kernel built with `t`: one more compile,
/// to assembly (PTX on NVPTX).
pub(crate) fn profile(session: &Session<'_>, symbol: &str, t: &Transforms) -> Result<cost::Profile, crate::session::SessionError> {
    let listing = session.listing(&[(symbol.to_string(), t.clone())], Listing::Asm)?;
    let code = gpu::of(session.arch).kernel_listing(&listing, symbol);
    Ok(cost::profile_of(&code, session.arch))
}

/// The `define ... @symbol(...) { ... }` block of an IR listing.
fn ir_function(listing: &str, symbol: &str) -> String {
    let start = format!("@{symbol}(");
    crate::gpu::listing::cut(listing, |l| l.starts_with("define") && l.contains(&start), |l| l == "}", true)
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
            names::short_name(&self.report.name).to_string(),
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
    fn suggestions_say_what_to_verify() {
        let t = Transforms { noalias: vec![Param { index: 13, name: "g14".into() }], ..Default::default() };
        let now = Usage { vgpr: 96, occupancy: 5, ..Default::default() };
        let then = Usage { vgpr: 84, occupancy: 6, ..Default::default() };
        let gfx = Arch::parse("gfx90a").unwrap();
        assert_eq!(
            suggestion_message(&t, &t, &now, &then, &[], &gfx, &Evidence::shipped()),
            "`__restrict__` on `g14` would reach occupancy 6 (96 → 84 VGPRs) — verify that `g14` never overlaps another argument"
        );
        let with = Transforms { pow2: true, waves_per_eu: Some(6), ..t.clone() };
        assert!(suggestion_message(&t, &with, &now, &then, &[], &gfx, &Evidence::shipped())
            .contains("(96 → 84 VGPRs) with pow2 + waves-per-eu=6 — verify"));
    }

    #[test]
    fn every_held_kind_says_what_it_would_change_and_what_to_check() {
        let gfx = Arch::parse("gfx90a").unwrap();
        let sm = Arch::parse("sm_90").unwrap();
        let now = Usage { vgpr: 99, occupancy: 4, sgpr_spills: 16, ..Default::default() };
        let then = Usage { vgpr: 82, occupancy: 5, ..Default::default() };
        let pow2 = Transforms { pow2: true, pow2_inexact: true, ..Default::default() };
        assert_eq!(
            suggestion_message(&pow2, &pow2, &now, &then, &[], &gfx, &Evidence::shipped()),
            "`pow(x, 2.0)` → `x * x` would reach occupancy 5 (99 → 82 VGPRs, spills 16 → 0) — ocml's `pow` is not \
             correctly rounded, so results change in the last bit (for ~20% of doubles); accept that, or build with \
             -ffast-math or -fapprox-func"
        );
        assert!(suggestion_message(&pow2, &pow2, &now, &then, &[], &sm, &Evidence::shipped()).contains("libdevice's `pow`"));
        let cap = Transforms { unroll_cap: Some(1), ..Default::default() };
        let with = Transforms { waves_per_eu: Some(6), ..cap.clone() };
        let m = suggestion_message(&cap, &with, &now, &then, &[], &gfx, &Evidence::shipped());
        assert!(m.starts_with("capping unrolling at 1 would reach occupancy 5 (99 → 82 VGPRs, spills 16 → 0) with waves-per-eu=6 — it gives up instruction-level parallelism"), "{m}");
        let both = suggestion_message(&with, &with, &now, &then, &[], &gfx, &Evidence::shipped());
        assert!(both.starts_with("capping unrolling at 1 and the occupancy target waves-per-eu=6 would reach occupancy 5"), "{both}");
        let all: Vec<Param> = (0..3).map(|i| Param { index: i, name: format!("p{i}") }).collect();
        let restrict = Transforms { noalias: all.clone(), ..Default::default() };
        let m = suggestion_message(&restrict, &restrict, &now, &then, &all, &gfx, &Evidence::shipped());
        assert!(m.starts_with("`__restrict__` on every pointer parameter (nvcc's --restrict) would reach"), "{m}");
        assert!(m.ends_with("verify that no two pointer arguments ever overlap"), "{m}");
    }

    #[test]
    fn kernel_functions_are_cut_from_listings() {
        let ir = "define void @a() {\n  ret void\n}\ndefine amdgpu_kernel void @k(ptr %p) #0 {\nentry:\n  ret void\n}\n";
        assert_eq!(ir_function(ir, "k"), "define amdgpu_kernel void @k(ptr %p) #0 {\nentry:\n  ret void\n}\n");
        let asm = "a:\n  s_endpgm\n.Lfunc_end0:\nk:\n  s_load_dword s0\n  s_endpgm\n.Lfunc_end1:\n";
        let gfx90a = Arch::parse("gfx90a").unwrap();
        assert_eq!(gpu::of(&gfx90a).kernel_listing(asm, "k"), "k:\n  s_load_dword s0\n  s_endpgm\n");
    }
}
