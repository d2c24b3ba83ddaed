//! What tune says: why a kernel ended as it did (a suggestion's own line
//! is transforms/mod.rs's `message`).

use regtune_decisions::{Reason, Usage};

use super::kernel::{at_best, occupancy_ceiling, registers_word, Plan};
use super::VariantStatus;
use crate::gpu::resources::Measured;
use crate::gpu::{self, Arch};
use crate::search::Objective;

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
            gpu::labels(best.0, &self.every_pointer).join(" + "),
            self.rule.baseline.vgpr,
            best.1.vgpr,
            registers_word(arch),
            best.1.occupancy
        ))
    }
}

/// Why the kernel ended as it did: the reason the db keeps, and one line
/// for the user (`applied`: the outcome's labels).
pub(super) fn why(plan: &Plan, base: &Measured, after_u: &Usage, arch: &Arch, applied: &[String]) -> (Reason, String) {
    let before_u = base.usage;
    let max_waves = occupancy_ceiling(arch, base);
    let registers = registers_word(arch);
    let first_suggested = plan.suggestion.as_ref().and_then(|p| p.reasons.first().copied());
    let reason = if at_best(&plan.rule, max_waves) {
        Reason::AtBest
    } else if plan.combined_regressed || plan.combined_timed_out {
        Reason::LostWhenCombined
    } else if !applied.is_empty() {
        plan.reason
    } else {
        first_suggested.unwrap_or(Reason::NoGain)
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
                gpu::labels(&p.transforms, &plan.every_pointer).join(" + "),
                before_u.occupancy,
                p.usage.occupancy,
                before_u.vgpr,
                p.usage.vgpr
            ),
            None => plan.objective_gap(arch).unwrap_or_else(|| "nothing tried improved on the plain compile; kept it".to_string()),
        },
    };
    let why = if plan.budget_reached { format!("{why} (the file's time budget ended the search early: best result so far)") } else { why };
    (reason, why)
}
