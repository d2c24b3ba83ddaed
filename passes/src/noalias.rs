//! `regtune-noalias<P;...>` and `regtune-noalias-rank`: placeholder until
//! the noalias transform lands.
//!
//! TODO(sink helper): a colleague replaces this file with the real pass
//! (mark kernel pointer parameters `noalias` where the caller promises it,
//! and rank which parameters would pay off). The plugin already calls `run`
//! from `regtune-noalias` and `regtune-apply`, and `rank` from
//! `regtune-noalias-rank`, which prints one JSON line per kernel.

use inkwell::values::FunctionValue;
use regtune_decisions::Param;
use serde::Serialize;

/// A parameter worth marking `noalias`, as `regtune-noalias-rank` reports it
/// (the driver reads each candidate as a `regtune_decisions::Param`).
#[derive(Debug, Clone, Serialize)]
pub struct Candidate {
    pub index: u32,
    pub name: String,
}

/// Mark `params` of `kernel` noalias; true when the IR changed.
pub fn run(kernel: FunctionValue<'_>, params: &[Param]) -> bool {
    let _ = (kernel, params);
    false
}

/// The parameters of `kernel` worth marking noalias, best first.
pub fn rank(kernel: FunctionValue<'_>) -> Vec<Candidate> {
    let _ = kernel;
    Vec::new()
}
