//! `regtune-sink`'s legality (LLVM Sink.cpp's `isSafeToMove` and
//! `IsAcceptableTarget`): which instructions may move, where to, and what a
//! load or a store may be moved across. The rules are in [`super`]'s banner.
//!
//!   opt-22 -load-pass-plugin=target/debug/libregtune_passes.so \
//!     -passes=regtune-sink in.ll -S -o out.ll

use inkwell::values::{InstructionOpcode, InstructionValue};

use crate::ffi::sink::{self as llvm, Access, Def, Object};

use super::{Body, Point};
use crate::ir::cfg::Cfg;
use crate::ir::opcodes::computes_from_operands;
use crate::ir::Target;

// ---------------------------------------------------------------------------
// Memory: what each instruction does to it, and when two accesses overlap.
// ---------------------------------------------------------------------------

/// What an instruction does, as far as moving others across it goes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Effect {
    /// Neither touches memory nor has side effects.
    None,
    /// An ordinary (non-volatile, non-atomic) load.
    Read(Access),
    /// An ordinary store.
    Write(Access),
    /// Anything else: calls, atomics, fences, volatile accesses, allocas,
    /// va_arg. No memory access crosses it.
    Barrier,
}

pub(super) fn effect(inst: InstructionValue<'_>) -> Effect {
    use InstructionOpcode as Op;
    match inst.get_opcode() {
        op if computes_from_operands(op) => Effect::None,
        Op::Phi | Op::Br | Op::Switch | Op::IndirectBr | Op::Return | Op::Unreachable => Effect::None,
        Op::Call if llvm::is_pure_intrinsic_call(inst) => Effect::None,
        Op::Load | Op::Store => {
            if inst.get_volatile().unwrap_or(true) || llvm::is_atomic(inst) {
                return Effect::Barrier;
            }
            match llvm::access(inst) {
                Some(a) if inst.get_opcode() == Op::Load => Effect::Read(a),
                Some(a) => Effect::Write(a),
                None => Effect::Barrier,
            }
        }
        _ => Effect::Barrier,
    }
}

/// Address-space facts of the target, for [`no_alias`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct AliasRules {
    /// AMDGPU and NVPTX: global (1), shared/LDS (3) and private/local (5)
    /// are disjoint memories.
    disjoint_segments: bool,
    /// Address spaces that hold memory no kernel writes (AMDGPU constant 4
    /// and constant-32bit 6, NVPTX const 4): loads from them never alias
    /// a store.
    constant: &'static [u32],
}

impl AliasRules {
    pub(super) fn of(target: Option<Target>) -> Self {
        match target {
            Some(Target::Amdgpu) => AliasRules { disjoint_segments: true, constant: &[4, 6] },
            Some(Target::Nvptx) => AliasRules { disjoint_segments: true, constant: &[4] },
            None => AliasRules { disjoint_segments: false, constant: &[] },
        }
    }

    /// A load from memory that no store can change during the kernel.
    fn is_invariant_load(self, load: Access) -> bool {
        load.invariant_load || self.constant.contains(&load.address_space)
    }
}

/// Whether two accesses provably touch different memory: cheap facts only
/// (no offsets, no capture analysis). `a_is_load`/`b_is_load` say which of
/// them reads (a read from invariant memory overlaps no write).
fn no_alias(rules: AliasRules, a: Access, a_is_load: bool, b: Access, b_is_load: bool) -> bool {
    if (a_is_load && rules.is_invariant_load(a)) || (b_is_load && rules.is_invariant_load(b)) {
        return true;
    }
    let segment = |s: u32| matches!(s, 1 | 3 | 5);
    if rules.disjoint_segments && segment(a.address_space) && segment(b.address_space) && a.address_space != b.address_space {
        return true;
    }
    match (a.object, b.object) {
        (x, y) if x.is_identified() && y.is_identified() => x != y,
        // A parameter cannot point into a stack object of this call: the
        // object did not exist when the argument was passed.
        (Object::Alloca(_), Object::Param { .. }) | (Object::Param { .. }, Object::Alloca(_)) => true,
        _ => false,
    }
}

