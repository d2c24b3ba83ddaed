//! `regtune-lds-spill`'s choice: register pressure over the kernel, and
//! which values go to LDS. It works on a [`Model`] of the kernel (values,
//! and per block its PHIs, instructions and successors), so the rules can
//! be tested without IR. See [`super`] for the pass.
//!
//!   opt-22 -load-pass-plugin=target/debug/libregtune_passes.so \
//!     -passes='regtune-lds-spill<8>' in.ll -S -o out.ll

use std::cmp::Reverse;

/// What a spilled value must lower the peak by: one register for the slot
/// address (live from the first spill to the last reload), and at least
/// one more to gain anything.
pub(super) const MIN_GAIN: u64 = 2;

/// A candidate must be live across at least this many instructions (on all
/// paths together): defined far from its uses. A shorter range the
/// backend's scheduler can shorten by itself, and a reload right after the
/// store only adds LDS latency.
pub(super) const MIN_SPAN: usize = 16;

/// The kernel as the pressure estimate sees it. Values are numbered
/// `0..regs.len()`; a value of 0 registers is not tracked.
#[derive(Debug, Default)]
pub(super) struct Model {
    /// The 32-bit registers each value occupies while live.
    pub(super) regs: Vec<u32>,
    /// Reachable blocks (unreachable ones are empty).
    pub(super) blocks: Vec<Block>,
}

#[derive(Debug, Default, Clone)]
pub(super) struct Block {
    /// Values defined by the block's PHIs: live from its start.
    pub(super) phis: Vec<usize>,
    /// The other instructions, in order. The terminator also reads the
    /// values the successors' PHIs take along its edges.
    pub(super) points: Vec<Point>,
    pub(super) succs: Vec<usize>,
}

/// One instruction: the value it defines and the distinct values it reads.
#[derive(Debug, Default, Clone)]
pub(super) struct Point {
    pub(super) def: Option<usize>,
    pub(super) uses: Vec<usize>,
}

/// A value that may go to LDS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Candidate {
    pub(super) value: usize,
    /// 32-bit words: 1, or 2 for a 64-bit value.
    pub(super) slots: u32,
    /// Its store and reloads, each weighted by 8 per loop level.
    pub(super) cost: u64,
}

/// The values to spill (indices into the candidates) and the estimated
/// peak before and after; nothing chosen when the gain is too small.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Choice {
    pub(super) chosen: Vec<usize>,
    pub(super) peak_before: u64,
    pub(super) peak_after: u64,
}

/// Choose up to `slots` words of values to spill among the candidates live
/// across [`MIN_SPAN`] instructions or more: greedily the one live across
/// the most instructions at the current peak (ties: the cheaper store and
/// reloads, then the earlier value), recomputing the peak after each; then
/// drop those whose spill does not lower the final peak, and keep the rest
/// only if they lower it by [`MIN_GAIN`].
pub(super) fn choose(model: &Model, candidates: &[Candidate], slots: u32) -> Choice {
    let live_out = live_out_sets(model);
    let far = live_across(model, &live_out, candidates, |_, _| true);
    let mut spilled = BitSet::new(model.regs.len());
    let peak_before = peak(&pressures(model, &live_out, &spilled));
    let mut chosen: Vec<usize> = Vec::new();
    let mut used = 0;
    loop {
        let pressure = pressures(model, &live_out, &spilled);
        let top = peak(&pressure);
        let covered = live_across(model, &live_out, candidates, |b, k| pressure[b][k] == top);
        let best = (0..candidates.len())
            .filter(|&c| far[c] >= MIN_SPAN && !chosen.contains(&c) && used + candidates[c].slots <= slots && covered[c] > 0)
            .max_by_key(|&c| (covered[c], Reverse(candidates[c].cost), Reverse(candidates[c].value)));
        let Some(c) = best else { break };
        chosen.push(c);
        used += candidates[c].slots;
        spilled.insert(candidates[c].value);
    }
    // A later choice may have made an earlier one useless.
    let mut peak_after = peak(&pressures(model, &live_out, &spilled));
    for k in (0..chosen.len()).rev() {
        let v = candidates[chosen[k]].value;
        spilled.remove(v);
        let without = peak(&pressures(model, &live_out, &spilled));
        if without <= peak_after {
            chosen.remove(k);
            peak_after = without;
        } else {
            spilled.insert(v);
        }
    }
    if peak_after + MIN_GAIN > peak_before {
        chosen.clear();
        peak_after = peak_before;
    }
    chosen.sort_unstable();
    Choice { chosen, peak_before, peak_after }
}

