//! The trace `regtune-noalias-rank` scores: the kernel's memory accesses,
//! callees read in place. It reads the IR before optimisation, as clang
//! emits it with `-Xclang -disable-llvm-passes`: every parameter spilled to
//! an alloca and loaded back, each access a GEP on such a load, helpers not
//! yet inlined.
//! The analysis follows each pointer parameter through stack slots (store,
//! load back), GEPs, casts, phis and selects, and into directly called
//! functions small enough to read (as if inlined at the call). It lists the
//! kernel's accesses to memory other than its own stack, in an order where
//! each comes after what may run before it (loops kept together), each
//! with the parameters its pointer may be based on, whether its address is
//! uniform across the wave, and the loops around it.
//!
//!   opt-22 -load-pass-plugin=target/debug/libregtune_passes.so \
//!     -passes=regtune-noalias-rank -disable-output pre-O3.bc

use std::collections::{BTreeSet, HashMap, HashSet};

use inkwell::values::{BasicValueEnum, CallSiteValue, FunctionValue, InstructionOpcode, InstructionValue};
use inkwell::{AddressSpace, AtomicOrdering};

use crate::ffi::ir::{self as llvm};

use super::body::name_of;
use super::keys::{Instance, KeyNode};
use super::origins::{call_args, fact, Effects, Fact, Origin, Origins, Solution};
use super::Analyzer;

const FLAT: u32 = 0;
pub(super) const GLOBAL: u32 = 1;
const PRIVATE: u32 = 5;

/// AMDGPU address spaces that are all global memory underneath.
fn is_global_memory(space: u32) -> bool {
    matches!(space, 1 | 4 | 6 | 7 | 8 | 9)
}

/// Constant memory: nothing writes it while a kernel runs.
fn is_constant_memory(space: u32) -> bool {
    matches!(space, 4 | 6)
}

pub(super) fn spaces_may_alias(a: u32, b: u32) -> bool {
    a == b || a == FLAT || b == FLAT || (is_global_memory(a) && is_global_memory(b))
}

/// One access to memory that is not the stack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Access {
    pub(super) write: bool,
    /// A load optimisations may move or merge (not volatile, not atomic).
    pub(super) movable: bool,
    pub(super) origins: Origins,
    /// Address space, after looking through casts to flat.
    pub(super) space: u32,
    /// The address is the same in every lane.
    pub(super) uniform: bool,
    /// Equal keys: the same address expression.
    pub(super) key: u32,
    /// Position in the kernel, callees inlined: what may run before an
    /// access comes earlier, except around loops.
    pub(super) seq: u32,
    /// The loops around the access.
    pub(super) loops: Vec<u32>,
    /// A fence: orders every access, whatever noalias says.
    pub(super) fence: bool,
}

impl Access {
    pub(super) fn single_param(&self) -> Option<u32> {
        match (self.origins.len(), self.origins.first()) {
            (1, Some(Origin::Param(p))) => Some(*p),
            _ => None,
        }
    }

    pub(super) fn is_movable_load(&self) -> bool {
        !self.write && self.movable && !is_constant_memory(self.space)
    }

    pub(super) fn shares_loop(&self, other: &Access) -> bool {
        self.loops.iter().any(|l| other.loops.contains(l))
    }

    pub(super) fn may_run_before(&self, other: &Access) -> bool {
        self.seq < other.seq || self.shares_loop(other)
    }
}

pub(super) fn trace(kernel: FunctionValue<'_>) -> Vec<Access> {
    let mut a = Analyzer::new(kernel);
    let env: Vec<Fact> = kernel
        .get_params()
        .iter()
        .enumerate()
        .map(|(i, p)| match u32::try_from(i) {
            Ok(i) if p.is_pointer_value() => Fact::of(Origin::Param(i)),
            _ => Fact::default(),
        })
        .collect();
    let solution = a.solve(kernel, env);
    let keys: Vec<u32> = (0..kernel.count_params()).map(|i| a.intern(KeyNode::Param(i))).collect();
    a.collect(kernel, &solution, &keys, &[]);
    a.trace
}

/// A pointer's address space as a number.
pub(super) fn space_of(ptr: BasicValueEnum<'_>) -> u32 {
    if !ptr.is_pointer_value() {
        return FLAT;
    }
    let space = ptr.into_pointer_value().get_type().get_address_space();
    (0u16..=16).find(|&n| AddressSpace::from(n) == space).map_or(u32::MAX, u32::from)
}

