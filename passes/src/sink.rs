//! `regtune-sink`: placeholder until the sink transform lands.
//!
//! TODO(sink helper): a colleague replaces this file with the real pass
//! (move instructions next to their uses to shorten live ranges). The
//! plugin already calls `run` from `regtune-sink` and from `regtune-apply`
//! (OptimizerLastEP) with the functions a kernel's decision covers.

use inkwell::values::FunctionValue;

/// Sink instructions in `functions`; true when the IR changed.
pub fn run(functions: &[FunctionValue<'_>]) -> bool {
    let _ = functions;
    false
}
