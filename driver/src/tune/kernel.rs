//! One kernel's searches: what is tried, applied without asking (the
//! evidence rule), held back by the cost model, suggested, and the builds
//! `regtune measure` times.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use regtune_decisions::plugin::Inspection;
use regtune_decisions::{Entry, Param, Reason, Transforms, Usage};

use super::diff::profile;
use super::suggestion::suggestion_message;
use super::{BlockSize, Measurement, Noalias, Options, Pow2, VariantStatus};
use crate::evidence::Class;
use crate::gpu::resources::Measured;
use crate::gpu::{self, Arch};
use crate::limits::{Limits, Until};
use crate::names;
use crate::progress::UnitProgress;
use crate::search::{self, Objective, Outcome, Rule, Space};
use crate::session::Session;
use crate::verdict::{self, Basis, Verdict};
use crate::{candidates, cost, launch};

/// What every kernel's search of one file shares.
pub(super) struct Tuning<'a> {
    pub(super) session: &'a Session<'a>,
    pub(super) options: &'a Options,
    pub(super) limits: &'a Limits,
    pub(super) line: &'a UnitProgress<'a>,
}

/// A better result the tuner does not apply on its own: it trades
/// unrolling for occupancy, changes rounding, or rests on the caller.
pub(super) struct Proposal {
    /// The transforms the user has not allowed (what needs their word).
    pub(super) held: Transforms,
    /// The whole measured set, `held` included: what confirming applies.
    pub(super) transforms: Transforms,
    pub(super) usage: Usage,
    pub(super) reasons: Vec<Reason>,
    pub(super) message: String,
}

/// One kernel's searches and their outcome.
pub(super) struct Plan {
    pub(super) symbol: String,
    pub(super) rule: Rule,
    pub(super) outcome: Outcome,
    /// Why `outcome` is applied, when it is not empty.
    pub(super) reason: Reason,
    /// A better result that waits for the user.
    pub(super) suggestion: Option<Proposal>,
    pub(super) variants: usize,
    pub(super) combined_regressed: bool,
    /// The kept sets together ran past the time limit.
    pub(super) combined_timed_out: bool,
    /// The file's budget ended the search early.
    pub(super) budget_reached: bool,
    pub(super) measured: Vec<Measurement>,
    /// Every pointer parameter, when "noalias on every pointer" was a
    /// candidate: labelled `noalias=all`.
    pub(super) every_pointer: Vec<Param>,
    /// Builds for `regtune measure` beside the decision and suggestion.
    pub(super) search: candidates::Selection,
    /// Spilling to shared memory at a block size only the measured
    /// launches showed (see [`launched_spills`]): suggested.
    pub(super) launched_spills: Vec<Proposal>,
    /// The suggestions the user confirmed for this input, kept in the db.
    pub(super) confirmed: Vec<regtune_decisions::Suggestion>,
}

/// Where a register cap spills and only `regtune measure`'s launches show
/// the block size, spilling to shared memory needs that size as launch
/// bounds, a promise about every later launch: proposed for measure to
/// time, applied once the user confirms it. At this many of the kept caps
/// whose spills the target says shared memory can beat
/// ([`gpu::OccupancyModel::shared_spill_pays`]).
const LAUNCHED_SPILLS: usize = 2;

