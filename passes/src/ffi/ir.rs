//! Safe wrappers over the LLVM-C calls inkwell does not wrap, or wraps in
//! ways that panic on IR it does not model (token, label and metadata
//! operands). Each function checks what LLVM-C would otherwise assert.

use std::marker::PhantomData;
use std::mem::ManuallyDrop;

use inkwell::basic_block::BasicBlock;
use inkwell::builder::Builder;
use inkwell::context::{AsContextRef, ContextRef};
use inkwell::module::Module;
use inkwell::types::{BasicType, BasicTypeEnum};
use inkwell::values::{AsValueRef, BasicValueEnum, FunctionValue, InstructionOpcode, InstructionValue, IntValue, PointerValue};
use llvm_sys::core as c;
use llvm_sys::debuginfo as di;
use llvm_sys::prelude::{LLVMContextRef, LLVMMetadataRef, LLVMModuleRef, LLVMValueRef};
use llvm_sys::LLVMTypeKind;

/// Run `f` on a module the caller (opt, clang) owns. The inkwell `Module`
/// is never dropped, so it never disposes of the caller's module, and its
/// lifetime cannot escape `f`.
///
/// # Safety
/// `raw` must be a live module that nothing else uses while `f` runs.
pub unsafe fn with_module<R>(raw: LLVMModuleRef, f: impl for<'ctx> FnOnce(&Module<'ctx>) -> R) -> R {
    assert!(!raw.is_null(), "null module");
    // SAFETY: the caller guarantees a live module for the duration of the
    // call; ManuallyDrop keeps inkwell from disposing of it.
    let module = ManuallyDrop::new(unsafe { Module::new(raw) });
    f(&module)
}

/// The successors of a terminator (inkwell's operand view panics on token
/// operands such as `catchswitch within none`).
pub fn successors<'ctx>(term: InstructionValue<'ctx>) -> Vec<BasicBlock<'ctx>> {
    if !term.is_terminator() {
        return Vec::new();
    }
    let raw = term.as_value_ref();
    // SAFETY: `raw` is a terminator instruction, as checked above.
    let n = unsafe { c::LLVMGetNumSuccessors(raw) };
    (0..n)
        // SAFETY: i < the successor count; a successor is a live block.
        .filter_map(|i| unsafe { BasicBlock::new(c::LLVMGetSuccessor(raw, i)) })
        .collect()
}

/// The function a call, invoke or callbr calls directly, if any.
pub fn direct_callee<'ctx>(inst: InstructionValue<'ctx>) -> Option<FunctionValue<'ctx>> {
    if !matches!(inst.get_opcode(), InstructionOpcode::Call | InstructionOpcode::Invoke | InstructionOpcode::CallBr) {
        return None;
    }
    // SAFETY: `inst` is a call base, so it has a called operand; FunctionValue::new
    // checks that it is a function (and not, say, a bitcast or an asm).
    unsafe { FunctionValue::new(c::LLVMGetCalledValue(inst.as_value_ref())) }
}

/// Operand `i` of an instruction as a value, when it is a first-class value
/// inkwell can model (not a block, metadata, token or label).
pub fn value_operand<'ctx>(inst: InstructionValue<'ctx>, i: u32) -> Option<BasicValueEnum<'ctx>> {
    if i >= inst.get_num_operands() {
        return None;
    }
    // SAFETY: i is in range.
    let v = unsafe { c::LLVMGetOperand(inst.as_value_ref(), i) };
    basic_value(v)
}

fn basic_value<'ctx>(v: LLVMValueRef) -> Option<BasicValueEnum<'ctx>> {
    if v.is_null() {
        return None;
    }
    // SAFETY: v is a live value; its type decides what it may be wrapped as.
    let kind = unsafe { c::LLVMGetTypeKind(c::LLVMTypeOf(v)) };
    let basic = matches!(
        kind,
        LLVMTypeKind::LLVMHalfTypeKind
            | LLVMTypeKind::LLVMBFloatTypeKind
            | LLVMTypeKind::LLVMFloatTypeKind
            | LLVMTypeKind::LLVMDoubleTypeKind
            | LLVMTypeKind::LLVMX86_FP80TypeKind
            | LLVMTypeKind::LLVMFP128TypeKind
            | LLVMTypeKind::LLVMPPC_FP128TypeKind
            | LLVMTypeKind::LLVMIntegerTypeKind
            | LLVMTypeKind::LLVMPointerTypeKind
            | LLVMTypeKind::LLVMVectorTypeKind
            | LLVMTypeKind::LLVMStructTypeKind
            | LLVMTypeKind::LLVMArrayTypeKind
    );
    // SAFETY: the type kind is one BasicValueEnum models.
    basic.then(|| unsafe { BasicValueEnum::new(v) })
}

