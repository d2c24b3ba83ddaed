//! Natural loops of an IR function, over [`regtune_cfg`] (the dominators
//! and loops the passes compute): back edges `t -> h` where `h` dominates
//! `t`, and each loop's body (what reaches `t` without passing `h`).

use std::collections::{BTreeSet, HashMap};

use regtune_cfg::{natural_loops, predecessors, reverse_post_order, Dominators};

use crate::ir::{Function, Module};

pub(crate) struct Cfg {
    pub succs: Vec<Vec<usize>>,
    preds: Vec<Vec<usize>>,
    rpo: Vec<usize>,
    dom: Dominators,
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
        let preds = predecessors(&succs);
        let rpo = reverse_post_order(&succs);
        let dom = Dominators::new(&preds, &rpo);
        Cfg { succs, preds, rpo, dom }
    }

    /// `a` dominates `b` (every path from the entry to `b` passes `a`).
    pub(crate) fn dominates(&self, a: usize, b: usize) -> bool {
        self.dom.dominates(a, b)
    }

    /// Natural loops, one per header (back edges to one header merged), in
    /// block order.
    pub(crate) fn loops(&self, f: &Function, m: &Module) -> Vec<Loop> {
        let (loops, _) = natural_loops(&self.succs, &self.preds, &self.rpo, &self.dom);
        let mut out: Vec<Loop> = loops
            .into_iter()
            .map(|l| {
                let h = l.header;
                let body: BTreeSet<usize> = l.body.iter().enumerate().filter(|(_, &inside)| inside).map(|(b, _)| b).collect();
                // The node sits on the branch of a back edge to this header.
                let lines = body
                    .iter()
                    .filter(|&&b| self.succs[b].contains(&h))
                    .filter_map(|&b| f.blocks[b].insts.last().and_then(|i| i.loop_md))
                    .find_map(|md| m.loop_lines(md));
                Loop { header: h, body, lines }
            })
            .collect();
        out.sort_by_key(|l| l.header);
        out
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
