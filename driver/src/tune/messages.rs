//! What tune says: why a kernel ended as it did, and what a suggestion
//! would reach and what to check before confirming it.

use regtune_decisions::{Param, Reason, Transforms, Usage};

use super::plan::{at_best, occupancy_ceiling, registers_word, Plan};
use super::VariantStatus;
use crate::evidence::{Class, Evidence};
use crate::gpu::resources::Measured;
use crate::gpu::{self, Arch};
use crate::search::Objective;
use crate::verdict;

/// "<what> would reach occupancy N (a → b VGPRs) with <the rest> — <what
/// to check before confirming>", for the held part of a suggestion.
pub(super) fn suggestion_message(
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
    if let Some(w) = held.occupancy() {
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
    if held.unroll_cap.is_some() || held.occupancy().is_some() || held.sink || (held.pow2 && !held.pow2_inexact) {
        // Held for speed alone, the GPU decides; else the user's word first.
        message.push_str(if Reason::measure_decides(&verdict::held_reasons(held)) {
            "; `regtune measure -- PROGRAM ARGS` times it inside your program and keeps it only if faster with the same results"
        } else {
            "; `regtune measure -- PROGRAM ARGS` times it inside your program; once you confirm it, the build uses it only if faster with the same results"
        });
    }
    message
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
    (reason, why)
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
}
