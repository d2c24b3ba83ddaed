//! What each pointer the trace meets may be based on (a kernel parameter,
//! a stack slot, a global, anything else) and whether it may differ between
//! the lanes of a wave: facts solved to a fixpoint per function body under
//! the facts of its arguments, through stack slots, GEPs, casts, phis and
//! selects, and into callees small enough to read. Part of
//! `regtune-noalias-rank` (see [`super`]).
//!
//!   opt-22 -load-pass-plugin=target/debug/libregtune_passes.so \
//!     -passes=regtune-noalias-rank -disable-output pre-O3.bc

use std::collections::{BTreeSet, HashMap};
use std::rc::Rc;

use inkwell::attributes::{Attribute, AttributeLoc};
use inkwell::types::AnyTypeEnum;
use inkwell::values::{BasicValue, BasicValueEnum, CallSiteValue, FunctionValue, InstructionOpcode, InstructionValue};

use crate::ffi::ir::{self as llvm};
use crate::ir;

use super::body::{is_intrinsic, name_of, slot_of, Body};
use super::{Analyzer, MAX_CALLEE_INSTRUCTIONS, MAX_CALL_DEPTH, MAX_ROUNDS};

/// What a pointer may be based on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Origin {
    /// A kernel parameter, by index.
    Param(u32),
    /// A stack slot of the kernel or of a callee; alias analysis already
    /// tells those apart from anything a parameter reaches.
    Local,
    /// A global variable, or another constant address.
    Global,
    /// Anything else: loaded from memory, returned by an unknown function.
    Unknown,
}

pub(super) type Origins = BTreeSet<Origin>;

/// What the analysis knows about one value.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub(super) struct Fact {
    pub(super) origins: Origins,
    /// May differ between the lanes of a wave.
    pub(super) divergent: bool,
}

impl Fact {
    pub(super) fn of(origin: Origin) -> Fact {
        Fact { origins: BTreeSet::from([origin]), divergent: false }
    }

    fn unknown(divergent: bool) -> Fact {
        Fact { origins: BTreeSet::from([Origin::Unknown]), divergent }
    }

    /// Widen to cover `other`; true when that changed anything.
    fn join(&mut self, other: &Fact) -> bool {
        let before = (self.origins.len(), self.divergent);
        self.origins.extend(other.origins.iter().copied());
        self.divergent |= other.divergent;
        before != (self.origins.len(), self.divergent)
    }
}

/// The facts of one function body under one set of argument facts.
pub(super) struct Solution<'ctx> {
    env: Vec<Fact>,
    values: HashMap<InstructionValue<'ctx>, Fact>,
    slots: HashMap<InstructionValue<'ctx>, Fact>,
    ret: Fact,
}

/// Intrinsics whose result differs between lanes.
const DIVERGENT_INTRINSICS: &[&str] = &[
    "llvm.amdgcn.workitem.id.",
    "llvm.amdgcn.mbcnt.",
    "llvm.amdgcn.ds.bpermute",
    "llvm.amdgcn.ds.permute",
    "llvm.amdgcn.ds.swizzle",
    "llvm.amdgcn.mov.dpp",
    "llvm.amdgcn.update.dpp",
    "llvm.amdgcn.permlane",
    "llvm.nvvm.read.ptx.sreg.tid.",
    "llvm.nvvm.read.ptx.sreg.laneid",
];

fn may_hold_pointer(ty: AnyTypeEnum<'_>) -> bool {
    match ty {
        AnyTypeEnum::IntType(_) | AnyTypeEnum::FloatType(_) | AnyTypeEnum::VoidType(_) => false,
        AnyTypeEnum::VectorType(v) => v.get_element_type().is_pointer_type(),
        _ => true,
    }
}

/// A call's `memory(...)` effects (llvm/Support/ModRef.h: two bits per
/// location, ArgMem first, Other fourth; Mod is the high bit of a pair).
#[derive(Debug, Clone, Copy)]
pub(super) struct Effects(u64);

impl Effects {
    const ARG_MOD: u64 = 0b10;
    const OTHER_MOD: u64 = 0b10 << 6;
    /// ArgMem, InaccessibleMem, ErrnoMem, Other.
    const IR_LOCATIONS: u64 = 0xff;