// ---------------------------------------------------------------------------
// Liveness and pressure.
// ---------------------------------------------------------------------------

/// The values live out of each block: the usual backward dataflow to a
/// fixed point (a PHI's operand is read by its incoming block's terminator,
/// so it is not live into the PHI's block).
fn live_out_sets(model: &Model) -> Vec<BitSet> {
    let n = model.regs.len();
    let nb = model.blocks.len();
    let mut live_in = vec![BitSet::new(n); nb];
    let mut live_out = vec![BitSet::new(n); nb];
    let mut changed = true;
    while changed {
        changed = false;
        for b in (0..nb).rev() {
            let mut out = BitSet::new(n);
            for &s in &model.blocks[b].succs {
                out.union_with(&live_in[s]);
            }
            let mut live = out.clone();
            for p in model.blocks[b].points.iter().rev() {
                if let Some(d) = p.def {
                    live.remove(d);
                }
                for &u in &p.uses {
                    if model.regs[u] > 0 {
                        live.insert(u);
                    }
                }
            }
            for &phi in &model.blocks[b].phis {
                live.remove(phi);
            }
            live_out[b] = out;
            if live != live_in[b] {
                live_in[b] = live;
                changed = true;
            }
        }
    }
    live_out
}

/// The registers in use at each instruction (per block, per point) with
/// the values of `spilled` in LDS: those live into it, plus its result.
/// A spilled value occupies a register only at its definition (until the
/// store right after it) and at each instruction that reads it (from the
/// reload right before it).
fn pressures(model: &Model, live_out: &[BitSet], spilled: &BitSet) -> Vec<Vec<u64>> {
    let mut out = Vec::with_capacity(model.blocks.len());
    walk(model, live_out, spilled, |_, _, _, _| {}, &mut out);
    out
}

/// Walk every block bottom-up with its live set, calling `at(block, point,
/// live, pressure)` with the values live into each instruction; the
/// pressures are collected into `out`.
fn walk(model: &Model, live_out: &[BitSet], spilled: &BitSet, mut at: impl FnMut(usize, usize, &BitSet, u64), out: &mut Vec<Vec<u64>>) {
    let regs = |v: usize| u64::from(model.regs[v]);
    for (b, block) in model.blocks.iter().enumerate() {
        let mut live = live_out[b].clone();
        let mut all: u64 = live.iter().map(regs).sum();
        let mut in_lds: u64 = live.iter().filter(|&v| spilled.contains(v)).map(regs).sum();
        let mut here = vec![0; block.points.len()];
        for (k, p) in block.points.iter().enumerate().rev() {
            let mut result = 0;
            if let Some(d) = p.def {
                result = regs(d);
                if live.remove(d) {
                    all -= regs(d);
                    if spilled.contains(d) {
                        in_lds -= regs(d);
                    }
                }
            }
            let mut reloaded = 0;
            for &u in &p.uses {
                if regs(u) == 0 {
                    continue;
                }
                if live.insert(u) {
                    all += regs(u);
                    if spilled.contains(u) {
                        in_lds += regs(u);
                    }
                }
                if spilled.contains(u) {
                    reloaded += regs(u);
                }
            }
            here[k] = all - in_lds + reloaded + result;
            at(b, k, &live, here[k]);
        }
        out.push(here);
    }
}

fn peak(pressure: &[Vec<u64>]) -> u64 {
    pressure.iter().flatten().copied().max().unwrap_or(0)
}

