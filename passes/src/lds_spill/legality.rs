//! `regtune-lds-spill`'s legality: which kernels the pass may change (a
//! promised block size, room in shared memory, no dynamic shared memory),
//! which values may live in LDS, and which values the AMDGPU backend keeps
//! in scalar registers anyway. The rules are in [`super`]'s banner.
//!
//!   opt-22 -load-pass-plugin=target/debug/libregtune_passes.so \
//!     -passes='regtune-lds-spill<8>' in.ll -S -o out.ll

use std::fmt;

use inkwell::module::Module;
use inkwell::values::{FastMathFlags, FunctionValue, InstructionOpcode, InstructionValue};
use inkwell::AddressSpace;

use crate::ffi::ir::{direct_callee, global_alloc_bytes};
use crate::ffi::sink::{self as llvm, Def, Shape, Source};
use crate::ir::opcodes::{is_integer_arithmetic, is_integer_or_pointer_cast};
pub(super) use crate::ir::Target;
use crate::{ir, occupancy};

/// Shared memory (LDS) is address space 3 on AMDGPU and NVPTX.
pub(super) const SHARED: u16 = 3;
/// `@__regtune_lds_spill.<kernel>`: the array the pass adds to a kernel.
pub(super) const ARRAY_PREFIX: &str = "__regtune_lds_spill.";
/// A value read at more places than this stays in registers: each place
/// costs a reload.
pub(super) const MAX_RELOADS: usize = 3;
/// LDS per work-group on gfx9 (CDNA included).
const AMDGPU_LDS_BYTES: u64 = 64 * 1024;
/// Static shared memory per block on NVPTX (more needs dynamic shared
/// memory and an opt-in at launch).
const NVPTX_STATIC_SHARED_BYTES: u64 = 48 * 1024;
/// The largest block either target launches.
const MAX_BLOCK: u32 = 1024;

/// The static shared memory a kernel may have on `target`.
fn shared_limit(target: Target) -> u64 {
    match target {
        Target::Amdgpu => AMDGPU_LDS_BYTES,
        Target::Nvptx => NVPTX_STATIC_SHARED_BYTES,
    }
}

/// A kernel the pass may change.
#[derive(Debug, Clone, Copy)]
pub(super) struct Kernel {
    pub(super) target: Target,
    /// B: the most threads a block of it has.
    pub(super) block: u32,
}

/// Why a kernel is left alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Refusal {
    NotAKernel,
    OptNone,
    NoBlockSize,
    NoDispatchPacket,
    DynamicShared,
    AlreadySpilled,
    TooMuchShared { wanted: u64, existing: u64, limit: u64 },
    ControlFlow,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::NotAKernel => write!(f, "not a kernel"),
            Refusal::OptNone => write!(f, "optnone"),
            Refusal::NoBlockSize => write!(f, "no promised block size (the slots are sized by it)"),
            Refusal::NoDispatchPacket => write!(f, "not an HSA kernel (the block shape comes from the dispatch packet)"),
            Refusal::DynamicShared => write!(f, "the module has dynamic shared memory (its size is known only at launch)"),
            Refusal::AlreadySpilled => write!(f, "already has its spill array"),
            Refusal::TooMuchShared { wanted, existing, limit } => {
                write!(f, "{wanted} bytes of slots and {existing} of other static shared memory exceed {limit}")
            }
            Refusal::ControlFlow => write!(f, "EH, invoke or callbr, or too large"),
        }
    }
}

/// Whether the pass may give `kernel` `slots` words per thread of shared
/// memory. (Its control flow is checked when the CFG is built.)
pub(super) fn check_kernel(module: &Module<'_>, kernel: FunctionValue<'_>, slots: u32) -> Result<Kernel, Refusal> {
    let target = Target::of_kernel(kernel).ok_or(Refusal::NotAKernel)?;
    if llvm::has_fn_attribute(kernel, "optnone") {
        return Err(Refusal::OptNone);
    }
    let block = promised_block(kernel, target).ok_or(Refusal::NoBlockSize)?;
    // The thread id needs the block's shape: on AMDGPU, from the HSA
    // dispatch packet (other OSes have none).
    if target == Target::Amdgpu && !llvm::triple(kernel).contains("amdhsa") {
        return Err(Refusal::NoDispatchPacket);
    }
    let shared = shared_globals(module);
    if shared.iter().any(|g| g.is_none()) {
        return Err(Refusal::DynamicShared);
    }
    if module.get_global(&array_name(kernel)).is_some() {
        return Err(Refusal::AlreadySpilled);
    }
    let existing: u64 = shared.into_iter().flatten().sum();
    let wanted = u64::from(block) * u64::from(slots) * 4;
    let limit = shared_limit(target);
    if wanted + existing > limit {
        return Err(Refusal::TooMuchShared { wanted, existing, limit });
    }
    Ok(Kernel { target, block })
}

