//! `regtune-sink`'s view of the CFG: blocks, dominators (Cooper, Harvey and
//! Kennedy) and natural loops, computed here so the pass needs no analysis
//! from the pass manager. See [`super`] for the pass; `regtune-lds-spill`
//! ([`crate::lds_spill`]) shares it.
//!
//!   opt-22 -load-pass-plugin=target/debug/libregtune_passes.so \
//!     -passes=regtune-sink in.ll -S -o out.ll

use std::collections::HashMap;

use inkwell::basic_block::BasicBlock;
use inkwell::values::{FunctionValue, InstructionOpcode};

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
    /// Immediate dominators (the entry is its own); None when unreachable.
    pub(crate) idom: Vec<Option<usize>>,
    /// Depth in the dominator tree.
    depth: Vec<usize>,
    /// The body of each natural loop (one per header), as a block mask.
    loops: Vec<Vec<bool>>,
    /// False when some cycle has no single header (irreducible control
    /// flow): natural loops do not describe it, so nothing leaves its block.
    pub(crate) reducible: bool,
}

impl<'ctx> Cfg<'ctx> {
    /// None for functions this pass does not handle (EH, callbr) or that are
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
        let n = blocks.len();
        let mut succs = vec![Vec::new(); n];
        let mut preds = vec![Vec::new(); n];
        for (i, bb) in blocks.iter().enumerate() {
            for s in successors(bb.get_terminator()?) {
                let j = *index.get(&s)?;
                if !succs[i].contains(&j) {
                    succs[i].push(j);
                    preds[j].push(i);
                }
            }
        }
        let rpo = reverse_post_order(&succs);
        let mut cfg = Cfg { blocks, index, succs, preds, rpo, idom: vec![None; n], depth: vec![0; n], loops: Vec::new(), reducible: true };
        cfg.compute_dominators();
        cfg.compute_loops();
        Some(cfg)
    }

    /// Cooper, Harvey and Kennedy, "A Simple, Fast Dominance Algorithm".
    fn compute_dominators(&mut self) {
        let n = self.blocks.len();
        let mut order = vec![usize::MAX; n];
        for (k, &b) in self.rpo.iter().enumerate() {
            order[b] = k;
        }
        let Some(&entry) = self.rpo.first() else {
            return;
        };
        self.idom[entry] = Some(entry);
        let intersect = |idom: &[Option<usize>], mut a: usize, mut b: usize| {
            while a != b {
                while order[a] > order[b] {
                    a = idom[a].unwrap_or(entry);
                }
                while order[b] > order[a] {
                    b = idom[b].unwrap_or(entry);
                }
            }
            a
        };
        let mut changed = true;
        while changed {
            changed = false;
            for &b in self.rpo.iter().skip(1) {
                let mut new = None;
                for &p in &self.preds[b] {
                    if self.idom[p].is_none() {
                        continue;
                    }
                    new = Some(match new {
                        None => p,
                        Some(x) => intersect(&self.idom, p, x),
                    });
                }
                if new.is_some() && self.idom[b] != new {
                    self.idom[b] = new;
                    changed = true;
                }
            }
        }
        for &b in self.rpo.iter().skip(1) {
            if let Some(d) = self.idom[b] {
                self.depth[b] = self.depth[d] + 1;
            }
        }
    }

    /// Natural loops from back edges (an edge to a block that dominates its
    /// source); any other retreating edge makes the CFG irreducible.
    fn compute_loops(&mut self) {
        let n = self.blocks.len();
        let mut order = vec![usize::MAX; n];
        for (k, &b) in self.rpo.iter().enumerate() {
            order[b] = k;
        }
        let mut bodies: Vec<(usize, Vec<bool>)> = Vec::new();
        for &u in &self.rpo {
            for &h in &self.succs[u] {
                if order[h] > order[u] {
                    continue;
                }
                if !self.dominates(h, u) {
                    self.reducible = false;
                    continue;
                }
                let at = match bodies.iter().position(|(header, _)| *header == h) {
                    Some(k) => k,
                    None => {
                        let mut body = vec![false; n];
                        body[h] = true;
                        bodies.push((h, body));
                        bodies.len() - 1
                    }
                };
                let body = &mut bodies[at].1;
                let mut work = vec![u];
                while let Some(b) = work.pop() {
                    if body[b] || !self.reachable(b) {
                        continue;
                    }
                    body[b] = true;
                    work.extend(self.preds[b].iter().copied());
                }
            }
        }
        self.loops = bodies.into_iter().map(|(_, body)| body).collect();
    }

    pub(crate) fn reachable(&self, b: usize) -> bool {
        self.idom[b].is_some()
    }

    pub(crate) fn dominates(&self, a: usize, mut b: usize) -> bool {
        if !self.reachable(a) || !self.reachable(b) {
            return false;
        }
        while self.depth[b] > self.depth[a] {
            b = self.idom[b].unwrap_or(b);
        }
        a == b
    }

    /// The nearest common dominator of two reachable blocks.
    pub(crate) fn nearest_common_dominator(&self, mut a: usize, mut b: usize) -> usize {
        while a != b {
            let (Some(ia), Some(ib)) = (self.idom[a], self.idom[b]) else {
                break;
            };
            if self.depth[a] >= self.depth[b] {
                a = ia;
            } else {
                b = ib;
            }
        }
        a
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

fn reverse_post_order(succs: &[Vec<usize>]) -> Vec<usize> {
    if succs.is_empty() {
        return Vec::new();
    }
    let mut post = Vec::with_capacity(succs.len());
    let mut seen = vec![false; succs.len()];
    // Iterative DFS: (block, next successor to visit).
    let mut stack = vec![(0usize, 0usize)];
    seen[0] = true;
    while let Some(&mut (b, ref mut next)) = stack.last_mut() {
        if let Some(&s) = succs[b].get(*next) {
            *next += 1;
            if !seen[s] {
                seen[s] = true;
                stack.push((s, 0));
            }
        } else {
            post.push(b);
            stack.pop();
        }
    }
    post.reverse();
    post
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rpo_puts_dominators_first() {
        // 0 -> 1 -> {2, 3} -> 4, 4 -> 1 (a loop), 5 unreachable.
        let succs = vec![vec![1], vec![2, 3], vec![4], vec![4], vec![1], vec![4]];
        let rpo = reverse_post_order(&succs);
        assert_eq!(rpo.first(), Some(&0));
        assert_eq!(rpo.len(), 5);
        let at = |b| rpo.iter().position(|&x| x == b).unwrap_or(usize::MAX);
        assert!(at(0) < at(1) && at(1) < at(2) && at(1) < at(3) && at(2) < at(4) && at(3) < at(4));
    }
}
