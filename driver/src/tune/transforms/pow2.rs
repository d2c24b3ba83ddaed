//! pow2: `pow(x, 2.0)` → `x * x` (passes/src/pow2.rs). Exact where the
//! library's pow is correctly rounded there: applied unasked once the
//! evidence shows it never loses. Where it is not (ocml, libdevice), the
//! result changes in the last bit: only with `--pow2 apply`, a
//! confirmation, or a compile that allows it (afn, fast-math).

use regtune_decisions::{Reason, Transforms};

use super::{Check, Proposing, Said, Saying, Transform};
use crate::evidence::Class;
use crate::gpu;
use crate::search::Space;
use crate::tune::Pow2 as Flag;

pub(super) struct Pow2;

impl Transform for Pow2 {
    fn class(&self) -> Class {
        Class::Pow2
    }

    fn spelled_by(&self) -> Option<&'static str> {
        Some("fix/pow2.rs")
    }

    fn tried(&self, k: &Proposing<'_>, tried: &mut Space) {
        // What would change nothing is not tried (no inspection: try it).
        tried.pow2 = k.inspection.is_none_or(|i| i.pow2);
        tried.pow2_inexact = k.inspection.is_none_or(|i| i.pow2_inexact);
    }

    fn allowed(&self, k: &Proposing<'_>, tried: &Space, allowed: &mut Space) {
        allowed.pow2 = tried.pow2;
        allowed.pow2_inexact = tried.pow2_inexact && (k.options.pow2 == Flag::Apply || k.confirmed.pow2_inexact);
    }

    fn unasked(&self, k: &Proposing<'_>, _tried: &Space, facts: &mut Space) {
        facts.pow2 = facts.pow2 && (k.options.evidence.never_loses(Class::Pow2) || k.confirmed.pow2);
    }

    fn suggested(&self, k: &Proposing<'_>, tried: &Space, decided: &Space, wider: &mut Space) {
        wider.pow2 = tried.pow2;
        wider.pow2_inexact = decided.pow2_inexact || (tried.pow2_inexact && k.options.pow2 == Flag::Suggest);
    }

    fn held(&self, t: &Transforms, allowed: &Space, held: &mut Transforms) {
        let inexact_held = t.pow2_inexact && !allowed.pow2_inexact;
        held.pow2 = inexact_held || (t.pow2 && !allowed.pow2 && !allowed.pow2_inexact);
        held.pow2_inexact = inexact_held;
    }

    fn reason(&self, held: &Transforms) -> Option<Reason> {
        match (held.pow2, held.pow2_inexact) {
            (_, true) => Some(Reason::ChangesRounding),
            (true, false) => Some(Reason::Unproven),
            (false, false) => None,
        }
    }

    fn says(&self, held: &Transforms, s: &Saying<'_>) -> Option<Said> {
        if held.pow2_inexact {
            let library = gpu::of(s.arch).pow_library().0;
            return Some(Said {
                what: "`pow(x, 2.0)` → `x * x`".into(),
                check: Some(Check::Own(format!(
                    "{library} is not correctly rounded, so results change in the last bit (for ~20% of doubles); \
                     accept that, or build with -ffast-math or -fapprox-func"
                ))),
            });
        }
        held.pow2.then(|| Said { what: "`pow(x, 2.0)` → `x * x` (exact here)".into(), check: Some(Check::Unproven) })
    }
}
