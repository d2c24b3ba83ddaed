//! One kernel's searches, phase by phase: what the facts reach, the
//! decision, the suggestion, and the builds `regtune measure` times; each
//! transform's part of them is its home's (transforms/), every variant
//! compiled once.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rayon::prelude::*;

use regtune_decisions::plugin::Inspection;
use regtune_decisions::{Entry, Param, Reason, Transforms, Usage};

use super::transforms::{self, Proposal, Proposing, Spaces};
use super::{Measurement, Options, VariantStatus};
use crate::candidates;
use crate::gpu::resources::Measured;
use crate::gpu::{self, Arch};
use crate::limits::{Limits, Until};
use crate::progress::UnitProgress;
use crate::search::{self, Eval, Objective, Outcome, Rule, Space};
use crate::session::{cap_on_rewrites, Build, Session, SessionError};
use crate::verdict;

/// What every kernel's search of one file shares.
pub(super) struct Tuning<'a> {
    pub(super) session: &'a Session<'a>,
    pub(super) options: &'a Options,
    pub(super) limits: &'a Limits,
    pub(super) line: &'a UnitProgress<'a>,
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

/// `previous`: the db's entry for this kernel and input; `launched`: the
/// threads per block `regtune measure` saw its launches use (any input).
/// The phases, in order: what may be tried and applied ([`transforms::spaces`]), the
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
    let confirmed: Transforms = previous.map(|e| Entry { transforms: Transforms::default(), ..e.clone() }.tuned()).unwrap_or_default();
    let k = Proposing { session, options, base, source, inspection, confirmed: &confirmed };
    let spaces = transforms::spaces(&k);
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
        every_pointer: spaces.tried.noalias_all.clone(),
        search: candidates::Selection::default(),
        launched_spills: vec![],
        confirmed: previous.map(|e| e.suggested.iter().filter(|s| s.confirmed).cloned().collect()).unwrap_or_default(),
    };
    if at_best(&rule, occupancy_ceiling(session.arch, base)) {
        return plan;
    }
    let variants = Variants::new(tuning, &base.symbol);
    let decided = decide(&k, &spaces, &rule, &variants);
    let suggestion = suggest(&k, &spaces, &rule, &decided, &variants);
    plan.budget_reached = variants.budget_reached();
    if options.candidates > 0 {
        let known = [Some(&decided.outcome.transforms), suggestion.as_ref().map(|p| &p.transforms)];
        let kernel = Kernel { previous, launched };
        (plan.search, plan.launched_spills) = measured_search(&k, &kernel, &spaces, &rule, &known, &variants);
    }
    let measured = variants.into_measured();
    plan.variants = measured.len();
    plan.reason = verdict::applied_reason(&rule, &base.usage, &decided.outcome.usage);
    plan.outcome = decided.outcome;
    plan.suggestion = suggestion;
    plan.measured = measured;
    plan
}