/// For each candidate, at how many of the instructions `counted(block,
/// point)` picks it is live across (live into the instruction and not read
/// by it).
fn live_across(model: &Model, live_out: &[BitSet], candidates: &[Candidate], counted: impl Fn(usize, usize) -> bool) -> Vec<usize> {
    let n = model.regs.len();
    let mut of_value = vec![usize::MAX; n];
    let mut mask = BitSet::new(n);
    for (c, cand) in candidates.iter().enumerate() {
        of_value[cand.value] = c;
        mask.insert(cand.value);
    }
    let mut counts = vec![0; candidates.len()];
    let mut ignored = Vec::new();
    // Only the live sets matter here, not what is spilled.
    walk(
        model,
        live_out,
        &BitSet::new(n),
        |b, k, live, _| {
            if !counted(b, k) {
                return;
            }
            let uses = &model.blocks[b].points[k].uses;
            for v in live.and(&mask) {
                if !uses.contains(&v) {
                    counts[of_value[v]] += 1;
                }
            }
        },
        &mut ignored,
    );
    counts
}

// ---------------------------------------------------------------------------
// A fixed-size set of value numbers.
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq)]
struct BitSet {
    words: Vec<u64>,
}

impl BitSet {
    fn new(n: usize) -> Self {
        BitSet { words: vec![0; n.div_ceil(64)] }
    }

    fn contains(&self, v: usize) -> bool {
        self.words[v / 64] & (1 << (v % 64)) != 0
    }

    /// True when `v` was not in the set.
    fn insert(&mut self, v: usize) -> bool {
        let had = self.contains(v);
        self.words[v / 64] |= 1 << (v % 64);
        !had
    }

    /// True when `v` was in the set.
    fn remove(&mut self, v: usize) -> bool {
        let had = self.contains(v);
        self.words[v / 64] &= !(1 << (v % 64));
        had
    }

    fn union_with(&mut self, other: &BitSet) {
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a |= b;
        }
    }

    fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(w, &bits)| ones(w, bits))
    }

    /// The members of both sets.
    fn and<'a>(&'a self, other: &'a BitSet) -> impl Iterator<Item = usize> + 'a {
        self.words.iter().zip(&other.words).enumerate().flat_map(|(w, (&a, &b))| ones(w, a & b))
    }
}