/// The spill array's name for a kernel.
pub(super) fn array_name(kernel: FunctionValue<'_>) -> String {
    format!("{ARRAY_PREFIX}{}", ir::symbol(kernel))
}

/// The most threads a block of `kernel` may have, as promised to the
/// backend: the maximum of `"amdgpu-flat-work-group-size"="min,max"`; on
/// NVPTX the product of `"nvvm.maxntid"="x[,y[,z]]"` (LLVM 19: of
/// `maxntid{x,y,z}` in `!nvvm.annotations`).
fn promised_block(kernel: FunctionValue<'_>, target: Target) -> Option<u32> {
    let n = match target {
        Target::Amdgpu => {
            let range = ir::string_attribute(kernel, occupancy::FLAT_WORK_GROUP_SIZE)?;
            range.split(',').nth(1)?.trim().parse::<u32>().ok()?
        }
        Target::Nvptx => nvptx_block(kernel)?,
    };
    (1..=MAX_BLOCK).contains(&n).then_some(n)
}

fn nvptx_block(kernel: FunctionValue<'_>) -> Option<u32> {
    #[cfg(feature = "llvm19")]
    {
        let dims = ["maxntidx", "maxntidy", "maxntidz"].map(|k| crate::ffi::nvvm::annotation(kernel, k));
        if dims.iter().any(Option::is_some) {
            return dims.iter().try_fold(1u32, |n, d| n.checked_mul(u32::try_from(d.unwrap_or(1)).ok()?));
        }
    }
    let dims = ir::string_attribute(kernel, occupancy::NVVM_MAXNTID)?;
    dims.split(',').try_fold(1u32, |n, d| n.checked_mul(d.trim().parse().ok()?))
}

/// The module's shared-memory globals: the bytes each definition takes,
/// `None` for a declaration (dynamic shared memory). Spill arrays of other
/// kernels are not counted: each kernel only ever has its own.
fn shared_globals(module: &Module<'_>) -> Vec<Option<u64>> {
    module
        .get_globals()
        .filter(|g| g.as_pointer_value().get_type().get_address_space() == AddressSpace::from(SHARED))
        .filter(|g| !g.get_name().to_string_lossy().starts_with(ARRAY_PREFIX))
        .map(|g| if g.is_declaration() { None } else { Some(global_alloc_bytes(g).unwrap_or(0)) })
        .collect()
}

/// The 32-bit words a value of this instruction's type takes in LDS: 1 for
/// `i32`, `float` and 32-bit pointers, 2 for `i64`, `double` and 64-bit
/// pointers; `None` for any other type (narrower ones would need packing,
/// vectors and aggregates many words) and for pointers the data layout
/// calls non-integral (their bits are not all there is to them).
pub(super) fn slots_for(inst: InstructionValue<'_>, non_integral: &[u32]) -> Option<u32> {
    let bits = llvm::result_bits(inst);
    let words = match bits {
        32 => 1,
        64 => 2,
        _ => return None,
    };
    match llvm::result_shape(inst) {
        Shape::Int(_) | Shape::Float(_) => Some(words),
        Shape::Pointer { address_space } if !non_integral.contains(&address_space) => Some(words),
        _ => None,
    }
}

/// The address spaces the module's data layout lists as non-integral
/// (`ni:7:8:9` on AMDGPU: buffer resources).
pub(super) fn non_integral_spaces(module: &Module<'_>) -> Vec<u32> {
    let layout = module.get_data_layout();
    let text = layout.as_str().to_string_lossy().into_owned();
    text.split('-')
        .filter_map(|part| part.strip_prefix("ni:"))
        .flat_map(|list| list.split(':').filter_map(|n| n.parse().ok()).collect::<Vec<u32>>())
        .collect()
}

