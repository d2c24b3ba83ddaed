//! `regtune-sink`'s placement: where each definition goes (before its
//! earliest use, in the nearest common dominator of its uses, out of loops),
//! the plan of all moves pruned to a fixed point, and the moves themselves,
//! sunk definitions and hoisted stores. See [`super`] for the pass.
//!
//!   opt-22 -load-pass-plugin=target/debug/libregtune_passes.so \
//!     -passes=regtune-sink in.ll -S -o out.ll

use inkwell::values::{InstructionOpcode, InstructionValue};

use crate::ffi::sink::{self as llvm, Def, Source};

use super::legality::{effect, is_acceptable_target, is_safe_to_move, load_may_cross, move_is_legal, store_may_cross, AliasRules, Effect};
use super::profitability::{ends_a_live_range, profitable, ReachCache};
use super::{Body, Move, Plan, Point, Use};
use crate::ir::cfg::Cfg;

/// Rounds of pruning the plan before giving up on a function (each round
/// drops at least one move; real kernels settle in a handful).
const MAX_ROUNDS: usize = 64;

// ---------------------------------------------------------------------------
// 1. Sink definitions.
// ---------------------------------------------------------------------------

/// Where `i` would go given the plan for its users: before the earliest use
/// in the nearest common dominator of the uses, lifted up the dominator tree
/// out of any loop its own block is not in. None when a use is unreachable.
fn destination(body: &Body<'_>, cfg: &Cfg<'_>, plan: &Plan, i: usize) -> Option<Point> {
    let from = body.block[i];
    let mut points = Vec::with_capacity(body.inst_uses[i].len());
    let mut target: Option<usize> = None;
    for u in &body.inst_uses[i] {
        let p = match *u {
            Use::At(user) => plan.point(body, user),
            Use::EdgeEnd(b) => body.terminator(b),
        };
        if !cfg.reachable(p.block) {
            return None;
        }
        target = Some(match target {
            None => p.block,
            Some(t) => cfg.nearest_common_dominator(t, p.block),
        });
        points.push(p);
    }
    let mut to = target?;
    if !cfg.reducible {
        to = from;
    }
    while !cfg.loop_ok(from, to) {
        to = cfg.idom(to)?;
    }
    let at = points.iter().filter(|p| p.block == to).map(|p| p.at).min().unwrap_or(body.terminator(to).at);
    Some(Point { block: to, at })
}

/// Whether `dest` is somewhere else than where `i` already is.
fn moves(body: &Body<'_>, i: usize, dest: Point) -> bool {
    dest.block != body.block[i] || dest.at > body.pos[i] + 1
}

/// The latest acceptable place at or above `want` on the way down from
/// `i`: `want` itself for a pure instruction; for a load, the first place
/// (walking `want`'s block, then its dominators, back towards `i`) that
/// comes before any instruction the load may not cross. Every such place
/// still dominates all uses, since `want` does.
fn latest_acceptable(body: &Body<'_>, cfg: &Cfg<'_>, i: usize, want: Point) -> Option<Point> {
    let Effect::Read(load) = body.effect[i] else {
        return is_acceptable_target(body, cfg, i, want).then_some(want);
    };
    let from = body.block[i];
    let mut block = want.block;
    let mut at = want.at;
    loop {
        // Stop in this block before the first instruction the load may not
        // pass (after the load itself, in its own block).
        let start = if block == from { body.pos[i] + 1 } else { 0 };
        let insts = &body.block_insts[block];
        let blocked = (start..at.min(insts.len())).find(|&k| !load_may_cross(body, load, insts[k]));
        let p = Point { block, at: blocked.unwrap_or(at) };
        if is_acceptable_target(body, cfg, i, p) {
            return Some(p);
        }
        if block == from {
            return None;
        }
        block = cfg.idom(block)?;
        at = body.terminator(block).at;
    }
}