/// A variant's build, its usage not read yet; whether its deadline is the
/// phase's end; how long it took.
type Started = (Result<Build, SessionError>, bool, Duration);

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

    /// The usage of each of `ts`' builds; None where it failed, ran past
    /// its limit, or the budget is spent. Those not built before are built
    /// (in parallel, each under its own deadline), then their usage read
    /// at once.
    fn eval_all(&self, ts: &[Transforms]) -> Vec<Option<Usage>> {
        let session = self.tuning.session;
        // Each variant compiles once: later searches repeat some, and one
        // that failed or was stopped is not tried again.
        let known = |t: &Transforms| self.log.lock().expect("variant log lock").iter().find(|m| &m.transforms == t).map(|m| m.usage);
        let mut fresh: Vec<&Transforms> = Vec::new();
        for t in ts {
            if known(t).is_none() && !fresh.contains(&t) {
                fresh.push(t);
            }
        }
        let built: Vec<Option<Started>> = fresh.par_iter().map(|t| self.build(t)).collect();
        let (fresh, built): (Vec<&Transforms>, Vec<_>) = fresh.into_iter().zip(built).filter_map(|(t, b)| Some((t, b?))).unzip();
        let (builds, rest): (Vec<_>, Vec<_>) = built.into_iter().map(|(b, at_budget, took)| (b, (at_budget, took))).unzip();
        let start = Instant::now();
        let read = session.read_kernels(self.symbol, builds);
        let share = start.elapsed() / read.len().max(1) as u32;
        for ((t, measured), (at_budget, took)) in fresh.into_iter().zip(read).zip(rest) {
            let (usage, status) = match measured {
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
                log.push(Measurement { transforms: t.clone(), usage, status, seconds: (took + share).as_secs_f64() });
            }
        }
        ts.iter().map(|t| known(t).flatten()).collect()
    }

    /// `t`'s build under its deadline, reckoned as it starts; whether that
    /// deadline is the phase's end; how long it took. None: the budget is
    /// spent, and it is not built.
    fn build(&self, t: &Transforms) -> Option<Started> {
        let (session, limits) = (self.tuning.session, self.tuning.limits);
        let until = *self.until.lock().expect("deadline lock");
        // nvcc's entry edits alone are a ptxas run each on a PTX built
        // once, and its -maxrregcount caps a PTX build per step for the
        // whole file: the budget bounds the builds that rewrite the source.
        // clang's caps alone on NVPTX are a ptxas run each too.
        let cheap = (!session.runs_plugin() && (nvcc_entry_only(t) || t.maxrregcount_alone().is_some()))
            || (session.caps_from_ptx() && cap_on_rewrites(t).is_some());
        if !cheap && limits.spent(until) {
            self.budget_hit.store(true, Ordering::Relaxed);
            return None;
        }
        let start = Instant::now();
        let (deadline, at_budget) = match cheap {
            true => (start + limits.variant, false),
            false => limits.variant_deadline(until),
        };
        Some((session.build_kernel(self.symbol, t, Some(deadline)), at_budget, start.elapsed()))
    }

    /// From here on, the kernel's share of the budget: its candidates'.
    fn for_candidates(&self) {
        *self.until.lock().expect("deadline lock") = self.tuning.limits.candidates();
    }

    /// The present phase's deadline has passed.
    fn spent(&self) -> bool {
        self.tuning.limits.spent(*self.until.lock().expect("deadline lock"))
    }

    /// Whether the register caps built so far, alone or on rewrites (each
    /// a ptxas run, exempt from the deadlines), took the file's whole time
    /// budget.
    fn caps_spent(&self) -> bool {
        self.cap_seconds().iter().sum::<f64>() >= self.tuning.limits.budget.as_secs_f64()
    }

    /// How many register caps (alone or on rewrites) to build at once:
    /// those the caps' time left fits at their mean time so far (a core's
    /// worth to begin with), at most [`CAPS_AT_ONCE`], so a batch
    /// overshoots the budget by about one cap.
    fn caps_batch(&self) -> usize {
        caps_at_once(&self.cap_seconds(), self.tuning.limits.budget.as_secs_f64(), rayon::current_num_threads())
    }

    /// The seconds of each register cap built so far, alone or on rewrites.
    fn cap_seconds(&self) -> Vec<f64> {
        let log = self.log.lock().expect("variant log lock");
        log.iter().filter(|m| cap_on_rewrites(&m.transforms).is_some()).map(|m| m.seconds).collect()
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

impl Eval for Variants<'_, '_> {
    fn eval(&self, t: &Transforms) -> Option<Usage> {
        self.eval_all(std::slice::from_ref(t)).pop().flatten()
    }

    fn eval_all(&self, ts: &[Transforms]) -> Vec<Option<Usage>> {
        Variants::eval_all(self, ts)
    }
}

/// Register caps built together: NVPTX builds each from one PTX (a
/// ptxas run) and reads a batch's SASS in one nvdisasm run, which costs
/// about 0.2 s to start whatever it reads (dxtc, sm_90).
const CAPS_AT_ONCE: usize = 16;

/// How many caps to build next, given the seconds each cap built so far
/// took and the caps' whole budget: as many as the time left fits at their
/// mean, at most [`CAPS_AT_ONCE`], never fewer than `threads` (a core's
/// worth, which is also the first batch).
fn caps_at_once(seconds: &[f64], budget: f64, threads: usize) -> usize {
    let spent: f64 = seconds.iter().sum();
    if seconds.is_empty() || spent <= 0.0 {
        return threads;
    }
    let fits = ((budget - spent) / (spent / seconds.len() as f64)).floor().max(0.0) as usize;
    fits.min(CAPS_AT_ONCE).max(threads)
}

/// The measured search's builds of register caps: a batch's caps (`.maxnreg`,
/// alone or on rewrites, and nvcc's `-maxrregcount`) built and read together first
/// (`bounded`: batches sized to the caps' time budget, else all at once),
/// the rest of the batch one by one.
struct Caps<'b, 't, 'a, B> {
    build: &'b B,
    v: &'b Variants<'t, 'a>,
    bounded: bool,
}

