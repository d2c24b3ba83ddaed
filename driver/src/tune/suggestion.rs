//! What a suggestion would reach, and what to check before confirming
//! it: the one line tune gives each suggestion (kernel.rs makes them;
//! messages.rs says the rest).

use regtune_decisions::{Param, Reason, Transforms, Usage};

use crate::evidence::{Class, Evidence};
use crate::gpu::{self, Arch};
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
    let held_labels = gpu::labels(held, every_pointer);
    let others: Vec<String> = gpu::labels(with, every_pointer)
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