/// Element `i` of a constant vector (also a splat or zeroinitializer).
pub fn constant_element<'ctx>(v: BasicValueEnum<'ctx>, i: u32) -> Option<BasicValueEnum<'ctx>> {
    let raw = v.as_value_ref();
    // SAFETY: LLVMIsAConstant is a checked cast.
    if unsafe { c::LLVMIsAConstant(raw) }.is_null() {
        return None;
    }
    // SAFETY: raw is a constant; getAggregateElement returns null when i is
    // out of range or the constant has no elements.
    basic_value(unsafe { c::LLVMGetAggregateElement(raw, i) })
}

/// The value of a scalar floating-point constant, when a double holds it
/// exactly.
pub fn const_float(v: BasicValueEnum<'_>) -> Option<f64> {
    let raw = v.as_value_ref();
    // SAFETY: LLVMIsAConstantFP is a checked cast.
    if unsafe { c::LLVMIsAConstantFP(raw) }.is_null() {
        return None;
    }
    let mut loses_info = 0;
    // SAFETY: raw is a ConstantFP.
    let x = unsafe { c::LLVMConstRealGetDouble(raw, &mut loses_info) };
    (loses_info == 0).then_some(x)
}

/// The value of a scalar integer constant of at most 64 bits, sign-extended.
pub fn const_int(v: BasicValueEnum<'_>) -> Option<i64> {
    let raw = v.as_value_ref();
    // SAFETY: LLVMIsAConstantInt is a checked cast.
    if unsafe { c::LLVMIsAConstantInt(raw) }.is_null() {
        return None;
    }
    // SAFETY: raw is a ConstantInt, so its type is an integer type.
    if unsafe { c::LLVMGetIntTypeWidth(c::LLVMTypeOf(raw)) } > 64 {
        return None;
    }
    // SAFETY: raw is a ConstantInt of at most 64 bits.
    Some(unsafe { c::LLVMConstIntGetSExtValue(raw) })
}

/// Replace every use of `old` with `new`; false (and nothing done) when the
/// types differ.
pub fn replace_all_uses<'ctx>(old: InstructionValue<'ctx>, new: BasicValueEnum<'ctx>) -> bool {
    let (o, n) = (old.as_value_ref(), new.as_value_ref());
    // SAFETY: both are live values.
    if unsafe { c::LLVMTypeOf(o) != c::LLVMTypeOf(n) } {
        return false;
    }
    // SAFETY: same type, as checked; RAUW is defined for any two values.
    unsafe { c::LLVMReplaceAllUsesWith(o, n) };
    true
}

/// Whether anything (a call, a global initializer, llvm.used) refers to `f`.
/// The source line of an instruction's debug location; 0 without one.
pub fn debug_line(inst: InstructionValue<'_>) -> u32 {
    // SAFETY: a live instruction; LLVM answers 0 when it has no location.
    unsafe { c::LLVMGetDebugLocLine(inst.as_value_ref()) }
}

pub fn has_uses(f: FunctionValue<'_>) -> bool {
    // SAFETY: f is a live function.
    !unsafe { c::LLVMGetFirstUse(f.as_value_ref()) }.is_null()
}

/// Delete a function nothing refers to; false (and nothing done) otherwise.
pub fn delete_unused_function(f: FunctionValue<'_>) -> bool {
    if has_uses(f) {
        return false;
    }
    // SAFETY: no use refers to f, so erasing it leaves no dangling operand;
    // the caller drops its handle (FunctionValue is consumed).
    unsafe { f.delete() };
    true
}

extern "C" {
    /// shim/plugin.cpp: `Function::deleteBody()`, which LLVM-C lacks.
    fn regtune_delete_body(f: LLVMValueRef);
}

/// Turn a definition into a declaration: its blocks go, references from
/// them with them, and its linkage becomes external (`Function::deleteBody`).
pub fn delete_body(f: FunctionValue<'_>) {
    if f.count_basic_blocks() == 0 {
        return;
    }
    // SAFETY: f is a live function; deleteBody drops the references its
    // instructions hold before erasing them, so nothing dangles. Uses of f
    // itself stay valid: a declaration is still a function.
    unsafe { regtune_delete_body(f.as_value_ref()) };
}