impl<B: Fn(&Transforms) -> Option<(Usage, String)> + Sync> candidates::Build for Caps<'_, '_, '_, B> {
    fn build(&self, t: &Transforms) -> Option<(Usage, String)> {
        (self.build)(t)
    }

    fn batch(&self) -> usize {
        match self.bounded {
            true => self.v.caps_batch(),
            false => usize::MAX,
        }
    }

    fn prepare(&self, batch: &[Transforms]) {
        let alone: Vec<Transforms> =
            batch.iter().filter(|t| cap_on_rewrites(t).is_some() || t.maxrregcount_alone().is_some()).cloned().collect();
        if alone.len() > 1 {
            self.v.eval_all(&alone);
        }
    }
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
fn decide(k: &Proposing<'_>, s: &Spaces, rule: &Rule, v: &Variants<'_, '_>) -> Decided {
    let mut outcome = search::search(&s.facts, rule, v);
    let mut allowed = s.facts.clone();
    transforms::trade_for_spills(k, s, rule, v, &mut outcome, &mut allowed);
    let held_target = transforms::hold_back(k, rule, v, &mut outcome, &mut allowed);
    Decided { outcome, allowed, held_target }
}

/// Everything held for the user: unroll caps, inexact pow2, and the
/// caller assumptions the user has not stated; a suggestion where they
/// reach what the decision cannot.
fn suggest(k: &Proposing<'_>, s: &Spaces, rule: &Rule, decided: &Decided, v: &Variants<'_, '_>) -> Option<Proposal> {
    let (session, options) = (k.session, k.options);
    let (allowed, outcome) = (&decided.allowed, &decided.outcome);
    let wider = transforms::suggested(k, &s.tried, allowed);
    if wider == *allowed {
        return None;
    }
    let better = search::search(&wider, rule, v);
    // Worth the user's review only if it reaches what the allowed
    // transforms cannot: fewer registers or code alone do not count.
    if !rule.improves_on(&better.usage, &outcome.usage) {
        return None;
    }
    let held = transforms::held_part(&better.transforms, allowed);
    if held.is_empty() {
        return None;
    }
    let reasons = transforms::held_reasons(&held);
    let every_pointer = &s.tried.noalias_all;
    let usages = (&outcome.usage, &better.usage);
    let mut message = transforms::message(&held, &better.transforms, usages, every_pointer, session.arch, &options.evidence);
    if let Some(target) = decided.held_target.filter(|(w, _)| held.occupancy() == Some(*w)) {
        message.push_str(&transforms::held_back_note(session.arch, target));
    }
    message = message.replace(" VGPRs", &format!(" {}", gpu::of(session.arch).registers_word()));
    Some(Proposal { held, transforms: better.transforms, usage: better.usage, reasons, message })
}

/// What the measured search reads beyond the proposal's view of the
/// kernel: the db's entry for it, the block size measure saw its launches use.
struct Kernel<'k> {
    previous: Option<&'k Entry>,
    launched: Option<u32>,
}

