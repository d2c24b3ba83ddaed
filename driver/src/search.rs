//! The search over one kernel's variants, and the rule that decides.
//!
//! Pure logic over an `eval` callback that compiles and measures a set of
//! transforms, so the decision rule is unit-tested without a compiler.
//! Order of play: each transform alone; combinations of those that helped;
//! occupancy targets on top of the best rewrite; then the kept set is
//! shrunk until every transform in it is needed.

use std::cmp::Ordering;

use rayon::prelude::*;
use regtune_decisions::{Occupancy, Param, Transforms, Usage};

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Objective {
    /// Highest occupancy with no more spills and scratch than the plain compile.
    Occupancy,
    /// First remove spills and scratch, then maximize occupancy.
    NoSpill,
}

/// What the decision compares against and what it tolerates.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rule {
    pub objective: Objective,
    /// A private array in scratch is as bad as a spill unless allowed.
    pub allow_scratch: bool,
    pub baseline: Usage,
    /// SGPR spills land in VGPR lanes (AMDGPU): `v_writelane`/`v_readlane`,
    /// no memory traffic, as long as scratch does not grow. On NVPTX both
    /// spill counts are memory (stores and loads), and this is false.
    pub lane_spills: bool,
}

/// Local memory is memory: where the final code's local loads and stores
/// were counted (NVPTX, `Usage::local_accesses`, weighted by loops), they
/// are the memory traffic, private arrays included; spill bytes alone
/// would call a variant that moves matrices to local memory inside loops
/// an improvement.
fn local_traffic(u: &Usage, b: &Usage) -> Option<(u32, u32)> {
    (u.local_accesses > 0 || b.local_accesses > 0).then_some((u.local_accesses, b.local_accesses))
}

impl Rule {
    fn spills(&self, u: &Usage) -> u32 {
        u.vgpr_spills + u.sgpr_spills + if self.allow_scratch { 0 } else { u.scratch_bytes }
    }

    /// Spills and scratch that cost memory traffic: what a transform that
    /// trades unrolling for registers must remove to be applied unasked.
    /// SGPR spills held in VGPR lanes cost none (an SGPR spill that reaches
    /// memory shows as scratch).
    pub(crate) fn memory_spills(&self, u: &Usage) -> u32 {
        if let Some((local, _)) = local_traffic(u, &self.baseline) {
            return local;
        }
        u.vgpr_spills + u.scratch_bytes + if self.lane_spills { 0 } else { u.sgpr_spills }
    }

    /// May this result replace the plain compile at all? Under the
    /// occupancy objective: no more VGPR spills or scratch than the plain
    /// compile, and no more SGPR spills unless they stay in VGPR lanes (a
    /// few lane moves per spilled SGPR, against a whole occupancy step; see
    /// docs/guide/how-tune-decides.md, "SGPR spills held in VGPR lanes").
    pub(crate) fn admissible(&self, u: &Usage) -> bool {
        let b = &self.baseline;
        match self.objective {
            Objective::Occupancy => {
                local_traffic(u, b).is_none_or(|(now, before)| now <= before)
                    && u.vgpr_spills <= b.vgpr_spills
                    && (u.sgpr_spills <= b.sgpr_spills || (self.lane_spills && u.scratch_bytes <= b.scratch_bytes))
                    && (self.allow_scratch || u.scratch_bytes <= b.scratch_bytes)
            }
            Objective::NoSpill => true,
        }
    }

    /// The primary goal, bigger is better: what a result must improve on
    /// the plain compile to be worth applying.
    fn primary(&self, u: &Usage) -> (i64, i64) {
        match self.objective {
            Objective::Occupancy => (0, i64::from(u.occupancy)),
            Objective::NoSpill => (-i64::from(self.spills(u)), i64::from(u.occupancy)),
        }
    }

    /// Full order: the primary goal, then fewer spills, fewer VGPRs+AGPRs,
    /// fewer SGPRs, smaller code. `Greater` means `a` is better.
    pub(crate) fn compare(&self, a: &Usage, b: &Usage) -> Ordering {
        let key = |u: &Usage| {
            (self.primary(u), -i64::from(self.spills(u)), -i64::from(u.vgpr + u.agpr), -i64::from(u.sgpr), -(u.code_bytes as i64))
        };
        match (self.admissible(a), self.admissible(b)) {
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            _ => key(a).cmp(&key(b)),
        }
    }