    pub(super) fn of(call: Option<CallSiteValue<'_>>, callee: Option<FunctionValue<'_>>) -> Effects {
        let kind = Attribute::get_named_enum_kind_id("memory");
        let at_call = call.and_then(|c| c.get_enum_attribute(AttributeLoc::Function, kind));
        let at_callee = callee.and_then(|f| f.get_enum_attribute(AttributeLoc::Function, kind));
        let all = u64::MAX;
        let value = |a: Option<Attribute>| a.map_or(all, |a| a.get_enum_value());
        Effects(value(at_call) & value(at_callee))
    }

    fn none(self) -> bool {
        self.0 & Self::IR_LOCATIONS == 0
    }

    pub(super) fn writes_args(self) -> bool {
        self.0 & Self::ARG_MOD != 0
    }

    pub(super) fn writes_other(self) -> bool {
        self.0 & Self::OTHER_MOD != 0
    }
}

impl<'ctx> Analyzer<'ctx> {
    /// Solve `f` under `env` to a fixpoint (stack slots make later stores
    /// feed earlier loads in loops).
    pub(super) fn solve(&mut self, f: FunctionValue<'ctx>, env: Vec<Fact>) -> Rc<Solution<'ctx>> {
        let memo_key = (f, env);
        if let Some(s) = self.solved.get(&memo_key) {
            return s.clone();
        }
        let (f, env) = memo_key;
        let body = self.body(f);
        self.solving.push(f);
        let mut sol = Solution { env, values: HashMap::new(), slots: HashMap::new(), ret: Fact::default() };
        for _ in 0..MAX_ROUNDS {
            let mut changed = false;
            for &(inst, _) in &body.insts {
                self.budget = self.budget.saturating_sub(1);
                changed |= self.step(&body, &mut sol, inst);
            }
            if !changed {
                break;
            }
        }
        self.solving.pop();
        let sol = Rc::new(sol);
        self.solved.insert((f, sol.env.clone()), sol.clone());
        sol
    }

    /// Re-evaluate one instruction; true when a fact grew.
    fn step(&mut self, body: &Body<'ctx>, sol: &mut Solution<'ctx>, inst: InstructionValue<'ctx>) -> bool {
        match inst.get_opcode() {
            InstructionOpcode::Store => {
                let (Some(value), Some(ptr)) = (llvm::value_operand(inst, 0), llvm::value_operand(inst, 1)) else {
                    return false;
                };
                let Some((slot, _)) = slot_of(ptr) else {
                    return false;
                };
                let mut stored = fact(body, sol, value);
                stored.divergent |= fact(body, sol, ptr).divergent;
                sol.slots.entry(slot).or_default().join(&stored)
            }
            InstructionOpcode::Return => match llvm::value_operand(inst, 0) {
                Some(v) => {
                    let returned = fact(body, sol, v);
                    sol.ret.join(&returned)
                }
                None => false,
            },
            _ => {
                let new = self.transfer(body, sol, inst);
                sol.values.entry(inst).or_default().join(&new)
            }
        }
    }

    fn transfer(&mut self, body: &Body<'ctx>, sol: &Solution<'ctx>, inst: InstructionValue<'ctx>) -> Fact {
        use InstructionOpcode as Op;
        match inst.get_opcode() {
            Op::Alloca => Fact::of(Origin::Local),
            Op::Load => {
                let Some(ptr) = llvm::value_operand(inst, 0) else {
                    return Fact::unknown(true);
                };
                let address = fact(body, sol, ptr);
                let mut loaded = match slot_of(ptr) {
                    Some((slot, _)) => sol.slots.get(&slot).cloned().unwrap_or_default(),
                    None if may_hold_pointer(inst.get_type()) => Fact::of(Origin::Unknown),
                    None => Fact::default(),
                };
                loaded.divergent |= address.divergent;
                loaded
            }
            Op::Call => self.call_fact(body, sol, inst),
            Op::Invoke | Op::CallBr | Op::AtomicRMW | Op::AtomicCmpXchg | Op::VAArg | Op::LandingPad => {
                if may_hold_pointer(inst.get_type()) {
                    Fact::unknown(true)
                } else {
                    Fact { origins: Origins::new(), divergent: true }
                }
            }
            // Everything else computes its result from its operands.
            _ => {
                let mut out = Fact::default();
                for i in 0..inst.get_num_operands() {
                    if let Some(v) = llvm::value_operand(inst, i) {
                        out.join(&fact(body, sol, v));
                    }
                }
                out
            }
        }
    }

    fn call_fact(&mut self, body: &Body<'ctx>, sol: &Solution<'ctx>, inst: InstructionValue<'ctx>) -> Fact {
        let call = CallSiteValue::try_from(inst).ok();
        let callee = call.and_then(|c| c.get_called_fn_value());
        let args = call_args(inst, call);
        let arg_facts: Vec<Fact> = args.iter().map(|a| a.map(|v| fact(body, sol, v)).unwrap_or_default()).collect();
        let returns_pointer = may_hold_pointer(inst.get_type());
        if let Some(f) = callee {
            if is_intrinsic(f) {
                return intrinsic_fact(f, call, &args, &arg_facts, returns_pointer);
            }
            if self.may_descend(f, arg_facts.len()) {
                return self.solve(f, arg_facts).ret.clone();
            }
        }
        // An opaque call: it may return any pointer it was given, or another.
        let divergent = arg_facts.iter().any(|a| a.divergent) || !Effects::of(call, callee).none();
        if !returns_pointer {
            return Fact { origins: Origins::new(), divergent };
        }
        let mut out = Fact::unknown(divergent);
        for (a, f) in args.iter().zip(&arg_facts) {
            if a.is_some_and(|v| v.is_pointer_value()) {
                out.join(f);
            }
        }
        out
    }

    /// Whether a call to `f` is read as if inlined.
    fn may_descend(&mut self, f: FunctionValue<'ctx>, arg_count: usize) -> bool {
        if !ir::definition_is_exact(f)
            || f.get_params().len() != arg_count
            || self.solving.contains(&f)
            || self.solving.len() >= MAX_CALL_DEPTH
            || self.budget == 0
        {
            return false;
        }
        self.body(f).insts.len() <= MAX_CALLEE_INSTRUCTIONS
    }
}

/// The argument operands of a call, `None` where one is not a plain value
/// (metadata, a label).
pub(super) fn call_args<'ctx>(inst: InstructionValue<'ctx>, call: Option<CallSiteValue<'ctx>>) -> Vec<Option<BasicValueEnum<'ctx>>> {
    let count = match call {
        Some(c) => c.count_arguments(),
        // invoke / callbr: the callee (and destinations) come last.
        None => inst.get_num_operands().saturating_sub(1),
    };
    (0..count).map(|i| llvm::value_operand(inst, i)).collect()
}

/// The fact of any operand: an instruction's solved fact, an argument's
/// fact from the environment, or a constant's.
pub(super) fn fact<'ctx>(body: &Body<'ctx>, sol: &Solution<'ctx>, v: BasicValueEnum<'ctx>) -> Fact {
    if let Some(inst) = v.as_instruction_value() {
        return sol.values.get(&inst).cloned().unwrap_or_default();
    }
    if let Some(&i) = body.args.get(&v) {
        return sol.env.get(i).cloned().unwrap_or_default();
    }
    // A constant: a global's address (or a constant expression on one), or
    // a plain number.
    if v.is_pointer_value() {
        let p = v.into_pointer_value();
        if !p.is_null() && !p.is_undef() {
            return Fact::of(Origin::Global);
        }
    }
    Fact::default()
}

