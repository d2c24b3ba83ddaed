//! One home per transform: what tune tries of it on a kernel, what the
//! user's flags and the evidence let it apply unasked, what it may
//! suggest, the part of a result that waits for the user and why, what a
//! suggestion says of it, and the module of `regtune fix` that writes it
//! in the source. kernel.rs runs the phases over [`ALL`]; a new transform
//! is a module here and its place in [`ALL`] (docs/ARCHITECTURE.md, "A
//! new transform", lists the rest).

mod launch_bounds;
mod noalias;
mod occupancy;
mod pow2;
mod sink;
mod spill;
mod unroll_cap;

use regtune_decisions::plugin::Inspection;
use regtune_decisions::{Param, Reason, Transforms, Usage};

use super::Options;
use crate::evidence::{Class, Evidence};
use crate::gpu::resources::Measured;
use crate::gpu::{self, Arch};
use crate::search::Space;
use crate::session::Session;

pub(super) use occupancy::{held_back_note, hold_back};
pub(super) use spill::launched_spills;
pub(super) use unroll_cap::trade_for_spills;

/// Every transform, in the order a suggestion names them and their reasons.
const ALL: [&dyn Transform; 7] = [
    &sink::Sink,
    &pow2::Pow2,
    &unroll_cap::UnrollCap,
    &occupancy::OccupancyTarget,
    &noalias::Noalias,
    &launch_bounds::LaunchBounds,
    &spill::Spill,
];

