//! Instructions whose result is a function of their operands alone (no
//! memory, no side effect, nothing about the lane or the thread), in the
//! groups the passes choose from:
//! - `regtune-sink` moves any of them ([`computes_from_operands`]);
//! - `regtune-lds-spill` counts as scalar the integer and pointer ones the
//!   scalar unit computes (no division, nothing in floating point);
//! - `regtune-noalias-rank` keys addresses by the integer and pointer
//!   arithmetic that forms them.

use inkwell::values::InstructionOpcode as Op;

/// Integer add, subtract, multiply, shifts and bitwise operations.
pub(crate) fn is_integer_arithmetic(op: Op) -> bool {
    matches!(op, Op::Add | Op::Sub | Op::Mul | Op::Shl | Op::LShr | Op::AShr | Op::And | Op::Or | Op::Xor)
}

/// Integer division and remainder.
pub(crate) fn is_integer_division(op: Op) -> bool {
    matches!(op, Op::UDiv | Op::SDiv | Op::URem | Op::SRem)
}

/// Casts among integers and pointers (`bitcast` included).
pub(crate) fn is_integer_or_pointer_cast(op: Op) -> bool {
    matches!(op, Op::Trunc | Op::ZExt | Op::SExt | Op::PtrToInt | Op::IntToPtr | Op::BitCast | Op::AddrSpaceCast)
}

/// Floating-point arithmetic and casts to, from and among floating-point
/// types.
fn is_floating_point(op: Op) -> bool {
    matches!(
        op,
        Op::FNeg
            | Op::FAdd
            | Op::FSub
            | Op::FMul
            | Op::FDiv
            | Op::FRem
            | Op::FPTrunc
            | Op::FPExt
            | Op::FPToUI
            | Op::FPToSI
            | Op::UIToFP
            | Op::SIToFP
            | Op::FCmp
    )
}

/// Every operation that computes a value from its operands and nothing else.
pub(crate) fn computes_from_operands(op: Op) -> bool {
    // `ptrtoaddr` is new in LLVM 22.
    #[cfg(feature = "llvm22")]
    if op == Op::PtrToAddr {
        return true;
    }
    is_integer_arithmetic(op)
        || is_integer_division(op)
        || is_integer_or_pointer_cast(op)
        || is_floating_point(op)
        || matches!(
            op,
            Op::ICmp
                | Op::Select
                | Op::GetElementPtr
                | Op::ExtractElement
                | Op::InsertElement
                | Op::ShuffleVector
                | Op::ExtractValue
                | Op::InsertValue
                | Op::Freeze
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_groups_are_within_the_whole() {
        let ops = [Op::Add, Op::UDiv, Op::ZExt, Op::FAdd, Op::FCmp, Op::ICmp, Op::GetElementPtr, Op::Freeze];
        for op in ops {
            assert!(computes_from_operands(op), "{op:?}");
        }
        for op in [Op::Load, Op::Store, Op::Call, Op::Phi, Op::Alloca, Op::AtomicRMW, Op::Fence] {
            assert!(!computes_from_operands(op), "{op:?}");
        }
        assert!(!is_integer_arithmetic(Op::UDiv) && is_integer_division(Op::UDiv));
    }
}