/// `previous`: the db's entry for this kernel and input; `launched`: the
/// threads per block `regtune measure` saw its launches use (any input).
/// The phases, in order: what may be tried and applied ([`spaces`]), the
/// default's decision ([`decide`]), what waits for the user ([`suggest`]),
/// the builds `regtune measure` times ([`measured_search`]); every variant
/// compiled once ([`Variants`]).
pub(super) fn plan_kernel(
    tuning: &Tuning<'_>,
    base: &Measured,
    source: &str,
    inspection: Option<&Inspection>,
    previous: Option<&Entry>,
    launched: Option<u32>,
) -> Plan {
    let (session, options) = (tuning.session, tuning.options);
    let spaces = spaces(tuning, base, inspection, previous);
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
        every_pointer: spaces.every_pointer.clone(),
        search: candidates::Selection::default(),
        launched_spills: vec![],
        confirmed: previous.map(|e| e.suggested.iter().filter(|s| s.confirmed).cloned().collect()).unwrap_or_default(),
    };
    if at_best(&rule, occupancy_ceiling(session.arch, base)) {
        return plan;
    }
    let variants = Variants::new(tuning, &base.symbol);
    let decided = decide(tuning, base, &spaces, &rule, &variants);
    let suggestion = suggest(tuning, base, source, &spaces, &rule, &decided, &variants);
    plan.budget_reached = variants.budget_reached();
    if options.candidates > 0 {
        let known = [Some(&decided.outcome.transforms), suggestion.as_ref().map(|p| &p.transforms)];
        let kernel = Kernel { base, previous, launched };
        (plan.search, plan.launched_spills) = measured_search(tuning, &kernel, &spaces, &rule, &known, &variants);
    }
    let measured = variants.into_measured();
    plan.variants = measured.len();
    plan.reason = verdict::applied_reason(&rule, &base.usage, &decided.outcome.usage);
    plan.outcome = decided.outcome;
    plan.suggestion = suggestion;
    plan.measured = measured;
    plan
}

/// Every variant of one kernel, compiled at most once: the searches share
/// it, each phase under its deadline (the file's search budget, then the
/// kernel's share of it for its candidates).
struct Variants<'t, 'a> {
    tuning: &'t Tuning<'a>,
    symbol: &'t str,
    log: Mutex<Vec<Measurement>>,
    budget_hit: AtomicBool,
    until: Mutex<Until>,
}

impl<'t, 'a> Variants<'t, 'a> {
    fn new(tuning: &'t Tuning<'a>, symbol: &'t str) -> Self {
        let until = Mutex::new(tuning.limits.search());
        Variants { tuning, symbol, log: Mutex::new(Vec::new()), budget_hit: AtomicBool::new(false), until }
    }

    /// The usage of `t`'s build; None where it failed, ran past its limit,
    /// or the budget is spent.
    fn eval(&self, t: &Transforms) -> Option<Usage> {
        let (session, limits) = (self.tuning.session, self.tuning.limits);
        // Each variant compiles once: later searches repeat some, and one
        // that failed or was stopped is not tried again.
        if let Some(m) = self.log.lock().expect("variant log lock").iter().find(|m| &m.transforms == t) {
            return m.usage;
        }
        let until = *self.until.lock().expect("deadline lock");
        // nvcc's entry edits alone are a ptxas run each on a PTX built
        // once, and its -maxrregcount caps a PTX build per step for the
        // whole file: the budget bounds the builds that rewrite the source.
        // clang's caps alone on NVPTX are a ptxas run each too.
        let cheap = (!session.runs_plugin() && (nvcc_entry_only(t) || t.maxrregcount_alone().is_some()))
            || (session.caps_from_ptx() && t.cap_alone().is_some());
        if !cheap && limits.spent(until) {
            self.budget_hit.store(true, Ordering::Relaxed);
            return None;
        }
        let start = Instant::now();
        let (deadline, at_budget) = match cheap {
            true => (start + limits.variant, false),
            false => limits.variant_deadline(until),
        };
        let (usage, status) = match session.measure_kernel(self.symbol, t, Some(deadline)) {
            Ok(m) => (Some(m.usage), VariantStatus::Ok),
            Err(e) if e.timed_out() && at_budget => {
                self.budget_hit.store(true, Ordering::Relaxed);
                (None, VariantStatus::BudgetReached)
            }
            Err(e) if e.timed_out() => (None, VariantStatus::TimedOut),
            Err(_) => (None, VariantStatus::Failed),
        };
        self.tuning.line.variant();
        let mut log = self.log.lock().expect("variant log lock");
        if !log.iter().any(|m| &m.transforms == t) {
            log.push(Measurement { transforms: t.clone(), usage, status, seconds: start.elapsed().as_secs_f64() });
        }
        usage
    }

