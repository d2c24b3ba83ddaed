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
//!
//! The pass in three files over the CFG [`crate::ir::cfg`] gives (blocks,
//! dominators, natural loops): `legality.rs` (what may move, and across
//! what), `placement.rs` (where each definition goes, the plan, and the moves
//! themselves) and `profitability.rs` (whether a move frees registers: live
//! ranges and register pressure). This one takes the snapshot of a function
//! they share and runs the two rewrites.

mod legality;
mod placement;
mod profitability;

use std::collections::HashMap;

use inkwell::values::{FunctionValue, InstructionOpcode, InstructionValue};

use crate::ffi::sink::{self as llvm, Def, Source};
use crate::ir;
use crate::ir::cfg::Cfg;

use legality::{effect, AliasRules, Effect};
use placement::{hoist_stores, make_plan, move_before_first_use};
use profitability::choose_moves;

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
    let rules = AliasRules::of(ir::Target::of_function(f));
    let body = Body::new(f, &cfg, rules);
    let sunk = sink_definitions(&body, &cfg);
    let hoisted = hoist_stores(&cfg, rules);
    sunk || hoisted
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
// The plan: which instructions move, and where to.
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

/// Plan every move, prune it to a fixed point, keep the moves register
/// pressure says pay off, then make them bottom-up (users first). True when
/// the IR changed.
fn sink_definitions(body: &Body<'_>, cfg: &Cfg<'_>) -> bool {
    // Users before their operands: blocks in reverse RPO (a block's
    // dominators come before it in RPO), each bottom-up.
    let order: Vec<usize> = cfg.rpo.iter().rev().flat_map(|&b| body.block_insts[b].iter().rev().copied()).collect();
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
