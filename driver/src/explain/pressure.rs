//! Register pressure along a kernel's final machine code: for every
//! instruction, how many VGPRs, AGPRs and SGPRs hold a live value there.
//!
//! The block boundaries are the backend's own liveness (each block's
//! live-ins, as register allocation and the later passes left them); inside
//! a block the live set is stepped backwards through each instruction's
//! definitions and reads. A register the backend calls live into a block
//! that the block redefines before reading (a value kept for the lanes a
//! divergent branch did not take) stays live up to that definition.
//! Pressure at an instruction counts what is live into it plus what it
//! defines: both occupy registers while it executes.

use std::collections::{BTreeSet, HashMap};

use super::mir::{Function, Instr, Reg, RegClass, RegSet};

/// Liveness of one function, per instruction in layout order.
pub(crate) struct Liveness<'a> {
    pub function: &'a Function,
    /// (block index, instruction index in block) of each counted instruction.
    pub order: Vec<(usize, usize)>,
    /// Registers occupied at each instruction of `order`.
    pub occupied: Vec<RegSet>,
    /// The live-in set our stepping computed per block (before reconciling
    /// with the backend's), for the tests to check the two agree.
    #[cfg(test)]
    pub computed_live_ins: Vec<RegSet>,
}

/// Pressure at one instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub(crate) struct Point {
    pub vgpr: u32,
    pub agpr: u32,
    pub sgpr: u32,
}

impl Point {
    /// VGPRs the way occupancy counts them: architectural and accumulation.
    pub(crate) fn vector(&self) -> u32 {
        self.vgpr + self.agpr
    }
}