/// Whether some user of the value is a convergent call. Refused: a reload
/// runs with the lanes active at the use, and cross-lane operations
/// (`readlane`, DPP, shuffles) can read lanes inactive there, whose
/// registers the reload leaves stale where the original value was whole.
pub(super) fn read_by_convergent_call(users: &[InstructionValue<'_>]) -> bool {
    users.iter().any(|u| llvm::is_convergent_call(*u))
}

/// How many `fneg`, `fpext`, PHI and `select` steps the contraction check
/// looks through, from a multiply to the add that reads it.
const CONTRACTION_DEPTH: u32 = 4;

/// Whether the backend may fold the value's definition into a user, which
/// it can only do while it sees both: a reload in between hides the
/// definition, so the spilled build would compute other bits than the
/// plain one. Refused:
///   - a floating-point multiply that an add or subtract reads (through
///     `fneg`, `fpext`, PHIs and selects): FMA contraction. CUDA compiles
///     with `-ffp-contract=fast` (HIP: `fast-honor-pragmas`), so LLVM's
///     DAG combiner fuses `fmul` into `fadd` on its own, and NVPTX prints
///     the rest as `mul.f64`/`add.f64` without `.rn`, which ptxas contracts
///     in turn; the fused `fma` rounds once, the reloaded product twice.
///     Whatever the flags say (the target options may allow fusion
///     globally), and in any block (ptxas optimizes the whole kernel). On
///     the H100, spilling `even` of examples/lbm_d3q19.hip (an `fmul` that
///     two `fadd`s read) changed f1 and f2 in a fifth of the cells, with
///     ptxas's contraction off too (`--fmad=false`: LLVM then fused the
///     other product of the sum). A multiply's operands may go to LDS: the
///     reload leaves the multiply to fuse, and no example differed
///     (bench/gpu/lds_spill_examples.py).
///   - a definition or user with fast-math flags other than `contract`
///     (`reassoc`, `nnan`, `ninf`, `nsz`, `arcp`, `afn`): those let the
///     backend reassociate, take reciprocals, or fold on what it knows of
///     the operand's definition, and a reload shows it none.
pub(super) fn fused_with_user(inst: InstructionValue<'_>, users: &[InstructionValue<'_>]) -> bool {
    (is_product(inst, CONTRACTION_DEPTH) && users.iter().any(|&u| feeds_sum(u, CONTRACTION_DEPTH)))
        || relaxed_math(inst)
        || users.iter().any(|&u| relaxed_math(u))
}

/// A floating-point multiply, or a value that carries one to its users
/// unchanged in rounding (`fneg`, `fpext`, a PHI or select of one).
fn is_product(inst: InstructionValue<'_>, depth: u32) -> bool {
    match inst.get_opcode() {
        InstructionOpcode::FMul => true,
        InstructionOpcode::FNeg | InstructionOpcode::FPExt | InstructionOpcode::Phi | InstructionOpcode::Select => {
            depth > 0 && llvm::sources(inst).iter().any(|s| matches!(s, Source::Inst(x) if is_product(*x, depth - 1)))
        }
        _ => false,
    }
}

/// An add or subtract, or a value that carries its operand on to one.
fn feeds_sum(inst: InstructionValue<'_>, depth: u32) -> bool {
    match inst.get_opcode() {
        InstructionOpcode::FAdd | InstructionOpcode::FSub => true,
        InstructionOpcode::FNeg | InstructionOpcode::FPExt | InstructionOpcode::Phi | InstructionOpcode::Select => {
            depth > 0 && llvm::users(Def::Inst(inst)).into_iter().any(|u| feeds_sum(u, depth - 1))
        }
        _ => false,
    }
}

/// Fast-math flags other than `contract` on the instruction.
fn relaxed_math(inst: InstructionValue<'_>) -> bool {
    inst.get_fast_math_flags().is_ok_and(|f| !f.difference(FastMathFlags::AllowContract).is_empty())
}

