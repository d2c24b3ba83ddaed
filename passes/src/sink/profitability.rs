//! `regtune-sink`'s profitability (LLVM Sink.cpp's FIXME): whether a move
//! frees more registers than it costs, judged per move from live ranges and
//! for the whole plan by counting live registers over the IR. See [`super`]
//! for the rules.
//!
//!   opt-22 -load-pass-plugin=target/debug/libregtune_passes.so \
//!     -passes=regtune-sink in.ll -S -o out.ll

use std::collections::HashMap;

use inkwell::values::{InstructionOpcode, InstructionValue};

use crate::ffi::sink::{self as llvm, Def};

use super::{Body, Move, Plan, Point, Use, Value};
use crate::ir::cfg::Cfg;

// ---------------------------------------------------------------------------
// 1. Sink definitions.
// ---------------------------------------------------------------------------

/// Blocks reachable from a block's end without entering a value's
/// definition block, memoised (the CFG does not change while planning).
#[derive(Default)]
pub(super) struct ReachCache {
    memo: HashMap<(usize, Option<usize>), Vec<bool>>,
}

impl ReachCache {
    fn get(&mut self, cfg: &Cfg<'_>, from: usize, stop: Option<usize>) -> &[bool] {
        self.memo.entry((from, stop)).or_insert_with(|| cfg.reach_from_end(from, stop))
    }
}

/// Whether `v` is live just before `at` with the plan's placement, not
/// counting its use by `except` (the instruction being moved there).
fn live_at(body: &Body<'_>, cfg: &Cfg<'_>, plan: &Plan, reach: &mut ReachCache, v: Value, at: Point, except: usize) -> bool {
    // A value is dead again when a path re-enters its definition.
    let def_block = match v {
        Value::Inst(j) => Some(plan.point(body, j).block),
        Value::Param(_) => None,
    };
    for u in body.uses(v) {
        let p = match *u {
            Use::At(user) if user == except => continue,
            Use::At(user) => plan.point(body, user),
            Use::EdgeEnd(b) => body.terminator(b),
        };
        if p.block == at.block && p.at >= at.at {
            return true;
        }
        if reach.get(cfg, at.block, def_block)[p.block] {
            return true;
        }
    }
    false
}

/// Profitability: the registers of the operands whose live ranges the move
/// extends (operands that die at the old place: not used after the new
/// place, not moving into the same block, not constants, not kernel
/// parameters) must be fewer than the registers the moved value frees.
pub(super) fn profitable(body: &Body<'_>, cfg: &Cfg<'_>, plan: &Plan, reach: &mut ReachCache, i: usize, dest: Point) -> bool {
    // A value made from constants alone (`llvm.amdgcn.workitem.id.x`, read
    // from a register preloaded at entry) frees nothing by moving: the
    // backend rematerialises it or keeps its source live from entry anyway.
    if body.sources[i].is_empty() {
        return false;
    }
    let benefit = body.regs[i];
    let mut cost = 0;
    for &v in &body.sources[i] {
        let regs = match v {
            Value::Param(_) if body.kernel => continue,
            Value::Param(n) => body.param_regs.get(n as usize).copied().unwrap_or(1),
            Value::Inst(j) if plan.moving[j] && plan.dest[j].block == dest.block => continue,
            Value::Inst(j) => body.regs[j],
        };
        if !live_at(body, cfg, plan, reach, v, dest, i) {
            cost += regs;
        }
    }
    cost < benefit
}

