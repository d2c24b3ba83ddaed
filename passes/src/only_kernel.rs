//! One-kernel builds, for the tuner: with `REGTUNE_ONLY_KERNEL=<symbol>`,
//! `regtune-apply<early>`, once it has applied the decisions, turns every
//! other kernel of the module into a declaration. O3 and the code generator
//! then work on the kernel under test and what it calls; nothing else is
//! reachable (AMDGPU internalizes non-kernel functions, and GlobalDCE
//! removes what only the dropped kernels used).
//!
//! The kept kernel compiles as in a whole-file build with the same
//! decisions: they were placed with every kernel present (a function shared
//! with a kernel that decided otherwise stays plain), and a function the
//! late phase would have left unsunk because a dropped kernel disagreed is
//! marked `"regtune-no-sink"`.
//!
//! Why it is legal: it is not a transform for a build, only for measuring
//! one kernel; without the variable it does nothing.
//!
//!   REGTUNE_DECISIONS=variant.json REGTUNE_ONLY_KERNEL=_Z3fooPf \
//!   opt-22 -load-pass-plugin=target/debug/libregtune_passes.so \
//!     -passes='regtune-apply<early>' in.ll -S -o out.ll

use inkwell::attributes::AttributeLoc;
use inkwell::module::Module;
use inkwell::values::FunctionValue;

use regtune_decisions::plugin::ONLY_KERNEL_ENV;

use crate::ffi::ir as llvm;
use crate::ir;

/// Marks a function the late phase must not sink.
pub const NO_SINK_ATTRIBUTE: &str = "regtune-no-sink";

/// The kernel a one-kernel build keeps, if this is one.
pub fn requested() -> Option<String> {
    std::env::var(ONLY_KERNEL_ENV).ok().filter(|s| !s.is_empty())
}

/// Keep `symbol` and drop every other kernel's body; mark `no_sink`. Does
/// nothing when the module has no such kernel (nothing would be measured).
pub fn keep_only<'ctx>(module: &Module<'ctx>, symbol: &str, no_sink: &[FunctionValue<'ctx>]) -> bool {
    let kernels = ir::kernels(module);
    if !kernels.iter().any(|k| ir::symbol(*k) == symbol) {
        return false;
    }
    for f in no_sink {
        let attribute = f.get_type().get_context().create_string_attribute(NO_SINK_ATTRIBUTE, "");
        f.add_attribute(AttributeLoc::Function, attribute);
    }
    let mut changed = !no_sink.is_empty();
    for k in kernels.into_iter().filter(|k| ir::symbol(*k) != symbol) {
        llvm::delete_body(k);
        changed = true;
    }
    changed
}

/// Whether a function carries the no-sink mark.
pub fn sink_forbidden(f: FunctionValue<'_>) -> bool {
    f.get_string_attribute(AttributeLoc::Function, NO_SINK_ATTRIBUTE).is_some()
}