// ---------------------------------------------------------------------------
// 1. Sink definitions.
// ---------------------------------------------------------------------------

/// Legality of the instruction itself (LLVM Sink.cpp's `isSafeToMove`): a
/// pure operation, a pure intrinsic call, or an ordinary load, that defines
/// a value something uses. Never a PHI, alloca, terminator, EH pad, other
/// call, atomic, fence, or volatile access (those are not pure, and
/// volatile and atomic loads are barriers, not reads); never a token.
pub(super) fn is_safe_to_move(body: &Body<'_>, i: usize) -> bool {
    let inst = body.insts[i];
    let kind_ok = match body.effect[i] {
        Effect::None => computes_from_operands(inst.get_opcode()) || llvm::is_pure_intrinsic_call(inst),
        Effect::Read(_) => true,
        Effect::Write(_) | Effect::Barrier => false,
    };
    kind_ok && !llvm::has_token_type(inst) && llvm::result_bits(inst) > 0 && !body.inst_uses[i].is_empty()
}

/// Legality of the destination (LLVM Sink.cpp's `IsAcceptableTarget`):
/// dominated by the source, in no loop the source is not in, and, for a
/// load, nothing on the way may write what it reads.
pub(super) fn is_acceptable_target(body: &Body<'_>, cfg: &Cfg<'_>, i: usize, dest: Point) -> bool {
    let from = body.block[i];
    if !cfg.dominates(from, dest.block) || !cfg.loop_ok(from, dest.block) {
        return false;
    }
    if !cfg.reducible && dest.block != from {
        return false;
    }
    match body.effect[i] {
        Effect::Read(load) => load_path_is_clear(body, cfg, i, load, dest),
        Effect::None => true,
        Effect::Write(_) | Effect::Barrier => false,
    }
}

/// Whether a load may move past instruction `j`.
pub(super) fn load_may_cross(body: &Body<'_>, load: Access, j: usize) -> bool {
    match body.effect[j] {
        Effect::None | Effect::Read(_) => true,
        Effect::Write(store) => no_alias(body.rules, load, true, store, false),
        Effect::Barrier => false,
    }
}

/// No instruction on any path from the load to `dest` may write its
/// location: the rest of its block, every block in between (all of the
/// load's own block again if a path comes back to it), and the start of
/// the destination block.
fn load_path_is_clear(body: &Body<'_>, cfg: &Cfg<'_>, i: usize, load: Access, dest: Point) -> bool {
    let from = body.block[i];
    let ok = |insts: &[usize]| insts.iter().all(|&j| j == i || load_may_cross(body, load, j));
    let here = &body.block_insts[from];
    if dest.block == from {
        return dest.at > body.pos[i] && ok(&here[body.pos[i] + 1..dest.at]);
    }
    ok(&here[body.pos[i] + 1..])
        && ok(&body.block_insts[dest.block][..dest.at])
        && cfg.between(from, dest.block).into_iter().all(|b| ok(&body.block_insts[b]))
}

/// The legality of moving `inst` to just before `before`, judged on the IR
/// as it is now (independently of the plan): the destination is dominated
/// by the source, dominates every use, and is in no loop the source is not
/// in; for a load, every instruction on every path between may be crossed.
pub(super) fn move_is_legal(body: &Body<'_>, cfg: &Cfg<'_>, inst: InstructionValue<'_>, before: InstructionValue<'_>) -> bool {
    let (Some(sb), Some(tb)) = (inst.get_parent(), before.get_parent()) else {
        return false;
    };
    let (Some(&from), Some(&to)) = (cfg.index.get(&sb), cfg.index.get(&tb)) else {
        return false;
    };
    if !cfg.dominates(from, to) || !cfg.loop_ok(from, to) || (!cfg.reducible && from != to) {
        return false;
    }
    // Every use stays below the definition: in `to` at or after `before`
    // (the caller picks `before` no later than the first user there) or in
    // a block `to` dominates; a PHI's use, at the end of a block `to`
    // dominates.
    for u in llvm::users(Def::Inst(inst)) {
        let Some(&ub) = u.get_parent().and_then(|b| cfg.index.get(&b)) else {
            return false;
        };
        let ok = if u.get_opcode() == InstructionOpcode::Phi {
            llvm::phi_edges_of(u, Def::Inst(inst)).iter().all(|e| cfg.index.get(e).is_some_and(|&b| cfg.dominates(to, b)))
        } else {
            cfg.dominates(to, ub)
        };
        if !ok {
            return false;
        }
    }
    let Effect::Read(load) = effect(inst) else {
        return matches!(effect(inst), Effect::None);
    };
    let may_cross = |x: InstructionValue<'_>| x == inst || load_may_cross_inst(body.rules, load, x);
    // From the load to `before` (or the end of the load's block).
    let mut x = inst.get_next_instruction();
    while let Some(i) = x {
        if i == before {
            return from == to;
        }
        if !may_cross(i) {
            return false;
        }
        x = i.get_next_instruction();
    }
    if from == to {
        // `before` is not below the load.
        return false;
    }
    let whole = |b: usize| cfg.blocks[b].get_instructions().all(&may_cross);
    cfg.between(from, to).into_iter().all(whole) && tb.get_instructions().take_while(|i| *i != before).all(&may_cross)
}

