//! `regtune-noalias<P;...>`, the transform.
//!
//! A HIP `__restrict__` on a kernel parameter is `noalias` on the IR
//! argument: while the kernel runs, memory reached through that
//! pointer is reached through no pointer not based on it (LangRef,
//! "Parameter Attributes", `noalias`). Alias analysis then separates the
//! pointer from every other parameter, global and unknown pointer, so GVN
//! may reuse a load across a store through another pointer, LICM may hoist
//! or promote it out of a loop that stores elsewhere, the schedulers may
//! move it above such stores, and AMDGPU may select a uniform load that no
//! store can clobber as a scalar load (`amdgpu.noclobber`).
//!
//! Why it is legal: in general it is not. It is a promise about the caller
//! (no two pointers of the launch overlap) that the IR cannot check, which is
//! why the tuner only suggests it and applies it once the user opts in. The
//! pass itself applies exactly what it is told: only to parameters that
//! exist and are pointers (anything else is skipped, silently), only once
//! (a parameter already `noalias` is left as it is), and only to the
//! functions it is handed (`regtune-noalias` hands it the module's kernels).
//!
//!   opt-22 -load-pass-plugin=target/debug/libregtune_passes.so \
//!     -passes='regtune-noalias<3;5>' in.ll -S -o out.ll

use inkwell::attributes::{Attribute, AttributeLoc};
use inkwell::values::FunctionValue;
use regtune_decisions::Param;

/// Mark `params` of `kernel` noalias (matched by index); true when an
/// attribute was added.
pub fn run(kernel: FunctionValue<'_>, params: &[Param]) -> bool {
    let mut changed = false;
    for p in params {
        // Skip what cannot take the attribute, and what already has it.
        if legality(kernel, p.index) != Legality::Applies {
            continue;
        }
        kernel.add_attribute(AttributeLoc::Param(p.index), noalias_attribute(kernel));
        changed = true;
    }
    changed
}

// ---------------------------------------------------------------------------
// Legality: which parameters can take the attribute.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Legality {
    Applies,
    NoSuchParameter,
    /// `noalias` is only valid on pointers (not on vectors of them).
    NotAPointer,
    AlreadyNoalias,
}

pub(super) fn legality(f: FunctionValue<'_>, index: u32) -> Legality {
    let Some(arg) = f.get_nth_param(index) else {
        return Legality::NoSuchParameter;
    };
    if !arg.is_pointer_value() {
        return Legality::NotAPointer;
    }
    if has_noalias(f, index) {
        return Legality::AlreadyNoalias;
    }
    Legality::Applies
}

fn noalias_kind() -> u32 {
    Attribute::get_named_enum_kind_id("noalias")
}

pub(super) fn has_noalias(f: FunctionValue<'_>, index: u32) -> bool {
    f.get_enum_attribute(AttributeLoc::Param(index), noalias_kind()).is_some()
}

fn noalias_attribute(f: FunctionValue<'_>) -> Attribute {
    f.get_type().get_context().create_enum_attribute(noalias_kind(), 0)
}
