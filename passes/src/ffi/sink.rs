//! The LLVM-C queries and the one IR edit `regtune-sink` needs that inkwell
//! does not offer, or offers through views that panic on IR it does not
//! model (token-typed users, metadata operands): use lists, PHI incoming
//! edges, call attributes, atomicity, underlying objects of pointers,
//! type sizes, and moving an instruction. `regtune-lds-spill` reads the
//! IR through the same queries (and [`result_shape`], [`is_convergent_call`]).

use std::ffi::CStr;

use inkwell::basic_block::BasicBlock;
use inkwell::values::{AsValueRef, FunctionValue, InstructionOpcode, InstructionValue};
use llvm_sys::core as c;
use llvm_sys::debuginfo as di;
use llvm_sys::prelude::LLVMValueRef;
use llvm_sys::target as t;
use llvm_sys::{LLVMOpcode, LLVMTypeKind};

/// `AttributeList::FunctionIndex`.
const FUNCTION_INDEX: u32 = u32::MAX;

/// Where a value an instruction uses comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source<'ctx> {
    /// Another instruction's result.
    Inst(InstructionValue<'ctx>),
    /// Parameter `n` of the enclosing function.
    Param(u32),
    /// A constant, global, block, metadata or inline asm: nothing that
    /// occupies a register over a live range.
    Other,
}

/// The distinct values `inst` uses, in operand order.
pub fn sources<'ctx>(inst: InstructionValue<'ctx>) -> Vec<Source<'ctx>> {
    let raw = inst.as_value_ref();
    let mut out = Vec::new();
    // SAFETY: `raw` is a live instruction; every index is below its operand count.
    let n = unsafe { c::LLVMGetNumOperands(raw) };
    for i in 0..n.max(0) as u32 {
        // SAFETY: i is in range; the operand may be null only for metadata.
        let op = unsafe { c::LLVMGetOperand(raw, i) };
        let s = source(op);
        if s != Source::Other && !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

fn source<'ctx>(v: LLVMValueRef) -> Source<'ctx> {
    if v.is_null() {
        return Source::Other;
    }
    // SAFETY: checked casts on a live value.
    if !unsafe { c::LLVMIsAInstruction(v) }.is_null() {
        // SAFETY: v is an instruction.
        return Source::Inst(unsafe { InstructionValue::new(v) });
    }
    // SAFETY: checked cast.
    if !unsafe { c::LLVMIsAArgument(v) }.is_null() {
        return param_index(v).map_or(Source::Other, Source::Param);
    }
    Source::Other
}

/// The position of an argument in its function's parameter list.
fn param_index(arg: LLVMValueRef) -> Option<u32> {
    // SAFETY: `arg` is an Argument, whose parent is a function.
    let f = unsafe { c::LLVMGetParamParent(arg) };
    if f.is_null() {
        return None;
    }
    // SAFETY: f is a function; each index is below its parameter count.
    (0..unsafe { c::LLVMCountParams(f) }).find(|&i| unsafe { c::LLVMGetParam(f, i) } == arg)
}

/// A value defined in a function: an instruction's result or a parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Def<'ctx> {
    Inst(InstructionValue<'ctx>),
    Param(FunctionValue<'ctx>, u32),
}

impl Def<'_> {
    /// The value itself; null for a parameter index out of range.
    fn raw(self) -> LLVMValueRef {
        match self {
            Def::Inst(i) => i.as_value_ref(),
            Def::Param(f, n) => {
                let raw = f.as_value_ref();
                // SAFETY: f is a live function.
                let count = unsafe { c::LLVMCountParams(raw) };
                if n >= count {
                    return std::ptr::null_mut();
                }
                // SAFETY: n is below the parameter count.
                unsafe { c::LLVMGetParam(raw, n) }
            }
        }
    }
}

/// The instructions that use `def`, each once, in use-list order.
pub fn users<'ctx>(def: Def<'ctx>) -> Vec<InstructionValue<'ctx>> {
    let v = def.raw();
    let mut out = Vec::new();
    if v.is_null() {
        return out;
    }
    // SAFETY: v is a live value; the use list is walked without changing it.
    let mut u = unsafe { c::LLVMGetFirstUse(v) };
    while !u.is_null() {
        // SAFETY: u is a live use.
        let user = unsafe { c::LLVMGetUser(u) };
        // SAFETY: checked cast; users that are not instructions (metadata
        // wrappers, constants) are skipped.
        if !user.is_null() && !unsafe { c::LLVMIsAInstruction(user) }.is_null() {
            // SAFETY: user is an instruction.
            let inst = unsafe { InstructionValue::new(user) };
            if !out.contains(&inst) {
                out.push(inst);
            }
        }
        // SAFETY: u is a live use.
        u = unsafe { c::LLVMGetNextUse(u) };
    }
    out
}

