//! `regtune-unroll-cap<N>`: unroll no loop more than N times, and no loop
//! more than the plain O3 pipeline would have.
//!
//! Unrolling keeps N copies of a loop body's values alive at once; on a GPU
//! every extra live value is a register in every thread, so a smaller unroll
//! can buy occupancy. A cap must never *add* unrolling: a loop O3 leaves
//! rolled stays rolled, a loop O3 unrolls K times is unrolled min(K, N)
//! times.
//!
//! How: LoopUnroll decides each loop's factor itself, and its
//! `-unroll-max-count` (partial and runtime unrolling),
//! `-unroll-full-max-count` (full unrolling) and
//! `-pragma-unroll-full-max-iterations` (`llvm.loop.unroll.full`) are maxima
//! on that decision. This pass marks every function in scope with
//! `"regtune-unroll-cap"="N"`; the shim (`shim/unroll_cap.cpp`) sets those
//! three options to N right before LoopFullUnroll and LoopUnroll run on a
//! marked function, and back for any other. So the factor is O3's own,
//! clamped. Only what those maxima do not bound is rewritten here, in the
//! loop's `!llvm.loop` ID:
//!   - `llvm.loop.unroll.count M`, M > N  -> `llvm.loop.unroll.count N`
//!     (a count is a request, not a decision: LoopUnroll takes it as is);
//!   - with N = 1, every loop not already disabled gets
//!     `llvm.loop.unroll.disable` (no unrolling and no peeling at all);
//!   - no pragma, `llvm.loop.unroll.full`, `.enable`, `.disable`, a count
//!     <= N: kept as they are (the shim caps the one case of `.enable`
//!     the options miss: a loop whose trip count is unknown but bounded).
//!
//! Every other property (`llvm.loop.mustprogress`, vectorizer hints,
//! followups) is kept, and the ID stays a distinct node whose first operand
//! is itself. After inlining, a loop follows the mark of the function it
//! ends up in.
//!
//! One choice beyond the plain clamp keeps a capped nest from growing past
//! O3's: a loop that still holds a loop when LoopUnroll reaches it is
//! unrolled fully (within N) or not at all; a partial unroll would copy the
//! inner loops whole, where O3's full unroll of the nest folds them away
//! (tests/lit/unroll-cap/nested-no-growth.ll). Not bounded: with full
//! unrolling refused, LoopUnroll may peel a few iterations of a loop O3
//! unrolled whole. And a cap bounds unrolling, not what unrolling lets
//! later passes do: where O3's full unroll turns a private array into
//! registers or folds a loop away, the capped code is bigger (on no example,
//! tests/plugin.rs; on 5 of 41 public files, e.g. 72 -> 213 IR
//! instructions at N = 1 for HPCTrainingExamples' register_usage.hip).
//!
//! Why it is legal: unroll factors are hints to LoopUnroll; no unroll
//! factor changes what a loop computes.
//!
//!   opt-22 -load-pass-plugin=target/debug/libregtune_passes.so \
//!     -passes='regtune-unroll-cap<4>,default<O3>' in.ll -S -o out.ll

use std::collections::HashMap;

use inkwell::attributes::AttributeLoc;
use inkwell::basic_block::BasicBlock;
use inkwell::module::Module;
use inkwell::values::{FunctionValue, InstructionValue};
use regtune_cfg::Dominators;

use crate::ffi::ir::{self as llvm, Md, MdOperand};
use crate::ir;

const LOOP: &str = "llvm.loop";
const COUNT: &str = "llvm.loop.unroll.count";
const FULL: &str = "llvm.loop.unroll.full";
const ENABLE: &str = "llvm.loop.unroll.enable";
const DISABLE: &str = "llvm.loop.unroll.disable";

/// The function attribute the shim reads: the cap on the loops of that
/// function, inlined ones included.
pub const CAP_ATTRIBUTE: &str = "regtune-unroll-cap";

/// Cap the unrolling of every loop of every defined function.
pub fn run(module: &Module<'_>, cap: u32) -> bool {
    run_on(&ir::defined_functions(module), cap)
}