/// The moves to make, in order.
///
/// Moves into another block are what the pass is for: they take values out
/// of the blocks in between, which the backend's scheduler cannot do. Moves
/// within a block only reorder it, which can also stack up values: a
/// reduction `h = h + f(x_k)` sunk link by link computes every `f(x_k)`
/// first. So a block's own reorderings are kept only when they lower its
/// peak register pressure (counted over the IR's values), and the whole
/// result only when the function's peak does not rise.
pub(super) fn choose_moves(body: &Body<'_>, cfg: &Cfg<'_>, order: &[usize], plan: &Plan) -> Vec<Move> {
    let all: Vec<Move> = order
        .iter()
        .filter(|&&i| plan.moving[i])
        .map(|&i| {
            let d = plan.dest[i];
            Move { inst: i, block: d.block, anchor: body.block_insts[d.block][d.at] }
        })
        .collect();
    let cross: Vec<Move> = all.iter().copied().filter(|m| !m.is_local(body)).collect();
    let original = Layout::original(body);
    let with_cross = original.with_moves(body, &cross);
    let with_all = original.with_moves(body, &all);
    // Local moves change no block's live-in or live-out set.
    let live_out = live_out_sets(body, cfg, &with_cross);
    let mut has_local = vec![false; cfg.blocks.len()];
    for m in all.iter().filter(|m| m.is_local(body)) {
        has_local[m.block] = true;
    }
    let keep_local: Vec<bool> = (0..cfg.blocks.len())
        .map(|b| has_local[b] && peak_in_block(body, &with_all, &live_out, b) < peak_in_block(body, &with_cross, &live_out, b))
        .collect();
    let chosen: Vec<Move> = all.into_iter().filter(|m| !m.is_local(body) || keep_local[m.block]).collect();
    let after = original.with_moves(body, &chosen);
    let before_peak = peak(body, cfg, &original, &live_out_sets(body, cfg, &original));
    let after_peak = peak(body, cfg, &after, &live_out);
    if after_peak > before_peak {
        return Vec::new();
    }
    chosen
}

// ---------------------------------------------------------------------------
// Register pressure over a hypothetical instruction order.
// ---------------------------------------------------------------------------

/// The instructions of each block in some order: the original one, or the
/// one a list of moves would leave.
#[derive(Clone)]
struct Layout {
    blocks: Vec<Vec<usize>>,
    block_of: Vec<usize>,
}

impl Layout {
    fn original(body: &Body<'_>) -> Self {
        Layout { blocks: body.block_insts.clone(), block_of: body.block.clone() }
    }

    /// This layout after the moves, made the way [`move_before_first_use`]
    /// makes them in the IR.
    fn with_moves(&self, body: &Body<'_>, moves: &[Move]) -> Self {
        let mut out = self.clone();
        for m in moves {
            let from = out.block_of[m.inst];
            out.blocks[from].retain(|&x| x != m.inst);
            let users = non_phi_users(body, m.inst);
            let insts = &out.blocks[m.block];
            let Some(at) = insts.iter().position(|x| *x == m.anchor || users.contains(x)) else {
                // The anchor is always there; keep the instruction where it was.
                out.blocks[from].push(m.inst);
                continue;
            };
            out.blocks[m.block].insert(at, m.inst);
            out.block_of[m.inst] = m.block;
        }
        out
    }
}

fn non_phi_users(body: &Body<'_>, i: usize) -> Vec<usize> {
    body.inst_uses[i]
        .iter()
        .filter_map(|u| match *u {
            Use::At(user) => Some(user),
            Use::EdgeEnd(_) => None,
        })
        .collect()
}

/// A value's index for liveness: instructions first, then parameters.
fn value_index(body: &Body<'_>, v: Value) -> usize {
    match v {
        Value::Inst(i) => i,
        Value::Param(n) => body.insts.len() + n as usize,
    }
}

/// Registers a value holds while live: nothing for `void`, and nothing for
/// kernel parameters, which sit in SGPRs.
fn value_regs(body: &Body<'_>, v: Value) -> u64 {
    match v {
        Value::Inst(i) => body.regs[i],
        Value::Param(_) if body.kernel => 0,
        Value::Param(n) => body.param_regs.get(n as usize).copied().unwrap_or(0),
    }
}

/// The values live out of each block under `layout` (SSA liveness: walk
/// up from each use to the definition).
fn live_out_sets(body: &Body<'_>, cfg: &Cfg<'_>, layout: &Layout) -> Vec<Vec<Value>> {
    let nb = cfg.blocks.len();
    let mut sets = Liveness { live_out: vec![Vec::new(); nb], in_stamp: vec![usize::MAX; nb], out_stamp: vec![usize::MAX; nb] };
    let values = (0..body.insts.len()).map(Value::Inst).chain((0..body.param_regs.len() as u32).map(Value::Param));
    for v in values {
        if value_regs(body, v) == 0 {
            continue;
        }
        let def = match v {
            Value::Inst(i) => Some(layout.block_of[i]),
            Value::Param(_) => None,
        };
        let stamp = value_index(body, v);
        let mut work = Vec::new();
        for u in body.uses(v) {
            match *u {
                Use::At(user) => sets.live_in(cfg, layout.block_of[user], def, stamp, &mut work),
                Use::EdgeEnd(b) => sets.live_out(cfg, b, v, def, stamp, &mut work),
            }
            while let Some(b) = work.pop() {
                for &p in &cfg.preds[b] {
                    sets.live_out(cfg, p, v, def, stamp, &mut work);
                }
            }
        }
    }
    sets.live_out
}

