//! `regtune-spill-to-shared`: let the backend spill registers to on-chip
//! shared memory instead of local memory.
//!
//! On every NVPTX kernel (`ptx_kernel`) whose block size is promised
//! (`"nvvm.maxntid"`, LLVM 19: `maxntidx` in `!nvvm.annotations`) the pass
//! puts the PTX pragma `.pragma "enable_smem_spilling";` at the start of
//! the body, as inline assembly (what libcu++'s
//! `cuda::ptx::enable_smem_spilling()` writes). ptxas (CUDA 12.9 and 13)
//! then spills to shared memory first, sized by the block: each spilled
//! register costs `4 × threads per block` bytes of it, and local-memory
//! spills remain only past that. Paired with a register cap
//! (`regtune-occupancy`) it is the CDNA2 note's "spill to LDS" done by the
//! register allocator.
//!
//! Not applied (a note on stderr with `REGTUNE_VERBOSE`):
//!   - without a promised block size: ptxas needs it to size the spill area;
//!   - where the module declares dynamic shared memory (an `extern`
//!     `addrspace(3)` array): ptxas refuses the pragma next to it;
//!   - on AMDGPU, which has no such pragma (and nothing changes).
//!
//! Why it is legal: where a spilled value lives is the register
//! allocator's choice; each thread's slots are its own, so the kernel
//! computes the same values. It costs shared memory, which can lower
//! occupancy: the tuner measures that, and `regtune measure` times it.
//!
//!   opt-22 -load-pass-plugin=target/debug/libregtune_passes.so \
//!     -passes='regtune-occupancy<40;block=256>,regtune-spill-to-shared' in.ll -S -o out.ll

use inkwell::module::Module;
use inkwell::values::{AnyValue, FunctionValue};
use inkwell::AddressSpace;

use crate::ir;

/// What ptxas reads: spill to shared memory first.
pub const PRAGMA: &str = ".pragma \"enable_smem_spilling\";";

/// Shared memory is address space 3 on NVPTX.
const SHARED: u16 = 3;

/// Put the pragma at the start of every eligible kernel; true when changed.
pub fn run(module: &Module<'_>) -> bool {
    let kernels: Vec<FunctionValue<'_>> = ir::kernels(module);
    kernels.into_iter().fold(false, |changed, k| apply(module, k) | changed)
}

/// Put the pragma at the start of `kernel` if it is an NVPTX kernel with a
/// promised block size in a module without dynamic shared memory.
pub fn apply<'ctx>(module: &Module<'ctx>, kernel: FunctionValue<'ctx>) -> bool {
    if ir::Target::of_kernel(kernel) != Some(ir::Target::Nvptx) || has_pragma(kernel) {
        return false;
    }
    // ptxas sizes the spill area by the block: without one it refuses.
    if max_block(kernel).is_none() {
        return false;
    }
    // ptxas refuses the pragma beside dynamic shared memory.
    if has_dynamic_shared_memory(module) {
        return false;
    }
    let Some(entry) = kernel.get_first_basic_block() else { return false };
    let context = module.get_context();
    let builder = context.create_builder();
    match entry.get_first_instruction() {
        Some(first) => builder.position_before(&first),
        None => builder.position_at_end(entry),
    }
    let fn_type = context.void_type().fn_type(&[], false);
    let asm = context.create_inline_asm(fn_type, PRAGMA.to_string(), String::new(), true, false, None, false);
    builder.build_indirect_call(fn_type, asm, &[], "").is_ok()
}

/// The block size promised to the backend, if any: the product of
/// `maxntid`'s dimensions ("16,16" is 256 threads).
fn max_block(kernel: FunctionValue<'_>) -> Option<u32> {
    #[cfg(feature = "llvm19")]
    if let Some(n) = crate::ffi::nvvm::annotation(kernel, "maxntidx") {
        return u32::try_from(n).ok();
    }
    let dims = ir::string_attribute(kernel, crate::occupancy::NVVM_MAXNTID)?;
    dims.split(',').map(|d| d.trim().parse::<u32>().ok()).product()
}

/// The pragma is already there (the pass ran, or the user wrote it).
fn has_pragma(kernel: FunctionValue<'_>) -> bool {
    let Some(entry) = kernel.get_first_basic_block() else { return false };
    // The call prints as `call void asm sideeffect ".pragma \22enable_smem_spilling\22;", ""()`.
    entry.get_instructions().any(|i| i.print_to_string().to_string_lossy().contains("enable_smem_spilling"))
}

/// An `extern __shared__` array: a shared-memory global without a body.
fn has_dynamic_shared_memory(module: &Module<'_>) -> bool {
    module.get_globals().any(|g| g.is_declaration() && g.as_pointer_value().get_type().get_address_space() == AddressSpace::from(SHARED))
}
