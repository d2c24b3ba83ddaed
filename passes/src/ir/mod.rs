//! IR queries the passes share: which functions are defined, which are
//! kernels, what a kernel reaches through direct calls.

use std::collections::{BTreeSet, HashMap, HashSet};

use inkwell::attributes::AttributeLoc;
use inkwell::module::{Linkage, Module};
use inkwell::values::{FunctionValue, InstructionValue};

use crate::ffi::ir::direct_callee;
use crate::ffi::sink as llvm;

pub(crate) mod cfg;
pub(crate) mod opcodes;

/// `amdgpu_kernel` (llvm/IR/CallingConv.h).
pub const AMDGPU_KERNEL_CC: u32 = 91;
/// `ptx_kernel`.
pub const PTX_KERNEL_CC: u32 = 71;

/// Every function of the module that has a body.
pub fn defined_functions<'ctx>(module: &Module<'ctx>) -> Vec<FunctionValue<'ctx>> {
    module.get_functions().filter(|f| f.count_basic_blocks() > 0).collect()
}

/// The GPU a module is compiled for: the one place the plugin learns it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Amdgpu,
    Nvptx,
}

impl Target {
    /// From a target triple (`amdgcn-amd-amdhsa`, `nvptx64-nvidia-cuda`);
    /// None for the host's.
    pub fn of_triple(triple: &str) -> Option<Target> {
        if triple.starts_with("amdgcn") {
            Some(Target::Amdgpu)
        } else if triple.starts_with("nvptx") {
            Some(Target::Nvptx)
        } else {
            None
        }
    }

    /// The target of the module `f` is in.
    pub fn of_function(f: FunctionValue<'_>) -> Option<Target> {
        Target::of_triple(&llvm::triple(f))
    }

    /// The target of `module`.
    pub fn of_module(module: &Module<'_>) -> Option<Target> {
        Target::of_triple(&module.get_triple().as_str().to_string_lossy())
    }

    /// Which target's entry point `f` is, from its calling convention (an
    /// AMDGPU kernel, the only functions its occupancy attributes apply
    /// to; an NVPTX one, the only functions `nvvm.*` launch attributes
    /// apply to); None: not a kernel.
    ///
    /// NVPTX kernels carry the `ptx_kernel` calling convention in LLVM 22. IR
    /// written for older LLVM marks them in `!nvvm.annotations` instead
    /// (`!{ptr @k, !"kernel", i32 1}`); LLVM 22 rewrites that to `ptx_kernel`
    /// (and `maxntid*` to `"nvvm.maxntid"`) when it reads the module, LLVM 19
    /// keeps it and reads both (tests/lit/nvptx/annotations.ll).
    pub fn of_kernel(f: FunctionValue<'_>) -> Option<Target> {
        if f.get_call_conventions() == AMDGPU_KERNEL_CC {
            return Some(Target::Amdgpu);
        }
        #[cfg(feature = "llvm19")]
        if let Some(kernel) = crate::ffi::nvvm::annotation(f, "kernel") {
            return (kernel == 1).then_some(Target::Nvptx);
        }
        (f.get_call_conventions() == PTX_KERNEL_CC).then_some(Target::Nvptx)
    }
}

/// A GPU entry point: an AMDGPU kernel, or an NVPTX one.
pub fn is_kernel(f: FunctionValue<'_>) -> bool {
    Target::of_kernel(f).is_some()
}

/// The defined kernels of the module, in module order.
pub fn kernels<'ctx>(module: &Module<'ctx>) -> Vec<FunctionValue<'ctx>> {
    defined_functions(module).into_iter().filter(|f| is_kernel(*f)).collect()
}

/// A function's symbol, as the decisions db spells it.
pub fn symbol(f: FunctionValue<'_>) -> String {
    f.get_name().to_string_lossy().into_owned()
}

/// A string function attribute (`"target-cpu"="gfx90a"`).
pub fn string_attribute(f: FunctionValue<'_>, key: &str) -> Option<String> {
    let a = f.get_string_attribute(AttributeLoc::Function, key)?;
    Some(a.get_string_value().to_string_lossy().into_owned())
}

/// Whether the module is device code (its triple names a GPU target).
pub fn is_device_module(module: &Module<'_>) -> bool {
    Target::of_module(module).is_some()
}

/// Every instruction of a function, collected first so callers may rewrite
/// while they walk.
pub fn instructions<'ctx>(f: FunctionValue<'ctx>) -> Vec<InstructionValue<'ctx>> {
    f.get_basic_block_iter().flat_map(|bb| bb.get_instructions()).collect()
}

/// The functions `f` calls directly.
pub fn direct_callees<'ctx>(f: FunctionValue<'ctx>) -> Vec<FunctionValue<'ctx>> {
    let mut out = Vec::new();
    for inst in instructions(f) {
        if let Some(callee) = direct_callee(inst) {
            if !out.contains(&callee) {
                out.push(callee);
            }
        }
    }
    out
}

/// A kernel and the defined functions it reaches through direct calls, the
/// kernel first.
pub fn reachable<'ctx>(kernel: FunctionValue<'ctx>) -> Vec<FunctionValue<'ctx>> {
    let mut seen = HashSet::from([kernel]);
    let mut order = vec![kernel];
    let mut next = 0;
    while next < order.len() {
        let f = order[next];
        next += 1;
        for callee in direct_callees(f) {
            if callee.count_basic_blocks() > 0 && seen.insert(callee) {
                order.push(callee);
            }
        }
    }
    order
}

/// For every function some kernel reaches, the kernels that reach it (by
/// index into `kernels`).
pub fn reaching_kernels<'ctx>(kernels: &[FunctionValue<'ctx>]) -> HashMap<FunctionValue<'ctx>, BTreeSet<usize>> {
    let mut out: HashMap<FunctionValue<'ctx>, BTreeSet<usize>> = HashMap::new();
    for (i, k) in kernels.iter().enumerate() {
        for f in reachable(*k) {
            out.entry(f).or_default().insert(i);
        }
    }
    out
}

/// A function's definition is the one that runs: no other module can
/// replace it at link time (weak and linkonce without `_odr` can).
pub fn definition_is_exact(f: FunctionValue<'_>) -> bool {
    f.count_basic_blocks() > 0
        && !matches!(f.get_linkage(), Linkage::WeakAny | Linkage::LinkOnceAny | Linkage::ExternalWeak | Linkage::Common)
}

/// May be deleted once nothing refers to it: a declaration, or a definition
/// no other module can refer to or that every user carries a copy of.
pub fn discardable_if_unused(f: FunctionValue<'_>) -> bool {
    if f.as_global_value().get_comdat().is_some() {
        return false;
    }
    f.count_basic_blocks() == 0
        || matches!(
            f.get_linkage(),
            Linkage::Internal | Linkage::Private | Linkage::LinkOnceODR | Linkage::LinkOnceAny | Linkage::AvailableExternally
        )
}