/// The incoming blocks along which `phi` receives `v`.
pub fn phi_edges_of<'ctx>(phi: InstructionValue<'ctx>, def: Def<'ctx>) -> Vec<BasicBlock<'ctx>> {
    let v = def.raw();
    if v.is_null() || phi.get_opcode() != InstructionOpcode::Phi {
        return Vec::new();
    }
    let raw = phi.as_value_ref();
    let mut out = Vec::new();
    // SAFETY: raw is a PHI node; every index is below its incoming count.
    for i in 0..unsafe { c::LLVMCountIncoming(raw) } {
        // SAFETY: as above.
        if unsafe { c::LLVMGetIncomingValue(raw, i) } == v {
            // SAFETY: as above; an incoming block is a live block.
            if let Some(bb) = unsafe { BasicBlock::new(c::LLVMGetIncomingBlock(raw, i)) } {
                out.push(bb);
            }
        }
    }
    out
}

/// Registers-worth of bits `inst` defines, by the module's data layout:
/// 0 for `void` and for types without a size (token, label, metadata).
pub fn result_bits(inst: InstructionValue<'_>) -> u64 {
    let raw = inst.as_value_ref();
    // SAFETY: raw is a live instruction with a type.
    let ty = unsafe { c::LLVMTypeOf(raw) };
    // SAFETY: ty is a live type.
    let kind = unsafe { c::LLVMGetTypeKind(ty) };
    if matches!(
        kind,
        LLVMTypeKind::LLVMVoidTypeKind
            | LLVMTypeKind::LLVMTokenTypeKind
            | LLVMTypeKind::LLVMLabelTypeKind
            | LLVMTypeKind::LLVMMetadataTypeKind
            | LLVMTypeKind::LLVMFunctionTypeKind
            | LLVMTypeKind::LLVMTargetExtTypeKind
            | LLVMTypeKind::LLVMScalableVectorTypeKind
    ) {
        return 0;
    }
    // SAFETY: ty is sized (checked above: every remaining first-class kind
    // is); the data layout belongs to the module, which outlives the call.
    unsafe { t::LLVMSizeOfTypeInBits(data_layout(inst), ty) }
}

/// Whether the result's type is one a value can have and be moved with
/// (not token: tokens cannot be moved away from their users' constraints).
pub fn has_token_type(inst: InstructionValue<'_>) -> bool {
    // SAFETY: inst is a live instruction.
    let kind = unsafe { c::LLVMGetTypeKind(c::LLVMTypeOf(inst.as_value_ref())) };
    kind == LLVMTypeKind::LLVMTokenTypeKind
}

/// The bits a parameter of `f` holds.
pub fn param_bits(f: FunctionValue<'_>, n: u32) -> u64 {
    let raw = f.as_value_ref();
    // SAFETY: f is a live function.
    if n >= unsafe { c::LLVMCountParams(raw) } {
        return 0;
    }
    // SAFETY: n is in range; arguments have first-class, sized types
    // (unless they are metadata or labels, which parameters cannot be).
    let ty = unsafe { c::LLVMTypeOf(c::LLVMGetParam(raw, n)) };
    // SAFETY: as above.
    let kind = unsafe { c::LLVMGetTypeKind(ty) };
    if matches!(
        kind,
        LLVMTypeKind::LLVMTokenTypeKind
            | LLVMTypeKind::LLVMMetadataTypeKind
            | LLVMTypeKind::LLVMLabelTypeKind
            | LLVMTypeKind::LLVMTargetExtTypeKind
            | LLVMTypeKind::LLVMScalableVectorTypeKind
    ) {
        return 0;
    }
    // SAFETY: the module of a live function is live; ty is sized.
    unsafe { t::LLVMSizeOfTypeInBits(t::LLVMGetModuleDataLayout(c::LLVMGetGlobalParent(raw)), ty) }
}

fn data_layout(inst: InstructionValue<'_>) -> t::LLVMTargetDataRef {
    // SAFETY: a live instruction in a block of a function of a module
    // (the caller only asks about instructions inside functions).
    unsafe {
        let bb = c::LLVMGetInstructionParent(inst.as_value_ref());
        let f = c::LLVMGetBasicBlockParent(bb);
        t::LLVMGetModuleDataLayout(c::LLVMGetGlobalParent(f))
    }
}