/// The measured search: every occupancy step, alone and with the best
/// allowed rewrites, and unroll caps, for `regtune measure` to time,
/// beside the builds already `known` (the decision, the suggestion); and
/// spilling to shared memory at a block size only the measured launches
/// showed ([`launched_spills`]).
fn measured_search(
    k: &Proposing<'_>,
    kernel: &Kernel<'_>,
    s: &Spaces,
    rule: &Rule,
    known: &[Option<&Transforms>],
    v: &Variants<'_, '_>,
) -> (candidates::Selection, Vec<Proposal>) {
    let (session, options, base) = (k.session, k.options, k.base);
    let Kernel { previous, launched } = *kernel;
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
    let stated = options.block_size.stated().or(k.confirmed.launch_bounds);
    let shared_spill =
        (stated.is_some() || target.promised_block(base).is_some()).then(|| Transforms { launch_bounds: stated, ..Default::default() });
    let steps = target.occupancy_steps(base, launched);
    let pool = candidates::Pool {
        steps: steps.all,
        occupancy: target.occupancy_field(),
        own_step: steps.own,
        rewrites: search::best_rewrites(&s.allowed, rule, v),
        unroll_caps: s.tried.unroll_caps.clone(),
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
        // out at 8. The rewrites at each step come next the same way:
        // the rewrites' PTX once, a ptxas run a step (on the development
        // corpus at the defaults they were what a first turn left out of
        // dxtc's, interval's and a miniBUDE kernel's: bench/search/left_out.py).
        true if session.caps_from_ptx() => {
            let (caps, rest): (Vec<Transforms>, Vec<Transforms>) = proposals.into_iter().partition(|t| cap_on_rewrites(t).is_some());
            let (alone, on_rewrites): (Vec<Transforms>, Vec<Transforms>) = caps.into_iter().partition(|t| t.cap_alone().is_some());
            let every = if options.candidates == 0 { 0 } else { usize::MAX };
            // The rest before the rewrites' caps: a rewrite alone is kept
            // where a cap on it gives the same code.
            let caps = candidates::select(alone, every, &known, Caps { build: &build, v, bounded: true }, || v.caps_spent());
            let rest = candidates::select(rest, wanted.saturating_sub(taken), &caps.codes, build, spent);
            let on_rewrites =
                candidates::select(on_rewrites, every, &rest.codes, Caps { build: &build, v, bounded: true }, || v.caps_spent());
            let past_budget = || caps.left_out.iter().chain(&on_rewrites.left_out).cloned().collect();
            candidates::Selection {
                caps_past_budget: if every > 0 { past_budget() } else { vec![] },
                kept: caps.kept.iter().chain(&rest.kept).chain(&on_rewrites.kept).cloned().collect(),
                left_out: past_budget().into_iter().chain(rest.left_out).collect(),
                codes: on_rewrites.codes,
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
            let caps = candidates::select(entry, wanted.saturating_sub(taken), &known, Caps { build: &build, v, bounded: false }, || false);
            let room = wanted.saturating_sub(taken + caps.kept.len());
            let nvccs = candidates::select(capped, room, &caps.codes, Caps { build: &build, v, bounded: false }, || false);
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
            spills = transforms::launched_spills(session, &search.kept, block, timed, &search.codes, build, spent);
        }
    }
    (search, spills)
}

/// The most occupancy fewer registers could bring (the target's model).
pub(super) fn occupancy_ceiling(arch: &Arch, base: &Measured) -> u32 {
    gpu::of(arch).occupancy_ceiling(base)
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

#[cfg(test)]
mod tests {
    use super::{caps_at_once, CAPS_AT_ONCE};

    #[test]
    fn caps_are_built_as_many_at_once_as_the_time_left_fits() {
        // None built yet: a core's worth.
        assert_eq!(caps_at_once(&[], 10.0, 1), 1);
        assert_eq!(caps_at_once(&[], 10.0, 4), 4);
        // 0.5 s a cap, 8.5 s left: 17 fit, at most CAPS_AT_ONCE.
        assert_eq!(caps_at_once(&[0.5, 0.5, 0.5], 10.0, 1), CAPS_AT_ONCE);
        // 2 s a cap, 4 s left: two.
        assert_eq!(caps_at_once(&[2.0, 2.0, 2.0], 10.0, 1), 2);
        // Past the budget (the caller stops first): still a core's worth.
        assert_eq!(caps_at_once(&[6.0, 6.0], 10.0, 2), 2);
    }
}