    /// From here on, the kernel's share of the budget: its candidates'.
    fn for_candidates(&self) {
        *self.until.lock().expect("deadline lock") = self.tuning.limits.candidates();
    }

    /// The present phase's deadline has passed.
    fn spent(&self) -> bool {
        self.tuning.limits.spent(*self.until.lock().expect("deadline lock"))
    }

    /// Whether the register caps alone built so far (each a ptxas run,
    /// exempt from the deadlines) took the file's whole time budget.
    fn caps_spent(&self) -> bool {
        let log = self.log.lock().expect("variant log lock");
        let seconds: f64 = log.iter().filter(|m| m.transforms.cap_alone().is_some()).map(|m| m.seconds).sum();
        seconds >= self.tuning.limits.budget.as_secs_f64()
    }

    /// A build was left out because the budget was spent.
    fn budget_reached(&self) -> bool {
        self.budget_hit.load(Ordering::Relaxed)
    }

    /// Every variant compiled, in a fixed order: the searches compile in
    /// parallel and finish in any.
    fn into_measured(self) -> Vec<Measurement> {
        let mut measured = self.log.into_inner().expect("variant log lock");
        measured.sort_by_cached_key(|m| m.transforms.labels().join(" + "));
        measured
    }
}

/// What one kernel's searches may try and apply.
struct Spaces {
    /// What the user confirmed in the db (not what an earlier tune
    /// decided: the default changes with the evidence).
    confirmed: Transforms,
    /// The noalias candidates tried one by one, best-ranked first.
    ranked: Vec<Param>,
    /// Every pointer parameter (nvcc's --restrict), where that is more
    /// than the ranked ones: one candidate.
    every_pointer: Vec<Param>,
    /// An inexact pow2 (a library pow) is there to rewrite.
    inexact_pow2: bool,
    /// The unroll caps to try (none where the kernel has no loop to unroll).
    caps: Vec<u32>,
    /// The rewrites the user allows: exact ones, and what they stated or
    /// confirmed (no assumption about the caller, no rounding change unasked).
    allowed_rewrites: Space,
    /// What may be applied without asking: the classes a GPU has shown
    /// never to cost more than 2 % on real kernels (crate::evidence), and
    /// what the user asked for or confirmed.
    facts: Space,
}

fn spaces(tuning: &Tuning<'_>, base: &Measured, inspection: Option<&Inspection>, previous: Option<&Entry>) -> Spaces {
    let (session, options) = (tuning.session, tuning.options);
    // With nvcc each noalias candidate is an nvcc build of a patched copy
    // (LBM's 28 pointers: five builds, nothing found): the best-ranked one
    // alone, unless the user asked to apply them.
    let noalias_candidates = match !session.runs_plugin() && options.noalias == Noalias::Suggest {
        true => 1,
        false => options.noalias_candidates,
    };
    let ranked: Vec<Param> = match (options.noalias, inspection) {
        (Noalias::Off, _) | (_, None) => vec![],
        (_, Some(i)) => i.noalias_candidates.iter().take(noalias_candidates).cloned().collect(),
    };
    let every_pointer: Vec<Param> = match (options.noalias, inspection) {
        (Noalias::Off, _) | (_, None) => vec![],
        (_, Some(i)) if i.noalias_candidates.len() <= ranked.len() => vec![],
        (_, Some(i)) => {
            let mut all = i.noalias_candidates.clone();
            all.sort();
            all
        }
    };
    let confirmed: Transforms = previous.map(|e| Entry { transforms: Transforms::default(), ..e.clone() }.tuned()).unwrap_or_default();
    // Transforms that would change nothing are not tried (no inspection:
    // try everything).
    let exact_pow2 = inspection.is_none_or(|i| i.pow2);
    let inexact_pow2 = inspection.is_none_or(|i| i.pow2_inexact);
    let caps: Vec<u32> = if inspection.is_none_or(|i| i.unroll_cap) { vec![1, 2, 4, 8] } else { vec![] };
    let noalias_apply = options.noalias == Noalias::Apply;
    let allowed_rewrites = Space {
        pow2: exact_pow2,
        pow2_inexact: inexact_pow2 && (options.pow2 == Pow2::Apply || confirmed.pow2_inexact),
        // nvcc's builds: where fix's spelling of it can be built.
        sink: session.rewrites_source(),
        noalias: if noalias_apply { ranked.clone() } else { confirmed.noalias.clone() },
        noalias_all: if noalias_apply { every_pointer.clone() } else { vec![] },
        launch_bounds: options.block_size.stated().or(confirmed.launch_bounds),
        occupancy: gpu::of(session.arch).occupancy_field(),
        ..Space::default()
    };
    let proven = |c| options.evidence.never_loses(c);
    let facts = Space {
        pow2: allowed_rewrites.pow2 && (proven(Class::Pow2) || confirmed.pow2),
        sink: allowed_rewrites.sink && (proven(Class::Sink) || confirmed.sink),
        unroll_caps: confirmed.unroll_cap.filter(|_| !caps.is_empty()).into_iter().collect(),
        waves: if proven(Class::OccupancyTarget) {
            occupancy_targets(session.arch, base)
        } else {
            confirmed.occupancy().into_iter().collect()
        },
        ..allowed_rewrites.clone()
    };
    Spaces { confirmed, ranked, every_pointer, inexact_pow2, caps, allowed_rewrites, facts }
}

