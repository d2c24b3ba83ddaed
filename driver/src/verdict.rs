//! The default decision rule: what `tune` may apply on its own, what it
//! only suggests, and the reason it gives for either.
//!
//! Most tuning runs on build machines without a GPU, so the static rule
//! must not lose speed on its own:
//!   - Rewrites that remove work or live ranges (exact pow2, sink) are
//!     applied where they raise occupancy.
//!   - A transform that trades instruction-level parallelism for registers
//!     (`unroll-cap`) is applied only where it removes spills or scratch:
//!     the memory traffic it replaces. Elsewhere it is suggested: on an
//!     H100 every `unroll-cap=1` measured so far ran slower at its higher
//!     occupancy (0.29×–0.94×, issue 16).
//!   - Rewrites that change results (pow2 of a library pow that is not
//!     correctly rounded) or rest on the caller (noalias, launch bounds)
//!     are suggested unless the user opted in.
//!
//! An occupancy target alone (`waves-per-eu`, `warps-per-sm`) is a trade
//! of the same kind, made by the scheduler: it changes no instruction of
//! the program (on the examples, instruction counts stay within 0.2–6.6 %
//! of the same code without the hint), but it bounds the registers, and a
//! schedule with fewer registers keeps fewer loads in flight. On the
//! Laplacian, `waves-per-eu=6` reaches occupancy 7 with 66 VGPRs, and one
//! wave alone takes 8.4× as long (each load waited for on its own); on
//! `lbm_d3q19` with pow2 and noalias the same hint costs a wave nothing.
//! Spilling to memory is already refused before any rule sees it. So an
//! occupancy target is applied where it raises occupancy unless the cost
//! model ([`crate::cost`]) predicts the wave slower than without it; then it
//! is suggested (README "Default decisions" has the numbers). On NVPTX the
//! PTX cannot show what ptxas's register cap does: targets are applied as
//! before (the one timed on a GPU ran at 1.00×, issue 16).
//!
//! A measurement overrides the static rule: [`Evidence::Measured`] (filled
//! by runs on a GPU, when there are some) applies a trade that ran faster
//! and holds back one that ran slower, whatever the registers say.

use regtune_decisions::{Reason, Transforms, Usage};

use crate::search::Rule;

/// What is known about a variant's speed beyond its resource usage.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Evidence {
    /// Registers, spills and occupancy only (no GPU).
    Static,
    /// The cost model's estimate ([`crate::cost`]): time with the trade
    /// over time without it.
    Predicted { time_ratio: f64 },
    /// Timed on a GPU: time with the trade over time without it (< 1.0 is
    /// faster).
    Measured { time_ratio: f64 },
}

/// How much slower the cost model may predict an occupancy target before
/// it is held back: its estimates are not calibrated finer than this.
pub const PREDICTION_TOLERANCE: f64 = 0.02;

/// What happens to a better result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Apply(Reason),
    /// Suggest it, for these reasons; the user confirms it in the db.
    Hold(Vec<Reason>),
}

/// A result that trades unrolling for registers (`traded`), against the
/// best result without the trade (`kept`): applied only where it removes
/// memory spills or scratch that `kept` still has, or where it ran faster.
pub fn trade(rule: &Rule, traded: &Usage, kept: &Usage, evidence: Evidence) -> Verdict {
    if !rule.improves_on(traded, kept) && !matches!(evidence, Evidence::Measured { .. }) {
        return Verdict::Hold(vec![]);
    }
    match evidence {
        Evidence::Measured { time_ratio } if time_ratio < 1.0 => Verdict::Apply(Reason::Measured),
        Evidence::Measured { .. } => Verdict::Hold(vec![Reason::Measured]),
        // The model refuses, it does not approve: an unroll cap stays a
        // suggestion unless it removes memory traffic.
        Evidence::Predicted { time_ratio } if time_ratio > 1.0 + PREDICTION_TOLERANCE => Verdict::Hold(vec![Reason::TradesIlp]),
        _ if rule.memory_spills(traded) < rule.memory_spills(kept) => Verdict::Apply(Reason::RemovesSpills),
        _ => Verdict::Hold(vec![Reason::TradesIlp]),
    }
}

/// An occupancy target in a result, against the same result without it:
/// kept unless the schedule it forces is predicted (or measured) slower,
/// i.e. it gives up more latency hiding within a wave than the extra waves
/// bring back.
pub fn occupancy_target(evidence: Evidence) -> Verdict {
    match evidence {
        Evidence::Measured { time_ratio } if time_ratio < 1.0 => Verdict::Apply(Reason::Measured),
        Evidence::Measured { .. } => Verdict::Hold(vec![Reason::Measured]),
        Evidence::Predicted { time_ratio } if time_ratio > 1.0 + PREDICTION_TOLERANCE => Verdict::Hold(vec![Reason::TradesIlp]),
        _ => Verdict::Apply(Reason::RaisesOccupancy),
    }
}

/// Why a suggestion waits for the user, for each kind of transform in
/// `held` (the parts of it the user has not allowed).
pub fn held_reasons(held: &Transforms) -> Vec<Reason> {
    let mut reasons = Vec::new();
    if held.sink || (held.pow2 && !held.pow2_inexact) {
        reasons.push(Reason::Unproven);
    }
    if held.pow2_inexact {
        reasons.push(Reason::ChangesRounding);
    }
    if held.unroll_cap.is_some() || held.waves_per_eu.is_some() {
        reasons.push(Reason::TradesIlp);
    }
    if !held.noalias.is_empty() || held.launch_bounds.is_some() {
        reasons.push(Reason::AssumesCaller);
    }
    reasons
}