    /// Worth applying: admissible and better on the primary goal.
    pub(crate) fn improves(&self, u: &Usage) -> bool {
        self.improves_on(u, &self.baseline)
    }

    /// Admissible and better than `than` on the primary goal (occupancy, or
    /// spills for `no-spill`): tie-breaks alone do not count.
    pub(crate) fn improves_on(&self, u: &Usage, than: &Usage) -> bool {
        self.admissible(u) && self.primary(u) > self.primary(than)
    }
}

/// The transforms worth trying on this kernel.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Space {
    /// pow2's exact rewrites.
    pub pow2: bool,
    /// pow2 of library pows that are not correctly rounded, too.
    pub pow2_inexact: bool,
    pub sink: bool,
    pub unroll_caps: Vec<u32>,
    /// Pointer parameters in the heuristic's order, most promising first.
    pub noalias: Vec<Param>,
    /// Every pointer parameter (nvcc's `--restrict`), sorted: one candidate,
    /// kept or dropped as a whole. Empty when not tried.
    pub noalias_all: Vec<Param>,
    /// Occupancy targets to try (waves per SIMD above the plain compile).
    pub waves: Vec<u32>,
    /// The target's unit of those steps: which field they set.
    pub occupancy: Occupancy,
    pub launch_bounds: Option<u32>,
}

impl Space {
    fn singles(&self) -> Vec<Transforms> {
        let one = |f: &dyn Fn(&mut Transforms)| {
            let mut t = Transforms::default();
            f(&mut t);
            t
        };
        let mut v = Vec::new();
        if self.pow2 {
            v.push(one(&|t| t.pow2 = true));
        }
        if self.pow2_inexact {
            v.push(one(&|t| (t.pow2, t.pow2_inexact) = (true, true)));
        }
        if self.sink {
            v.push(one(&|t| t.sink = true));
        }
        v.extend(self.unroll_caps.iter().map(|&n| one(&|t| t.unroll_cap = Some(n))));
        v.extend(self.noalias.iter().map(|p| one(&|t| t.noalias = vec![p.clone()])));
        if !self.noalias_all.is_empty() {
            v.push(one(&|t| t.noalias = self.noalias_all.clone()));
        }
        v.extend(self.waves.iter().map(|&w| Transforms::occupancy_step(self.occupancy, w)));
        if let Some(b) = self.launch_bounds {
            v.push(one(&|t| t.launch_bounds = Some(b)));
        }
        v
    }
}

/// `a` plus what `b` adds; None where they conflict (two unroll caps, two
/// occupancy targets).
fn union(a: &Transforms, b: &Transforms) -> Option<Transforms> {
    let pick = |x: Option<u32>, y: Option<u32>| match (x, y) {
        (Some(p), Some(q)) if p != q => Err(()),
        _ => Ok(x.or(y)),
    };
    let mut noalias = a.noalias.clone();
    noalias.extend(b.noalias.iter().filter(|p| !a.noalias.contains(p)).cloned());
    noalias.sort();
    Some(Transforms {
        pow2: a.pow2 || b.pow2,
        pow2_inexact: a.pow2_inexact || b.pow2_inexact,
        sink: a.sink || b.sink,
        unroll_cap: pick(a.unroll_cap, b.unroll_cap).ok()?,
        noalias,
        waves_per_eu: pick(a.waves_per_eu, b.waves_per_eu).ok()?,
        warps_per_sm: pick(a.warps_per_sm, b.warps_per_sm).ok()?,
        launch_bounds: pick(a.launch_bounds, b.launch_bounds).ok()?,
        spill_to_shared: a.spill_to_shared || b.spill_to_shared,
        lds_spill: pick(a.lds_spill, b.lds_spill).ok()?,
        maxrregcount: pick(a.maxrregcount, b.maxrregcount).ok()?,
    })
}

