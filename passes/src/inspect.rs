//! `regtune-inspect`: what the tuner needs to know before it searches a
//! kernel, as one JSON line per kernel on stdout:
//!
//!   {"kernel":"<symbol>","pow2":true,"pow2_inexact":false,"unroll_cap":false,"noalias_candidates":[...]}
//!
//! (`regtune_decisions::plugin::Inspection`, which the driver reads.)
//!
//! `pow2` / `unroll_cap`: whether that transform would change anything in
//! the kernel's scope (found by running it on a copy of the module), so the
//! tuner never compiles a variant identical to the plain build.
//! `pow2_inexact`: whether `regtune-pow2<inexact>` would change more than
//! `regtune-pow2` (a library pow that is not correctly rounded, no `afn`). The noalias
//! candidates come in the ranking heuristic's order, then the other pointer
//! parameters (score 0). Changes nothing.
//!
//!   opt-22 -load-pass-plugin=target/debug/libregtune_passes.so \
//!     -passes=regtune-inspect -disable-output pre.bc

use std::io::Write;

use inkwell::module::Module;
use inkwell::values::FunctionValue;

use crate::pow2::Rounding;
use crate::{ir, noalias, pow2, unroll_cap};

/// The line's layout is the driver's too: the decisions crate holds it.
type Line = regtune_decisions::plugin::Inspection<noalias::Candidate>;

pub fn print(module: &Module<'_>) {
    let mut out = std::io::stdout().lock();
    for kernel in ir::kernels(module) {
        let name = ir::symbol(kernel);
        let line = Line {
            pow2: would_change(module, &name, |m, scope| pow2::run_on(m, scope, Rounding::Exact)),
            // What is left after the exact rewrites.
            pow2_inexact: would_change(module, &name, |m, scope| {
                let Some(kernel) = scope.first().copied() else { return false };
                pow2::run_on(m, scope, Rounding::Exact);
                // The exact run may have deleted functions: walk the calls again.
                pow2::run_on(m, &ir::reachable(kernel), Rounding::Inexact)
            }),
            // Any loop not already kept rolled: caps matter for this kernel.
            unroll_cap: unroll_cap::applies(&ir::reachable(kernel)),
            noalias_candidates: noalias::rank_all(kernel),
            kernel: name,
        };
        if let Ok(json) = serde_json::to_string(&line) {
            // A closed stdout is the reader's choice; nothing to report.
            let _ = writeln!(out, "{json}");
        }
    }
    let _ = out.flush();
}

/// Does `transform` change the kernel's scope? Tried on a copy, so the
/// module itself stays as it was.
fn would_change(module: &Module<'_>, kernel: &str, transform: impl for<'c> Fn(&Module<'c>, &[FunctionValue<'c>]) -> bool) -> bool {
    let copy = module.clone();
    let Some(k) = copy.get_function(kernel) else {
        return true; // cannot tell: let the tuner try it
    };
    transform(&copy, &ir::reachable(k))
}
