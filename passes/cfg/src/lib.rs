//! Control-flow graph algorithms over block indices, shared by regtune's
//! passes (`regtune-sink`, `regtune-lds-spill`, `regtune-unroll-cap`) and
//! `regtune explain`, which reads IR as text. A graph is its successor
//! lists, `succs[b]`; block 0 is the entry.
//!
//! Dominators are Cooper, Harvey and Kennedy's "A Simple, Fast Dominance
//! Algorithm"; a natural loop is the blocks that reach a back edge's
//! source without passing its header (the edge's target, which dominates
//! the source).

/// Reachable blocks in reverse post-order, the entry first.
pub fn reverse_post_order(succs: &[Vec<usize>]) -> Vec<usize> {
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

/// Each block's predecessors, each once, in block order.
pub fn predecessors(succs: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let mut preds = vec![Vec::new(); succs.len()];
    for (b, ss) in succs.iter().enumerate() {
        for &s in ss {
            if !preds[s].contains(&b) {
                preds[s].push(b);
            }
        }
    }
    preds
}

/// The dominator tree of the blocks the entry reaches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dominators {
    /// Immediate dominator of each block (the entry's is itself); None for
    /// blocks the entry does not reach.
    idom: Vec<Option<usize>>,
    /// Depth in the dominator tree (the entry's is 0).
    depth: Vec<usize>,
}

impl Dominators {
    /// `rpo` is [`reverse_post_order`] of the graph, `preds` its
    /// [`predecessors`].
    pub fn new(preds: &[Vec<usize>], rpo: &[usize]) -> Dominators {
        let n = preds.len();
        let mut idom = vec![None; n];
        let mut depth = vec![0; n];
        let Some(&entry) = rpo.first() else {
            return Dominators { idom, depth };
        };
        let mut order = vec![usize::MAX; n];
        for (k, &b) in rpo.iter().enumerate() {
            order[b] = k;
        }
        idom[entry] = Some(entry);
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
            for &b in rpo.iter().skip(1) {
                let mut new = None;
                for &p in &preds[b] {
                    if idom[p].is_none() {
                        continue;
                    }
                    new = Some(match new {
                        None => p,
                        Some(x) => intersect(&idom, p, x),
                    });
                }
                if new.is_some() && idom[b] != new {
                    idom[b] = new;
                    changed = true;
                }
            }
        }
        for &b in rpo.iter().skip(1) {
            if let Some(d) = idom[b] {
                depth[b] = depth[d] + 1;
            }
        }
        Dominators { idom, depth }
    }

    /// The graph's dominators, from its successor lists alone.
    pub fn of(succs: &[Vec<usize>]) -> Dominators {
        Dominators::new(&predecessors(succs), &reverse_post_order(succs))
    }

    /// The entry reaches `b`.
    pub fn reachable(&self, b: usize) -> bool {
        self.idom[b].is_some()
    }

    /// `b`'s immediate dominator (the entry's is itself).
    pub fn idom(&self, b: usize) -> Option<usize> {
        self.idom[b]
    }

    /// Every path from the entry to `b` passes `a` (both reachable).
    pub fn dominates(&self, a: usize, mut b: usize) -> bool {
        if !self.reachable(a) || !self.reachable(b) {
            return false;
        }
        while self.depth[b] > self.depth[a] {
            b = self.idom[b].unwrap_or(b);
        }
        a == b
    }

    /// The nearest common dominator of two reachable blocks.
    pub fn nearest_common_dominator(&self, mut a: usize, mut b: usize) -> usize {
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
}

/// A natural loop: its header and its body (the header among them), as a
/// mask over the blocks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loop {
    pub header: usize,
    pub body: Vec<bool>,
    /// The sources of its back edges, in reverse post-order.
    pub latches: Vec<usize>,
}

/// The natural loops of a graph, one per header (back edges to one header
/// merged), in the reverse post-order of their first back edge's source;
/// and whether the graph is reducible (every retreating edge a back edge:
/// otherwise some cycle has no single header, and natural loops do not
/// describe it).
pub fn natural_loops(succs: &[Vec<usize>], preds: &[Vec<usize>], rpo: &[usize], dom: &Dominators) -> (Vec<Loop>, bool) {
    let n = succs.len();
    let mut order = vec![usize::MAX; n];
    for (k, &b) in rpo.iter().enumerate() {
        order[b] = k;
    }
    let mut reducible = true;
    let mut loops: Vec<Loop> = Vec::new();
    for &u in rpo {
        for &h in &succs[u] {
            if order[h] > order[u] {
                continue;
            }
            if !dom.dominates(h, u) {
                reducible = false;
                continue;
            }
            let at = match loops.iter().position(|l| l.header == h) {
                Some(k) => k,
                None => {
                    let mut body = vec![false; n];
                    body[h] = true;
                    loops.push(Loop { header: h, body, latches: Vec::new() });
                    loops.len() - 1
                }
            };
            let lp = &mut loops[at];
            if !lp.latches.contains(&u) {
                lp.latches.push(u);
            }
            let mut work = vec![u];
            while let Some(b) = work.pop() {
                if lp.body[b] || !dom.reachable(b) {
                    continue;
                }
                lp.body[b] = true;
                work.extend(preds[b].iter().copied());
            }
        }
    }
    (loops, reducible)
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

    #[test]
    fn dominators_of_a_loop_with_an_exit() {
        // 0 -> 1 -> {2, 3}, 2 -> 1; 4 unreachable.
        let succs = vec![vec![1], vec![2, 3], vec![1], vec![], vec![1]];
        let dom = Dominators::of(&succs);
        let idom: Vec<_> = (0..5).map(|b| dom.idom(b)).collect();
        assert_eq!(idom, vec![Some(0), Some(0), Some(1), Some(1), None]);
        assert!(dom.dominates(1, 2));
        assert!(!dom.dominates(2, 1));
        assert!(!dom.dominates(1, 4));
        assert_eq!(dom.nearest_common_dominator(2, 3), 1);
    }

    #[test]
    fn a_loop_body_leaves_out_unreachable_blocks() {
        // 0 -> 1 -> 2 -> {1, 3}; 4 (unreachable) -> 2.
        let succs = vec![vec![1], vec![2], vec![1, 3], vec![], vec![2]];
        let preds = predecessors(&succs);
        let rpo = reverse_post_order(&succs);
        let dom = Dominators::new(&preds, &rpo);
        let (loops, reducible) = natural_loops(&succs, &preds, &rpo, &dom);
        assert!(reducible);
        assert_eq!(loops, vec![Loop { header: 1, body: vec![false, true, true, false, false], latches: vec![2] }]);
    }

    #[test]
    fn a_cycle_with_two_entries_is_irreducible() {
        // 0 -> {1, 2}, 1 <-> 2.
        let succs = vec![vec![1, 2], vec![2], vec![1]];
        let preds = predecessors(&succs);
        let rpo = reverse_post_order(&succs);
        let dom = Dominators::new(&preds, &rpo);
        let (loops, reducible) = natural_loops(&succs, &preds, &rpo, &dom);
        assert!(!reducible);
        assert!(loops.is_empty());
    }
}