/// The target triple of the module `f` lives in.
pub fn triple(f: FunctionValue<'_>) -> String {
    // SAFETY: a live function's module is live; the triple is a C string
    // the module owns.
    unsafe {
        let m = c::LLVMGetGlobalParent(f.as_value_ref());
        let p = c::LLVMGetTarget(m);
        if p.is_null() {
            return String::new();
        }
        CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

fn enum_kind(name: &str) -> u32 {
    // SAFETY: the name's bytes are read, not kept.
    unsafe { c::LLVMGetEnumAttributeKindForName(name.as_ptr().cast(), name.len()) }
}

/// The enum attribute `name` at `index` of a function (FUNCTION_INDEX for
/// the function itself, n + 1 for parameter n), with its integer value.
fn fn_attribute(f: LLVMValueRef, index: u32, name: &str) -> Option<u64> {
    let kind = enum_kind(name);
    if kind == 0 {
        return None;
    }
    // SAFETY: f is a live function; LLVM returns null for a missing attribute.
    let a = unsafe { c::LLVMGetEnumAttributeAtIndex(f, index, kind) };
    // SAFETY: a is a live enum attribute.
    (!a.is_null()).then(|| unsafe { c::LLVMGetEnumAttributeValue(a) })
}

fn call_attribute(call: LLVMValueRef, name: &str) -> Option<u64> {
    let kind = enum_kind(name);
    if kind == 0 {
        return None;
    }
    // SAFETY: call is a live call base.
    let a = unsafe { c::LLVMGetCallSiteEnumAttribute(call, FUNCTION_INDEX, kind) };
    // SAFETY: a is a live enum attribute.
    (!a.is_null()).then(|| unsafe { c::LLVMGetEnumAttributeValue(a) })
}

/// Whether a function carries the enum attribute `name` (`optnone`).
pub fn has_fn_attribute(f: FunctionValue<'_>, name: &str) -> bool {
    fn_attribute(f.as_value_ref(), FUNCTION_INDEX, name).is_some()
}

/// A call LLVM may execute anywhere, any number of times, with no effect
/// but its result: a direct call to an intrinsic that is `memory(none)`
/// and `speculatable`, and not `convergent` (`llvm.rint`, `llvm.fma`,
/// `llvm.amdgcn.workitem.id.x`; not `llvm.amdgcn.s.barrier`, which is
/// `memory(none)` but neither speculatable nor free to move).
pub fn is_pure_intrinsic_call(inst: InstructionValue<'_>) -> bool {
    if inst.get_opcode() != InstructionOpcode::Call {
        return false;
    }
    let raw = inst.as_value_ref();
    // SAFETY: raw is a call; its called operand is a live value.
    let callee = unsafe { c::LLVMGetCalledValue(raw) };
    // SAFETY: checked cast.
    if callee.is_null() || unsafe { c::LLVMIsAFunction(callee) }.is_null() {
        return false;
    }
    // SAFETY: callee is a function.
    if unsafe { c::LLVMGetIntrinsicID(callee) } == 0 {
        return false;
    }
    // memory(none) is the MemoryEffects encoding 0.
    let no_memory = fn_attribute(callee, FUNCTION_INDEX, "memory") == Some(0) || call_attribute(raw, "memory") == Some(0);
    let speculatable = fn_attribute(callee, FUNCTION_INDEX, "speculatable").is_some() || call_attribute(raw, "speculatable").is_some();
    let convergent = fn_attribute(callee, FUNCTION_INDEX, "convergent").is_some() || call_attribute(raw, "convergent").is_some();
    no_memory && speculatable && !convergent
}

/// Whether a call, invoke or callbr is `convergent`, at the call site or
/// on the function it calls directly (`llvm.amdgcn.readlane`,
/// `llvm.nvvm.shfl.sync.*`, barriers, a convergent inline asm).
pub fn is_convergent_call(inst: InstructionValue<'_>) -> bool {
    if !matches!(inst.get_opcode(), InstructionOpcode::Call | InstructionOpcode::Invoke | InstructionOpcode::CallBr) {
        return false;
    }
    let raw = inst.as_value_ref();
    if call_attribute(raw, "convergent").is_some() {
        return true;
    }
    // SAFETY: raw is a call base; its called operand is a live value.
    let callee = unsafe { c::LLVMGetCalledValue(raw) };
    // SAFETY: checked cast.
    !callee.is_null() && !unsafe { c::LLVMIsAFunction(callee) }.is_null() && fn_attribute(callee, FUNCTION_INDEX, "convergent").is_some()
}

/// The type of an instruction's result, as far as a register or a 32-bit
/// memory word holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `iN`.
    Int(u32),
    /// `half`, `float`, `double`...: the width in bits.
    Float(u32),
    /// `ptr addrspace(N)`.
    Pointer { address_space: u32 },
    /// A vector of `i1`: a lane mask.
    MaskVector,
    /// Anything else (other vectors, aggregates, void, token...).
    Other,
}

pub fn result_shape(inst: InstructionValue<'_>) -> Shape {
    // SAFETY: inst is a live instruction; its type is a live type.
    let ty = unsafe { c::LLVMTypeOf(inst.as_value_ref()) };
    // SAFETY: as above.
    match unsafe { c::LLVMGetTypeKind(ty) } {
        // SAFETY: an integer type.
        LLVMTypeKind::LLVMIntegerTypeKind => Shape::Int(unsafe { c::LLVMGetIntTypeWidth(ty) }),
        LLVMTypeKind::LLVMHalfTypeKind | LLVMTypeKind::LLVMBFloatTypeKind => Shape::Float(16),
        LLVMTypeKind::LLVMFloatTypeKind => Shape::Float(32),
        LLVMTypeKind::LLVMDoubleTypeKind => Shape::Float(64),
        LLVMTypeKind::LLVMX86_FP80TypeKind => Shape::Float(80),
        LLVMTypeKind::LLVMFP128TypeKind | LLVMTypeKind::LLVMPPC_FP128TypeKind => Shape::Float(128),
        // SAFETY: a pointer type.
        LLVMTypeKind::LLVMPointerTypeKind => Shape::Pointer { address_space: unsafe { c::LLVMGetPointerAddressSpace(ty) } },
        LLVMTypeKind::LLVMVectorTypeKind => {
            // SAFETY: a vector type has an element type.
            let element = unsafe { c::LLVMGetElementType(ty) };
            // SAFETY: a live type.
            let mask = unsafe { c::LLVMGetTypeKind(element) } == LLVMTypeKind::LLVMIntegerTypeKind
                // SAFETY: an integer type.
                && unsafe { c::LLVMGetIntTypeWidth(element) } == 1;
            if mask {
                Shape::MaskVector
            } else {
                Shape::Other
            }
        }
        _ => Shape::Other,
    }
}

/// Whether an instruction is atomic (an atomic load or store, atomicrmw,
/// cmpxchg, fence).
pub fn is_atomic(inst: InstructionValue<'_>) -> bool {
    // SAFETY: inst is a live instruction.
    unsafe { super::compat::LLVMIsAtomic(inst.as_value_ref()) != 0 }
}

/// Whether `inst` carries the `!kind` attachment.
pub fn has_metadata(inst: InstructionValue<'_>, kind: &str) -> bool {
    let raw = inst.as_value_ref();
    // SAFETY: raw is a live instruction, so its type and context are; the
    // kind name's bytes are read, not kept.
    let id = unsafe {
        let ctx = c::LLVMGetTypeContext(c::LLVMTypeOf(raw));
        c::LLVMGetMDKindIDInContext(ctx, kind.as_ptr().cast(), kind.len() as u32)
    };
    // SAFETY: raw is a live instruction; null when there is no attachment.
    !unsafe { c::LLVMGetMetadata(raw, id) }.is_null()
}

/// What a pointer is based on, as far as casts and GEPs show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Object {
    /// A stack object of this function (the key tells objects apart).
    Alloca(usize),
    /// A global variable (not an alias, which may name another global).
    Global(usize),
    /// A parameter of this function; `noalias` when no other pointer the
    /// function sees may reach its object.
    Param { key: usize, noalias: bool },
    /// Anything else: a loaded pointer, a select, a PHI, a call result.
    Unknown,
}

