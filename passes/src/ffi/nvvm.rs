//! `!nvvm.annotations`, where LLVM 19 marks NVPTX kernels and their launch
//! limits (LLVM 20 on uses the `ptx_kernel` calling convention and
//! `"nvvm.*"` function attributes, and upgrades old IR to them): nodes
//! `!{ptr @f, !"key", i32 value, ...}`, key-value pairs after the global.

use inkwell::values::{AsValueRef, FunctionValue};
use llvm_sys::core as c;
use llvm_sys::prelude::{LLVMModuleRef, LLVMValueRef};

const NAMED_NODE: &std::ffi::CStr = c"nvvm.annotations";

/// One `!"key", i32 value` pair of an annotation node.
struct Pair {
    node: LLVMValueRef,
    /// Operand index of the value.
    index: u32,
    key: String,
    value: Option<i64>,
}

/// The pairs annotating `f`.
fn pairs_of(f: FunctionValue<'_>) -> Vec<Pair> {
    let raw = f.as_value_ref();
    // SAFETY: f is a live function, so it has a parent module.
    let module = unsafe { c::LLVMGetGlobalParent(raw) };
    let mut pairs = Vec::new();
    for node in named_nodes(module) {
        let ops = node_operands(node);
        if ops.first() != Some(&raw) {
            continue;
        }
        for index in (1..ops.len().saturating_sub(1)).step_by(2) {
            if let Some(key) = md_string(ops[index]) {
                pairs.push(Pair { node, index: index as u32 + 1, key, value: const_int(ops[index + 1]) });
            }
        }
    }
    pairs
}

/// The value of `!"key"` for `f`, if an annotation gives one.
pub fn annotation(f: FunctionValue<'_>, key: &str) -> Option<i64> {
    pairs_of(f).into_iter().find(|p| p.key == key).and_then(|p| p.value)
}

/// Annotate `f` with `!"key", i32 value`: replace the value of the pair
/// that has the key, else add a node. False when it already had the value.
pub fn set_annotation(f: FunctionValue<'_>, key: &str, value: u32) -> bool {
    let raw = f.as_value_ref();
    // SAFETY: f is a live function; its type's context is the module's.
    let ctx = unsafe { c::LLVMGetTypeContext(c::LLVMTypeOf(raw)) };
    // SAFETY: an i32 constant of that context, wrapped as metadata.
    let value_md = unsafe { c::LLVMValueAsMetadata(c::LLVMConstInt(c::LLVMInt32TypeInContext(ctx), value.into(), 0)) };
    if let Some(pair) = pairs_of(f).into_iter().find(|p| p.key == key) {
        if pair.value == Some(value.into()) {
            return false;
        }
        // SAFETY: pair.node is an MDNode with an operand at pair.index.
        unsafe { c::LLVMReplaceMDNodeOperandWith(pair.node, pair.index, value_md) };
        return true;
    }
    // SAFETY: the global, the key string and the constant belong to this
    // context; the node is added to the module f lives in.
    unsafe {
        let mut ops = [c::LLVMValueAsMetadata(raw), c::LLVMMDStringInContext2(ctx, key.as_ptr().cast(), key.len()), value_md];
        let node = c::LLVMMDNodeInContext2(ctx, ops.as_mut_ptr(), ops.len());
        c::LLVMAddNamedMetadataOperand(c::LLVMGetGlobalParent(raw), NAMED_NODE.as_ptr(), c::LLVMMetadataAsValue(ctx, node));
    }
    true
}

/// The nodes of `!nvvm.annotations`, as values.
fn named_nodes(module: LLVMModuleRef) -> Vec<LLVMValueRef> {
    // SAFETY: module is live; the name is NUL-terminated.
    let n = unsafe { c::LLVMGetNamedMetadataNumOperands(module, NAMED_NODE.as_ptr()) } as usize;
    let mut nodes = vec![std::ptr::null_mut(); n];
    // SAFETY: `nodes` has room for the n operands LLVM writes.
    unsafe { c::LLVMGetNamedMetadataOperands(module, NAMED_NODE.as_ptr(), nodes.as_mut_ptr()) };
    nodes
}

/// The operands of an MDNode value (a global, a string or a constant
/// appear as themselves; a null operand as null).
fn node_operands(node: LLVMValueRef) -> Vec<LLVMValueRef> {
    // SAFETY: checked cast.
    if node.is_null() || unsafe { c::LLVMIsAMDNode(node) }.is_null() {
        return Vec::new();
    }
    // SAFETY: node wraps an MDNode.
    let n = unsafe { c::LLVMGetMDNodeNumOperands(node) } as usize;
    let mut ops = vec![std::ptr::null_mut(); n];
    // SAFETY: `ops` has room for the n operands LLVM writes.
    unsafe { c::LLVMGetMDNodeOperands(node, ops.as_mut_ptr()) };
    ops
}

fn md_string(v: LLVMValueRef) -> Option<String> {
    // SAFETY: checked cast.
    if v.is_null() || unsafe { c::LLVMIsAMDString(v) }.is_null() {
        return None;
    }
    let mut len = 0;
    // SAFETY: v wraps an MDString; LLVM returns its bytes and length.
    let ptr = unsafe { c::LLVMGetMDString(v, &mut len) };
    if ptr.is_null() {
        return None;
    }
    // SAFETY: ptr points at len bytes owned by the context.
    let bytes = unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len as usize) };
    Some(String::from_utf8_lossy(bytes).into_owned())
}

fn const_int(v: LLVMValueRef) -> Option<i64> {
    // SAFETY: checked cast; a ConstantInt of at most 64 bits reads as i64.
    if v.is_null() || unsafe { c::LLVMIsAConstantInt(v) }.is_null() || unsafe { c::LLVMGetIntTypeWidth(c::LLVMTypeOf(v)) } > 64 {
        return None;
    }
    // SAFETY: v is a ConstantInt of at most 64 bits.
    Some(unsafe { c::LLVMConstIntGetSExtValue(v) })
}
