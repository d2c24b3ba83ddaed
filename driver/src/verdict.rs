//! The static rule within what the evidence allows: of a result that
//! raises occupancy, what `tune` may apply on its own, what it only
//! suggests, and the reason it gives for either.
//!
//! Which classes of transform may be applied unasked at all is the GPU's
//! call ([`crate::evidence`]): only those that never cost more than its
//! tolerance on real kernels. Within those:
//!   - A transform that trades instruction-level parallelism for registers
//!     (`unroll-cap`) is applied only where it removes the memory traffic
//!     of spills, scratch and (NVPTX) local memory; elsewhere suggested.
//!   - An occupancy target is held back where the cost model
//!     ([`crate::cost`]) predicts the wave slower than without it.
//!   - Rewrites that change results (pow2 of a library pow that is not
//!     correctly rounded) or rest on the caller (noalias, launch bounds)
//!     are suggested unless the user opted in.
//!
//! A GPU measurement of the kernel overrides all of it: `regtune measure`
//! keeps the fastest candidate that computes the same bytes
//! ([`regtune_decisions::Entry::effective`]).

use regtune_decisions::{Reason, Usage};

use crate::search::Rule;

/// What the static rule knows of a variant's speed beyond its resources.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Basis {
    /// Registers, spills and occupancy only.
    Static,
    /// The cost model's estimate ([`crate::cost`]): time with the trade
    /// over time without it.
    Predicted { time_ratio: f64 },
}

/// How much slower the cost model may predict an occupancy target before
/// it is held back: its estimates are not calibrated finer than this.
pub(crate) const PREDICTION_TOLERANCE: f64 = 0.02;

/// What happens to a better result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    Apply(Reason),
    /// Suggest it, for these reasons; the user confirms it in the db.
    Hold(Vec<Reason>),
}

/// A result that trades unrolling for registers (`traded`), against the
/// best result without the trade (`kept`): applied only where it removes
/// memory spills or scratch that `kept` still has, or where it ran faster.
pub(crate) fn trade(rule: &Rule, traded: &Usage, kept: &Usage, basis: Basis) -> Verdict {
    if !rule.improves_on(traded, kept) {
        return Verdict::Hold(vec![]);
    }
    match basis {
        // The model refuses, it does not approve: an unroll cap stays a
        // suggestion unless it removes memory traffic.
        Basis::Predicted { time_ratio } if time_ratio > 1.0 + PREDICTION_TOLERANCE => Verdict::Hold(vec![Reason::TradesIlp]),
        _ if rule.memory_spills(traded) < rule.memory_spills(kept) => Verdict::Apply(Reason::RemovesSpills),
        _ => Verdict::Hold(vec![Reason::TradesIlp]),
    }
}

/// An occupancy target in a result, against the same result without it:
/// kept unless the schedule it forces is predicted (or measured) slower,
/// i.e. it gives up more latency hiding within a wave than the extra waves
/// bring back.
pub(crate) fn occupancy_target(basis: Basis) -> Verdict {
    match basis {
        Basis::Predicted { time_ratio } if time_ratio > 1.0 + PREDICTION_TOLERANCE => Verdict::Hold(vec![Reason::TradesIlp]),
        _ => Verdict::Apply(Reason::RaisesOccupancy),
    }
}

/// Why an applied set was worth applying: it removed memory spills or
/// scratch, else it raised occupancy.
pub(crate) fn applied_reason(rule: &Rule, before: &Usage, after: &Usage) -> Reason {
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
        assert_eq!(trade(&r, &usage(58, 8, 0, 0), &plain, Basis::Static), Verdict::Hold(vec![Reason::TradesIlp]));
    }

    #[test]
    fn a_trade_that_removes_spills_is_applied() {
        // `#pragma unroll 8`: 22 spilled VGPRs and 76 B of scratch; a cap removes them.
        let plain = usage(127, 4, 22, 76);
        let r = rule(plain);
        assert_eq!(trade(&r, &usage(64, 8, 0, 0), &plain, Basis::Static), Verdict::Apply(Reason::RemovesSpills));
        // Removing only SGPR spills held in VGPR lanes is no memory traffic removed.
        let lanes = Usage { sgpr_spills: 16, ..usage(100, 4, 0, 0) };
        let r = rule(lanes);
        assert_eq!(trade(&r, &usage(64, 8, 0, 0), &lanes, Basis::Static), Verdict::Hold(vec![Reason::TradesIlp]));
    }

    #[test]
    fn the_cost_model_refuses_but_does_not_approve() {
        let spilling = usage(127, 4, 22, 76);
        let traded = usage(64, 8, 0, 0);
        let r = rule(spilling);
        assert_eq!(trade(&r, &traded, &spilling, Basis::Predicted { time_ratio: 0.9 }), Verdict::Apply(Reason::RemovesSpills));
        assert_eq!(trade(&r, &traded, &spilling, Basis::Predicted { time_ratio: 1.3 }), Verdict::Hold(vec![Reason::TradesIlp]));
        let plain = usage(120, 4, 0, 0);
        assert_eq!(trade(&rule(plain), &traded, &plain, Basis::Predicted { time_ratio: 0.5 }), Verdict::Hold(vec![Reason::TradesIlp]));
        // Occupancy targets: kept within the model's tolerance, held beyond.
        assert_eq!(occupancy_target(Basis::Predicted { time_ratio: 1.01 }), Verdict::Apply(Reason::RaisesOccupancy));
        assert_eq!(occupancy_target(Basis::Predicted { time_ratio: 2.4 }), Verdict::Hold(vec![Reason::TradesIlp]));
        assert_eq!(occupancy_target(Basis::Static), Verdict::Apply(Reason::RaisesOccupancy));
    }

    #[test]
    fn no_gain_is_nothing_to_suggest() {
        let plain = usage(120, 4, 0, 0);
        assert_eq!(trade(&rule(plain), &usage(110, 4, 0, 0), &plain, Basis::Static), Verdict::Hold(vec![]));
    }

    #[test]
    fn applied_sets_name_what_they_removed() {
        let r = rule(usage(127, 4, 22, 76));
        assert_eq!(applied_reason(&r, &usage(127, 4, 22, 76), &usage(64, 8, 0, 0)), Reason::RemovesSpills);
        let lanes = Usage { sgpr_spills: 16, ..usage(99, 4, 0, 0) };
        assert_eq!(applied_reason(&rule(lanes), &lanes, &usage(82, 5, 0, 0)), Reason::RaisesOccupancy);
    }
}