/// `t` with one transform removed, for each transform in it; inexact pow2
/// may also step down to exact, and noalias on every pointer goes as a whole.
fn without_each(t: &Transforms, space: &Space) -> Vec<Transforms> {
    let mut v = Vec::new();
    let mut push = |f: &dyn Fn(&mut Transforms)| {
        let mut c = t.clone();
        f(&mut c);
        v.push(c);
    };
    if t.pow2 {
        push(&|c| (c.pow2, c.pow2_inexact) = (false, false));
    }
    if t.pow2 && t.pow2_inexact {
        push(&|c| c.pow2_inexact = false);
    }
    if t.sink {
        push(&|c| c.sink = false);
    }
    if t.unroll_cap.is_some() {
        push(&|c| c.unroll_cap = None);
    }
    if !space.noalias_all.is_empty() && t.noalias == space.noalias_all {
        push(&|c| c.noalias.clear());
    } else {
        for p in &t.noalias {
            push(&|c| c.noalias.retain(|q| q != p));
        }
    }
    if t.occupancy().is_some() {
        push(&|c| *c = c.without_occupancy());
    }
    if t.launch_bounds.is_some() {
        push(&|c| c.launch_bounds = None);
    }
    if t.spill_to_shared {
        push(&|c| c.spill_to_shared = false);
    }
    if t.lds_spill.is_some() {
        push(&|c| c.lds_spill = None);
    }
    v
}

/// What a search measures its variants with: one variant's usage (None:
/// it did not build), and a batch's, which a search asks for where it has
/// several to try. A closure builds a batch's variants in parallel; tune's
/// build them so and read their usage together (one nvdisasm run).
pub(crate) trait Eval: Sync {
    fn eval(&self, t: &Transforms) -> Option<Usage>;

    fn eval_all(&self, ts: &[Transforms]) -> Vec<Option<Usage>> {
        ts.par_iter().map(|t| self.eval(t)).collect()
    }
}

impl<F: Fn(&Transforms) -> Option<Usage> + Sync> Eval for F {
    fn eval(&self, t: &Transforms) -> Option<Usage> {
        self(t)
    }
}

/// The result of a search.
#[derive(Debug, Clone)]
pub(crate) struct Outcome {
    /// What to apply; empty when nothing beat the plain compile.
    pub transforms: Transforms,
    pub usage: Usage,
}

/// Measure the candidates not tried yet, in parallel, and record them.
fn measure_fresh<E>(eval: &E, cands: Vec<Transforms>, tried: &mut Vec<(Transforms, Usage)>) -> Vec<(Transforms, Usage)>
where
    E: Eval + ?Sized,
{
    let fresh: Vec<Transforms> = cands.into_iter().filter(|c| !tried.iter().any(|(t, _)| t == c)).collect();
    let results: Vec<(Transforms, Usage)> =
        fresh.iter().zip(eval.eval_all(&fresh)).filter_map(|(t, u)| u.map(|u| (t.clone(), u))).collect();
    tried.extend(results.iter().cloned());
    results
}

/// Each transform of `space` alone, then the best single grown greedily
/// with the others that helped, each addition kept only if better; the
/// plain build when nothing beat it.
fn greedy<M>(space: &Space, rule: &Rule, tried: &mut Vec<(Transforms, Usage)>, measure_all: &M) -> (Transforms, Usage)
where
    M: Fn(Vec<Transforms>, &mut Vec<(Transforms, Usage)>) -> Vec<(Transforms, Usage)>,
{
    let mut singles = measure_all(space.singles(), tried);
    singles.retain(|(_, u)| rule.admissible(u) && rule.compare(u, &rule.baseline) == Ordering::Greater);
    singles.sort_by(|a, b| rule.compare(&b.1, &a.1));
    let mut best = match singles.first() {
        Some((t, u)) => (t.clone(), *u),
        None => (Transforms::default(), rule.baseline),
    };
    for (t, _) in singles.iter().skip(1) {
        let Some(cand) = union(&best.0, t) else { continue };
        let known = tried.iter().find(|(x, _)| *x == cand).map(|(_, u)| *u);
        if let Some(u) = known.or_else(|| measure_all(vec![cand.clone()], tried).first().map(|r| r.1)) {
            if rule.compare(&u, &best.1) == Ordering::Greater {
                best = (cand, u);
            }
        }
    }
    best
}

