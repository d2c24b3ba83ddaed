//! `regtune-sink`: shorten live ranges by moving each definition down to
//! just before its first use, and each store up to just after the values it
//! stores, the way GPU programmers do by hand to free registers.
//!
//! Two rewrites, in this order, per function:
//!
//!   1. Sink. A definition `x = op(a, b)` (a pure operation, a pure
//!      intrinsic call, or an ordinary load) moves from its place P to the
//!      point Q just before its earliest use, in the block that dominates all
//!      its uses (their nearest common dominator). A use by a PHI counts as a
//!      use at the end of the incoming block. `x` no longer holds a register
//!      between P and Q. Instructions move bottom-up, users before operands,
//!      so a chain (`gep` -> `load` -> `fmul`) moves as one.
//!   2. Hoist. A store `store v, p` moves up within its block to just after
//!      the last definition of `v` and `p` (or the first instruction it may
//!      not cross), when that ends the live range of `v` or `p` earlier.
//!
//! Why it is legal (`is_safe_to_move`, `is_acceptable_target`,
//! `store_may_cross`):
//!   - only pure instructions, pure intrinsic calls (`memory(none)`,
//!     `speculatable`, not `convergent`) and non-volatile, non-atomic loads
//!     sink, and only non-volatile, non-atomic stores hoist; PHIs, allocas,
//!     terminators, EH pads, other calls (convergent ones, barriers),
//!     atomics, fences and volatile accesses never move;
//!   - Q is dominated by P, and reached at most as often: never into a loop
//!     that does not contain P (natural loops, computed here from the CFG);
//!     in a function with an irreducible cycle, moves stay within a block;
//!   - all uses stay after the definition and all operands before it (Q is
//!     the earliest use; a store never rises above its operands);
//!   - a load crosses no instruction on any path from P to Q that may write
//!     its location: no call (other than a pure intrinsic), barrier, fence,
//!     atomic or volatile access, and no store unless it provably does not
//!     alias (`no_alias`: distinct identified objects, distinct AMDGPU/NVPTX
//!     address spaces, `!invariant.load`, constant address space); when one
//!     is in the way, the load stops just above it. A store crosses no such
//!     instruction, nor a load it may alias;
//!   - every move is checked once more on the IR just before it is made
//!     (`move_is_legal`), independently of the plan, and skipped if the
//!     check fails;
//!   - functions with EH pads, `invoke` or `callbr`, and `optnone`
//!     functions, are left alone.
//!
//! Profitability (`profitable`; LLVM's Sink.cpp FIXME): moving `x` down
//! frees its register between P and Q but extends the live ranges of its
//! operands that die at P. A move is planned only when the registers of the
//! operands it extends are fewer than the registers of `x`: operands still
//! live at Q (used later), moving along into the same block, and kernel
//! parameters (SGPR-resident kernarg) cost nothing; values made from
//! constants alone never move. The plan of all moves is computed first and
//! pruned to a fixed point, so that shared operands (`rmass` feeding both
//! `0.5*dt*rmass` and `1/rmass`) are judged with their users' final places.
//! Group effects are then checked by counting live registers over the IR
//! (`choose_moves`): reorderings within a block are kept only where they
//! lower that block's peak, and nothing is done when the function's peak
//! would rise. Output is deterministic: decisions follow block and
//! instruction order, never hash order.
//!
//!   opt-22 -load-pass-plugin=target/debug/libregtune_passes.so \
//!     -passes=regtune-sink in.ll -S -o out.ll

use std::collections::HashMap;

use inkwell::basic_block::BasicBlock;
use inkwell::values::{FunctionValue, InstructionOpcode, InstructionValue};

use crate::ffi::ir::successors;
use crate::ffi::sink::{self as llvm, Access, Def, Object, Source};
use crate::ir;

/// Functions larger than this are left alone: the analysis is quadratic in
/// the worst case, and the tuner would not wait for it.
const MAX_INSTRUCTIONS: usize = 50_000;
const MAX_BLOCKS: usize = 5_000;
/// Rounds of pruning the plan before giving up on a function (each round
/// drops at least one move; real kernels settle in a handful).
const MAX_ROUNDS: usize = 64;

