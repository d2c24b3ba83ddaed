//! The fan-out over files and targets, each file's kept sets verified
//! together, its rows, and the db written.

use std::path::{Path, PathBuf};
use std::time::Instant;

use rayon::prelude::*;
use regtune_decisions::{Db, Entry, Suggestion, Transforms};

use super::diff::diff_listings;
use super::kernel::{plan_kernel, Plan, Tuning};
use super::messages;
use super::{KernelTuning, Options, VariantStatus};
use crate::context::Context;
use crate::fix::spell::Speller;
use crate::gpu::compile;
use crate::gpu::resources::Measured;
use crate::gpu::{self, Arch};
use crate::limits::{Limits, BUDGET_FACTOR};
use crate::names;
use crate::output::Failure;
use crate::progress::{Progress, UnitProgress};
use crate::rdc::{self, LinkSet};
use crate::report::KernelReport;
use crate::search::Outcome;
use crate::session::Session;
use crate::toolchain::nvcc::Nvcc;

/// Tune every kernel of every file on every target, and update the db at
/// `db_path`. `confirmed` is that db as loaded (and checked writable,
/// [`Db::load_for_update`]) before anything compiled: confirmed
/// suggestions in it are applied.
pub fn run(ctx: &Context, files: &[PathBuf], options: &Options, confirmed: &Db, db_path: &Path) -> (Vec<KernelTuning>, Vec<Failure>) {
    let (toolchain, archs, user_args) = (&ctx.toolchain, &ctx.archs[..], &ctx.user_args[..]);
    let jobs: Vec<(&PathBuf, &Arch)> = files.iter().flat_map(|f| archs.iter().map(move |a| (f, a))).collect();
    let progress = Progress::new(jobs.len() as u64, "tuning");
    // -fgpu-rdc: every file compiled once per target, to link with the others.
    let sets = if ctx.nvcc.is_some() { vec![] } else { rdc::link_sets(toolchain, files, archs, user_args) };
    let results: Vec<(Vec<KernelTuning>, Vec<Failure>)> = jobs
        .par_iter()
        .map(|(file, arch)| {
            let r = match sets.iter().find(|(a, _)| a.name() == arch.name()) {
                Some((_, Ok(set))) => tune_in_set(ctx, set, file, files.len() > 1, options, confirmed, &progress),
                Some((_, Err(f))) => (vec![], vec![f.clone()]),
                None => match tune_unit(ctx, file, arch, options, confirmed, &progress) {
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

pub(super) fn no_kernels(file: &Path, arch: &Arch) -> Failure {
    Failure::new(format!("{} defines no kernels (no __global__ functions for {arch})", file.display()))
}

/// One file of a link set: its kernels tuned, and one failure per kernel
/// whose callees no file defines. With other files linked in, a file
/// without kernels is a library of device functions, not a failure.
pub(super) fn tune_in_set(
    ctx: &Context,
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
    match tune_linked(ctx, set, file, options, known, progress) {
        Ok(rows) if rows.is_empty() && failures.is_empty() && !linked_with_others => failures.push(no_kernels(file, &set.arch)),
        Ok(rows) => return (rows, failures),
        Err(f) => failures.insert(0, f),
    }
    (vec![], failures)
}

pub(super) fn session_failure(e: crate::session::SessionError) -> Failure {
    match e {
        crate::session::SessionError::Compile(c) => compile::compile_failure(c),
        other => Failure::new(other.to_string()),
    }
}

/// One file on one target; no rows when it defines no kernels. `known` is
/// the db as loaded: confirmed suggestions in it are applied.
pub(crate) fn tune_unit(
    ctx: &Context,
    file: &Path,
    arch: &Arch,
    options: &Options,
    known: &Db,
    progress: &Progress,
) -> Result<Vec<KernelTuning>, Failure> {
    tune_unit_session(ctx, file, arch, options, known, progress).map(|(_, rows)| rows)
}

/// [`tune_unit`], and the session it tuned in (its frontend run and
/// variants, for more builds of the same kernels).
pub(crate) fn tune_unit_session<'a>(
    ctx: &'a Context,
    file: &'a Path,
    arch: &'a Arch,
    options: &Options,
    known: &Db,
    progress: &Progress,
) -> Result<(Session<'a>, Vec<KernelTuning>), Failure> {
    let started = Instant::now();
    let line = progress.unit(format!("{} {}", file.display(), arch.processor()));
    let started_session = match &ctx.nvcc {
        Some(nvcc) => Session::start_nvcc(&ctx.toolchain, arch, nvcc, file, &ctx.user_args, options.measure_options()),
        None => Session::start_with(&ctx.toolchain, arch, ctx.plugin(), file, &ctx.user_args, options.measure_options()),
    };
    let (mut session, baseline, locations) = started_session.map_err(session_failure)?;
    if let Some(nvcc) = &ctx.nvcc {
        rewrites_for_nvcc(ctx, nvcc, &mut session, &baseline, progress);
    }
    let rows = tune_session(&session, baseline, locations, started, options, known, progress, &line)?;
    Ok((session, rows))
}

/// nvcc's builds rewrite the source as `regtune fix` writes it (fix/spell.rs),
/// where the pass plugin is here to find what to write; else (one note)
/// only what a kernel's PTX entry carries is tried.
fn rewrites_for_nvcc(ctx: &Context, nvcc: &Nvcc, session: &mut Session<'_>, baseline: &[Measured], progress: &Progress) {
    let (file, arch) = (session.source, session.arch);
    let say = |why: &str| {
        progress.note(&format!(
            "regtune: {} on {}: no rewrite of the source is tried with nvcc ({why}); register caps, launch bounds and spilling to shared memory are",
            file.display(),
            arch.processor()
        ))
    };
    let Some(plugin) = ctx.plugin_if_any() else { return say("no pass plugin to find them") };
    let Some(kept) = session.nvcc_dir() else { return };
    let kernels = baseline.iter().map(|m| m.symbol.clone()).collect();
    match Speller::new(&ctx.toolchain, plugin, nvcc, arch, file, &ctx.user_args, kept, kernels) {
        Ok(speller) => session.set_rewriter(Box::new(speller)),
        Err(why) => say(&why),
    }
}

/// One `-fgpu-rdc` unit of `set`: its kernels measured through the device
/// link with the other units; those whose callees no unit defines are not
/// here ([`crate::rdc::LinkSet::unresolved_failures`] names them).
pub(crate) fn tune_linked(
    ctx: &Context,
    set: &crate::rdc::LinkSet,
    file: &Path,
    options: &Options,
    known: &Db,
    progress: &Progress,
) -> Result<Vec<KernelTuning>, Failure> {
    let started = Instant::now();
    let line = progress.unit(format!("{} {}", file.display(), set.arch.processor()));
    let (session, baseline, locations) =
        Session::start_linked(&ctx.toolchain, ctx.plugin(), set, file, options.measure_options()).map_err(session_failure)?;
    tune_session(&session, baseline, locations, started, options, known, progress, &line)
}

/// The search, the joint verification and the rows, once the session's
/// plain build is measured.
#[allow(clippy::too_many_arguments)]
pub(super) fn tune_session(
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
    // The program's own kernels are planned first, and so are library
    // kernels (CUB, Thrust) a measurement saw it launch; the library's
    // others share what time is left. RSBench's Thrust sorts and count
    // bring 30 kernels: planned together, its lookup kernel got one variant.
    let measured_launch = |base: &Measured| known.lookup(&base.symbol, arch.processor(), None).any(|e| e.measured.is_some());
    let (first, later): (Vec<&Measured>, Vec<&Measured>) =
        baseline.iter().partition(|base| !names::from_library(&base.symbol) || measured_launch(base));
    let limits = Limits::new(started, session.plain_seconds, options.variant_timeout, options.time_budget, first.len());
    let why = match options.time_budget {
        Some(_) => "--time-budget".to_string(),
        None => format!("{}× its plain compile of {:.0} s; --time-budget changes it", BUDGET_FACTOR, session.plain_seconds),
    };
    line.budget(limits.budget, why);
    line.kernels(baseline.len());
    let inspections = session.inspect().map_err(session_failure)?;
    let source = std::fs::read_to_string(file).unwrap_or_default();

    let tuning = Tuning { session, options, limits: &limits, line };
    let plan = |base: &&Measured| {
        let previous = known.lookup(&base.symbol, arch.processor(), Some(&session.input_hash)).next();
        // The block size the program launches it with outlives edits to the source.
        let launched = known.lookup(&base.symbol, arch.processor(), None).find_map(|e| e.measured.as_ref()?.block);
        let plan = plan_kernel(&tuning, base, &source, inspections.get(&base.symbol), previous, launched);
        limits.kernel_done();
        line.kernel_done();
        plan
    };
    let mut plans: Vec<Plan> = first.par_iter().map(plan).collect();
    limits.more_kernels(later.len());
    plans.par_extend(later.par_iter().map(plan));
    // Rows in the file's order, whichever tier planned them.
    plans.sort_by_key(|p| baseline.iter().position(|b| b.symbol == p.symbol));
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
    // What nvcc's builds could not rewrite, and why: once a file.
    for why in session.rewrite_notes() {
        progress.note(&format!("regtune: {} on {}: not built with nvcc: {why}", file.display(), arch.processor()));
    }
    if let Some(dir) = &options.code_dir {
        crate::measure::code::store(session, rows.iter().map(|r| &r.entry), dir).map_err(session_failure)?;
        if let Some(note) = crate::measure::code::store_other(session, rows.iter().map(|r| &r.entry), dir, options.other_compiler) {
            progress.note(&format!("regtune: {} on {}: {note}", file.display(), arch.processor()));
        }
        // A re-tune keeps what a GPU measured of code objects that did not change.
        for row in &mut rows {
            let old = known.kernels.get(&row.entry.key()).and_then(|e| e.measured.as_ref());
            row.entry.measured = old.and_then(|m| crate::measure::code::still_measured(dir, &row.entry, m));
        }
    }
    Ok(rows)
}

/// Once per file on stderr: variants stopped at the time limit, and the end
/// of the budget.
pub(super) fn say_what_limits_did(progress: &Progress, file: &Path, arch: &Arch, limits: &Limits, plans: &[Plan]) {
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
    // Register caps, alone or on rewrites, are left out only where they took the file's
    // budget (kernel.rs, measured_search): `regtune measure` cannot time them.
    for plan in plans {
        let caps: Vec<String> = plan.search.caps_past_budget.iter().map(|t| gpu::labels(t, &plan.every_pointer).join(" + ")).collect();
        if !caps.is_empty() {
            progress.note(&format!(
                "regtune: {} on {}: {}: {} register cap{} not built: the kernel's caps took the time budget of {:.2} s, so `regtune measure` will not time {}: {} (a larger --time-budget builds them)",
                file.display(),
                arch.processor(),
                names::short_name(&names::demangle(&plan.symbol)),
                caps.len(),
                if caps.len() == 1 { "" } else { "s" },
                limits.budget.as_secs_f64(),
                if caps.len() == 1 { "it" } else { "them" },
                caps.join(", "),
            ));
        }
    }
}

#[allow(clippy::too_many_arguments)]
pub(super) fn finish(
    plan: Plan,
    base: &Measured,
    after: Measured,
    arch: &Arch,
    location: Option<&crate::gpu::compile::Location>,
    file: &str,
    session: &Session<'_>,
    diff: Option<String>,
) -> KernelTuning {
    let applied = gpu::labels(&plan.outcome.transforms, &plan.every_pointer);
    let (before_u, after_u) = (base.usage, after.usage);
    let suggestion_reasons = plan.suggestion.as_ref().map(|p| p.reasons.clone()).unwrap_or_default();
    let (reason, why) = messages::why(&plan, base, &after_u, arch, &applied);
    // The search's suggestion, then the measured launches' spills.
    let proposals = plan.suggestion.iter().chain(&plan.launched_spills);
    let suggested = plan.suggestion.as_ref().map(|p| gpu::labels(&p.held, &plan.every_pointer)).unwrap_or_default();
    let suggestions: Vec<String> = proposals.clone().map(|p| p.message.clone()).collect();
    let suggested_entries: Vec<Suggestion> = proposals
        .map(|p| Suggestion {
            transforms: p.transforms.clone(),
            usage: p.usage,
            message: p.message.clone(),
            reasons: p.reasons.clone(),
            confirmed: false,
        })
        .collect();
    let suggested_entries = keep_confirmed(suggested_entries, &plan.confirmed);
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
        left_out: plan.search.left_out.iter().map(|t| gpu::labels(t, &plan.every_pointer).join(" + ")).collect(),
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
            .map(|m| gpu::labels(&m.transforms, &plan.every_pointer).join(" + "))
            .collect(),
        budget_reached: plan.budget_reached,
        candidates: plan.search.kept.iter().map(|c| gpu::labels(&c.transforms, &plan.every_pointer).join(" + ")).collect(),
        left_out: entry.left_out.clone(),
        diff,
        limiter_before: base.limiter,
        measured: plan.measured,
        entry,
    }
}

/// The user's word outlives the tune that applied it: a confirmed
/// suggestion stays confirmed in the new entry (the same build suggested
/// again, or the old one kept), else the tune after next forgets it.
fn keep_confirmed(mut suggested: Vec<Suggestion>, confirmed: &[Suggestion]) -> Vec<Suggestion> {
    for old in confirmed {
        match suggested.iter_mut().find(|s| s.transforms == old.transforms) {
            Some(s) => s.confirmed = true,
            None => suggested.push(old.clone()),
        }
    }
    suggested
}
