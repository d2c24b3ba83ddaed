//! LLVM-C calls that an LLVM the plugin builds for lacks, rebuilt from calls
//! it has, so the passes read the same under LLVM 19 and LLVM 22.

#[cfg(not(feature = "llvm19"))]
pub use llvm_sys::core::LLVMIsAtomic;

#[cfg(feature = "llvm19")]
pub use llvm19::LLVMIsAtomic;

#[cfg(feature = "llvm19")]
mod llvm19 {
    use llvm_sys::core as c;
    use llvm_sys::prelude::{LLVMBool, LLVMValueRef};
    use llvm_sys::{LLVMAtomicOrdering, LLVMOpcode};

    /// `LLVMIsAtomic` (LLVM-C since LLVM 20), as `Instruction::isAtomic()`
    /// defines it: cmpxchg, atomicrmw and fence always, loads and stores
    /// with an ordering.
    ///
    /// # Safety
    /// `inst` must be a live instruction.
    #[allow(non_snake_case)]
    pub unsafe fn LLVMIsAtomic(inst: LLVMValueRef) -> LLVMBool {
        // SAFETY: inst is a live instruction, as the caller guarantees.
        let atomic = match unsafe { c::LLVMGetInstructionOpcode(inst) } {
            LLVMOpcode::LLVMAtomicCmpXchg | LLVMOpcode::LLVMAtomicRMW | LLVMOpcode::LLVMFence => true,
            // SAFETY: a load or store, whose ordering LLVM-C reads.
            LLVMOpcode::LLVMLoad | LLVMOpcode::LLVMStore => unsafe {
                c::LLVMGetOrdering(inst) != LLVMAtomicOrdering::LLVMAtomicOrderingNotAtomic
            },
            _ => false,
        };
        atomic.into()
    }
}
