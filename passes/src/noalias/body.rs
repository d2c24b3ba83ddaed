//! A function body as `regtune-noalias-rank` reads it: its blocks in an
//! order where each comes after what may run before it (loops kept
//! together), its natural loops, and the stack slots clang spills
//! parameters to (see [`super`]).
//!
//!   opt-22 -load-pass-plugin=target/debug/libregtune_passes.so \
//!     -passes=regtune-noalias-rank -disable-output pre-O3.bc

use std::collections::{BTreeMap, HashMap, HashSet};

use inkwell::basic_block::BasicBlock;
use inkwell::values::{BasicValue, BasicValueEnum, FunctionValue, InstructionOpcode, InstructionValue};

use crate::ffi::ir::{self as llvm};

/// A function body: its blocks in execution order (see `ordered_blocks`), with its loops.
pub(super) struct Body<'ctx> {
    /// Every instruction, and the index of its block.
    pub(super) insts: Vec<(InstructionValue<'ctx>, usize)>,
    /// For each block, the (function-local) loops it is in.
    pub(super) block_loops: Vec<Vec<u32>>,
    pub(super) loop_count: u32,
    pub(super) args: HashMap<BasicValueEnum<'ctx>, usize>,
    /// The values stored into each stack slot, and whether the store
    /// addresses the slot itself (not an element of it).
    pub(super) slot_stores: HashMap<InstructionValue<'ctx>, Vec<(BasicValueEnum<'ctx>, bool)>>,
}

impl<'ctx> Body<'ctx> {
    pub(super) fn of(f: FunctionValue<'ctx>) -> Body<'ctx> {
        let (blocks, block_loops, loop_count) = ordered_blocks(f);
        let mut insts = Vec::new();
        let mut slot_stores: HashMap<InstructionValue<'ctx>, Vec<(BasicValueEnum<'ctx>, bool)>> = HashMap::new();
        for (i, b) in blocks.iter().enumerate() {
            for inst in b.get_instructions() {
                insts.push((inst, i));
                if inst.get_opcode() == InstructionOpcode::Store {
                    if let (Some(v), Some((slot, direct))) = (llvm::value_operand(inst, 0), llvm::value_operand(inst, 1).and_then(slot_of))
                    {
                        slot_stores.entry(slot).or_default().push((v, direct));
                    }
                }
            }
        }
        let args = f.get_params().into_iter().enumerate().map(|(i, p)| (p, i)).collect();
        Body { insts, block_loops, loop_count, args, slot_stores }
    }
}

fn successors(b: BasicBlock<'_>) -> Vec<BasicBlock<'_>> {
    b.get_terminator().map(llvm::successors).unwrap_or_default()
}

/// The reachable blocks of `f` in an order where each block comes after
/// every block that may run before it, except around loops, whose blocks
/// are kept together (the loop before what follows it), and the loops each
/// block is in.
fn ordered_blocks(f: FunctionValue<'_>) -> (Vec<BasicBlock<'_>>, Vec<Vec<u32>>, u32) {
    let first = reverse_post_order(f, |_, succs| succs);
    let index: HashMap<BasicBlock<'_>, usize> = first.iter().enumerate().map(|(i, b)| (*b, i)).collect();
    let succs: Vec<Vec<usize>> = first.iter().map(|b| successors(*b).iter().filter_map(|s| index.get(s).copied()).collect()).collect();
    let (members, count) = loops(&succs);
    let shared = |a: BasicBlock<'_>, b: BasicBlock<'_>| match (index.get(&a), index.get(&b)) {
        (Some(&a), Some(&b)) => members[a].iter().filter(|l| members[b].contains(l)).count(),
        _ => 0,
    };
    // Depth first into the loop exits before the loop body: the exits then
    // finish first, and come last in the reverse post-order.
    let order = reverse_post_order(f, |from, mut succs| {
        succs.sort_by_key(|s| shared(from, *s));
        succs
    });
    let loops_of = order.iter().map(|b| index.get(b).map(|&i| members[i].clone()).unwrap_or_default()).collect();
    (order, loops_of, count)
}

/// Reverse post-order of a depth-first walk that takes each block's
/// successors in the order `arrange` gives them.
fn reverse_post_order<'ctx>(
    f: FunctionValue<'ctx>,
    arrange: impl Fn(BasicBlock<'ctx>, Vec<BasicBlock<'ctx>>) -> Vec<BasicBlock<'ctx>>,
) -> Vec<BasicBlock<'ctx>> {
    let Some(entry) = f.get_first_basic_block() else {
        return Vec::new();
    };
    let next = |b: BasicBlock<'ctx>| arrange(b, successors(b));
    let mut seen = HashSet::from([entry]);
    let mut post = Vec::new();
    let mut stack = vec![(entry, next(entry), 0usize)];
    while let Some(top) = stack.last_mut() {
        if let Some(&s) = top.1.get(top.2) {
            top.2 += 1;
            if seen.insert(s) {
                stack.push((s, next(s), 0));
            }
        } else {
            post.push(top.0);
            stack.pop();
        }
    }
    post.reverse();
    post
}

/// Natural loops from the retreating edges of a reverse post-order (the
/// back edges, in a reducible CFG): one loop per header, holding the blocks
/// that reach a latch without passing the header.
fn loops(succs: &[Vec<usize>]) -> (Vec<Vec<u32>>, u32) {
    let n = succs.len();
    let mut preds = vec![Vec::new(); n];
    for (u, ss) in succs.iter().enumerate() {
        for &s in ss {
            preds[s].push(u);
        }
    }
    let mut header_id: BTreeMap<usize, u32> = BTreeMap::new();
    let mut members: Vec<Vec<u32>> = vec![Vec::new(); n];
    for (latch, ss) in succs.iter().enumerate() {
        for &header in ss.iter().filter(|&&h| h <= latch) {
            let next = u32::try_from(header_id.len()).unwrap_or(u32::MAX);
            let id = *header_id.entry(header).or_insert(next);
            let mut body = HashSet::from([header]);
            let mut work = vec![latch];
            while let Some(b) = work.pop() {
                if body.insert(b) {
                    work.extend(preds[b].iter().copied());
                }
            }
            for b in body {
                if !members[b].contains(&id) {
                    members[b].push(id);
                }
            }
        }
    }
    for m in &mut members {
        m.sort_unstable();
    }
    (members, u32::try_from(header_id.len()).unwrap_or(u32::MAX))
}

/// The alloca a pointer addresses, through GEPs and casts, and whether it
/// addresses the slot itself (no GEP on the way).
pub(super) fn slot_of(ptr: BasicValueEnum<'_>) -> Option<(InstructionValue<'_>, bool)> {
    let mut v = ptr;
    let mut direct = true;
    for _ in 0..32 {
        let inst = v.as_instruction_value()?;
        match inst.get_opcode() {
            InstructionOpcode::Alloca => return Some((inst, direct)),
            InstructionOpcode::GetElementPtr => direct = false,
            InstructionOpcode::BitCast | InstructionOpcode::AddrSpaceCast => {}
            _ => return None,
        }
        v = llvm::value_operand(inst, 0)?;
    }
    None
}

pub(super) fn is_intrinsic(f: FunctionValue<'_>) -> bool {
    f.get_name().to_bytes().starts_with(b"llvm.")
}

pub(super) fn name_of(f: FunctionValue<'_>) -> String {
    f.get_name().to_string_lossy().into_owned()
}
