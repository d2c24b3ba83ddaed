//! Address keys for `regtune-noalias-rank`: equal keys for addresses
//! computed the same way from the same inputs, so the ranking can tell a
//! reload of an address from an access elsewhere (see [`super`]).
//!
//!   opt-22 -load-pass-plugin=target/debug/libregtune_passes.so \
//!     -passes=regtune-noalias-rank -disable-output pre-O3.bc

use std::collections::{BTreeSet, HashMap, HashSet};

use inkwell::values::{BasicValue, BasicValueEnum, CallSiteValue, FunctionValue, InstructionOpcode, InstructionValue};

use crate::ffi::ir::{self as llvm};
use crate::ir;
use crate::ir::opcodes::{is_integer_arithmetic, is_integer_division, is_integer_or_pointer_cast};

use super::body::{is_intrinsic, slot_of, Body};
use super::origins::{call_args, Effects, Solution};
use super::{Analyzer, MAX_CALLEE_INSTRUCTIONS, MAX_KEY_DEPTH};

/// An address expression, up to the names of its values.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum KeyNode<'ctx> {
    Param(u32),
    Constant(BasicValueEnum<'ctx>),
    /// A stack slot of one function instance, whatever it holds.
    Slot(u32, InstructionValue<'ctx>),
    Op(InstructionOpcode, Vec<u32>),
    Call(FunctionValue<'ctx>, Vec<u32>),
    Unique(u32, InstructionValue<'ctx>),
}

/// What key computation needs from one function instance.
pub(super) struct Instance<'a, 'ctx> {
    pub(super) id: u32,
    pub(super) body: &'a Body<'ctx>,
    pub(super) sol: &'a Solution<'ctx>,
    pub(super) arg_keys: &'a [u32],
    pub(super) memo: HashMap<BasicValueEnum<'ctx>, u32>,
    pub(super) slot_memo: HashMap<InstructionValue<'ctx>, u32>,
    pub(super) in_progress: HashSet<InstructionValue<'ctx>>,
}

impl<'ctx> Analyzer<'ctx> {
    pub(super) fn intern(&mut self, node: KeyNode<'ctx>) -> u32 {
        let next = u32::try_from(self.keys.len()).unwrap_or(u32::MAX);
        *self.keys.entry(node).or_insert(next)
    }

    pub(super) fn unique(&mut self, cx: &Instance<'_, 'ctx>, inst: InstructionValue<'ctx>) -> u32 {
        self.intern(KeyNode::Unique(cx.id, inst))
    }

    /// Equal keys for values computed the same way from the same inputs; a
    /// load of a stack slot stands for what is stored there when every
    /// store stores the same thing (a parameter spilled once), else for the
    /// slot itself (a loop counter).
    pub(super) fn key(&mut self, cx: &mut Instance<'_, 'ctx>, v: BasicValueEnum<'ctx>, depth: u32) -> u32 {
        if let Some(&k) = cx.memo.get(&v) {
            return k;
        }
        let k = match v.as_instruction_value() {
            None => match cx.body.args.get(&v) {
                Some(&i) => match cx.arg_keys.get(i) {
                    Some(&k) => k,
                    None => self.intern(KeyNode::Constant(v)),
                },
                None => self.intern(KeyNode::Constant(v)),
            },
            Some(inst) if depth >= MAX_KEY_DEPTH => self.unique(cx, inst),
            Some(inst) => self.instruction_key(cx, inst, depth),
        };
        cx.memo.insert(v, k);
        k
    }

    fn instruction_key(&mut self, cx: &mut Instance<'_, 'ctx>, inst: InstructionValue<'ctx>, depth: u32) -> u32 {
        use InstructionOpcode as Op;
        let op = inst.get_opcode();
        match op {
            Op::Load => match llvm::value_operand(inst, 0).and_then(slot_of) {
                Some((slot, true)) => self.slot_key(cx, slot, depth),
                Some((slot, false)) => self.intern(KeyNode::Slot(cx.id, slot)),
                None => self.unique(cx, inst),
            },
            // Address arithmetic: integer and pointer operations.
            _ if op == Op::GetElementPtr || is_integer_arithmetic(op) || is_integer_division(op) || is_integer_or_pointer_cast(op) => {
                let mut operands = Vec::new();
                for i in 0..inst.get_num_operands() {
                    match llvm::value_operand(inst, i) {
                        Some(v) => operands.push(self.key(cx, v, depth + 1)),
                        None => return self.unique(cx, inst),
                    }
                }
                self.intern(KeyNode::Op(op, operands))
            }
            Op::Call => {
                let call = CallSiteValue::try_from(inst).ok();
                let Some(f) = call.and_then(|c| c.get_called_fn_value()) else {
                    return self.unique(cx, inst);
                };
                if !self.is_pure(f, call) {
                    return self.unique(cx, inst);
                }
                let mut operands = Vec::new();
                for a in call_args(inst, call) {
                    match a {
                        Some(v) => operands.push(self.key(cx, v, depth + 1)),
                        None => return self.unique(cx, inst),
                    }
                }
                self.intern(KeyNode::Call(f, operands))
            }
            _ => self.unique(cx, inst),
        }
    }

    fn slot_key(&mut self, cx: &mut Instance<'_, 'ctx>, slot: InstructionValue<'ctx>, depth: u32) -> u32 {
        if let Some(&k) = cx.slot_memo.get(&slot) {
            return k;
        }
        let own = self.intern(KeyNode::Slot(cx.id, slot));
        let stores = cx.body.slot_stores.get(&slot).cloned().unwrap_or_default();
        if stores.is_empty() || stores.iter().any(|(_, direct)| !direct) || !cx.in_progress.insert(slot) {
            return own;
        }
        let mut stored = BTreeSet::new();
        for (v, _) in stores {
            stored.insert(self.key(cx, v, depth + 1));
        }
        cx.in_progress.remove(&slot);
        let k = match (stored.len(), stored.first()) {
            (1, Some(&k)) => k,
            _ => own,
        };
        cx.slot_memo.insert(slot, k);
        k
    }

    /// Calls with the same arguments return the same value: no writes to
    /// memory outside the callee's own stack, directly or through calls.
    fn is_pure(&mut self, f: FunctionValue<'ctx>, call: Option<CallSiteValue<'ctx>>) -> bool {
        let effects = Effects::of(call, Some(f));
        if !effects.writes_other() && !effects.writes_args() {
            return true;
        }
        if is_intrinsic(f) || !ir::definition_is_exact(f) {
            return false;
        }
        if let Some(&known) = self.pure.get(&f) {
            return known;
        }
        // Recursion is impure until shown otherwise.
        self.pure.insert(f, false);
        let body = self.body(f);
        let mut pure = body.insts.len() <= MAX_CALLEE_INSTRUCTIONS;
        for &(inst, _) in &body.insts {
            if !pure {
                break;
            }
            pure = match inst.get_opcode() {
                InstructionOpcode::Store => llvm::value_operand(inst, 1).and_then(slot_of).is_some(),
                InstructionOpcode::AtomicRMW | InstructionOpcode::AtomicCmpXchg | InstructionOpcode::Invoke => false,
                InstructionOpcode::Call => {
                    let c = CallSiteValue::try_from(inst).ok();
                    match c.and_then(|c| c.get_called_fn_value()) {
                        // lifetime markers and the like only touch the stack.
                        Some(g) if is_intrinsic(g) => {
                            let e = Effects::of(c, Some(g));
                            !e.writes_other()
                                && (!e.writes_args()
                                    || call_args(inst, c).iter().flatten().all(|v| !v.is_pointer_value() || slot_of(*v).is_some()))
                        }
                        Some(g) => self.is_pure(g, c),
                        None => false,
                    }
                }
                _ => true,
            };
        }
        self.pure.insert(f, pure);
        pure
    }
}