impl<'ctx> Analyzer<'ctx> {
    /// Append the accesses of `f` (solved as `sol`) to the trace, reading
    /// the callees that were solved as if inlined at their call.
    fn collect(&mut self, f: FunctionValue<'ctx>, sol: &Solution<'ctx>, arg_keys: &[u32], outer_loops: &[u32]) {
        let body = self.body(f);
        self.collecting.push(f);
        let loop_base = self.next_loop;
        self.next_loop = self.next_loop.saturating_add(body.loop_count);
        let mut inst_ctx = Instance {
            id: self.next_instance,
            body: &body,
            sol,
            arg_keys,
            memo: HashMap::new(),
            slot_memo: HashMap::new(),
            in_progress: HashSet::new(),
        };
        self.next_instance += 1;
        for &(inst, block) in &body.insts {
            let loops: Vec<u32> =
                outer_loops.iter().copied().chain(body.block_loops[block].iter().map(|l| l.saturating_add(loop_base))).collect();
            match inst.get_opcode() {
                InstructionOpcode::Load => {
                    let movable = !inst.get_volatile().unwrap_or(true)
                        && inst.get_atomic_ordering().is_ok_and(|o| o == AtomicOrdering::NotAtomic)
                        && llvm::get_md(inst, "invariant.load").is_none();
                    if let Some(ptr) = llvm::value_operand(inst, 0) {
                        self.record(&mut inst_ctx, ptr, false, movable, &loops);
                    }
                }
                InstructionOpcode::Store => {
                    if let Some(ptr) = llvm::value_operand(inst, 1) {
                        self.record(&mut inst_ctx, ptr, true, false, &loops);
                    }
                }
                InstructionOpcode::AtomicRMW | InstructionOpcode::AtomicCmpXchg => {
                    if let Some(ptr) = llvm::value_operand(inst, 0) {
                        self.record(&mut inst_ctx, ptr, true, false, &loops);
                    }
                }
                InstructionOpcode::Call | InstructionOpcode::Invoke | InstructionOpcode::CallBr => {
                    self.collect_call(&mut inst_ctx, inst, &loops);
                }
                InstructionOpcode::Fence => {
                    let key = self.unique(&inst_ctx, inst);
                    let origins = BTreeSet::from([Origin::Unknown]);
                    self.push(Access { write: true, movable: false, origins, space: FLAT, uniform: true, key, seq: 0, loops, fence: true });
                }
                _ => {}
            }
        }
        self.collecting.pop();
    }

    fn collect_call(&mut self, cx: &mut Instance<'_, 'ctx>, inst: InstructionValue<'ctx>, loops: &[u32]) {
        let call = CallSiteValue::try_from(inst).ok();
        let callee = call.and_then(|c| c.get_called_fn_value());
        let args = call_args(inst, call);
        let pointer_args: Vec<BasicValueEnum<'ctx>> = args.iter().flatten().copied().filter(|v| v.is_pointer_value()).collect();
        if let Some(f) = callee {
            let name = name_of(f);
            if name.starts_with("llvm.memset") {
                if let Some(dst) = args.first().copied().flatten() {
                    self.record(cx, dst, true, false, loops);
                }
                return;
            }
            if name.starts_with("llvm.memcpy") || name.starts_with("llvm.memmove") {
                if let Some(dst) = args.first().copied().flatten() {
                    self.record(cx, dst, true, false, loops);
                }
                if let Some(src) = args.get(1).copied().flatten() {
                    self.record(cx, src, false, false, loops);
                }
                return;
            }
            let env: Vec<Fact> = args.iter().map(|a| a.map(|v| fact(cx.body, cx.sol, v)).unwrap_or_default()).collect();
            let solved = (!self.collecting.contains(&f)).then(|| self.solved.get(&(f, env))).flatten().cloned();
            if let Some(sol) = solved {
                let mut keys = Vec::with_capacity(args.len());
                for a in &args {
                    keys.push(match a {
                        Some(v) => self.key(cx, *v, 0),
                        None => self.unique(cx, inst),
                    });
                }
                self.collect(f, &sol, &keys, loops);
                return;
            }
        }
        // Opaque: what its memory attribute allows.
        let effects = Effects::of(call, callee);
        if effects.writes_other() {
            let mut origins = BTreeSet::from([Origin::Unknown]);
            for v in &pointer_args {
                origins.extend(fact(cx.body, cx.sol, *v).origins);
            }
            let key = self.unique(cx, inst);
            self.push(Access {
                write: true,
                movable: false,
                origins,
                space: FLAT,
                uniform: false,
                key,
                seq: 0,
                loops: loops.to_vec(),
                fence: false,
            });
        } else if effects.writes_args() {
            for v in pointer_args {
                self.record(cx, v, true, false, loops);
            }
        }
    }

    fn record(&mut self, cx: &mut Instance<'_, 'ctx>, ptr: BasicValueEnum<'ctx>, write: bool, movable: bool, loops: &[u32]) {
        let f = fact(cx.body, cx.sol, ptr);
        let mut origins = f.origins;
        if origins.is_empty() {
            origins.insert(Origin::Unknown);
        }
        // The stack: alias analysis already knows what may touch it.
        if origins.iter().all(|o| *o == Origin::Local) {
            return;
        }
        let space = self.effective_space(space_of(ptr), &origins);
        let key = self.key(cx, ptr, 0);
        self.push(Access { write, movable, origins, space, uniform: !f.divergent, key, seq: 0, loops: loops.to_vec(), fence: false });
    }

    fn push(&mut self, mut access: Access) {
        access.seq = self.seq;
        self.seq = self.seq.saturating_add(1);
        self.trace.push(access);
    }

    /// A flat pointer's address space is the one of what it is based on,
    /// when they all agree (InferAddressSpaces recovers it before codegen).
    fn effective_space(&self, declared: u32, origins: &Origins) -> u32 {
        if declared != FLAT {
            return declared;
        }
        let mut spaces = origins.iter().map(|o| match o {
            Origin::Param(i) => self.param_spaces.get(*i as usize).copied().unwrap_or(FLAT),
            Origin::Local => PRIVATE,
            Origin::Global | Origin::Unknown => FLAT,
        });
        let first = spaces.next().unwrap_or(FLAT);
        if spaces.all(|s| s == first) {
            first
        } else {
            FLAT
        }
    }
}