/// Cap the unrolling of every loop in `functions`.
pub fn run_on(functions: &[FunctionValue<'_>], cap: u32) -> bool {
    let mut changed = false;
    for f in functions {
        changed |= mark(*f, cap);
        for lp in natural_loops(*f) {
            changed |= cap_loop(&lp, cap);
        }
    }
    changed
}

/// Whether a cap could change anything in `functions`: some loop that is
/// not already kept rolled.
pub fn applies(functions: &[FunctionValue<'_>]) -> bool {
    functions
        .iter()
        .flat_map(|f| natural_loops(*f))
        .any(|lp| rewritable_properties(&lp).is_none_or(|props| pragma_of(&props) != Pragma::Disable))
}

/// Mark `f` with the cap (the smaller one if it already has a cap).
fn mark(f: FunctionValue<'_>, cap: u32) -> bool {
    let current = ir::string_attribute(f, CAP_ATTRIBUTE).and_then(|v| v.parse::<u32>().ok());
    if current.is_some_and(|c| c <= cap) {
        return false;
    }
    let attribute = f.get_type().get_context().create_string_attribute(CAP_ATTRIBUTE, &cap.to_string());
    f.add_attribute(AttributeLoc::Function, attribute);
    true
}

/// What a loop's metadata asks of LoopUnroll.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pragma {
    None,
    Disable,
    Enable,
    Full,
    Count(u64),
}

/// A natural loop: its header and the terminators of its latches (the
/// branches back to the header, which carry `!llvm.loop`).
struct Loop<'ctx> {
    latches: Vec<InstructionValue<'ctx>>,
}

fn cap_loop(lp: &Loop<'_>, cap: u32) -> bool {
    let Some(props) = rewritable_properties(lp) else {
        return false;
    };
    let Some(new) = capped(pragma_of(&props), cap) else {
        return false;
    };
    let Some(ctx) = lp.latches[0].get_parent().map(|bb| bb.get_context()) else {
        return false;
    };
    // pragma(M) -> count(N), or disable for N = 1: drop the old unroll
    // properties, keep every other one, append the new one.
    let mut ops: Vec<Md<'_>> = props.iter().filter(|p| unroll_property(p).is_none()).filter_map(|p| p.md()).collect();
    ops.push(match new {
        Pragma::Count(n) => llvm::md_property(ctx, COUNT, Some(n as u32)),
        _ => llvm::md_property(ctx, DISABLE, None),
    });
    let id = llvm::loop_id(ctx, &ops);
    for latch in &lp.latches {
        llvm::set_md(*latch, LOOP, id);
    }
    true
}

/// Legality: a loop whose latches agree on one well-formed loop ID, or
/// carry none; its properties (empty without an ID). Anything else LoopUnroll
/// reads as "no ID" and ignores, and so do we.
fn rewritable_properties<'ctx>(lp: &Loop<'ctx>) -> Option<Vec<MdOperand<'ctx>>> {
    match loop_id_of(lp)? {
        Some(id) => loop_properties(id),
        None => Some(Vec::new()),
    }
}

/// The loop ID all latches share: `Some(None)` when none has one, `None`
/// when they disagree (LLVM then sees no ID; leave such loops alone).
fn loop_id_of<'ctx>(lp: &Loop<'ctx>) -> Option<Option<Md<'ctx>>> {
    let first = llvm::get_md(lp.latches[0], LOOP);
    lp.latches[1..].iter().all(|l| llvm::get_md(*l, LOOP) == first).then_some(first)
}

