//! A function's CFG as the passes see it: its blocks, their edges, and the
//! dominators and natural loops [`regtune_cfg`] computes over them (shared
//! with `regtune explain`), so no pass needs an analysis from the pass
//! manager. `regtune-sink` and `regtune-lds-spill` use it.

use std::collections::HashMap;

use inkwell::basic_block::BasicBlock;
use inkwell::values::{FunctionValue, InstructionOpcode};
use regtune_cfg::{natural_loops, predecessors, reverse_post_order, Dominators};

use crate::ffi::ir::successors;

/// Functions larger than this are left alone: the analysis is quadratic in
/// the worst case, and the tuner would not wait for it.
const MAX_INSTRUCTIONS: usize = 50_000;
const MAX_BLOCKS: usize = 5_000;

pub(crate) struct Cfg<'ctx> {
    pub(crate) blocks: Vec<BasicBlock<'ctx>>,
    pub(crate) index: HashMap<BasicBlock<'ctx>, usize>,
    pub(crate) succs: Vec<Vec<usize>>,
    pub(crate) preds: Vec<Vec<usize>>,
    /// Reachable blocks in reverse post-order; the entry first.
    pub(crate) rpo: Vec<usize>,
    dom: Dominators,
    /// The body of each natural loop (one per header), as a block mask.
    loops: Vec<Vec<bool>>,
    /// False when some cycle has no single header (irreducible control
    /// flow): natural loops do not describe it, so nothing leaves its block.
    pub(crate) reducible: bool,
}

impl<'ctx> Cfg<'ctx> {
    /// None for functions the passes do not handle (EH, callbr) or that are
    /// too large.
    pub(crate) fn new(f: FunctionValue<'ctx>) -> Option<Self> {
        let blocks: Vec<BasicBlock<'ctx>> = f.get_basic_block_iter().collect();
        if blocks.len() > MAX_BLOCKS {
            return None;
        }
        let mut count = 0;
        for bb in &blocks {
            for inst in bb.get_instructions() {
                count += 1;
                if is_exceptional(inst.get_opcode()) {
                    return None;
                }
            }
            // A block without a terminator is not valid IR; leave it be.
            bb.get_terminator()?;
        }
        if count > MAX_INSTRUCTIONS {
            return None;
        }
        let index: HashMap<_, _> = blocks.iter().enumerate().map(|(i, b)| (*b, i)).collect();
        let mut succs = vec![Vec::new(); blocks.len()];
        for (i, bb) in blocks.iter().enumerate() {
            for s in successors(bb.get_terminator()?) {
                let j = *index.get(&s)?;
                if !succs[i].contains(&j) {
                    succs[i].push(j);
                }
            }
        }
        let preds = predecessors(&succs);
        let rpo = reverse_post_order(&succs);
        let dom = Dominators::new(&preds, &rpo);
        let (loops, reducible) = natural_loops(&succs, &preds, &rpo, &dom);
        let loops = loops.into_iter().map(|l| l.body).collect();
        Some(Cfg { blocks, index, succs, preds, rpo, dom, loops, reducible })
    }

    /// Immediate dominator of `b` (the entry's is itself); None when
    /// unreachable.
    pub(crate) fn idom(&self, b: usize) -> Option<usize> {
        self.dom.idom(b)
    }

    pub(crate) fn reachable(&self, b: usize) -> bool {
        self.dom.reachable(b)
    }

    pub(crate) fn dominates(&self, a: usize, b: usize) -> bool {
        self.dom.dominates(a, b)
    }

    /// The nearest common dominator of two reachable blocks.
    pub(crate) fn nearest_common_dominator(&self, a: usize, b: usize) -> usize {
        self.dom.nearest_common_dominator(a, b)
    }

    /// How many natural loops contain block `b` (0: none).
    pub(crate) fn loop_depth(&self, b: usize) -> usize {
        self.loops.iter().filter(|body| body[b]).count()
    }

    /// Every loop that contains `to` also contains `from`: moving from
    /// `from` to `to` does not move into a loop.
    pub(crate) fn loop_ok(&self, from: usize, to: usize) -> bool {
        self.loops.iter().all(|body| !body[to] || body[from])
    }

    /// Blocks reachable from the end of `from` (through its successors)
    /// without entering `stop`.
    pub(crate) fn reach_from_end(&self, from: usize, stop: Option<usize>) -> Vec<bool> {
        let mut seen = vec![false; self.blocks.len()];
        let mut work: Vec<usize> = self.succs[from].clone();
        while let Some(b) = work.pop() {
            if seen[b] || Some(b) == stop {
                continue;
            }
            seen[b] = true;
            work.extend(self.succs[b].iter().copied());
        }
        seen
    }

    /// The blocks a path from inside `from` to inside `to` may pass through
    /// on its way (entered and left whole): reachable from `from`'s end
    /// without entering `to`, and able to reach `to`'s start. `from` itself
    /// is among them when such a path can come back to it (a cycle).
    pub(crate) fn between(&self, from: usize, to: usize) -> Vec<usize> {
        let fwd = self.reach_from_end(from, Some(to));
        let mut bwd = vec![false; self.blocks.len()];
        let mut work: Vec<usize> = self.preds[to].clone();
        while let Some(b) = work.pop() {
            if bwd[b] || b == to {
                continue;
            }
            bwd[b] = true;
            work.extend(self.preds[b].iter().copied());
        }
        (0..self.blocks.len()).filter(|&b| fwd[b] && bwd[b] && b != to).collect()
    }
}

/// EH and `callbr` control flow: this pass does not reason about it.
fn is_exceptional(op: InstructionOpcode) -> bool {
    matches!(
        op,
        InstructionOpcode::Invoke
            | InstructionOpcode::CallBr
            | InstructionOpcode::LandingPad
            | InstructionOpcode::CatchPad
            | InstructionOpcode::CleanupPad
            | InstructionOpcode::CatchSwitch
            | InstructionOpcode::CatchRet
            | InstructionOpcode::CleanupRet
            | InstructionOpcode::Resume
    )
}