/// The best combination of the rewrites in `space` (its occupancy targets
/// and unroll caps left out) by `rule`'s full order, fewer registers
/// counting even where occupancy stays: what the measured search adds to
/// each occupancy step. Empty when none beats the plain build.
pub(crate) fn best_rewrites<E>(space: &Space, rule: &Rule, eval: &E) -> Transforms
where
    E: Eval + ?Sized,
{
    let rewrites = Space { waves: vec![], unroll_caps: vec![], ..space.clone() };
    let mut tried: Vec<(Transforms, Usage)> = vec![(Transforms::default(), rule.baseline)];
    let measure_all = |cands: Vec<Transforms>, tried: &mut Vec<(Transforms, Usage)>| measure_fresh(eval, cands, tried);
    greedy(&rewrites, rule, &mut tried, &measure_all).0
}

/// Search `space` for the best variant under `rule`. `eval` compiles and
/// measures one set of transforms; None means that variant failed to build.
pub(crate) fn search<E>(space: &Space, rule: &Rule, eval: &E) -> Outcome
where
    E: Eval + ?Sized,
{
    // The plain compile is the empty set: never measure it again.
    let mut tried: Vec<(Transforms, Usage)> = vec![(Transforms::default(), rule.baseline)];
    let measure_all = |cands: Vec<Transforms>, tried: &mut Vec<(Transforms, Usage)>| measure_fresh(eval, cands, tried);
    let lookup = |tried: &[(Transforms, Usage)], t: &Transforms| tried.iter().find(|(x, _)| x == t).map(|(_, u)| *u);

    // 1. and 2.: each transform alone, then their best combination.
    let mut best = greedy(space, rule, &mut tried, &measure_all);

    // 3. Occupancy targets on top of the best rewrite: the rewrite may have
    //    brought the next step within the register allocator's reach.
    if best.0.occupancy().is_none() {
        let cands: Vec<Transforms> = space
            .waves
            .iter()
            .filter(|&&w| w > best.1.occupancy)
            .filter_map(|&w| union(&best.0, &Transforms::occupancy_step(space.occupancy, w)))
            .collect();
        for (t, u) in measure_all(cands, &mut tried) {
            if rule.compare(&u, &best.1) == Ordering::Greater {
                best = (t, u);
            }
        }
    }

    // 3b. The next step may be one small rewrite away: when the hint on top
    //     of the best rewrite still spills, add each other transform to it.
    let next_step = space.waves.iter().copied().filter(|&w| w > best.1.occupancy).min();
    if let (None, Some(w)) = (best.0.occupancy(), next_step) {
        let hint = Transforms::occupancy_step(space.occupancy, w);
        if let Some(hinted) = union(&best.0, &hint) {
            let cands: Vec<Transforms> = space
                .singles()
                .iter()
                .filter(|t| t.occupancy().is_none())
                .filter_map(|t| union(&hinted, t))
                .filter(|t| *t != hinted)
                .collect();
            for (t, u) in measure_all(cands, &mut tried) {
                if rule.compare(&u, &best.1) == Ordering::Greater {
                    best = (t, u);
                }
            }
        }
    }

    if !rule.improves(&best.1) {
        return Outcome { transforms: Transforms::default(), usage: rule.baseline };
    }

    // 4. Minimal: drop any transform whose removal does not make it worse.
    loop {
        let smaller = without_each(&best.0, space);
        let mut results: Vec<(Transforms, Usage)> = Vec::new();
        let fresh: Vec<Transforms> = smaller.iter().filter(|t| lookup(&tried, t).is_none()).cloned().collect();
        measure_all(fresh, &mut tried);
        for t in smaller {
            if let Some(u) = lookup(&tried, &t) {
                results.push((t, u));
            }
        }
        let Some(drop) =
            results.into_iter().find(|(t, u)| rule.compare(u, &best.1) != Ordering::Less && (!t.is_empty() || rule.improves(u)))
        else {
            break;
        };
        if drop.0.is_empty() {
            break;
        }
        best = drop;
    }
    Outcome { transforms: best.0, usage: best.1 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(vgpr: u32, occupancy: u32, spills: u32) -> Usage {
        Usage { vgpr, occupancy, vgpr_spills: spills, sgpr: 20, code_bytes: 1000, ..Default::default() }
    }

    fn rule(base: Usage) -> Rule {
        Rule { objective: Objective::Occupancy, allow_scratch: false, baseline: base, lane_spills: true }
    }

    /// A model kernel: 102 VGPRs; pow2 saves 4, sink saves 2, waves-per-eu=5
    /// forces ≤96 and spills unless pow2 brought it to 98 or below.
    fn model(t: &Transforms) -> Option<Usage> {
        let mut v = 102;
        if t.pow2 {
            v -= 4;
        }
        if t.sink {
            v -= 2;
        }
        match t.waves_per_eu {
            Some(5) if v <= 98 => Some(usage(96, 5, 0)),
            Some(5) => Some(usage(96, 5, 6)),
            Some(w) => Some(usage(512 / w, w, 20)),
            None => Some(usage(v, if v <= 96 { 5 } else { 4 }, 0)),
        }
    }

    fn space() -> Space {
        Space { pow2: true, sink: true, waves: vec![5, 6, 7, 8], ..Default::default() }
    }

    #[test]
    fn keeps_the_minimal_set_that_reaches_the_next_step() {
        let sp = Space { sink: false, ..space() };
        let out = search(&sp, &rule(usage(102, 4, 0)), &model);
        assert_eq!(out.usage.occupancy, 5);
        assert_eq!(out.usage.vgpr_spills, 0);
        // pow2 is needed (without it waves-per-eu=5 spills), and so is the hint.
        assert_eq!(out.transforms.labels(), ["pow2", "waves-per-eu=5"]);
    }

    #[test]
    fn rewrites_that_reach_the_step_alone_need_no_occupancy_hint() {
        // pow2 + sink bring 102 down to 96 VGPRs: occupancy 5 with no hint.
        let out = search(&space(), &rule(usage(102, 4, 0)), &model);
        assert_eq!(out.transforms.labels(), ["pow2", "sink"]);
        assert_eq!((out.usage.vgpr, out.usage.occupancy), (96, 5));
    }

    #[test]
    fn a_rewrite_that_helps_only_with_the_hint_is_found() {
        // noalias=p alone changes nothing; with waves-per-eu=5 it removes
        // the spills the hint alone causes.
        let p = Param { index: 3, name: "p".into() };
        let sp = Space { noalias: vec![p.clone()], waves: vec![5], ..Default::default() };
        let eval = |t: &Transforms| {
            Some(match (t.waves_per_eu, t.noalias.is_empty()) {
                (Some(5), false) => usage(96, 5, 0),
                (Some(5), true) => usage(96, 5, 4),
                _ => usage(102, 4, 0),
            })
        };
        let out = search(&sp, &rule(usage(102, 4, 0)), &eval);
        assert_eq!(out.transforms.labels(), ["noalias=p", "waves-per-eu=5"]);
    }

    #[test]
    fn nothing_helps_means_the_plain_compile() {
        let base = usage(102, 4, 0);
        let out = search(&space(), &rule(base), &|_: &Transforms| Some(usage(104, 4, 0)));
        assert!(out.transforms.is_empty());
        assert_eq!(out.usage, base);
    }

    #[test]
    fn fewer_registers_at_the_same_occupancy_is_not_worth_applying() {
        let base = usage(102, 4, 0);
        let out = search(&Space { pow2: true, ..Default::default() }, &rule(base), &|_: &Transforms| Some(usage(98, 4, 0)));
        assert!(out.transforms.is_empty());
    }

    #[test]
    fn occupancy_objective_never_accepts_more_spills() {
        let base = usage(102, 4, 0);
        let out = search(&space(), &rule(base), &|t: &Transforms| Some(if t.waves_per_eu.is_some() { usage(64, 8, 1) } else { base }));
        assert!(out.transforms.is_empty());
    }

    #[test]
    fn no_spill_objective_trades_occupancy_for_fewer_spills() {
        let base = usage(128, 4, 12);
        let r = Rule { objective: Objective::NoSpill, allow_scratch: false, baseline: base, lane_spills: true };
        let sp = Space { launch_bounds: Some(256), ..Default::default() };
        let out = search(&sp, &r, &|t: &Transforms| Some(if t.launch_bounds.is_some() { usage(160, 3, 0) } else { base }));
        assert_eq!(out.transforms.labels(), ["launch-bounds=256"]);
    }

    #[test]
    fn scratch_counts_as_spilling_unless_allowed() {
        let base = usage(102, 4, 0);
        let scratchy = |_: &Transforms| Some(Usage { scratch_bytes: 64, ..usage(80, 6, 0) });
        let sp = Space { unroll_caps: vec![1], ..Default::default() };
        assert!(search(&sp, &rule(base), &scratchy).transforms.is_empty());
        let allowing = Rule { allow_scratch: true, ..rule(base) };
        assert_eq!(search(&sp, &allowing, &scratchy).transforms.labels(), ["unroll-cap=1"]);
    }

    #[test]
    fn no_variant_is_measured_twice() {
        let seen = std::sync::Mutex::new(Vec::new());
        let counting = |t: &Transforms| {
            let mut s = seen.lock().unwrap();
            assert!(!t.is_empty(), "the plain compile is the baseline, never measured again");
            assert!(!s.contains(t), "measured twice: {:?}", t.labels());
            s.push(t.clone());
            model(t)
        };
        search(&space(), &rule(usage(102, 4, 0)), &counting);
        assert!(!seen.into_inner().unwrap().is_empty());
    }

    #[test]
    fn sgpr_spills_in_vgpr_lanes_may_buy_an_occupancy_step() {
        let base = usage(90, 5, 0);
        let lanes = Usage { sgpr_spills: 16, ..usage(79, 6, 0) };
        assert!(rule(base).admissible(&lanes));
        // Not when they reach memory (scratch grows) ...
        assert!(!rule(base).admissible(&Usage { scratch_bytes: 8, ..lanes }));
        // ... nor on NVPTX, where the second spill count is spill loads.
        assert!(!Rule { lane_spills: false, ..rule(base) }.admissible(&lanes));
        // At equal occupancy, fewer spills win before fewer registers.
        assert_eq!(rule(base).compare(&usage(80, 6, 0), &lanes), Ordering::Greater);
    }

    #[test]
    fn noalias_on_every_pointer_is_one_candidate_kept_whole() {
        // Any two of the four pointers restricted change nothing; all four,
        // with waves-per-eu=6, reach the next step.
        let all: Vec<Param> = (0..4).map(|i| Param { index: i, name: format!("p{i}") }).collect();
        let sp = Space { noalias: all[..2].to_vec(), noalias_all: all.clone(), waves: vec![6], ..Default::default() };
        let measured = std::sync::Mutex::new(Vec::new());
        let eval = |t: &Transforms| {
            measured.lock().unwrap().push(t.clone());
            Some(match (t.waves_per_eu, t.noalias.len()) {
                (Some(6), 4) => usage(79, 6, 0),
                (Some(6), _) => usage(80, 6, 4),
                _ => usage(90, 5, 0),
            })
        };
        let out = search(&sp, &rule(usage(90, 5, 0)), &eval);
        assert_eq!(out.transforms.noalias, all);
        assert_eq!(out.transforms.waves_per_eu, Some(6));
        // Shrinking tried the set without noalias at all, never three of four.
        let measured = measured.into_inner().unwrap();
        assert!(!measured.iter().any(|t| t.noalias.len() == 3), "{measured:?}");
    }

    #[test]
    fn inexact_pow2_steps_down_to_exact_when_that_is_enough() {
        let sp = Space { pow2: true, pow2_inexact: true, ..Default::default() };
        let eval = |t: &Transforms| Some(if t.pow2 { usage(96, 5, 0) } else { usage(102, 4, 0) });
        let out = search(&sp, &rule(usage(102, 4, 0)), &eval);
        assert_eq!(out.transforms.labels(), ["pow2"]);
        let only_inexact = |t: &Transforms| Some(if t.pow2_inexact { usage(96, 5, 0) } else { usage(102, 4, 0) });
        assert_eq!(search(&sp, &rule(usage(102, 4, 0)), &only_inexact).transforms.labels(), ["pow2=inexact"]);
    }

    #[test]
    fn ties_on_occupancy_go_to_fewer_registers() {
        let r = rule(usage(102, 4, 0));
        assert_eq!(r.compare(&usage(90, 5, 0), &usage(96, 5, 0)), Ordering::Greater);
        assert_eq!(r.compare(&usage(96, 6, 0), &usage(90, 5, 0)), Ordering::Greater);
    }
}
