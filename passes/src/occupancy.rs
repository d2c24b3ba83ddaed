//! `regtune-occupancy<W>` / `regtune-occupancy<W;block=N>`: ask the AMDGPU
//! backend for an occupancy, and promise it a block size.
//!
//! On every AMDGPU kernel (`amdgpu_kernel` calling convention; nothing else)
//! the pass sets
//!   - `"amdgpu-waves-per-eu"="W"`: allocate registers so that at least W
//!     waves fit on an execution unit, and
//!   - with `block=N`, `"amdgpu-flat-work-group-size"="1,N"`: the kernel is
//!     never launched with more than N work-items per block, so the backend
//!     may budget registers for N work-items instead of 1024.
//!
//! Why it is legal: waves-per-eu is a register-allocation goal; the backend
//! meets it or spills, and the result computes the same values either way.
//! The block size is a promise about the launch, not about the code: that is
//! why the tuner only suggests it, and applies it once the user confirms it
//! in the decisions db (a launch with more work-items then fails at launch
//! time; it is never miscompiled).
//!
//!   opt-22 -load-pass-plugin=target/debug/libregtune_passes.so \
//!     -passes='regtune-occupancy<5;block=256>' in.ll -S -o out.ll

use inkwell::attributes::AttributeLoc;
use inkwell::module::Module;
use inkwell::values::FunctionValue;

use crate::ir;
use crate::spec::Occupancy;

pub const WAVES_PER_EU: &str = "amdgpu-waves-per-eu";
pub const FLAT_WORK_GROUP_SIZE: &str = "amdgpu-flat-work-group-size";

/// Set the occupancy attributes on every AMDGPU kernel of the module.
pub fn run(module: &Module<'_>, occ: &Occupancy) -> bool {
    let mut changed = false;
    for f in ir::defined_functions(module) {
        changed |= apply(f, occ);
    }
    changed
}

/// Set the occupancy attributes on one function, if it is an AMDGPU kernel.
pub fn apply(f: FunctionValue<'_>, occ: &Occupancy) -> bool {
    // Only kernels: the attributes describe a launch, and the backend reads
    // them from the entry point.
    if !is_legal(f) {
        return false;
    }
    let mut changed = false;
    if let Some(w) = occ.waves_per_eu {
        changed |= set_string_attribute(f, WAVES_PER_EU, &w.to_string());
    }
    if let Some(n) = occ.max_block {
        changed |= set_string_attribute(f, FLAT_WORK_GROUP_SIZE, &format!("1,{n}"));
    }
    changed
}

/// The attributes mean something on AMDGPU kernels, and only there.
fn is_legal(f: FunctionValue<'_>) -> bool {
    ir::is_amdgpu_kernel(f) && f.count_basic_blocks() > 0
}

/// Set `key`=`value`; false when it already had that value.
fn set_string_attribute(f: FunctionValue<'_>, key: &str, value: &str) -> bool {
    if ir::string_attribute(f, key).as_deref() == Some(value) {
        return false;
    }
    let attr = f.get_type().get_context().create_string_attribute(key, value);
    f.add_attribute(AttributeLoc::Function, attr);
    true
}
