//! Unroll caps: `llvm.loop.unroll.count` at most N on the kernel's loops
//! (passes/src/unroll_cap.rs). Fewer registers for less instruction-level
//! parallelism: applied unasked only where it removes the memory traffic
//! of spills and the evidence allows the class; else suggested.

use regtune_decisions::{Reason, Transforms};

use super::{Check, Proposing, Said, Saying, Spaces, Transform};
use crate::evidence::Class;
use crate::search::{self, Eval, Outcome, Rule, Space};
use crate::verdict::{self, Basis, Verdict};

pub(super) struct UnrollCap;

/// The caps tried, where the kernel has a loop to unroll.
const CAPS: [u32; 4] = [1, 2, 4, 8];

impl Transform for UnrollCap {
    fn class(&self) -> Class {
        Class::UnrollCap
    }

    fn spelled_by(&self) -> Option<&'static str> {
        Some("fix/unroll.rs")
    }

    fn tried(&self, k: &Proposing<'_>, tried: &mut Space) {
        tried.unroll_caps = if k.inspection.is_none_or(|i| i.unroll_cap) { CAPS.to_vec() } else { vec![] };
    }

    fn unasked(&self, k: &Proposing<'_>, tried: &Space, facts: &mut Space) {
        facts.unroll_caps = k.confirmed.unroll_cap.filter(|_| !tried.unroll_caps.is_empty()).into_iter().collect();
    }

    fn suggested(&self, _k: &Proposing<'_>, tried: &Space, decided: &Space, wider: &mut Space) {
        wider.unroll_caps = if decided.unroll_caps.is_empty() { tried.unroll_caps.clone() } else { decided.unroll_caps.clone() };
    }

    fn held(&self, t: &Transforms, allowed: &Space, held: &mut Transforms) {
        held.unroll_cap = t.unroll_cap.filter(|c| !allowed.unroll_caps.contains(c));
    }

    fn reason(&self, held: &Transforms) -> Option<Reason> {
        held.unroll_cap.map(|_| Reason::TradesIlp)
    }

    fn says(&self, held: &Transforms, _s: &Saying<'_>) -> Option<Said> {
        held.unroll_cap.map(|n| Said { what: format!("capping unrolling at {n}"), check: Some(Check::Trade) })
    }
}

/// Unrolling traded for registers, applied only where it removes the
/// memory traffic of spills or scratch the facts alone leave: then the
/// decision is `outcome` from the space `allowed` with the caps in it.
pub(in crate::tune) fn trade_for_spills<E>(k: &Proposing<'_>, s: &Spaces, rule: &Rule, eval: &E, outcome: &mut Outcome, allowed: &mut Space)
where
    E: Eval + ?Sized,
{
    if !k.options.evidence.never_loses(Class::UnrollCap)
        || s.tried.unroll_caps.is_empty()
        || !s.facts.unroll_caps.is_empty()
        || rule.memory_spills(&outcome.usage) == 0
    {
        return;
    }
    let trading = Space { unroll_caps: s.tried.unroll_caps.clone(), ..s.facts.clone() };
    let traded = search::search(&trading, rule, eval);
    if let Verdict::Apply(_) = verdict::trade(rule, &traded.usage, &outcome.usage, Basis::Static) {
        *outcome = traded;
        *allowed = trading;
    }
}