impl Object {
    /// An object only pointers based on it can reach (LLVM's
    /// `isIdentifiedObject`): distinct identified objects never overlap.
    pub fn is_identified(self) -> bool {
        matches!(self, Object::Alloca(_) | Object::Global(_) | Object::Param { noalias: true, .. })
    }
}

/// The memory an ordinary load or store touches, for the no-alias rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    pub address_space: u32,
    pub object: Object,
    /// `!invariant.load`: the location holds one value for the whole run.
    pub invariant_load: bool,
}

/// The access of a load or store; `None` for anything else.
pub fn access(inst: InstructionValue<'_>) -> Option<Access> {
    let ptr_index = match inst.get_opcode() {
        InstructionOpcode::Load => 0,
        InstructionOpcode::Store => 1,
        _ => return None,
    };
    let raw = inst.as_value_ref();
    // SAFETY: loads have one operand and stores two.
    let ptr = unsafe { c::LLVMGetOperand(raw, ptr_index) };
    if ptr.is_null() {
        return None;
    }
    // SAFETY: ptr is a live value of pointer type (or vector of pointers
    // in no load or store, but check the kind anyway).
    let ty = unsafe { c::LLVMTypeOf(ptr) };
    // SAFETY: ty is a live type.
    if unsafe { c::LLVMGetTypeKind(ty) } != LLVMTypeKind::LLVMPointerTypeKind {
        return None;
    }
    Some(Access {
        // SAFETY: ty is a pointer type.
        address_space: unsafe { c::LLVMGetPointerAddressSpace(ty) },
        object: underlying_object(ptr),
        invariant_load: ptr_index == 0 && has_metadata(inst, "invariant.load"),
    })
}

