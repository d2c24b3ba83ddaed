//! Natural loops of an IR function: dominators by the iterative dataflow
//! (Cooper, Harvey, Kennedy), back edges `t -> h` where `h` dominates `t`,
//! and each loop's body (what reaches `t` without passing `h`).

use std::collections::{BTreeSet, HashMap};

use crate::ir::{Function, Module};

pub(crate) struct Cfg {
    pub succs: Vec<Vec<usize>>,
    pub preds: Vec<Vec<usize>>,
    /// Immediate dominator of each block (the entry's is itself); `None`
    /// for blocks the entry does not reach.
    idom: Vec<Option<usize>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Loop {
    pub header: usize,
    pub body: BTreeSet<usize>,
    /// First and last source line, from the loop's `!llvm.loop` node.
    pub lines: Option<(u32, u32)>,
}

impl Cfg {
    pub(crate) fn new(f: &Function) -> Cfg {
        let n = f.blocks.len();
        let index: HashMap<&str, usize> = f.blocks.iter().enumerate().map(|(i, b)| (b.name.as_str(), i)).collect();
        let succs: Vec<Vec<usize>> =
            (0..n).map(|b| f.successors(b).iter().filter_map(|s| index.get(s.as_str()).copied()).collect()).collect();
        let mut preds = vec![Vec::new(); n];
        for (b, ss) in succs.iter().enumerate() {
            for &s in ss {
                preds[s].push(b);
            }
        }
        // Reverse postorder from the entry.
        let mut order = Vec::new();
        let mut seen = vec![false; n];
        let mut stack = vec![(0usize, 0usize)];
        if n > 0 {
            seen[0] = true;
        }
        while let Some((b, i)) = stack.pop() {
            if let Some(&s) = succs[b].get(i) {
                stack.push((b, i + 1));
                if !seen[s] {
                    seen[s] = true;
                    stack.push((s, 0));
                }
            } else {
                order.push(b);
            }
        }
        order.reverse();
        let rpo: HashMap<usize, usize> = order.iter().enumerate().map(|(i, &b)| (b, i)).collect();
        let mut idom: Vec<Option<usize>> = vec![None; n];
        if n > 0 {
            idom[0] = Some(0);
        }
        let intersect = |idom: &[Option<usize>], mut a: usize, mut b: usize| {
            while a != b {
                while rpo[&a] > rpo[&b] {
                    a = idom[a].unwrap_or(0);
                }
                while rpo[&b] > rpo[&a] {
                    b = idom[b].unwrap_or(0);
                }
            }
            a
        };
        let mut changed = true;
        while changed {
            changed = false;
            for &b in order.iter().skip(1) {
                let mut new = None;
                for &p in &preds[b] {
                    if idom[p].is_some() {
                        new = Some(match new {
                            None => p,
                            Some(q) => intersect(&idom, p, q),
                        });
                    }
                }
                if new.is_some() && idom[b] != new {
                    idom[b] = new;
                    changed = true;
                }
            }
        }
        Cfg { succs, preds, idom }
    }

    /// `a` dominates `b` (every path from the entry to `b` passes `a`).
    pub(crate) fn dominates(&self, a: usize, b: usize) -> bool {
        let mut x = b;
        loop {
            if x == a {
                return true;
            }
            match self.idom[x] {
                Some(p) if p != x => x = p,
                _ => return false,
            }
        }
    }

    /// Natural loops, one per header (back edges to one header merged).
    pub(crate) fn loops(&self, f: &Function, m: &Module) -> Vec<Loop> {
        let mut by_header: BTreeSet<usize> = BTreeSet::new();
        let mut bodies: HashMap<usize, BTreeSet<usize>> = HashMap::new();
        for (t, ss) in self.succs.iter().enumerate() {
            for &h in ss {
                if self.idom[t].is_none() || !self.dominates(h, t) {
                    continue;
                }
                by_header.insert(h);
                let body = bodies.entry(h).or_insert_with(|| BTreeSet::from([h]));
                let mut work = vec![t];
                while let Some(b) = work.pop() {
                    if body.insert(b) {
                        work.extend(self.preds[b].iter().copied());
                    }
                }
            }
        }
        by_header
            .into_iter()
            .map(|h| {
                let body = bodies.remove(&h).unwrap_or_default();
                // The node sits on the branch of a back edge to this header.
                let lines = body
                    .iter()
                    .filter(|&&b| self.succs[b].contains(&h))
                    .filter_map(|&b| f.blocks[b].insts.last().and_then(|i| i.loop_md))
                    .find_map(|md| m.loop_lines(md));
                Loop { header: h, body, lines }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir;

    const IR: &str = r#"
define void @f(i1 %c) {
entry:
  br label %outer
outer:
  br label %inner
inner:
  br i1 %c, label %inner, label %latch, !llvm.loop !5
latch:
  br i1 %c, label %outer, label %exit
exit:
  ret void
}
!5 = distinct !{!5, !6, !7}
!6 = !DILocation(line: 10, column: 3, scope: !8)
!7 = !DILocation(line: 12, column: 3, scope: !8)
!8 = distinct !DISubprogram(name: "f", unit: !0)
"#;

    #[test]
    fn nested_loops_are_found_with_their_lines() {
        let m = ir::parse(IR);
        let f = m.function("f").unwrap();
        let cfg = Cfg::new(f);
        assert!(cfg.dominates(1, 3) && cfg.dominates(2, 4) && !cfg.dominates(3, 2) && !cfg.dominates(3, 1));
        let loops = cfg.loops(f, &m);
        assert_eq!(loops.len(), 2);
        assert_eq!((loops[0].header, loops[0].body.iter().copied().collect::<Vec<_>>()), (1, vec![1, 2, 3]));
        assert_eq!((loops[1].header, loops[1].body.iter().copied().collect::<Vec<_>>()), (2, vec![2]));
        assert_eq!(loops[1].lines, Some((10, 12)));
        assert_eq!(loops[0].lines, None, "the outer latch has no node of its own; the inner one's is not borrowed");
    }
}
