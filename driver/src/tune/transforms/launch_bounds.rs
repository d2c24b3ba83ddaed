//! Launch bounds: `__launch_bounds__(N)`, a promise that no launch uses
//! more than N threads a block (passes/src/occupancy.rs sets the IR
//! attribute). It rests on the caller: applied with `--block-size N` or a
//! confirmation; `--block-size auto` suggests what this file's launches use.

use regtune_decisions::{Reason, Transforms};

use super::{Check, Proposing, Said, Saying, Transform};
use crate::evidence::Class;
use crate::search::Space;
use crate::tune::BlockSize;
use crate::{launch, names};

pub(super) struct LaunchBounds;

impl Transform for LaunchBounds {
    fn class(&self) -> Class {
        Class::LaunchBounds
    }

    fn spelled_by(&self) -> Option<&'static str> {
        Some("fix/attributes.rs")
    }

    fn allowed(&self, k: &Proposing<'_>, _tried: &Space, allowed: &mut Space) {
        allowed.launch_bounds = k.options.block_size.stated().or(k.confirmed.launch_bounds);
    }

    fn suggested(&self, k: &Proposing<'_>, _tried: &Space, decided: &Space, wider: &mut Space) {
        // Read from the file's launches only when a suggestion may need it.
        wider.launch_bounds = decided.launch_bounds.or_else(|| match k.options.block_size {
            BlockSize::Auto => launch::block_size(k.source, &names::unqualified(&k.base.symbol)),
            _ => None,
        });
    }

    fn held(&self, t: &Transforms, allowed: &Space, held: &mut Transforms) {
        held.launch_bounds = t.launch_bounds.filter(|_| allowed.launch_bounds.is_none());
    }

    fn reason(&self, held: &Transforms) -> Option<Reason> {
        held.launch_bounds.map(|_| Reason::AssumesCaller)
    }

    fn says(&self, held: &Transforms, _s: &Saying<'_>) -> Option<Said> {
        held.launch_bounds.map(|n| Said {
            what: format!("`__launch_bounds__({n})`"),
            check: Some(Check::Own(format!("every launch in this file uses {n} threads; confirm no other caller uses more"))),
        })
    }
}
