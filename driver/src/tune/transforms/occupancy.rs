//! Occupancy targets: AMDGPU's waves per EU, NVPTX's warps per SM as a
//! register cap (passes/src/occupancy.rs; nvcc's builds edit the PTX
//! entry). A schedule with fewer registers: applied unasked once the
//! evidence shows it never loses, and held back where the cost model sees
//! it give up more latency hiding than the extra occupancy brings back.

use regtune_decisions::{Reason, Transforms, Usage};

use super::{Check, Proposing, Said, Saying, Transform};
use crate::cost;
use crate::evidence::Class;
use crate::gpu::resources::Measured;
use crate::gpu::{self, Arch};
use crate::search::{self, Eval, Outcome, Rule, Space};
use crate::session::Session;
use crate::tune::profile;
use crate::verdict::{self, Basis, Verdict};

pub(super) struct OccupancyTarget;

impl Transform for OccupancyTarget {
    fn class(&self) -> Class {
        Class::OccupancyTarget
    }

    fn spelled_by(&self) -> Option<&'static str> {
        Some("fix/attributes.rs")
    }

    fn tried(&self, k: &Proposing<'_>, tried: &mut Space) {
        let target = gpu::of(k.session.arch);
        tried.waves = target.occupancy_targets(k.base);
        tried.occupancy = target.occupancy_field();
    }

    fn allowed(&self, _k: &Proposing<'_>, tried: &Space, allowed: &mut Space) {
        allowed.occupancy = tried.occupancy;
    }

    fn unasked(&self, k: &Proposing<'_>, tried: &Space, facts: &mut Space) {
        facts.waves = match k.options.evidence.never_loses(Class::OccupancyTarget) {
            true => tried.waves.clone(),
            false => k.confirmed.occupancy().into_iter().collect(),
        };
    }

    fn suggested(&self, _k: &Proposing<'_>, tried: &Space, decided: &Space, wider: &mut Space) {
        wider.waves = tried.waves.clone();
        wider.occupancy = decided.occupancy;
    }

    fn held(&self, t: &Transforms, allowed: &Space, held: &mut Transforms) {
        held.waves_per_eu = t.waves_per_eu.filter(|w| !allowed.waves.contains(w));
        held.warps_per_sm = t.warps_per_sm.filter(|w| !allowed.waves.contains(w));
    }

    fn reason(&self, held: &Transforms) -> Option<Reason> {
        held.occupancy().map(|_| Reason::TradesIlp)
    }

    fn says(&self, held: &Transforms, s: &Saying<'_>) -> Option<Said> {
        let target = gpu::of(s.arch);
        held.occupancy().map(|w| Said { what: format!("the occupancy target {}", target.occupancy_label(w)), check: Some(Check::Trade) })
    }
}

/// An occupancy target forces a schedule with fewer registers; held back
/// where the cost model sees it give up more latency hiding than the
/// extra waves bring back. NVPTX: the PTX does not show what ptxas's
/// register cap does; the model adds the spills ptxas reports
/// (cost::estimate), which on an H100 is what made such targets slower.
/// Then the decision is searched again without targets; the one held back
/// and its predicted time ratio are returned.
pub(in crate::tune) fn hold_back<E>(
    k: &Proposing<'_>,
    rule: &Rule,
    eval: &E,
    outcome: &mut Outcome,
    allowed: &mut Space,
) -> Option<(u32, f64)>
where
    E: Eval + ?Sized,
{
    let w = outcome.transforms.occupancy().filter(|w| k.confirmed.occupancy() != Some(*w))?;
    let without = outcome.transforms.without_occupancy();
    let time_ratio = predicted_time_ratio(k.session, k.base, (&outcome.transforms, &outcome.usage), &without, eval)?;
    let Verdict::Hold(_) = verdict::occupancy_target(Basis::Predicted { time_ratio }) else { return None };
    allowed.waves.clear();
    *outcome = search::search(allowed, rule, eval);
    Some((w, time_ratio))
}

/// What a suggestion adds when it holds the target the cost model held
/// back: how much faster the model predicted the kernel without it.
pub(in crate::tune) fn held_back_note(arch: &Arch, (w, ratio): (u32, f64)) -> String {
    format!(
        "; {} alone was predicted {:.2}× as fast (its schedule keeps fewer loads in flight)",
        gpu::of(arch).occupancy_label(w),
        1.0 / ratio
    )
}

/// The cost model's time with `t` over time with `without` (both compiled
/// once more to assembly); None when a listing fails.
fn predicted_time_ratio<E>(
    session: &Session<'_>,
    base: &Measured,
    (t, usage): (&Transforms, &Usage),
    without: &Transforms,
    eval: &E,
) -> Option<f64>
where
    E: Eval + ?Sized,
{
    let without_usage = if without.is_empty() { base.usage } else { eval.eval(without)? };
    let estimate = |t: &Transforms, u: &Usage| -> Option<cost::Estimate> {
        let p = profile(session, &base.symbol, t).ok()?;
        Some(cost::estimate(&p, u, session.arch))
    };
    let (with, without) = (estimate(t, usage)?, estimate(without, &without_usage)?);
    Some(with.cycles / without.cycles)
}