/// Sink (and hoist stores) in `functions`; true when the IR changed.
pub fn run(functions: &[FunctionValue<'_>]) -> bool {
    let mut changed = false;
    for &f in functions {
        changed |= run_on_function(f);
    }
    changed
}

fn run_on_function(f: FunctionValue<'_>) -> bool {
    // Declarations have nothing to move; optnone asks for no optimisation.
    if f.count_basic_blocks() == 0 || llvm::has_fn_attribute(f, "optnone") {
        return false;
    }
    let Some(cfg) = Cfg::new(f) else {
        return false;
    };
    let rules = AliasRules::for_triple(&llvm::triple(f));
    let body = Body::new(f, &cfg, rules);
    let sunk = sink_definitions(&body, &cfg);
    let hoisted = hoist_stores(&cfg, rules);
    sunk || hoisted
}

// ---------------------------------------------------------------------------
// The CFG: blocks, dominators, natural loops.
// ---------------------------------------------------------------------------

struct Cfg<'ctx> {
    blocks: Vec<BasicBlock<'ctx>>,
    index: HashMap<BasicBlock<'ctx>, usize>,
    succs: Vec<Vec<usize>>,
    preds: Vec<Vec<usize>>,
    /// Reachable blocks in reverse post-order; the entry first.
    rpo: Vec<usize>,
    /// Immediate dominators (the entry is its own); None when unreachable.
    idom: Vec<Option<usize>>,
    /// Depth in the dominator tree.
    depth: Vec<usize>,
    /// The body of each natural loop (one per header), as a block mask.
    loops: Vec<Vec<bool>>,
    /// False when some cycle has no single header (irreducible control
    /// flow): natural loops do not describe it, so nothing leaves its block.
    reducible: bool,
}

