//! `regtune-occupancy<W>` / `regtune-occupancy<W;block=N>`: ask the backend
//! for an occupancy, and promise it a block size.
//!
//! On every AMDGPU kernel (`amdgpu_kernel` calling convention) the pass sets
//!   - `"amdgpu-waves-per-eu"="W"`: allocate registers so that at least W
//!     waves fit on an execution unit, and
//!   - with `block=N`, `"amdgpu-flat-work-group-size"="1,N"`: the kernel is
//!     never launched with more than N work-items per block, so the backend
//!     may budget registers for N work-items instead of 1024.
//!
//! On every NVPTX kernel (`ptx_kernel` calling convention, which LLVM 22
//! also gives kernels that old IR marks in `!nvvm.annotations`) W is warps
//! per SM, and the pass sets
//!   - `"nvvm.maxnreg"="R"` (PTX `.maxnreg R`): ptxas uses at most R
//!     registers per thread, where R = floor(64 / ceil(W / 4)) * 8 (at most
//!     255) is the largest count at which W warps share an SM's 64K
//!     registers (allocated per warp in units of 256, over 4 sub-partitions;
//!     the same on sm_70 through sm_90), and
//!   - with `block=N`, `"nvvm.maxntid"="N"` (PTX `.maxntid N`): the CUDA
//!     `__launch_bounds__(N)`.
//!
//! A register cap needs no promise about the launch, unlike
//! `"nvvm.minctasm"`, which ptxas honours only next to `.maxntid`.
//! LLVM 19 reads both limits from `!nvvm.annotations` (`maxnreg`,
//! `maxntidx`) instead: built for it, the pass writes them there.
//!
//! Why it is legal: waves-per-eu and maxnreg are register-allocation goals;
//! the backend meets them or spills, and the result computes the same values
//! either way. The block size is a promise about the launch, not about the
//! code: that is why the tuner only suggests it, and applies it once the
//! user confirms it in the decisions db (a launch with more threads then
//! fails at launch time; it is never miscompiled).
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
pub const NVVM_MAXNREG: &str = "nvvm.maxnreg";
pub const NVVM_MAXNTID: &str = "nvvm.maxntid";

/// The most registers ptxas gives a thread.
const MAX_REGS_PER_THREAD: u32 = 255;

/// Set the occupancy attributes on every kernel of the module.
pub fn run(module: &Module<'_>, occ: &Occupancy) -> bool {
    let mut changed = false;
    for f in ir::defined_functions(module) {
        changed |= apply(f, occ);
    }
    changed
}

/// Set the occupancy attributes on one function, if it is a kernel.
pub fn apply(f: FunctionValue<'_>, occ: &Occupancy) -> bool {
    // Only kernels: the attributes describe a launch, and the backend reads
    // them from the entry point.
    if f.count_basic_blocks() == 0 {
        return false;
    }
    match ir::Target::of_kernel(f) {
        Some(ir::Target::Amdgpu) => apply_amdgpu(f, occ),
        Some(ir::Target::Nvptx) => apply_nvptx(f, occ),
        None => false,
    }
}

fn apply_amdgpu(f: FunctionValue<'_>, occ: &Occupancy) -> bool {
    let mut changed = false;
    if let Some(w) = occ.waves_per_eu {
        changed |= set_string_attribute(f, WAVES_PER_EU, &w.to_string());
    }
    if let Some(n) = occ.max_block {
        changed |= set_string_attribute(f, FLAT_WORK_GROUP_SIZE, &format!("1,{n}"));
    }
    changed
}

fn apply_nvptx(f: FunctionValue<'_>, occ: &Occupancy) -> bool {
    let mut changed = false;
    if let Some(w) = occ.waves_per_eu {
        changed |= set_nvvm_limit(f, (NVVM_MAXNREG, "maxnreg"), register_cap_for_warps(w));
    }
    if let Some(n) = occ.max_block {
        changed |= set_nvvm_limit(f, (NVVM_MAXNTID, "maxntidx"), n);
    }
    changed
}

/// Set an NVPTX launch limit where the backend reads it: LLVM 22 from the
/// function attribute (the first name), LLVM 19 from `!nvvm.annotations`
/// (the second).
#[cfg(not(feature = "llvm19"))]
fn set_nvvm_limit(f: FunctionValue<'_>, (attribute, _): (&str, &str), value: u32) -> bool {
    set_string_attribute(f, attribute, &value.to_string())
}

#[cfg(feature = "llvm19")]
fn set_nvvm_limit(f: FunctionValue<'_>, (_, annotation): (&str, &str), value: u32) -> bool {
    crate::ffi::nvvm::set_annotation(f, annotation, value)
}

/// The register cap at which `warps` warps fit an SM's register file:
/// per warp at most `floor(16384 / ceil(warps / 4))` registers in units of
/// 256, i.e. `floor(64 / ceil(warps / 4)) * 8` per thread, at most 255.
/// (The driver's occupancy model, driver/src/gpu/nvptx/nvidia.rs, computes the same.)
pub fn register_cap_for_warps(warps: u32) -> u32 {
    let per_partition = warps.max(1).div_ceil(4);
    ((64 / per_partition) * 8).clamp(8, MAX_REGS_PER_THREAD)
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

#[cfg(test)]
mod tests {
    use super::register_cap_for_warps;

    #[test]
    fn register_caps_per_warp_target() {
        let caps: Vec<u32> = [64, 48, 40, 32, 24, 16, 8].iter().map(|&w| register_cap_for_warps(w)).collect();
        assert_eq!(caps, [32, 40, 48, 64, 80, 128, 255]);
    }
}