/// Why an applied set was worth applying: it removed memory spills or
/// scratch, else it raised occupancy.
pub fn applied_reason(rule: &Rule, before: &Usage, after: &Usage) -> Reason {
    if rule.memory_spills(after) < rule.memory_spills(before) {
        Reason::RemovesSpills
    } else {
        Reason::RaisesOccupancy
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::Objective;
    use regtune_decisions::Param;

    fn usage(vgpr: u32, occupancy: u32, vgpr_spills: u32, scratch_bytes: u32) -> Usage {
        Usage { vgpr, occupancy, vgpr_spills, scratch_bytes, ..Default::default() }
    }

    fn rule(base: Usage) -> Rule {
        Rule { objective: Objective::Occupancy, allow_scratch: false, baseline: base, lane_spills: true }
    }

    #[test]
    fn a_trade_for_occupancy_alone_is_held() {
        // The Laplacian: 120 VGPRs at 4 waves, a cap of 1 reaches 8, no spills either way.
        let plain = usage(120, 4, 0, 0);
        let r = rule(plain);
        assert_eq!(trade(&r, &usage(58, 8, 0, 0), &plain, Evidence::Static), Verdict::Hold(vec![Reason::TradesIlp]));
    }

    #[test]
    fn a_trade_that_removes_spills_is_applied() {
        // `#pragma unroll 8`: 22 spilled VGPRs and 76 B of scratch; a cap removes them.
        let plain = usage(127, 4, 22, 76);
        let r = rule(plain);
        assert_eq!(trade(&r, &usage(64, 8, 0, 0), &plain, Evidence::Static), Verdict::Apply(Reason::RemovesSpills));
        // Removing only SGPR spills held in VGPR lanes is no memory traffic removed.
        let lanes = Usage { sgpr_spills: 16, ..usage(100, 4, 0, 0) };
        let r = rule(lanes);
        assert_eq!(trade(&r, &usage(64, 8, 0, 0), &lanes, Evidence::Static), Verdict::Hold(vec![Reason::TradesIlp]));
    }

    #[test]
    fn a_measurement_overrides_the_static_rule() {
        let plain = usage(120, 4, 0, 0);
        let r = rule(plain);
        let traded = usage(58, 8, 0, 0);
        assert_eq!(trade(&r, &traded, &plain, Evidence::Measured { time_ratio: 0.8 }), Verdict::Apply(Reason::Measured));
        let spilling = usage(127, 4, 22, 76);
        assert_eq!(
            trade(&rule(spilling), &traded, &spilling, Evidence::Measured { time_ratio: 1.07 }),
            Verdict::Hold(vec![Reason::Measured])
        );
    }

    #[test]
    fn the_cost_model_refuses_but_does_not_approve() {
        let spilling = usage(127, 4, 22, 76);
        let traded = usage(64, 8, 0, 0);
        let r = rule(spilling);
        assert_eq!(trade(&r, &traded, &spilling, Evidence::Predicted { time_ratio: 0.9 }), Verdict::Apply(Reason::RemovesSpills));
        assert_eq!(trade(&r, &traded, &spilling, Evidence::Predicted { time_ratio: 1.3 }), Verdict::Hold(vec![Reason::TradesIlp]));
        let plain = usage(120, 4, 0, 0);
        assert_eq!(trade(&rule(plain), &traded, &plain, Evidence::Predicted { time_ratio: 0.5 }), Verdict::Hold(vec![Reason::TradesIlp]));
        // Occupancy targets: kept within the model's tolerance, held beyond.
        assert_eq!(occupancy_target(Evidence::Predicted { time_ratio: 1.01 }), Verdict::Apply(Reason::RaisesOccupancy));
        assert_eq!(occupancy_target(Evidence::Predicted { time_ratio: 2.4 }), Verdict::Hold(vec![Reason::TradesIlp]));
        assert_eq!(occupancy_target(Evidence::Static), Verdict::Apply(Reason::RaisesOccupancy));
        assert_eq!(occupancy_target(Evidence::Measured { time_ratio: 1.05 }), Verdict::Hold(vec![Reason::Measured]));
    }

    #[test]
    fn no_gain_is_nothing_to_suggest() {
        let plain = usage(120, 4, 0, 0);
        assert_eq!(trade(&rule(plain), &usage(110, 4, 0, 0), &plain, Evidence::Static), Verdict::Hold(vec![]));
    }

    #[test]
    fn each_held_kind_has_its_reason() {
        let p = Param { index: 1, name: "f0".into() };
        let t = Transforms { pow2: true, pow2_inexact: true, unroll_cap: Some(1), noalias: vec![p], ..Default::default() };
        assert_eq!(held_reasons(&t), [Reason::ChangesRounding, Reason::TradesIlp, Reason::AssumesCaller]);
        assert_eq!(held_reasons(&Transforms { waves_per_eu: Some(6), ..Default::default() }), [Reason::TradesIlp]);
        assert!(held_reasons(&Transforms { pow2: true, sink: true, ..Default::default() }).is_empty());
    }

    #[test]
    fn applied_sets_name_what_they_removed() {
        let r = rule(usage(127, 4, 22, 76));
        assert_eq!(applied_reason(&r, &usage(127, 4, 22, 76), &usage(64, 8, 0, 0)), Reason::RemovesSpills);
        let lanes = Usage { sgpr_spills: 16, ..usage(99, 4, 0, 0) };
        assert_eq!(applied_reason(&rule(lanes), &lanes, &usage(82, 5, 0, 0)), Reason::RaisesOccupancy);
    }
}