impl<'ctx> Cfg<'ctx> {
    /// None for functions this pass does not handle (EH, callbr) or that are
    /// too large.
    fn new(f: FunctionValue<'ctx>) -> Option<Self> {
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
        let mut cfg = Cfg {
            blocks,
            index,
            succs,
            preds,
            rpo,
            idom: vec![None; n],
            depth: vec![0; n],
            loops: Vec::new(),
            reducible: true,
        };
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

    fn reachable(&self, b: usize) -> bool {
        self.idom[b].is_some()
    }

    fn dominates(&self, a: usize, mut b: usize) -> bool {
        if !self.reachable(a) || !self.reachable(b) {
            return false;
        }
        while self.depth[b] > self.depth[a] {
            b = self.idom[b].unwrap_or(b);
        }
        a == b
    }

    /// The nearest common dominator of two reachable blocks.
    fn nearest_common_dominator(&self, mut a: usize, mut b: usize) -> usize {
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

    /// Every loop that contains `to` also contains `from`: moving from
    /// `from` to `to` does not move into a loop.
    fn loop_ok(&self, from: usize, to: usize) -> bool {
        self.loops.iter().all(|body| !body[to] || body[from])
    }

    /// Blocks reachable from the end of `from` (through its successors)
    /// without entering `stop`.
    fn reach_from_end(&self, from: usize, stop: Option<usize>) -> Vec<bool> {
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
    fn between(&self, from: usize, to: usize) -> Vec<usize> {
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

// ---------------------------------------------------------------------------
// Memory: what each instruction does to it, and when two accesses overlap.
// ---------------------------------------------------------------------------

/// What an instruction does, as far as moving others across it goes.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Effect {
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

fn effect(inst: InstructionValue<'_>) -> Effect {
    use InstructionOpcode as Op;
    match inst.get_opcode() {
        op if is_pure_opcode(op) => Effect::None,
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

/// Operations that compute a value from their operands and nothing else.
fn is_pure_opcode(op: InstructionOpcode) -> bool {
    use InstructionOpcode as Op;
    // `ptrtoaddr` is new in LLVM 22.
    #[cfg(feature = "llvm22")]
    if op == Op::PtrToAddr {
        return true;
    }
    matches!(
        op,
        Op::Add
            | Op::Sub
            | Op::Mul
            | Op::UDiv
            | Op::SDiv
            | Op::URem
            | Op::SRem
            | Op::Shl
            | Op::LShr
            | Op::AShr
            | Op::And
            | Op::Or
            | Op::Xor
            | Op::FNeg
            | Op::FAdd
            | Op::FSub
            | Op::FMul
            | Op::FDiv
            | Op::FRem
            | Op::Trunc
            | Op::ZExt
            | Op::SExt
            | Op::FPTrunc
            | Op::FPExt
            | Op::FPToUI
            | Op::FPToSI
            | Op::UIToFP
            | Op::SIToFP
            | Op::PtrToInt
            | Op::IntToPtr
            | Op::BitCast
            | Op::AddrSpaceCast
            | Op::ICmp
            | Op::FCmp
            | Op::Select
            | Op::GetElementPtr
            | Op::ExtractElement
            | Op::InsertElement
            | Op::ShuffleVector
            | Op::ExtractValue
            | Op::InsertValue
            | Op::Freeze
    )
}

/// Address-space facts of the target, for [`no_alias`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct AliasRules {
    /// AMDGPU and NVPTX: global (1), shared/LDS (3) and private/local (5)
    /// are disjoint memories.
    disjoint_segments: bool,
    /// Address spaces that hold memory no kernel writes (AMDGPU constant 4
    /// and constant-32bit 6, NVPTX const 4): loads from them never alias
    /// a store.
    constant: &'static [u32],
}

impl AliasRules {
    fn for_triple(triple: &str) -> Self {
        if triple.starts_with("amdgcn") {
            AliasRules { disjoint_segments: true, constant: &[4, 6] }
        } else if triple.starts_with("nvptx") {
            AliasRules { disjoint_segments: true, constant: &[4] }
        } else {
            AliasRules { disjoint_segments: false, constant: &[] }
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
// A snapshot of the function: instructions, their uses and operands.
// ---------------------------------------------------------------------------

/// A value that may occupy registers over a live range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Value {
    Inst(usize),
    Param(u32),
}

/// Where a value is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Use {
    /// By this (non-PHI) instruction.
    At(usize),
    /// By a PHI, along the edge out of this block: a use at its end.
    EdgeEnd(usize),
}

struct Body<'ctx> {
    insts: Vec<InstructionValue<'ctx>>,
    block: Vec<usize>,
    pos: Vec<usize>,
    block_insts: Vec<Vec<usize>>,
    effect: Vec<Effect>,
    /// The registers (32-bit) a result occupies.
    regs: Vec<u64>,
    sources: Vec<Vec<Value>>,
    inst_uses: Vec<Vec<Use>>,
    param_uses: Vec<Vec<Use>>,
    param_regs: Vec<u64>,
    /// Kernel parameters live in SGPRs loaded from the kernarg segment.
    kernel: bool,
    rules: AliasRules,
}

/// 32-bit registers for a value of `bits` bits (an i1 takes one too);
/// none for `void`.
fn regs_of(bits: u64) -> u64 {
    bits.div_ceil(32)
}

impl<'ctx> Body<'ctx> {
    fn new(f: FunctionValue<'ctx>, cfg: &Cfg<'ctx>, rules: AliasRules) -> Self {
        let mut insts = Vec::new();
        let mut block = Vec::new();
        let mut pos = Vec::new();
        let mut block_insts = vec![Vec::new(); cfg.blocks.len()];
        for (b, bb) in cfg.blocks.iter().enumerate() {
            for (k, inst) in bb.get_instructions().enumerate() {
                block_insts[b].push(insts.len());
                insts.push(inst);
                block.push(b);
                pos.push(k);
            }
        }
        let id: HashMap<InstructionValue<'ctx>, usize> = insts.iter().enumerate().map(|(i, x)| (*x, i)).collect();
        let uses_of = |def: Def<'ctx>| -> Vec<Use> {
            let mut out = Vec::new();
            for u in llvm::users(def) {
                let Some(&uid) = id.get(&u) else {
                    continue;
                };
                if u.get_opcode() == InstructionOpcode::Phi {
                    for bb in llvm::phi_edges_of(u, def) {
                        if let Some(&b) = cfg.index.get(&bb) {
                            out.push(Use::EdgeEnd(b));
                        }
                    }
                } else {
                    out.push(Use::At(uid));
                }
            }
            out
        };
        let inst_uses = insts.iter().map(|i| uses_of(Def::Inst(*i))).collect();
        let n_params = f.count_params();
        let param_uses = (0..n_params).map(|n| uses_of(Def::Param(f, n))).collect();
        let sources = insts
            .iter()
            .map(|i| {
                llvm::sources(*i)
                    .into_iter()
                    .filter_map(|s| match s {
                        Source::Inst(x) => id.get(&x).map(|&k| Value::Inst(k)),
                        Source::Param(n) => Some(Value::Param(n)),
                        Source::Other => None,
                    })
                    .collect()
            })
            .collect();
        Body {
            effect: insts.iter().map(|i| effect(*i)).collect(),
            regs: insts.iter().map(|i| regs_of(llvm::result_bits(*i))).collect(),
            param_regs: (0..n_params).map(|n| regs_of(llvm::param_bits(f, n))).collect(),
            insts,
            block,
            pos,
            block_insts,
            sources,
            inst_uses,
            param_uses,
            kernel: ir::is_kernel(f),
            rules,
        }
    }

    fn uses(&self, v: Value) -> &[Use] {
        match v {
            Value::Inst(i) => &self.inst_uses[i],
            Value::Param(n) => self.param_uses.get(n as usize).map_or(&[], |u| u.as_slice()),
        }
    }

    fn terminator(&self, b: usize) -> Point {
        Point { block: b, at: self.block_insts[b].len().saturating_sub(1) }
    }
}

// ---------------------------------------------------------------------------
// 1. Sink definitions.
// ---------------------------------------------------------------------------

/// A place in the original function: just before instruction `at` (an
/// index into the block's original order) of `block`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Point {
    block: usize,
    at: usize,
}

/// Which instructions move, and where to.
struct Plan {
    moving: Vec<bool>,
    dest: Vec<Point>,
}

impl Plan {
    fn point(&self, body: &Body<'_>, i: usize) -> Point {
        if self.moving[i] {
            self.dest[i]
        } else {
            Point { block: body.block[i], at: body.pos[i] }
        }
    }
}

/// Legality of the instruction itself (LLVM Sink.cpp's `isSafeToMove`): a
/// pure operation, a pure intrinsic call, or an ordinary load, that defines
/// a value something uses. Never a PHI, alloca, terminator, EH pad, other
/// call, atomic, fence, or volatile access (those are not pure, and
/// volatile and atomic loads are barriers, not reads); never a token.
fn is_safe_to_move(body: &Body<'_>, i: usize) -> bool {
    let inst = body.insts[i];
    let kind_ok = match body.effect[i] {
        Effect::None => is_pure_opcode(inst.get_opcode()) || llvm::is_pure_intrinsic_call(inst),
        Effect::Read(_) => true,
        Effect::Write(_) | Effect::Barrier => false,
    };
    kind_ok && !llvm::has_token_type(inst) && llvm::result_bits(inst) > 0 && !body.inst_uses[i].is_empty()
}

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
        to = cfg.idom[to]?;
    }
    let at = points.iter().filter(|p| p.block == to).map(|p| p.at).min().unwrap_or(body.terminator(to).at);
    Some(Point { block: to, at })
}

/// Whether `dest` is somewhere else than where `i` already is.
fn moves(body: &Body<'_>, i: usize, dest: Point) -> bool {
    dest.block != body.block[i] || dest.at > body.pos[i] + 1
}

/// Legality of the destination (LLVM Sink.cpp's `IsAcceptableTarget`):
/// dominated by the source, in no loop the source is not in, and, for a
/// load, nothing on the way may write what it reads.
fn is_acceptable_target(body: &Body<'_>, cfg: &Cfg<'_>, i: usize, dest: Point) -> bool {
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
        block = cfg.idom[block]?;
        at = body.terminator(block).at;
    }
}

/// Whether a load may move past instruction `j`.
fn load_may_cross(body: &Body<'_>, load: Access, j: usize) -> bool {
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

/// Blocks reachable from a block's end without entering a value's
/// definition block, memoised (the CFG does not change while planning).
#[derive(Default)]
struct ReachCache {
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
fn profitable(body: &Body<'_>, cfg: &Cfg<'_>, plan: &Plan, reach: &mut ReachCache, i: usize, dest: Point) -> bool {
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

/// Plan every move, prune it to a fixed point, keep the moves register
/// pressure says pay off, then make them bottom-up (users first). True when
/// the IR changed.
fn sink_definitions(body: &Body<'_>, cfg: &Cfg<'_>) -> bool {
    // Users before their operands: blocks in reverse RPO (a block's
    // dominators come before it in RPO), each bottom-up.
    let order: Vec<usize> =
        cfg.rpo.iter().rev().flat_map(|&b| body.block_insts[b].iter().rev().copied()).collect();
    let Some(plan) = make_plan(body, cfg, &order) else {
        return false;
    };
    let moves = choose_moves(body, cfg, &order, &plan);
    let mut changed = false;
    for m in moves {
        changed |= move_before_first_use(body, cfg, m);
    }
    changed
}

/// Every legal, profitable move, as a fixed point: an instruction drops out
/// when it has no acceptable destination or stops paying off, and every
/// drop is re-judged against the others in the next round. None when the
/// rounds run out.
fn make_plan(body: &Body<'_>, cfg: &Cfg<'_>, order: &[usize]) -> Option<Plan> {
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

/// One planned move: instruction `inst` goes into `block`, just before its
/// first user there or before `anchor`, whichever comes first. The anchor
/// is the instruction at the planned point; it never moves itself (it is a
/// user that stays, a store or barrier the move may not pass, or the
/// terminator).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Move {
    inst: usize,
    block: usize,
    anchor: usize,
}

impl Move {
    fn is_local(&self, body: &Body<'_>) -> bool {
        body.block[self.inst] == self.block
    }
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
fn choose_moves(body: &Body<'_>, cfg: &Cfg<'_>, order: &[usize], plan: &Plan) -> Vec<Move> {
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
        .map(|b| {
            has_local[b]
                && peak_in_block(body, &with_all, &live_out, b) < peak_in_block(body, &with_cross, &live_out, b)
        })
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

/// Make a planned move in the IR as it is now: into the block, just before
/// the instruction's first user there or the anchor, whichever comes first.
/// The move is checked again on the IR itself ([`move_is_legal`]); one that
/// fails the check is not made (the instruction then stays above all its
/// users, so skipping it is always safe).
fn move_before_first_use(body: &Body<'_>, cfg: &Cfg<'_>, m: Move) -> bool {
    let inst = body.insts[m.inst];
    let anchor = body.insts[m.anchor];
    let Some(bb) = anchor.get_parent() else {
        return false;
    };
    let users = llvm::users(Def::Inst(inst));
    let Some(before) = bb
        .get_instructions()
        .find(|x| *x == anchor || (x.get_opcode() != InstructionOpcode::Phi && users.contains(x)))
    else {
        return false;
    };
    if inst.get_next_instruction() == Some(before) || !move_is_legal(body, cfg, inst, before) {
        return false;
    }
    llvm::move_before(inst, before);
    true
}

/// The legality of moving `inst` to just before `before`, judged on the IR
/// as it is now (independently of the plan): the destination is dominated
/// by the source, dominates every use, and is in no loop the source is not
/// in; for a load, every instruction on every path between may be crossed.
fn move_is_legal(body: &Body<'_>, cfg: &Cfg<'_>, inst: InstructionValue<'_>, before: InstructionValue<'_>) -> bool {
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
            llvm::phi_edges_of(u, Def::Inst(inst))
                .iter()
                .all(|e| cfg.index.get(e).is_some_and(|&b| cfg.dominates(to, b)))
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
    cfg.between(from, to).into_iter().all(whole)
        && tb.get_instructions().take_while(|i| *i != before).all(&may_cross)
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
fn store_may_cross(rules: AliasRules, store: Access, x: InstructionValue<'_>) -> bool {
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

/// Move each ordinary store up to just after the definitions of what it
/// stores (or the first instruction it may not cross), when it is the last
/// use of one of them there: the store then ends that live range earlier.
fn hoist_stores(cfg: &Cfg<'_>, rules: AliasRules) -> bool {
    let mut changed = false;
    for &b in &cfg.rpo {
        let stores: Vec<_> = cfg.blocks[b]
            .get_instructions()
            .filter(|i| matches!(effect(*i), Effect::Write(_)))
            .collect();
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

/// Profitability of hoisting: some value the store uses is defined in its
/// block and used by nothing else but earlier instructions of the block
/// (none of those the store would pass), so it dies at the store, and dies
/// earlier once the store rises. (A value from another block may be live
/// around a loop, and a kernel parameter sits in SGPRs: no gain assumed.)
fn ends_a_live_range(store: InstructionValue<'_>, operands: &[InstructionValue<'_>], crossed: &[InstructionValue<'_>]) -> bool {
    let block = store.get_parent();
    operands.iter().any(|v| {
        v.get_parent() == block
            && llvm::users(Def::Inst(*v)).iter().all(|u| {
                *u == store
                    || (u.get_parent() == block
                        && u.get_opcode() != InstructionOpcode::Phi
                        && !crossed.contains(u)
                        && !is_after(store, *u))
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