/// A metadata node or string, as LLVM-C's `LLVMMetadataRef`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Md<'ctx> {
    raw: LLVMMetadataRef,
    ctx: LLVMContextRef,
    _ctx: PhantomData<&'ctx ()>,
}

/// One operand of a metadata node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MdOperand<'ctx> {
    Null,
    /// An `!"string"`.
    String(Md<'ctx>, String),
    /// A constant integer such as the `i32 4` of `!{!"llvm.loop.unroll.count", i32 4}`.
    Int(Md<'ctx>, i64),
    /// Another node (or anything else, kept as is).
    Other(Md<'ctx>),
}

impl<'ctx> MdOperand<'ctx> {
    pub fn md(&self) -> Option<Md<'ctx>> {
        match self {
            MdOperand::Null => None,
            MdOperand::String(m, _) | MdOperand::Int(m, _) | MdOperand::Other(m) => Some(*m),
        }
    }
}

impl<'ctx> Md<'ctx> {
    fn new(raw: LLVMMetadataRef, ctx: LLVMContextRef) -> Self {
        Md { raw, ctx, _ctx: PhantomData }
    }

    fn as_value(self) -> LLVMValueRef {
        // SAFETY: both refer to live objects of the same context.
        unsafe { c::LLVMMetadataAsValue(self.ctx, self.raw) }
    }

    /// The operands of a node; empty for anything that is not a node.
    pub fn operands(self) -> Vec<MdOperand<'ctx>> {
        let v = self.as_value();
        // SAFETY: checked cast.
        if unsafe { c::LLVMIsAMDNode(v) }.is_null() {
            return Vec::new();
        }
        // SAFETY: v wraps an MDNode.
        let n = unsafe { c::LLVMGetMDNodeNumOperands(v) } as usize;
        let mut ops: Vec<LLVMValueRef> = vec![std::ptr::null_mut(); n];
        // SAFETY: `ops` has room for the n operands LLVM writes.
        unsafe { c::LLVMGetMDNodeOperands(v, ops.as_mut_ptr()) };
        ops.into_iter().map(|op| self.operand(op)).collect()
    }

    fn operand(self, op: LLVMValueRef) -> MdOperand<'ctx> {
        if op.is_null() {
            return MdOperand::Null;
        }
        // SAFETY: op is a live value (a constant, or metadata as a value).
        let md = Md::new(unsafe { c::LLVMValueAsMetadata(op) }, self.ctx);
        // SAFETY: checked cast.
        if !unsafe { c::LLVMIsAMDString(op) }.is_null() {
            let mut len = 0;
            // SAFETY: op wraps an MDString; LLVM returns its bytes and length.
            let ptr = unsafe { c::LLVMGetMDString(op, &mut len) };
            if ptr.is_null() {
                return MdOperand::Other(md);
            }
            // SAFETY: ptr points at len bytes owned by the context.
            let bytes = unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len as usize) };
            return MdOperand::String(md, String::from_utf8_lossy(bytes).into_owned());
        }
        // SAFETY: checked cast; the value of a ConstantAsMetadata operand is
        // handed out as the constant itself.
        if !unsafe { c::LLVMIsAConstantInt(op) }.is_null() {
            if let Some(n) = basic_value(op).and_then(const_int) {
                return MdOperand::Int(md, n);
            }
        }
        MdOperand::Other(md)
    }
}

/// `!"s"`.
pub fn md_string<'ctx>(ctx: ContextRef<'ctx>, s: &str) -> Md<'ctx> {
    let cx = ctx.as_ctx_ref();
    // SAFETY: the bytes are copied into the context.
    Md::new(unsafe { c::LLVMMDStringInContext2(cx, s.as_ptr().cast(), s.len()) }, cx)
}

/// `!{!"name", i32 n}`, or `!{!"name"}` without a value.
pub fn md_property<'ctx>(ctx: ContextRef<'ctx>, name: &str, value: Option<u32>) -> Md<'ctx> {
    let cx = ctx.as_ctx_ref();
    let mut ops = vec![md_string(ctx, name).raw];
    if let Some(n) = value {
        // SAFETY: a constant of a type of this context, wrapped as metadata.
        ops.push(unsafe { c::LLVMValueAsMetadata(c::LLVMConstInt(c::LLVMInt32TypeInContext(cx), n.into(), 0)) });
    }
    // SAFETY: `ops` holds live metadata of this context.
    Md::new(unsafe { c::LLVMMDNodeInContext2(cx, ops.as_mut_ptr(), ops.len()) }, cx)
}