/// [`load_may_cross`] for an instruction of the IR as it is now.
fn load_may_cross_inst(rules: AliasRules, load: Access, x: InstructionValue<'_>) -> bool {
    match effect(x) {
        Effect::None | Effect::Read(_) => true,
        Effect::Write(store) => no_alias(rules, load, true, store, false),
        Effect::Barrier => false,
    }
}

// ---------------------------------------------------------------------------
// 2. Hoist stores.
// ---------------------------------------------------------------------------

/// Whether a store may move up past `x`.
pub(super) fn store_may_cross(rules: AliasRules, store: Access, x: InstructionValue<'_>) -> bool {
    if x.get_opcode() == InstructionOpcode::Phi {
        return false;
    }
    match effect(x) {
        Effect::None => true,
        Effect::Read(load) => no_alias(rules, load, true, store, false),
        Effect::Write(other) => no_alias(rules, other, false, store, false),
        Effect::Barrier => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn access(address_space: u32, object: Object) -> Access {
        Access { address_space, object, invariant_load: false }
    }

    const AMDGPU: AliasRules = AliasRules { disjoint_segments: true, constant: &[4, 6] };
    const OTHER: AliasRules = AliasRules { disjoint_segments: false, constant: &[] };

    #[test]
    fn unknown_pointers_may_alias() {
        let a = access(1, Object::Unknown);
        assert!(!no_alias(AMDGPU, a, true, a, false));
        let p = access(1, Object::Param { key: 1, noalias: false });
        let q = access(1, Object::Param { key: 2, noalias: false });
        assert!(!no_alias(AMDGPU, p, true, q, false));
    }

    #[test]
    fn distinct_identified_objects_do_not_alias() {
        let p = access(1, Object::Param { key: 1, noalias: true });
        let q = access(1, Object::Param { key: 2, noalias: true });
        assert!(no_alias(OTHER, p, true, q, false));
        assert!(!no_alias(OTHER, p, true, p, false));
        let stack = access(0, Object::Alloca(3));
        let any_param = access(0, Object::Param { key: 4, noalias: false });
        assert!(no_alias(OTHER, stack, true, any_param, false));
        assert!(!no_alias(OTHER, stack, true, access(0, Object::Unknown), false));
    }

    #[test]
    fn amdgpu_segments_and_constant_memory() {
        let global = access(1, Object::Unknown);
        let lds = access(3, Object::Unknown);
        let flat = access(0, Object::Unknown);
        assert!(no_alias(AMDGPU, global, true, lds, false));
        assert!(!no_alias(AMDGPU, flat, true, lds, false));
        assert!(!no_alias(OTHER, global, true, lds, false));
        let constant = access(4, Object::Unknown);
        assert!(no_alias(AMDGPU, constant, true, global, false));
        // A store to constant memory is not a read of it.
        assert!(!no_alias(AMDGPU, global, true, constant, false));
        let invariant = Access { invariant_load: true, ..global };
        assert!(no_alias(OTHER, invariant, true, global, false));
    }
}