/// The default's decision: its outcome, the space it came from, and an
/// occupancy target the cost model held back (warps or waves, its
/// predicted time ratio).
struct Decided {
    outcome: Outcome,
    allowed: Space,
    held_target: Option<(u32, f64)>,
}

/// What the facts reach; unrolling traded for registers where that removes
/// spills; an occupancy target held back where the cost model sees it lose.
fn decide(tuning: &Tuning<'_>, base: &Measured, s: &Spaces, rule: &Rule, v: &Variants<'_, '_>) -> Decided {
    let (session, options) = (tuning.session, tuning.options);
    let eval = |t: &Transforms| v.eval(t);
    let mut outcome = search::search(&s.facts, rule, &eval);
    let mut allowed = s.facts.clone();

    // Unrolling traded for registers, applied only where it removes the
    // memory traffic of spills or scratch the facts alone leave.
    if options.evidence.never_loses(Class::UnrollCap)
        && !s.caps.is_empty()
        && s.facts.unroll_caps.is_empty()
        && rule.memory_spills(&outcome.usage) > 0
    {
        let trading = Space { unroll_caps: s.caps.clone(), ..s.facts.clone() };
        let traded = search::search(&trading, rule, &eval);
        if let Verdict::Apply(_) = verdict::trade(rule, &traded.usage, &outcome.usage, Basis::Static) {
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
    if let Some(w) = outcome.transforms.occupancy().filter(|w| s.confirmed.occupancy() != Some(*w)) {
        let without = outcome.transforms.without_occupancy();
        if let Some(time_ratio) = predicted_time_ratio(session, base, (&outcome.transforms, &outcome.usage), &without, &eval) {
            if let Verdict::Hold(_) = verdict::occupancy_target(Basis::Predicted { time_ratio }) {
                held_target = Some((w, time_ratio));
                allowed.waves.clear();
                outcome = search::search(&allowed, rule, &eval);
            }
        }
    }
    Decided { outcome, allowed, held_target }
}

/// Everything held for the user: unroll caps, inexact pow2, and the
/// caller assumptions the user has not stated; a suggestion where they
/// reach what the decision cannot.
fn suggest(
    tuning: &Tuning<'_>,
    base: &Measured,
    source: &str,
    s: &Spaces,
    rule: &Rule,
    decided: &Decided,
    v: &Variants<'_, '_>,
) -> Option<Proposal> {
    let (session, options) = (tuning.session, tuning.options);
    let (allowed, outcome) = (&decided.allowed, &decided.outcome);
    let noalias_suggest = options.noalias == Noalias::Suggest;
    let kernel_name = names::unqualified(&base.symbol);
    let inferred_block = match options.block_size {
        BlockSize::Auto if allowed.launch_bounds.is_none() => launch::block_size(source, &kernel_name),
        _ => None,
    };
    let wider = Space {
        pow2: s.allowed_rewrites.pow2,
        sink: s.allowed_rewrites.sink,
        pow2_inexact: allowed.pow2_inexact || (s.inexact_pow2 && options.pow2 == Pow2::Suggest),
        unroll_caps: if allowed.unroll_caps.is_empty() { s.caps.clone() } else { allowed.unroll_caps.clone() },
        noalias: if noalias_suggest { s.ranked.clone() } else { allowed.noalias.clone() },
        noalias_all: if noalias_suggest { s.every_pointer.clone() } else { allowed.noalias_all.clone() },
        launch_bounds: allowed.launch_bounds.or(inferred_block),
        waves: occupancy_targets(session.arch, base),
        occupancy: allowed.occupancy,
    };
    if wider == *allowed {
        return None;
    }
    let better = search::search(&wider, rule, &|t: &Transforms| v.eval(t));
    // Worth the user's review only if it reaches what the allowed
    // transforms cannot: fewer registers or code alone do not count.
    if !rule.improves_on(&better.usage, &outcome.usage) {
        return None;
    }
    let held = held_part(&better.transforms, allowed);
    if held.is_empty() {
        return None;
    }
    let reasons = verdict::held_reasons(&held);
    let target = gpu::of(session.arch);
    let mut message =
        suggestion_message(&held, &better.transforms, &outcome.usage, &better.usage, &s.every_pointer, session.arch, &options.evidence);
    if let Some((w, ratio)) = decided.held_target.filter(|(w, _)| held.occupancy() == Some(*w)) {
        message.push_str(&format!(
            "; {} alone was predicted {:.2}× as fast (its schedule keeps fewer loads in flight)",
            target.occupancy_label(w),
            1.0 / ratio
        ));
    }
    message = message.replace(" VGPRs", &format!(" {}", target.registers_word()));
    Some(Proposal { held, transforms: better.transforms, usage: better.usage, reasons, message })
}

/// The kernel as the measured search sees it: its plain build, the db's
/// entry for it, the block size measure saw its launches use.
struct Kernel<'k> {
    base: &'k Measured,
    previous: Option<&'k Entry>,
    launched: Option<u32>,
}

/// The measured search: every occupancy step, alone and with the best
/// allowed rewrites, and unroll caps, for `regtune measure` to time,
/// beside the builds already `known` (the decision, the suggestion); and
/// spilling to shared memory at a block size only the measured launches
/// showed ([`launched_spills`]).
fn measured_search(
    tuning: &Tuning<'_>,
    kernel: &Kernel<'_>,
    s: &Spaces,
    rule: &Rule,
    known: &[Option<&Transforms>],
    v: &Variants<'_, '_>,
) -> (candidates::Selection, Vec<Proposal>) {
    let (session, options) = (tuning.session, tuning.options);
    let Kernel { base, previous, launched } = *kernel;
    let eval = |t: &Transforms| v.eval(t);
    let mut known_builds = vec![Transforms::default()];
    known_builds.extend(known.iter().flatten().map(|t| (*t).clone()));
    known_builds.dedup();
    let taken = known_builds.iter().filter(|t| !t.is_empty()).count();
    let known: Vec<String> = known_builds.iter().filter_map(|t| session.kernel_code_hash(&base.symbol, t).ok()).collect();
    // Spilling to shared memory needs the block size every launch keeps
    // to: the source's launch bounds, the user's --block-size, or
    // bounds they confirmed in the db.
    let target = gpu::of(session.arch);
    let stated = options.block_size.stated().or(s.confirmed.launch_bounds);
    let shared_spill =
        (stated.is_some() || target.promised_block(base).is_some()).then(|| Transforms { launch_bounds: stated, ..Default::default() });
    let steps = target.occupancy_steps(base, launched);
    let pool = candidates::Pool {
        steps: steps.all,
        occupancy: target.occupancy_field(),
        own_step: steps.own,
        rewrites: search::best_rewrites(&s.allowed_rewrites, rule, &eval),
        unroll_caps: s.caps.clone(),
        spill_to_shared: shared_spill.clone().filter(|_| target.backend_spills_to_shared()),
        // Offered again: the H100's lds-spill builds of the LBM example
        // differed from plain through two faults of the pass (NVPTX's
        // 64-bit halves, contractable products), both fixed; every
        // example is now bit-identical (no cap and 32/48/64 warps per
        // SM, 1 to 8 slots: bench/gpu/lds_spill_examples.json).
        lds_spill: shared_spill.filter(|_| session.runs_plugin()).map(|t| Transforms { lds_spill: Some(candidates::LDS_SLOTS), ..t }),
    };
    v.for_candidates();
    // The backend's spilling to shared memory is built only where the
    // cap alone at that step spills enough for it to pay, and kept only
    // where it spills less (ptxas declines where the kernel uses dynamic
    // shared memory: the spills stay).
    let cap_alone = |t: &Transforms| eval(&Transforms { waves_per_eu: t.waves_per_eu, warps_per_sm: t.warps_per_sm, ..Default::default() });
    let build = |t: &Transforms| {
        // Where the backend spills to shared memory itself, its spilling
        // beat regtune's LDS spill at 16 of 17 steps where a cap spilled
        // (the examples, RSBench and four corpus programs, H100; the
        // other, Kalman at 64 warps, ran both at 0.05× of plain), and
        // the pass was kept only where the cap alone spilled nothing.
        if t.lds_spill.is_some() && target.backend_spills_to_shared() && cap_alone(t).is_some_and(|c| c.vgpr_spills > 0) {
            return None;
        }
        let cap = if t.spill_to_shared { Some(cap_alone(t).filter(|c| target.shared_spill_pays(c))?) } else { None };
        let usage = eval(t)?;
        if cap.is_some_and(|c| usage.vgpr_spills >= c.vgpr_spills) {
            return None;
        }
        Some((usage, session.kernel_code_hash(&base.symbol, t).ok()?))
    };
    let spent = || v.spent();
    // A re-tune of the same source: what the GPU timed and found no
    // faster waits behind what it has not timed yet.
    let timed = previous.and_then(|e| e.measured.as_ref());
    let lost = |t: &Transforms| timed.is_some_and(|m| m.lost(t));
    let proposals = candidates::untimed_first(candidates::proposals(&pool), lost);
    // nvcc's caps are one ptxas run each on one PTX: every step is built
    // (the examples on an H200: the step left out at 8 was the hand
    // sweep's best, bench/nvcc/results), and so is every proposal with a
    // rewrite (one nvcc build per rewrite, a ptxas run per cap on it).
    // So is nvcc's own -maxrregcount at each step's registers, the hand
    // sweep's build of the kernel (its cicc's PTX once per R for the whole
    // file; the kernel's entry from it): on an H200 generatePaths<double>
    // ran 1.021× plain at -maxrregcount=96, which no .maxnreg cap reaches.
    let rewriting = proposals.iter().filter(|t| !nvcc_entry_only(t)).count();
    let steps: Vec<u32> = proposals.iter().filter_map(Transforms::cap_alone).collect();
    let capped = candidates::untimed_first(session.maxrregcount_caps(&steps), lost);
    let wanted = match session.runs_plugin() || options.candidates == 0 {
        true => options.candidates,
        false => options.candidates.max(pool.steps.len() + taken + rewriting + capped.len()),
    };
    let mut search = match session.runs_plugin() {
        // clang on NVPTX: every step's cap is plain's PTX edited, a
        // ptxas run (Session::caps_from_ptx), so every step is built,
        // whatever time the searches left, until the kernel's caps have
        // taken the file's whole budget (said, run.rs): no step's code
        // is foretold by the builds before it (bench/cost/results/
        // redundant-sm90-2026-11-28.txt), and the examples' caps take a
        // small part of it, but 21 steps at ~20 s of ptxas each made
        // cudaTensorCoreGemm 26.6x its plain compile. --candidates
        // bounds the rest (the rewrites, spilling, unroll caps), which
        // compile the file. One turn then times what a second turn
        // found: a transport sweep's best step was among 20 builds left
        // out at 8.
        true if session.caps_from_ptx() => {
            let (caps, rest): (Vec<Transforms>, Vec<Transforms>) = proposals.into_iter().partition(|t| t.cap_alone().is_some());
            let every = if options.candidates == 0 { 0 } else { usize::MAX };
            let caps = candidates::select(caps, every, &known, build, || v.caps_spent());
            let rest = candidates::select(rest, wanted.saturating_sub(taken), &caps.codes, build, spent);
            candidates::Selection {
                caps_past_budget: if every > 0 { caps.left_out.clone() } else { vec![] },
                kept: caps.kept.into_iter().chain(rest.kept).collect(),
                left_out: caps.left_out.into_iter().chain(rest.left_out).collect(),
                codes: rest.codes,
            }
        }
        true => candidates::select(proposals, wanted.saturating_sub(taken), &known, build, spent),
        // nvcc: every step's cap (a ptxas run) and -maxrregcount cap
        // (an nvcc PTX build per R, shared by the file's kernels), whatever
        // time is left, then the rewrites (an nvcc build each) while time
        // is left. A -maxrregcount cap whose code for this kernel is its
        // .maxnreg cap's (or any build's before it) is not kept.
        false => {
            let (entry, rewriting): (Vec<Transforms>, Vec<Transforms>) = proposals.into_iter().partition(nvcc_entry_only);
            let caps = candidates::select(entry, wanted.saturating_sub(taken), &known, build, || false);
            let room = wanted.saturating_sub(taken + caps.kept.len());
            let nvccs = candidates::select(capped, room, &caps.codes, build, || false);
            let room = room.saturating_sub(nvccs.kept.len());
            let rewrites = candidates::select(rewriting, room, &nvccs.codes, build, spent);
            candidates::Selection {
                kept: caps.kept.into_iter().chain(nvccs.kept).chain(rewrites.kept).collect(),
                left_out: caps.left_out.into_iter().chain(nvccs.left_out).chain(rewrites.left_out).collect(),
                codes: rewrites.codes,
                caps_past_budget: vec![],
            }
        }
    };
    // Those not built again are the measurement's `earlier`, not left out.
    search.left_out.retain(|t| !lost(t));
    let mut spills = vec![];
    if pool.spill_to_shared.is_none() && pool.lds_spill.is_none() {
        if let Some(block) = launched {
            spills = launched_spills(session, &search.kept, block, timed, &search.codes, build, spent);
        }
    }
    (search, spills)
}

/// [`LAUNCHED_SPILLS`]: at the kept register caps alone whose spills can
/// pay (the target's rule), those a GPU timed fastest (`timed`, the
/// measurement a re-tune of unchanged code keeps), else that spill most,
/// the same cap with launch bounds of `block`
/// threads and the backend's spilling to shared memory (regtune's LDS spill where the backend has
/// none); each built (`build`: usage and code hash) while time is left and
/// kept if its code differs from `known` and the others and it spills less
/// than the cap alone.
fn launched_spills(
    session: &Session<'_>,
    kept: &[regtune_decisions::Candidate],
    block: u32,
    timed: Option<&regtune_decisions::measured::Measured>,
    known: &[String],
    build: impl Fn(&Transforms) -> Option<(Usage, String)>,
    spent: impl Fn() -> bool,
) -> Vec<Proposal> {
    let target = gpu::of(session.arch);
    let mut spilling_caps: Vec<&regtune_decisions::Candidate> = kept
        .iter()
        .filter(|c| c.usage.vgpr_spills > 0 && c.transforms.without_occupancy().is_empty())
        .filter(|c| !target.backend_spills_to_shared() || target.shared_spill_pays(&c.usage))
        .collect();
    // The twin of the cap the GPU keeps is the one that can beat the
    // build: on RSBench the caps that spill most (208 bytes) ran 1.15-1.17×,
    // the kept cap (188) 1.635×, and only its twin ran faster (1.648×).
    // Untimed, shared memory gained most where a cap spills most.
    let median = |c: &regtune_decisions::Candidate| Some(timed?.candidate(&c.transforms).filter(|m| m.identical)?.time.as_ref()?.median_ms);
    spilling_caps.sort_by(|a, b| match (median(a), median(b)) {
        (Some(x), Some(y)) => x.total_cmp(&y),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => b.usage.vgpr_spills.cmp(&a.usage.vgpr_spills),
    });
    let mut seen = known.to_vec();
    let mut out = Vec::new();
    for cap in spilling_caps.into_iter().take(LAUNCHED_SPILLS) {
        if spent() {
            break;
        }
        let held = Transforms { launch_bounds: Some(block), ..Default::default() };
        let transforms = match target.backend_spills_to_shared() {
            true => Transforms { spill_to_shared: true, ..cap.transforms.clone() },
            false => Transforms { lds_spill: Some(candidates::LDS_SLOTS), ..cap.transforms.clone() },
        };
        let transforms = Transforms { launch_bounds: Some(block), ..transforms };
        let Some((usage, code)) = build(&transforms) else { continue };
        // `build` holds the backend's spilling to this already; regtune's
        // LDS spill, which the stated-block search offers where nothing
        // spills too, must here spill less than the cap alone.
        if seen.contains(&code) || usage.vgpr_spills >= cap.usage.vgpr_spills {
            continue;
        }
        seen.push(code);
        let step = cap.transforms.labels().join(" + ");
        let message = format!(
            "every measured launch used {block} threads per block: with __launch_bounds__({block}) at {step} the {} spill bytes \
             of the cap alone become {} ({} bytes of shared memory a block); `regtune measure` times it, and it applies once you confirm it \
             (`regtune confirm`) or pass --block-size {block}",
            cap.usage.vgpr_spills, usage.vgpr_spills, usage.lds_bytes
        );
        out.push(Proposal { held, transforms, usage, reasons: vec![Reason::AssumesCaller], message });
    }
    out
}

/// The part of `t` that `allowed` does not allow: what needs the user.
pub(super) fn held_part(t: &Transforms, allowed: &Space) -> Transforms {
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
        warps_per_sm: t.warps_per_sm.filter(|w| !allowed.waves.contains(w)),
        ..Default::default()
    }
}