struct Liveness {
    live_out: Vec<Vec<Value>>,
    /// The value (index) last marked live in / out of each block.
    in_stamp: Vec<usize>,
    out_stamp: Vec<usize>,
}

impl Liveness {
    /// `v` is live into `b` (unless `b` defines it): queue `b`'s
    /// predecessors.
    fn live_in(&mut self, cfg: &Cfg<'_>, b: usize, def: Option<usize>, stamp: usize, work: &mut Vec<usize>) {
        if Some(b) != def && cfg.reachable(b) && self.in_stamp[b] != stamp {
            self.in_stamp[b] = stamp;
            work.push(b);
        }
    }

    /// `v` is live out of `b`, and so live into it unless `b` defines it.
    fn live_out(&mut self, cfg: &Cfg<'_>, b: usize, v: Value, def: Option<usize>, stamp: usize, work: &mut Vec<usize>) {
        if !cfg.reachable(b) {
            return;
        }
        if self.out_stamp[b] != stamp {
            self.out_stamp[b] = stamp;
            self.live_out[b].push(v);
        }
        self.live_in(cfg, b, def, stamp, work);
    }
}

/// The most registers live at once inside block `b` under `layout`.
fn peak_in_block(body: &Body<'_>, layout: &Layout, live_out: &[Vec<Value>], b: usize) -> u64 {
    let mut live: std::collections::HashSet<Value> = live_out[b].iter().copied().collect();
    let mut now: u64 = live.iter().map(|&v| value_regs(body, v)).sum();
    let mut peak = now;
    for &i in layout.blocks[b].iter().rev() {
        let def = Value::Inst(i);
        if live.remove(&def) {
            now -= value_regs(body, def);
        } else {
            // A result nothing reads still takes a register where it is made.
            peak = peak.max(now + value_regs(body, def));
        }
        // PHI operands are read at the end of the predecessors.
        if body.insts[i].get_opcode() != InstructionOpcode::Phi {
            for &v in &body.sources[i] {
                if value_regs(body, v) > 0 && live.insert(v) {
                    now += value_regs(body, v);
                }
            }
        }
        peak = peak.max(now);
    }
    peak
}

/// The most registers live at once anywhere in the function.
fn peak(body: &Body<'_>, cfg: &Cfg<'_>, layout: &Layout, live_out: &[Vec<Value>]) -> u64 {
    cfg.rpo.iter().map(|&b| peak_in_block(body, layout, live_out, b)).max().unwrap_or(0)
}

// ---------------------------------------------------------------------------
// 2. Hoist stores.
// ---------------------------------------------------------------------------

/// Profitability of hoisting: some value the store uses is defined in its
/// block and used by nothing else but earlier instructions of the block
/// (none of those the store would pass), so it dies at the store, and dies
/// earlier once the store rises. (A value from another block may be live
/// around a loop, and a kernel parameter sits in SGPRs: no gain assumed.)
pub(super) fn ends_a_live_range(store: InstructionValue<'_>, operands: &[InstructionValue<'_>], crossed: &[InstructionValue<'_>]) -> bool {
    let block = store.get_parent();
    operands.iter().any(|v| {
        v.get_parent() == block
            && llvm::users(Def::Inst(*v)).iter().all(|u| {
                *u == store
                    || (u.get_parent() == block && u.get_opcode() != InstructionOpcode::Phi && !crossed.contains(u) && !is_after(store, *u))
            })
    })
}

/// Whether `later` comes after `earlier` in their common block.
fn is_after(earlier: InstructionValue<'_>, later: InstructionValue<'_>) -> bool {
    let mut x = earlier.get_next_instruction();
    while let Some(i) = x {
        if i == later {
            return true;
        }
        x = i.get_next_instruction();
    }
    false
}