/// The properties of a loop ID (its operands after the self reference);
/// `None` when the node does not refer to itself first.
fn loop_properties(id: Md<'_>) -> Option<Vec<MdOperand<'_>>> {
    let mut ops = id.operands();
    if ops.is_empty() || ops[0].md() != Some(id) {
        return None;
    }
    ops.remove(0);
    Some(ops)
}

/// The unroll pragma a property spells, if it is one.
fn unroll_property(p: &MdOperand<'_>) -> Option<Pragma> {
    let MdOperand::Other(node) = p else {
        return None;
    };
    let ops = node.operands();
    let MdOperand::String(_, name) = ops.first()? else {
        return None;
    };
    match name.as_str() {
        DISABLE => Some(Pragma::Disable),
        ENABLE => Some(Pragma::Enable),
        FULL => Some(Pragma::Full),
        COUNT => match ops.get(1) {
            Some(MdOperand::Int(_, n)) if *n >= 0 => Some(Pragma::Count(*n as u64)),
            _ => None,
        },
        _ => None,
    }
}

/// The strongest request among the properties: disable wins, as in
/// LoopUnroll, then an explicit count, then full, then enable.
fn pragma_of(props: &[MdOperand<'_>]) -> Pragma {
    let found: Vec<Pragma> = props.iter().filter_map(unroll_property).collect();
    let rank = |p: &Pragma| match p {
        Pragma::Disable => 0,
        Pragma::Count(_) => 1,
        Pragma::Full => 2,
        Pragma::Enable => 3,
        Pragma::None => 4,
    };
    found.into_iter().min_by_key(rank).unwrap_or(Pragma::None)
}

/// The pragma a loop gets under a cap of N, or `None` to leave it to
/// LoopUnroll's own decision under the shim's maxima.
fn capped(pragma: Pragma, cap: u32) -> Option<Pragma> {
    match pragma {
        Pragma::Disable => None,
        Pragma::Count(m) if m <= cap.into() => None,
        _ if cap <= 1 => Some(Pragma::Disable),
        Pragma::Count(_) => Some(Pragma::Count(cap.into())),
        Pragma::Full | Pragma::Enable | Pragma::None => None,
    }
}

/// The natural loops of a function: for every back edge (an edge to a block
/// that dominates its source), the header it enters and its latches.
fn natural_loops<'ctx>(f: FunctionValue<'ctx>) -> Vec<Loop<'ctx>> {
    let blocks = f.get_basic_blocks();
    if blocks.is_empty() {
        return Vec::new();
    }
    let index: HashMap<BasicBlock<'ctx>, usize> = blocks.iter().enumerate().map(|(i, b)| (*b, i)).collect();
    let succs: Vec<Vec<usize>> = blocks
        .iter()
        .map(|b| b.get_terminator().map(|t| llvm::successors(t).iter().filter_map(|s| index.get(s).copied()).collect()).unwrap_or_default())
        .collect();
    let dom = Dominators::of(&succs);

    // header -> latches, headers in block order.
    let mut latches: Vec<Vec<usize>> = vec![Vec::new(); blocks.len()];
    for (b, ss) in succs.iter().enumerate() {
        if !dom.reachable(b) {
            continue;
        }
        for &h in ss {
            if dom.dominates(h, b) && !latches[h].contains(&b) {
                latches[h].push(b);
            }
        }
    }
    latches
        .into_iter()
        .filter(|l| !l.is_empty())
        .filter_map(|l| {
            let terms: Option<Vec<_>> = l.iter().map(|&b| blocks[b].get_terminator()).collect();
            terms.map(|latches| Loop { latches })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cap_rewrites_only_counts_above_n() {
        // LoopUnroll decides these itself; the shim bounds its decision.
        assert_eq!(capped(Pragma::None, 4), None);
        assert_eq!(capped(Pragma::Full, 4), None);
        assert_eq!(capped(Pragma::Enable, 4), None);
        assert_eq!(capped(Pragma::Count(8), 4), Some(Pragma::Count(4)));
        assert_eq!(capped(Pragma::Count(4), 4), None);
        assert_eq!(capped(Pragma::Count(2), 4), None);
        assert_eq!(capped(Pragma::Disable, 4), None);
    }

    #[test]
    fn cap_of_one_disables() {
        assert_eq!(capped(Pragma::Full, 1), Some(Pragma::Disable));
        assert_eq!(capped(Pragma::None, 1), Some(Pragma::Disable));
        assert_eq!(capped(Pragma::Count(1), 1), None);
    }
}