/// Every legal, profitable move, as a fixed point: an instruction drops out
/// when it has no acceptable destination or stops paying off, and every
/// drop is re-judged against the others in the next round. None when the
/// rounds run out.
pub(super) fn make_plan(body: &Body<'_>, cfg: &Cfg<'_>, order: &[usize]) -> Option<Plan> {
    let n = body.insts.len();
    let mut plan = Plan { moving: vec![false; n], dest: vec![Point::default(); n] };
    for &i in order {
        plan.moving[i] = is_safe_to_move(body, i);
    }
    let mut reach = ReachCache::default();
    for _ in 0..MAX_ROUNDS {
        let mut changed = false;
        for &i in order {
            if !plan.moving[i] {
                continue;
            }
            let dest = destination(body, cfg, &plan, i).and_then(|want| latest_acceptable(body, cfg, i, want));
            match dest {
                Some(d) if moves(body, i, d) => plan.dest[i] = d,
                _ => {
                    plan.moving[i] = false;
                    changed = true;
                }
            }
        }
        for &i in order {
            if plan.moving[i] && !profitable(body, cfg, &plan, &mut reach, i, plan.dest[i]) {
                plan.moving[i] = false;
                changed = true;
            }
        }
        if !changed {
            return Some(plan);
        }
    }
    None
}

/// Make a planned move in the IR as it is now: into the block, just before
/// the instruction's first user there or the anchor, whichever comes first.
/// The move is checked again on the IR itself ([`move_is_legal`]); one that
/// fails the check is not made (the instruction then stays above all its
/// users, so skipping it is always safe).
pub(super) fn move_before_first_use(body: &Body<'_>, cfg: &Cfg<'_>, m: Move) -> bool {
    let inst = body.insts[m.inst];
    let anchor = body.insts[m.anchor];
    let Some(bb) = anchor.get_parent() else {
        return false;
    };
    let users = llvm::users(Def::Inst(inst));
    let Some(before) = bb.get_instructions().find(|x| *x == anchor || (x.get_opcode() != InstructionOpcode::Phi && users.contains(x)))
    else {
        return false;
    };
    if inst.get_next_instruction() == Some(before) || !move_is_legal(body, cfg, inst, before) {
        return false;
    }
    llvm::move_before(inst, before);
    true
}

// ---------------------------------------------------------------------------
// 2. Hoist stores.
// ---------------------------------------------------------------------------

/// Move each ordinary store up to just after the definitions of what it
/// stores (or the first instruction it may not cross), when it is the last
/// use of one of them there: the store then ends that live range earlier.
pub(super) fn hoist_stores(cfg: &Cfg<'_>, rules: AliasRules) -> bool {
    let mut changed = false;
    for &b in &cfg.rpo {
        let stores: Vec<_> = cfg.blocks[b].get_instructions().filter(|i| matches!(effect(*i), Effect::Write(_))).collect();
        for store in stores {
            changed |= hoist_store(store, rules);
        }
    }
    changed
}

fn hoist_store(store: InstructionValue<'_>, rules: AliasRules) -> bool {
    let Effect::Write(access) = effect(store) else {
        return false;
    };
    let operands: Vec<InstructionValue<'_>> = llvm::sources(store)
        .into_iter()
        .filter_map(|s| match s {
            Source::Inst(x) => Some(x),
            Source::Param(_) | Source::Other => None,
        })
        .collect();
    // Walk up to the first instruction the store may not pass.
    let mut crossed = Vec::new();
    let mut above = store.get_previous_instruction();
    while let Some(x) = above {
        if operands.contains(&x) || !store_may_cross(rules, access, x) {
            break;
        }
        crossed.push(x);
        above = x.get_previous_instruction();
    }
    let Some(&highest) = crossed.last() else {
        return false;
    };
    if !ends_a_live_range(store, &operands, &crossed) {
        return false;
    }
    llvm::move_before(store, highest);
    true
}