/// Registers a value occupies for the pressure estimate: none for `void`,
/// tokens and lane masks (`i1`, which the targets keep in mask or predicate
/// registers), else its bits in 32-bit registers.
pub(super) fn registers(inst: InstructionValue<'_>) -> u32 {
    if llvm::has_token_type(inst) {
        return 0;
    }
    match llvm::result_shape(inst) {
        Shape::Int(1) | Shape::MaskVector => 0,
        _ => u32::try_from(llvm::result_bits(inst).div_ceil(32)).unwrap_or(u32::MAX),
    }
}

/// AMDGPU intrinsics whose results are the same in every lane.
const UNIFORM_INTRINSICS: &[&str] = &[
    "llvm.amdgcn.workgroup.id.",
    "llvm.amdgcn.dispatch.ptr",
    "llvm.amdgcn.dispatch.id",
    "llvm.amdgcn.implicitarg.ptr",
    "llvm.amdgcn.kernarg.segment.ptr",
    "llvm.amdgcn.queue.ptr",
    "llvm.amdgcn.lds.kernel.id",
    "llvm.amdgcn.groupstaticsize",
    "llvm.amdgcn.wavefrontsize",
    "llvm.amdgcn.readfirstlane",
    "llvm.amdgcn.readlane",
    "llvm.amdgcn.ballot",
    "llvm.amdgcn.s.",
];

/// The values the AMDGPU backend keeps in scalar registers, by a simple
/// uniformity estimate: integer and pointer results of arithmetic, casts,
/// GEPs, selects and generic pure intrinsics (`llvm.umin`) whose operands
/// are all scalar (kernel parameters, constants, other scalar values), the
/// intrinsics above, and non-volatile
/// loads from constant memory (address spaces 4 and 6) at a scalar
/// address. PHIs, float arithmetic (VALU on gfx9) and everything else are
/// vector values. `order` lists the instructions (indices into `insts`)
/// with every non-PHI instruction after its operands (reverse post-order);
/// `index` maps an instruction to its index.
pub(super) fn scalar_values<'ctx>(
    insts: &[InstructionValue<'ctx>],
    order: &[usize],
    index: impl Fn(InstructionValue<'ctx>) -> Option<usize>,
) -> Vec<bool> {
    let mut scalar = vec![false; insts.len()];
    for &i in order {
        let inst = insts[i];
        let operands_scalar = || {
            llvm::sources(inst).into_iter().all(|s| match s {
                Source::Inst(x) => index(x).is_some_and(|k| scalar[k]),
                Source::Param(_) | Source::Other => true,
            })
        };
        let int_or_pointer = matches!(llvm::result_shape(inst), Shape::Int(_) | Shape::Pointer { .. });
        scalar[i] = match inst.get_opcode() {
            InstructionOpcode::Phi => false,
            InstructionOpcode::Load => {
                !inst.get_volatile().unwrap_or(true)
                    && !llvm::is_atomic(inst)
                    && llvm::access(inst).is_some_and(|a| matches!(a.address_space, 4 | 6))
                    && operands_scalar()
            }
            InstructionOpcode::Call => {
                let name = direct_callee(inst).map(|f| f.get_name().to_string_lossy().into_owned()).unwrap_or_default();
                // Target intrinsics may read the lane (workitem ids, mbcnt):
                // only generic ones are functions of their operands alone.
                UNIFORM_INTRINSICS.iter().any(|p| name.starts_with(p))
                    || (int_or_pointer && !name.starts_with("llvm.amdgcn.") && llvm::is_pure_intrinsic_call(inst) && operands_scalar())
            }
            // What the scalar unit computes: no division, no floating point.
            op if is_integer_arithmetic(op)
                || is_integer_or_pointer_cast(op)
                || matches!(
                    op,
                    InstructionOpcode::ICmp
                        | InstructionOpcode::Select
                        | InstructionOpcode::GetElementPtr
                        | InstructionOpcode::ExtractValue
                        | InstructionOpcode::Freeze
                ) =>
            {
                int_or_pointer && operands_scalar()
            }
            _ => false,
        };
    }
    scalar
}

#[cfg(test)]
mod tests {
    use super::Refusal;

    #[test]
    fn refusals_say_why() {
        let r = Refusal::TooMuchShared { wanted: 65536, existing: 1024, limit: 65536 };
        assert_eq!(r.to_string(), "65536 bytes of slots and 1024 of other static shared memory exceed 65536");
    }
}
