//! Sink: definitions moved next to their first use (passes/src/sink/).
//! Exact; applied unasked once the evidence shows it never loses, else
//! suggested for `regtune measure` to time.

use regtune_decisions::{Reason, Transforms};

use super::{Check, Proposing, Said, Saying, Transform};
use crate::evidence::Class;
use crate::search::Space;

pub(super) struct Sink;

impl Transform for Sink {
    fn class(&self) -> Class {
        Class::Sink
    }

    fn spelled_by(&self) -> Option<&'static str> {
        Some("fix/sink.rs")
    }

    fn tried(&self, k: &Proposing<'_>, tried: &mut Space) {
        // nvcc's builds: where fix's spelling of it can be built.
        tried.sink = k.session.rewrites_source();
    }

    fn allowed(&self, _k: &Proposing<'_>, tried: &Space, allowed: &mut Space) {
        allowed.sink = tried.sink;
    }

    fn unasked(&self, k: &Proposing<'_>, _tried: &Space, facts: &mut Space) {
        facts.sink = facts.sink && (k.options.evidence.never_loses(Class::Sink) || k.confirmed.sink);
    }

    fn suggested(&self, _k: &Proposing<'_>, tried: &Space, _decided: &Space, wider: &mut Space) {
        wider.sink = tried.sink;
    }

    fn held(&self, t: &Transforms, allowed: &Space, held: &mut Transforms) {
        held.sink = t.sink && !allowed.sink;
    }

    fn reason(&self, held: &Transforms) -> Option<Reason> {
        held.sink.then_some(Reason::Unproven)
    }

    fn says(&self, held: &Transforms, _s: &Saying<'_>) -> Option<Said> {
        held.sink.then(|| Said { what: "moving definitions next to their first use (sink)".into(), check: Some(Check::Unproven) })
    }
}