/// A loop ID: `distinct !{<self>, ops...}`.
///
/// LLVM-C cannot create a distinct node directly, so this builds the node
/// around a temporary first operand and then points that operand at the
/// node itself; LLVM turns a uniqued node that refers to itself into a
/// distinct one (MDNode::handleChangedOperand), exactly the shape
/// `MDNode::getDistinct` + `replaceOperandWith(0, ...)` gives in C++.
pub fn loop_id<'ctx>(ctx: ContextRef<'ctx>, ops: &[Md<'ctx>]) -> Md<'ctx> {
    let cx = ctx.as_ctx_ref();
    // SAFETY: an empty temporary node of this context.
    let temp = unsafe { di::LLVMTemporaryMDNode(cx, std::ptr::null_mut(), 0) };
    let mut all: Vec<LLVMMetadataRef> = std::iter::once(temp).chain(ops.iter().map(|m| m.raw)).collect();
    // SAFETY: `all` holds live metadata of this context.
    let node = unsafe { c::LLVMMDNodeInContext2(cx, all.as_mut_ptr(), all.len()) };
    // SAFETY: temp is a temporary node; this replaces its one use (operand 0
    // of `node`) with `node` and deletes temp.
    unsafe { di::LLVMMetadataReplaceAllUsesWith(temp, node) };
    Md::new(node, cx)
}

/// The `!kind` attachment of an instruction.
pub fn get_md<'ctx>(inst: InstructionValue<'ctx>, kind: &str) -> Option<Md<'ctx>> {
    let ctx = inst.get_parent()?.get_context();
    let cx = ctx.as_ctx_ref();
    let id = ctx.get_kind_id(kind);
    // SAFETY: inst is a live instruction; LLVMGetMetadata returns null
    // when there is no such attachment.
    let v = unsafe { c::LLVMGetMetadata(inst.as_value_ref(), id) };
    if v.is_null() {
        return None;
    }
    // SAFETY: v is metadata wrapped as a value.
    Some(Md::new(unsafe { c::LLVMValueAsMetadata(v) }, cx))
}

/// Attach `md` to an instruction as `!kind`.
pub fn set_md<'ctx>(inst: InstructionValue<'ctx>, kind: &str, md: Md<'ctx>) {
    let Some(bb) = inst.get_parent() else {
        return;
    };
    let id = bb.get_context().get_kind_id(kind);
    // SAFETY: inst is a live instruction and md metadata of its context.
    unsafe { c::LLVMSetMetadata(inst.as_value_ref(), id, md.as_value()) };
}

/// `getelementptr inbounds <ty>, ptr <base>, <indices>` at the builder's
/// position (inkwell marks GEP building `unsafe`: LLVM asserts, rather than
/// reports, indices that do not fit the type). `regtune-lds-spill` builds
/// its slot addresses with it.
pub fn in_bounds_gep<'ctx, T: BasicType<'ctx>>(
    builder: &Builder<'ctx>,
    ty: T,
    base: PointerValue<'ctx>,
    indices: &[IntValue<'ctx>],
    name: &str,
) -> Option<PointerValue<'ctx>> {
    // Every index after the first steps into an array: check the types the
    // way GetElementPtrInst::getIndexedType does, before LLVM asserts.
    let mut element = ty.as_basic_type_enum();
    for _ in 1..indices.len() {
        let BasicTypeEnum::ArrayType(array) = element else { return None };
        element = array.get_element_type();
    }
    // SAFETY: the indices are integers (their type says so) that step only
    // into arrays (checked above), so LLVM can type the GEP.
    unsafe { builder.build_in_bounds_gep(ty, base, indices, name) }.ok()
}

/// The bytes a global variable's definition allocates (its value type's
/// ABI size in the module's data layout); `None` for a declaration or an
/// unsized type.
pub fn global_alloc_bytes(global: inkwell::values::GlobalValue<'_>) -> Option<u64> {
    if global.is_declaration() {
        return None;
    }
    let raw = global.as_value_ref();
    // SAFETY: raw is a live global variable of a live module.
    unsafe {
        let ty = c::LLVMGlobalGetValueType(raw);
        if c::LLVMTypeIsSized(ty) == 0 {
            return None;
        }
        let layout = llvm_sys::target::LLVMGetModuleDataLayout(c::LLVMGetGlobalParent(raw));
        Some(llvm_sys::target::LLVMABISizeOfType(layout, ty))
    }
}
