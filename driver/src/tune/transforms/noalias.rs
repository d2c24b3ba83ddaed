//! noalias: `__restrict__` on pointer parameters (passes/src/noalias/),
//! the best-ranked ones one by one and, where there are more, every one at
//! once (nvcc's `--restrict`). It rests on the caller never passing
//! overlapping pointers: applied only with `--noalias apply` or a
//! confirmation, else suggested.

use regtune_decisions::{Param, Reason, Transforms};

use super::{Check, Proposing, Said, Saying, Transform};
use crate::evidence::Class;
use crate::search::Space;
use crate::tune::Noalias as Flag;

pub(super) struct Noalias;

impl Transform for Noalias {
    fn class(&self) -> Class {
        Class::Noalias
    }

    fn spelled_by(&self) -> Option<&'static str> {
        Some("fix/restrict.rs")
    }

    fn tried(&self, k: &Proposing<'_>, tried: &mut Space) {
        let (flag, Some(inspection)) = (k.options.noalias, k.inspection) else { return };
        if flag == Flag::Off {
            return;
        }
        // With nvcc each noalias candidate is an nvcc build of a patched
        // copy (LBM's 28 pointers: five builds, nothing found): the
        // best-ranked one alone, unless the user asked to apply them.
        let ranked = match !k.session.runs_plugin() && flag == Flag::Suggest {
            true => 1,
            false => k.options.noalias_candidates,
        };
        tried.noalias = inspection.noalias_candidates.iter().take(ranked).cloned().collect();
        if inspection.noalias_candidates.len() > tried.noalias.len() {
            tried.noalias_all = inspection.noalias_candidates.clone();
            tried.noalias_all.sort();
        }
    }

    fn allowed(&self, k: &Proposing<'_>, tried: &Space, allowed: &mut Space) {
        (allowed.noalias, allowed.noalias_all) = match k.options.noalias == Flag::Apply {
            true => (tried.noalias.clone(), tried.noalias_all.clone()),
            false => (k.confirmed.noalias.clone(), vec![]),
        };
    }

    fn suggested(&self, k: &Proposing<'_>, tried: &Space, decided: &Space, wider: &mut Space) {
        (wider.noalias, wider.noalias_all) = match k.options.noalias == Flag::Suggest {
            true => (tried.noalias.clone(), tried.noalias_all.clone()),
            false => (decided.noalias.clone(), decided.noalias_all.clone()),
        };
    }

    fn held(&self, t: &Transforms, allowed: &Space, held: &mut Transforms) {
        let allowed_noalias = |p: &Param| allowed.noalias.contains(p) || allowed.noalias_all.contains(p);
        held.noalias = t.noalias.iter().filter(|p| !allowed_noalias(p)).cloned().collect();
    }

    fn reason(&self, held: &Transforms) -> Option<Reason> {
        (!held.noalias.is_empty()).then_some(Reason::AssumesCaller)
    }

    fn says(&self, held: &Transforms, s: &Saying<'_>) -> Option<Said> {
        if held.noalias.is_empty() {
            return None;
        }
        if !s.every_pointer.is_empty() && s.with.noalias == s.every_pointer {
            return Some(Said {
                what: "`__restrict__` on every pointer parameter (nvcc's --restrict)".into(),
                check: Some(Check::Own("verify that no two pointer arguments ever overlap".into())),
            });
        }
        let names: Vec<String> = held.noalias.iter().map(|p| format!("`{p}`")).collect();
        Some(Said {
            what: format!("`__restrict__` on {}", names.join(", ")),
            check: Some(Check::Own(format!(
                "verify that {} never overlap{} another argument",
                names.join(", "),
                if names.len() == 1 { "s" } else { "" }
            ))),
        })
    }
}