/// One transform as tune proposes it. Each fills its own fields of the
/// searches' spaces and of a held result; the defaults leave them alone.
trait Transform: Sync {
    /// Its class in the evidence (crate::evidence).
    fn class(&self) -> Class;
    /// The module of `regtune fix` that writes it in the source, if any
    /// (a test keeps it found).
    #[allow(dead_code)]
    fn spelled_by(&self) -> Option<&'static str>;
    /// What of it could change this kernel: the widest it is tried.
    fn tried(&self, _k: &Proposing<'_>, _tried: &mut Space) {}
    /// What the user's flags and confirmations allow of `tried`.
    fn allowed(&self, _k: &Proposing<'_>, _tried: &Space, _allowed: &mut Space) {}
    /// What applies unasked: `facts` starts as what is allowed.
    fn unasked(&self, _k: &Proposing<'_>, _tried: &Space, _facts: &mut Space) {}
    /// What a suggestion may reach beyond the space the decision came from.
    fn suggested(&self, _k: &Proposing<'_>, _tried: &Space, _decided: &Space, _wider: &mut Space) {}
    /// Its part of `t` that `allowed` does not allow.
    fn held(&self, _t: &Transforms, _allowed: &Space, _held: &mut Transforms) {}
    /// Why its part of `held` waits for the user.
    fn reason(&self, _held: &Transforms) -> Option<Reason> {
        None
    }
    /// What its part of `held` would change, and what to check first.
    fn says(&self, _held: &Transforms, _s: &Saying<'_>) -> Option<Said> {
        None
    }
}

/// What a transform's proposal reads: the kernel, its inspection, what
/// the user confirmed for it, and the flags tune runs with.
pub(super) struct Proposing<'a> {
    pub(super) session: &'a Session<'a>,
    pub(super) options: &'a Options,
    pub(super) base: &'a Measured,
    pub(super) source: &'a str,
    pub(super) inspection: Option<&'a Inspection>,
    /// What the user confirmed in the db (not what an earlier tune
    /// decided: the default changes with the evidence).
    pub(super) confirmed: &'a Transforms,
}

/// What one kernel's searches may try and apply.
pub(super) struct Spaces {
    /// Everything that could change the kernel.
    pub(super) tried: Space,
    /// The rewrites the user allows: exact ones, and what they stated or
    /// confirmed (no assumption about the caller, no rounding change unasked).
    pub(super) allowed: Space,
    /// What may be applied without asking: the classes a GPU has shown
    /// never to cost more than 2 % on real kernels (crate::evidence), and
    /// what the user asked for or confirmed.
    pub(super) facts: Space,
}

pub(super) fn spaces(k: &Proposing<'_>) -> Spaces {
    let mut tried = Space::default();
    ALL.iter().for_each(|t| t.tried(k, &mut tried));
    let mut allowed = Space::default();
    ALL.iter().for_each(|t| t.allowed(k, &tried, &mut allowed));
    let mut facts = allowed.clone();
    ALL.iter().for_each(|t| t.unasked(k, &tried, &mut facts));
    Spaces { tried, allowed, facts }
}

/// The widest a suggestion may reach, beyond `decided` (the space the
/// decision came from).
pub(super) fn suggested(k: &Proposing<'_>, tried: &Space, decided: &Space) -> Space {
    let mut wider = Space::default();
    ALL.iter().for_each(|t| t.suggested(k, tried, decided, &mut wider));
    wider
}

/// The part of `t` that `allowed` does not allow: what needs the user.
pub(super) fn held_part(t: &Transforms, allowed: &Space) -> Transforms {
    let mut held = Transforms::default();
    ALL.iter().for_each(|x| x.held(t, allowed, &mut held));
    held
}

/// Why a suggestion waits for the user, once each, for each kind of
/// transform in `held` (the parts of it the user has not allowed).
pub(super) fn held_reasons(held: &Transforms) -> Vec<Reason> {
    let mut reasons = Vec::new();
    for r in ALL.iter().filter_map(|t| t.reason(held)) {
        if !reasons.contains(&r) {
            reasons.push(r);
        }
    }
    reasons
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

/// What a suggestion says of one transform.
struct Said {
    /// What it does, as the sentence's subject: "capping unrolling at 4".
    what: String,
    check: Option<Check>,
}

/// What to check before confirming it.
enum Check {
    /// Its own words.
    Own(String),
    /// Held for speed alone: it computes the same values, but no GPU has
    /// shown that its class never slows a real kernel.
    Unproven,
    /// It gives up instruction-level parallelism for occupancy: one
    /// sentence for all such classes held.
    Trade,
}

/// What a transform's words read beside the held part.
struct Saying<'a> {
    /// The whole suggested set.
    with: &'a Transforms,
    /// Every pointer parameter, where "all of them" was a candidate.
    every_pointer: &'a [Param],
    arch: &'a Arch,
}

/// "<what> would reach occupancy N (a → b VGPRs) with <the rest> — <what
/// to check before confirming>", for the held part of a suggestion.
pub(super) fn message(
    held: &Transforms,
    with: &Transforms,
    (now, then): (&Usage, &Usage),
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
    let saying = Saying { with, every_pointer, arch };
    let said: Vec<(Class, Said)> = ALL.iter().filter_map(|t| Some((t.class(), t.says(held, &saying)?))).collect();
    let trades: Vec<Class> = said.iter().filter(|(_, s)| matches!(s.check, Some(Check::Trade))).map(|(c, _)| *c).collect();
    let mut checks = Vec::new();
    for (class, check) in said.iter().filter_map(|(c, s)| Some((c, s.check.as_ref()?))) {
        match check {
            Check::Own(words) => checks.push(words.clone()),
            Check::Unproven => checks.push(format!(
                "it computes the same values, but {} ({}); confirm it after timing the kernel",
                evidence.summary(*class),
                class.name()
            )),
            Check::Trade if Some(class) == trades.first() => {
                let shown: Vec<String> = trades.iter().map(|c| format!("{}: {}", c.name(), evidence.summary(*c))).collect();
                checks.push(format!(
                    "it gives up instruction-level parallelism (unrolling, loads in flight) for occupancy, which can cost speed ({}); \
                     confirm it after timing the kernel",
                    shown.join("; ")
                ));
            }
            Check::Trade => {}
        }
    }
    let what: Vec<&str> = said.iter().map(|(_, s)| s.what.as_str()).collect();
    let mut message = format!("{} {effect} — {}", what.join(" and "), checks.join("; "));
    if said.iter().any(|(_, s)| matches!(s.check, Some(Check::Unproven | Check::Trade))) {
        // Held for speed alone, the GPU decides; else the user's word first.
        message.push_str(if Reason::measure_decides(&held_reasons(held)) {
            "; `regtune measure -- PROGRAM ARGS` times it inside your program and keeps it only if faster with the same results"
        } else {
            "; `regtune measure -- PROGRAM ARGS` times it inside your program; once you confirm it, the build uses it only if faster with the same results"
        });
    }
    message
}

#[cfg(test)]
mod tests;