/// Strip GEPs and pointer casts (instructions and constant expressions)
/// down to the object a pointer is based on.
fn underlying_object(mut v: LLVMValueRef) -> Object {
    // A bounded walk, as LLVM's getUnderlyingObject has one.
    for _ in 0..32 {
        // SAFETY: checked casts on a live value.
        let opcode = unsafe {
            if !c::LLVMIsAInstruction(v).is_null() {
                Some(c::LLVMGetInstructionOpcode(v))
            } else if !c::LLVMIsAConstantExpr(v).is_null() {
                Some(c::LLVMGetConstOpcode(v))
            } else {
                None
            }
        };
        match opcode {
            Some(LLVMOpcode::LLVMGetElementPtr | LLVMOpcode::LLVMBitCast | LLVMOpcode::LLVMAddrSpaceCast) => {
                // SAFETY: each of these has the pointer as operand 0.
                v = unsafe { c::LLVMGetOperand(v, 0) };
                if v.is_null() {
                    return Object::Unknown;
                }
            }
            _ => break,
        }
    }
    let key = v as usize;
    // SAFETY: checked casts on a live value.
    unsafe {
        if !c::LLVMIsAAllocaInst(v).is_null() {
            return Object::Alloca(key);
        }
        if !c::LLVMIsAGlobalVariable(v).is_null() {
            return Object::Global(key);
        }
        if !c::LLVMIsAArgument(v).is_null() {
            let f = c::LLVMGetParamParent(v);
            let noalias = match param_index(v) {
                Some(n) if !f.is_null() => fn_attribute(f, n + 1, "noalias").is_some(),
                _ => false,
            };
            return Object::Param { key, noalias };
        }
    }
    Object::Unknown
}

/// Move `inst` to just before `anchor` (in any block), keeping its name,
/// operands, metadata and debug location, as LLVM's `moveBefore` does.
/// Debug records attached in front of `inst` stay where they were.
pub fn move_before(inst: InstructionValue<'_>, anchor: InstructionValue<'_>) {
    if inst == anchor {
        return;
    }
    let (i, a) = (inst.as_value_ref(), anchor.as_value_ref());
    // SAFETY: both are live instructions in blocks of the same function
    // (the caller's invariant). The instruction is unlinked and relinked
    // before `anchor` through a builder, which would stamp it with the
    // anchor's debug location and an empty name: both are put back.
    unsafe {
        let dl = di::LLVMInstructionGetDebugLoc(i);
        let mut len = 0;
        let name_ptr = c::LLVMGetValueName2(i, &mut len);
        let name = if name_ptr.is_null() { Vec::new() } else { std::slice::from_raw_parts(name_ptr.cast::<u8>(), len).to_vec() };
        let mut name_z = name;
        name_z.push(0);
        let ctx = c::LLVMGetTypeContext(c::LLVMTypeOf(i));
        let builder = c::LLVMCreateBuilderInContext(ctx);
        c::LLVMInstructionRemoveFromParent(i);
        c::LLVMPositionBuilderBefore(builder, a);
        c::LLVMInsertIntoBuilderWithName(builder, i, name_z.as_ptr().cast());
        c::LLVMDisposeBuilder(builder);
        di::LLVMInstructionSetDebugLoc(i, dl);
    }
}