/// The value numbers of the set bits of word `w`.
fn ones(w: usize, mut bits: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        if bits == 0 {
            return None;
        }
        let i = bits.trailing_zeros() as usize;
        bits &= bits - 1;
        Some(w * 64 + i)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(def: Option<usize>, uses: &[usize]) -> Point {
        Point { def, uses: uses.to_vec() }
    }

    fn candidate(value: usize) -> Candidate {
        Candidate { value, slots: 1, cost: 2 }
    }

    /// One block: `long` values defined first, then a region where `short`
    /// values are made and summed pairwise (each dies at its use), then the
    /// long values read once each. Values 0..long are long, the rest short.
    fn straight_line(long: usize, short: usize) -> Model {
        let mut points: Vec<Point> = (0..long).map(|v| point(Some(v), &[])).collect();
        let first_short = long;
        for s in 0..short {
            points.push(point(Some(first_short + s), &[]));
        }
        // One use of all short values at once: the peak, long + short.
        let all_short: Vec<usize> = (first_short..first_short + short).collect();
        let sink = first_short + short;
        points.push(point(Some(sink), &all_short));
        for v in 0..long {
            points.push(point(None, &[v, sink]));
        }
        Model { regs: vec![1; sink + 1], blocks: vec![Block { points, ..Default::default() }] }
    }

    #[test]
    fn long_lived_values_across_the_peak_are_chosen() {
        let model = straight_line(3, 20);
        let candidates: Vec<Candidate> = (0..3).map(candidate).collect();
        let choice = choose(&model, &candidates, 8);
        assert_eq!(choice.chosen, vec![0, 1, 2]);
        // 3 long + 20 short values live into the sum, plus its result.
        assert_eq!(choice.peak_before, 24);
        assert_eq!(choice.peak_after, 21);
    }

    #[test]
    fn at_most_the_given_slots() {
        let model = straight_line(3, 20);
        let candidates: Vec<Candidate> = (0..3).map(candidate).collect();
        let choice = choose(&model, &candidates, 2);
        assert_eq!(choice.chosen, vec![0, 1]);
        assert_eq!(choice.peak_after, 22);
    }

    #[test]
    fn one_register_does_not_pay_for_the_address() {
        let model = straight_line(3, 20);
        let choice = choose(&model, &[candidate(0)], 8);
        assert_eq!(choice, Choice { chosen: vec![], peak_before: 24, peak_after: 24 });
    }

    #[test]
    fn a_wide_value_needs_two_slots() {
        let mut model = straight_line(3, 20);
        model.regs[0] = 2;
        let wide = Candidate { value: 0, slots: 2, cost: 2 };
        // Two slots left after value 1: value 0 fits, value 2 does not.
        let choice = choose(&model, &[wide, candidate(1), candidate(2)], 3);
        assert_eq!(choice.chosen.len(), 2);
        assert_eq!(choice.peak_before - choice.peak_after, 3);
    }

    #[test]
    fn values_not_live_across_the_peak_are_left_alone() {
        // The short values are read at the peak, not live across it.
        let model = straight_line(3, 20);
        let candidates: Vec<Candidate> = (3..23).map(candidate).collect();
        assert!(choose(&model, &candidates, 8).chosen.is_empty());
    }

    #[test]
    fn values_used_soon_after_their_definition_are_left_alone() {
        // Only 5 short values: the long ones span 8 instructions.
        let model = straight_line(3, 5);
        let candidates: Vec<Candidate> = (0..3).map(candidate).collect();
        assert!(choose(&model, &candidates, 8).chosen.is_empty());
    }

    #[test]
    fn cheaper_accesses_win_a_tie() {
        let model = straight_line(3, 20);
        let dear = Candidate { value: 0, slots: 1, cost: 64 };
        let choice = choose(&model, &[dear, candidate(1), candidate(2)], 2);
        assert_eq!(choice.chosen, vec![1, 2]);
    }

    #[test]
    fn liveness_follows_loops_and_phis() {
        // b0: def 0 (long), def 1 (loop init) -> b1
        // b1: phi 2; def 3 uses 2; many short values; terminator reads 3 for the phi -> b1, b2
        // b2: uses 0
        let mut regs = vec![1; 4];
        let shorts: Vec<usize> = (4..20).collect();
        regs.extend(shorts.iter().map(|_| 1));
        let sink = regs.len();
        regs.push(1);
        let mut body = vec![point(Some(3), &[2])];
        body.extend(shorts.iter().map(|&s| point(Some(s), &[])));
        body.push(point(Some(sink), &shorts));
        body.push(point(None, &[3, sink]));
        let model = Model {
            regs,
            blocks: vec![
                Block { phis: vec![], points: vec![point(Some(0), &[]), point(Some(1), &[]), point(None, &[1])], succs: vec![1] },
                Block { phis: vec![2], points: body, succs: vec![1, 2] },
                Block { phis: vec![], points: vec![point(None, &[0])], succs: vec![] },
            ],
        };
        let live_out = live_out_sets(&model);
        assert!(live_out[0].contains(0) && live_out[1].contains(0), "0 is live through the loop");
        assert!(!live_out[1].contains(3), "3 is read for the phi by the terminator, not live into the header");
        assert!(!live_out[1].contains(2), "the phi is redefined each iteration");
        // 0 and 3 are both live across the loop's peak; one alone gains 1.
        let both = [candidate(0), candidate(3)];
        let choice = choose(&model, &both, 4);
        assert_eq!(choice.peak_before - choice.peak_after, 2);
        assert_eq!(choice.chosen, vec![0, 1]);
    }
}