pub(crate) fn liveness(f: &Function) -> Liveness<'_> {
    let n = f.blocks.len();
    let index: HashMap<u32, usize> = f.blocks.iter().enumerate().map(|(i, b)| (b.number, i)).collect();
    // Block live-ins: the backend's, joined with what the blocks' own reads
    // require (so a dump without live-in lists still works), to a fixed point.
    let mut live_in: Vec<RegSet> = f.blocks.iter().map(|b| b.live_ins.clone()).collect();
    let mut computed = vec![RegSet::default(); n];
    loop {
        let mut changed = false;
        for b in (0..n).rev() {
            let out = live_out(f, b, &index, &live_in);
            let mut live = out;
            for ins in f.blocks[b].instrs.iter().rev() {
                step_back(&mut live, ins);
            }
            computed[b] = live.clone();
            let mut joined = live_in[b].clone();
            joined.union_with(&live);
            if joined != live_in[b] {
                live_in[b] = joined;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    let mut order = Vec::new();
    let mut occupied = Vec::new();
    for b in 0..n {
        let instrs = &f.blocks[b].instrs;
        let mut live = live_out(f, b, &index, &live_in);
        let mut at = vec![RegSet::default(); instrs.len()];
        for (i, ins) in instrs.iter().enumerate().rev() {
            step_back(&mut live, ins);
            let mut here = live.clone();
            here.extend(ins.defs.iter().copied());
            at[i] = here;
        }
        // Live into the block by the backend's word but redefined before any
        // read (the lanes a divergent branch did not write): kept until that
        // definition. One the block never defines is simply dead here.
        let defined: RegSet = instrs.iter().flat_map(|i| i.defs.iter().copied()).collect();
        let mut carried = live_in[b].minus(&live).intersect(&defined);
        for (i, ins) in instrs.iter().enumerate() {
            if carried.is_empty() {
                break;
            }
            at[i].union_with(&carried);
            for d in &ins.defs {
                carried.remove(*d);
            }
        }
        for (i, (ins, set)) in instrs.iter().zip(at).enumerate() {
            if !ins.meta {
                order.push((b, i));
                occupied.push(set);
            }
        }
    }
    Liveness {
        function: f,
        order,
        occupied,
        #[cfg(test)]
        computed_live_ins: computed,
    }
}

fn live_out(f: &Function, b: usize, index: &HashMap<u32, usize>, live_in: &[RegSet]) -> RegSet {
    let mut out = RegSet::default();
    for s in &f.blocks[b].successors {
        if let Some(&i) = index.get(s) {
            out.union_with(&live_in[i]);
        }
    }
    out
}

fn step_back(live: &mut RegSet, ins: &Instr) {
    for d in &ins.defs {
        live.remove(*d);
    }
    live.extend(ins.uses.iter().copied());
}

impl RegSet {
    fn extend(&mut self, regs: impl IntoIterator<Item = Reg>) {
        for r in regs {
            self.insert(r);
        }
    }
}

impl Liveness<'_> {
    pub(crate) fn instr(&self, k: usize) -> &Instr {
        let (b, i) = self.order[k];
        &self.function.blocks[b].instrs[i]
    }

    pub(crate) fn points(&self) -> Vec<Point> {
        self.occupied
            .iter()
            .map(|s| Point { vgpr: s.count(RegClass::Vgpr), agpr: s.count(RegClass::Agpr), sgpr: s.count(RegClass::Sgpr) })
            .collect()
    }

    /// The instructions (indices into `order`) that define `reg` and reach
    /// instruction `k` without another definition in between; the
    /// instruction itself when it defines `reg`.
    pub(crate) fn reaching_defs(&self, reg: Reg, k: usize) -> Vec<usize> {
        let f = self.function;
        let (b0, i0) = self.order[k];
        // Positions in `order` of every instruction, meta ones excluded.
        let position: HashMap<(usize, usize), usize> = self.order.iter().enumerate().map(|(p, &bi)| (bi, p)).collect();
        let defines = |b: usize, i: usize| f.blocks[b].instrs[i].defs.contains(&reg);
        if defines(b0, i0) {
            return vec![k];
        }
        if let Some(i) = (0..i0).rev().find(|&i| defines(b0, i)) {
            return position.get(&(b0, i)).copied().into_iter().collect();
        }
        let preds = predecessors(f);
        let mut found = BTreeSet::new();
        // The starting block may be reached again around a loop: then all of it counts.
        let mut seen = BTreeSet::new();
        let mut work: Vec<usize> = preds[b0].clone();
        while let Some(b) = work.pop() {
            if !seen.insert(b) {
                continue;
            }
            match (0..f.blocks[b].instrs.len()).rev().find(|&i| defines(b, i)) {
                Some(i) => found.extend(position.get(&(b, i)).copied()),
                None => work.extend(preds[b].iter().copied()),
            }
        }
        found.into_iter().collect()
    }

    /// Where the value in `reg` at instruction `k` was made: its reaching
    /// definitions, looking through register moves.
    pub(crate) fn origins(&self, reg: Reg, k: usize) -> Vec<usize> {
        let mut out = BTreeSet::new();
        let mut work = vec![(reg, k, 0)];
        let mut seen = BTreeSet::new();
        while let Some((r, at, depth)) = work.pop() {
            for d in self.reaching_defs(r, at) {
                if !seen.insert((r, d)) {
                    continue;
                }
                let ins = self.instr(d);
                let source = ins.copy.as_ref().and_then(|(dst, src)| {
                    let pos = dst.iter().position(|x| *x == r)?;
                    src.get(pos).or(src.first()).copied()
                });
                // The move reads its source before it writes `r`: look before it.
                // A source with no definition (a kernel input) ends at the move.
                match source {
                    Some(s) if depth < 8 && d > 0 && !self.reaching_defs(s, d - 1).is_empty() => work.push((s, d - 1, depth + 1)),
                    _ => {
                        out.insert(d);
                    }
                }
            }
        }
        out.into_iter().collect()
    }
}

/// Block indices of each block's predecessors.
fn predecessors(f: &Function) -> Vec<Vec<usize>> {
    let index: HashMap<u32, usize> = f.blocks.iter().enumerate().map(|(i, b)| (b.number, i)).collect();
    let mut preds = vec![Vec::new(); f.blocks.len()];
    for (b, block) in f.blocks.iter().enumerate() {
        for s in &block.successors {
            if let Some(&i) = index.get(s) {
                preds[i].push(b);
            }
        }
    }
    preds
}

#[cfg(test)]
mod tests {
    use super::super::mir;
    use super::*;

    const LOOP: &str = "\
# Machine code for function k: NoPHIs, TracksLiveness, NoVRegs
Function Live Ins: $vgpr0, $sgpr4_sgpr5

bb.0:
  successors: %bb.1(0x80000000)
  liveins: $vgpr0, $sgpr4_sgpr5
  renamable $vgpr1 = V_MOV_B32_e32 0, implicit $exec; k.hip:3:1
  renamable $vgpr2_vgpr3 = GLOBAL_LOAD_DWORDX2 renamable $vgpr0_vgpr1, 0, 0, implicit $exec :: (load (s64) from %ir.p, addrspace 1); k.hip:4:1
  renamable $vgpr5 = V_MOV_B32_e32 $vgpr0, implicit $exec; k.hip:5:1

bb.1:
  successors: %bb.1(0x40000000), %bb.2(0x40000000)
  liveins: $vgpr2_vgpr3, $vgpr5
  renamable $vgpr5 = V_ADD_U32_e32 1, killed $vgpr5, implicit $exec; k.hip:7:1
  V_CMP_GT_I32_e32 10, $vgpr5, implicit-def $vcc, implicit $exec; k.hip:7:2
  S_CBRANCH_VCCNZ %bb.1, implicit $vcc

bb.2:
  liveins: $vgpr2_vgpr3
  GLOBAL_STORE_DWORDX2 undef $vgpr6_vgpr7, killed $vgpr2_vgpr3, 0, 0, implicit $exec; k.hip:9:1
  S_ENDPGM 0
# End machine code for function k.
";

    #[test]
    fn pressure_steps_through_blocks_and_loops() {
        let f = &mir::parse(LOOP)[0];
        let l = liveness(f);
        let vgprs: Vec<u32> = l.points().iter().map(|p| p.vgpr).collect();
        // v0 and v1 (address), then v2_v3 loaded while v0 is still needed for
        // v5, then the loop carries v2_v3 and v5, the store reads v2_v3.
        assert_eq!(vgprs, [2, 4, 4, 3, 3, 3, 2, 0]);
        assert_eq!(l.points()[0].sgpr, 0, "s4_s5 are not read in this code");
        // Our stepping agrees with the backend's live-ins.
        for (b, block) in f.blocks.iter().enumerate() {
            assert_eq!(l.computed_live_ins[b].minus(&block.live_ins), RegSet::default(), "block {b}");
        }
    }

    #[test]
    fn origins_look_through_moves_and_around_loops() {
        let f = &mir::parse(LOOP)[0];
        let l = liveness(f);
        let v = |i| Reg { class: RegClass::Vgpr, index: i };
        // At the store (instruction 6), v2 was loaded by instruction 1.
        assert_eq!(l.reaching_defs(v(2), 6), [1]);
        assert_eq!(l.reaching_defs(v(5), 4), [3]);
        // Read at the top of the loop: the move before it, or the add around the back edge.
        let looped = mir::parse(&LOOP.replace("renamable $vgpr5 = V_ADD_U32_e32 1, killed $vgpr5", "V_CMP_GT_I32_e32 11, $vgpr5, implicit-def $vcc, implicit $exec; k.hip:6:1\n  renamable $vgpr5 = V_ADD_U32_e32 1, killed $vgpr5"));
        assert_eq!(liveness(&looped[0]).reaching_defs(v(5), 3), [2, 4]);
        assert_eq!(l.reaching_defs(v(5), 3), [3], "an instruction that defines the register is its origin");
        // The move copies the kernel input v0, which nothing defines: the move is the origin.
        assert_eq!(l.origins(v(5), 2), [2]);
        // A move of a loaded value names the load.
        let f2 = mir::parse(&LOOP.replace("V_MOV_B32_e32 $vgpr0", "V_MOV_B32_e32 $vgpr2"));
        assert_eq!(liveness(&f2[0]).origins(v(5), 2), [1]);
    }
}