/// The cost model's time with `t` over time with `without` (both compiled
/// once more to assembly); None when a listing fails.
pub(super) fn predicted_time_ratio(
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
pub(super) fn occupancy_ceiling(arch: &Arch, base: &Measured) -> u32 {
    gpu::of(arch).occupancy_ceiling(base)
}

/// Occupancy steps the register allocator could plausibly reach.
pub(super) fn occupancy_targets(arch: &Arch, base: &Measured) -> Vec<u32> {
    gpu::of(arch).occupancy_targets(base)
}

/// What the register column counts.
pub(super) fn registers_word(arch: &Arch) -> &'static str {
    gpu::of(arch).registers_word()
}

/// Nothing can beat the plain build: top occupancy and, for `no-spill`,
/// nothing spilled.
pub(super) fn at_best(rule: &Rule, max_waves: u32) -> bool {
    let b = &rule.baseline;
    let clean = b.vgpr_spills + b.sgpr_spills == 0 && (rule.allow_scratch || b.scratch_bytes == 0);
    b.occupancy >= max_waves && (rule.objective == Objective::Occupancy || clean)
}

/// The transforms a kernel's PTX entry carries alone (nvcc's builds): no
/// rewrite of the source, no `-maxrregcount` (another PTX's entry).
fn nvcc_entry_only(t: &Transforms) -> bool {
    Transforms { launch_bounds: None, spill_to_shared: false, ..t.without_occupancy() }.is_empty()
}