fn intrinsic_fact<'ctx>(
    f: FunctionValue<'ctx>,
    call: Option<CallSiteValue<'ctx>>,
    args: &[Option<BasicValueEnum<'ctx>>],
    arg_facts: &[Fact],
    returns_pointer: bool,
) -> Fact {
    let name = name_of(f);
    let effects = Effects::of(call, Some(f));
    if DIVERGENT_INTRINSICS.iter().any(|p| name.starts_with(p)) || effects.writes_other() || effects.writes_args() {
        return if returns_pointer { Fact::unknown(true) } else { Fact { origins: Origins::new(), divergent: true } };
    }
    // kernarg / dispatch / implicit-argument pointers: constant memory.
    if returns_pointer && !args.iter().flatten().any(|v| v.is_pointer_value()) {
        return Fact::of(Origin::Global);
    }
    let mut out = Fact::default();
    for a in arg_facts {
        out.join(a);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_effects_decode() {
        assert!(Effects(0).none());
        // memory(argmem: readwrite)
        assert!(Effects(0b11).writes_args() && !Effects(0b11).writes_other());
        // memory(read)
        let read = Effects(0b01_01_01_01);
        assert!(!read.writes_args() && !read.writes_other() && !read.none());
        assert!(Effects(u64::MAX).writes_other());
    }
}
