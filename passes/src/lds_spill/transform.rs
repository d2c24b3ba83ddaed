//! `regtune-lds-spill`'s rewrite: the spill array, the thread's flat id and
//! slot address, and for each spilled value a store right after its
//! definition and a reload right before each use. See [`super`] for the
//! pass and why it is legal.
//!
//!   opt-22 -load-pass-plugin=target/debug/libregtune_passes.so \
//!     -passes='regtune-lds-spill<8>' in.ll -S -o out.ll

use inkwell::attributes::AttributeLoc;
use inkwell::basic_block::BasicBlock;
use inkwell::builder::Builder;
use inkwell::intrinsics::Intrinsic;
use inkwell::module::{Linkage, Module};
use inkwell::types::{ArrayType, BasicType, BasicTypeEnum, IntType};
use inkwell::values::{
    AnyValue, AsValueRef, BasicValue, BasicValueEnum, FunctionValue, InstructionOpcode, InstructionValue, IntValue, PhiValue, PointerValue,
};
use inkwell::AddressSpace;

use crate::ffi::ir::{in_bounds_gep, value_operand};
use crate::ffi::sink::{self as llvm, Def};

use super::legality::{array_name, Kernel, Target, SHARED};

/// A value to keep in LDS, in words `slot..slot + words` of its thread.
#[derive(Debug, Clone, Copy)]
pub(super) struct Spill<'ctx> {
    pub(super) value: InstructionValue<'ctx>,
    pub(super) slot: u32,
    pub(super) words: u32,
}

/// AMDGPU attributes (the AMDGPU attributor's, at -O3) that say the kernel
/// reads no thread id or dispatch packet: the thread id below reads them.
const AMDGPU_NO_INPUTS: &[&str] =
    &["amdgpu-no-workitem-id-x", "amdgpu-no-workitem-id-y", "amdgpu-no-workitem-id-z", "amdgpu-no-dispatch-ptr"];

/// The HSA dispatch packet's `workgroup_size_x` and `_y` (u16 each).
const DISPATCH_WORKGROUP_SIZE_X: u64 = 4;
const DISPATCH_WORKGROUP_SIZE_Y: u64 = 6;

/// Make the spills; `None` if the builder refused something on the way,
/// which leaves valid IR that computes the same values (a value is either
/// untouched, or stored, with some of its uses reading the copy).
pub(super) fn rewrite<'ctx>(module: &Module<'ctx>, kernel: FunctionValue<'ctx>, k: Kernel, spills: &[Spill<'ctx>]) -> Option<()> {
    let context = module.get_context();
    let i32_type = context.i32_type();
    let words = spills.iter().map(|s| s.slot + s.words).max()?;
    // [S x [B x i32]]: slot s of thread t is word s*B + t.
    let slot_type = i32_type.array_type(k.block);
    let array_type = slot_type.array_type(words);
    let array = module.add_global(array_type, Some(AddressSpace::from(SHARED)), &array_name(kernel));
    array.set_linkage(Linkage::Internal);
    array.set_initializer(&array_type.get_undef());
    array.set_alignment(4);

    let builder = context.create_builder();
    // After the entry block's allocas: every value is defined below.
    let entry = kernel.get_first_basic_block()?;
    let first = entry.get_instructions().find(|i| i.get_opcode() != InstructionOpcode::Alloca)?;
    builder.position_before(&first);
    let tid = match k.target {
        Target::Amdgpu => amdgpu_thread_id(module, &builder)?,
        Target::Nvptx => nvptx_thread_id(module, &builder)?,
    };
    if k.target == Target::Amdgpu {
        for name in AMDGPU_NO_INPUTS {
            kernel.remove_string_attribute(AttributeLoc::Function, name);
        }
    }
    let zero = i32_type.const_zero();
    // &array[0][tid]: this thread's word of slot 0.
    let base = in_bounds_gep(&builder, array_type, array.as_pointer_value(), &[zero, zero, tid], "regtune.lds.slot0")?;
    // Where each store goes, found before any is made: spilled PHIs of a
    // block are stored in their order, after the block's last PHI.
    let anchors: Vec<InstructionValue<'ctx>> = spills.iter().map(|s| store_anchor(s.value)).collect::<Option<_>>()?;
    let split = match k.target {
        Target::Nvptx => Some(NvptxHalves {
            low: intrinsic(module, "llvm.nvvm.d2i.lo")?,
            high: intrinsic(module, "llvm.nvvm.d2i.hi")?,
            join: intrinsic(module, "llvm.nvvm.lohi.i2d")?,
        }),
        Target::Amdgpu => None,
    };
    let slots = Slots { builder, slot_type, base, i32_type, split };
    for (s, anchor) in spills.iter().zip(anchors) {
        slots.spill(s, anchor)?;
    }
    Some(())
}

/// x + dimx * (y + dimy * z), with the block's shape from the HSA dispatch
/// packet (`llvm.amdgcn.dispatch.ptr`).
fn amdgpu_thread_id<'ctx>(module: &Module<'ctx>, b: &Builder<'ctx>) -> Option<IntValue<'ctx>> {
    let context = module.get_context();
    let x = call(module, b, "llvm.amdgcn.workitem.id.x")?.into_int_value();
    let y = call(module, b, "llvm.amdgcn.workitem.id.y")?.into_int_value();
    let z = call(module, b, "llvm.amdgcn.workitem.id.z")?.into_int_value();
    let packet = call(module, b, "llvm.amdgcn.dispatch.ptr")?.into_pointer_value();
    let size = |offset: u64, align: u32| -> Option<IntValue<'ctx>> {
        let at = in_bounds_gep(b, context.i8_type(), packet, &[context.i64_type().const_int(offset, false)], "")?;
        let v = b.build_load(context.i16_type(), at, "").ok()?;
        let load = v.as_instruction_value()?;
        load.set_alignment(align).ok()?;
        load.set_metadata(context.metadata_node(&[]), context.get_kind_id("invariant.load")).ok()?;
        b.build_int_z_extend(v.into_int_value(), context.i32_type(), "").ok()
    };
    let dim_x = size(DISPATCH_WORKGROUP_SIZE_X, 4)?;
    let dim_y = size(DISPATCH_WORKGROUP_SIZE_Y, 2)?;
    flat_id(b, [x, y, z], dim_x, dim_y)
}

/// x + ntid.x * (y + ntid.y * z).
fn nvptx_thread_id<'ctx>(module: &Module<'ctx>, b: &Builder<'ctx>) -> Option<IntValue<'ctx>> {
    let sreg = |name: &str| call(module, b, &format!("llvm.nvvm.read.ptx.sreg.{name}")).map(|v| v.into_int_value());
    let (x, y, z) = (sreg("tid.x")?, sreg("tid.y")?, sreg("tid.z")?);
    let (dim_x, dim_y) = (sreg("ntid.x")?, sreg("ntid.y")?);
    flat_id(b, [x, y, z], dim_x, dim_y)
}

/// The flat thread id: unique within the block, below its size (< B by the
/// promise), and consecutive along a wavefront.
fn flat_id<'ctx>(
    b: &Builder<'ctx>,
    [x, y, z]: [IntValue<'ctx>; 3],
    dim_x: IntValue<'ctx>,
    dim_y: IntValue<'ctx>,
) -> Option<IntValue<'ctx>> {
    let yz = b.build_int_mul(dim_y, z, "").ok()?;
    let yz = b.build_int_add(y, yz, "").ok()?;
    let yz = b.build_int_mul(dim_x, yz, "").ok()?;
    b.build_int_add(x, yz, "regtune.lds.tid").ok()
}

/// A call to an intrinsic without arguments or overloads.
fn call<'ctx>(module: &Module<'ctx>, b: &Builder<'ctx>, name: &str) -> Option<BasicValueEnum<'ctx>> {
    b.build_call(intrinsic(module, name)?, &[], "").ok()?.try_as_basic_value().basic()
}

/// The declaration of an intrinsic without overloads.
fn intrinsic<'ctx>(module: &Module<'ctx>, name: &str) -> Option<FunctionValue<'ctx>> {
    Intrinsic::find(name)?.get_declaration(module, &[])
}

/// The instruction a value's store goes before: the one after the
/// definition, or after all PHIs for a PHI.
fn store_anchor(value: InstructionValue<'_>) -> Option<InstructionValue<'_>> {
    if value.get_opcode() == InstructionOpcode::Phi {
        value.get_parent()?.get_instructions().find(|i| i.get_opcode() != InstructionOpcode::Phi)
    } else {
        value.get_next_instruction()
    }
}

/// Stores and reloads of one thread's slots.
struct Slots<'ctx> {
    builder: Builder<'ctx>,
    slot_type: ArrayType<'ctx>,
    /// This thread's word of slot 0.
    base: PointerValue<'ctx>,
    i32_type: IntType<'ctx>,
    /// On NVPTX, how a 64-bit value is split and joined (see [`NvptxHalves`]).
    split: Option<NvptxHalves<'ctx>>,
}

/// NVPTX splits a 64-bit value into its halves with `llvm.nvvm.d2i.lo`/`.hi`
/// (`mov.b64 {lo, hi}, %rd`: two 32-bit registers) and joins them with
/// `llvm.nvvm.lohi.i2d` (`mov.b64 %rd, {lo, hi}`), as libdevice does, and
/// not through `<2 x i32>`: LLVM folds that extract into a truncating store
/// of the 64-bit register (`st.shared.b32 [a], %rd`, "store the low 32
/// bits"), and ptxas (CUDA 12.9) compiles it, where the register holds a
/// double from floating-point arithmetic, as a conversion: `F2I.U32.F64.TRUNC`
/// then `STS`, so the low word stored was the double truncated to an
/// integer (0 for values in (-1, 1)), not its bits. Every lds-spill build of
/// examples/lbm_d3q19.hip on the H100 differed from plain for this: the
/// reloaded `1 - omega/2` had lost its low 32 bits.
#[derive(Clone, Copy)]
struct NvptxHalves<'ctx> {
    low: FunctionValue<'ctx>,
    high: FunctionValue<'ctx>,
    join: FunctionValue<'ctx>,
}

impl<'ctx> Slots<'ctx> {
    /// Store the value before `anchor` (just after its definition); reload
    /// it before each use.
    fn spill(&self, s: &Spill<'ctx>, anchor: InstructionValue<'ctx>) -> Option<()> {
        let value = BasicValueEnum::try_from(s.value.as_any_value_enum()).ok()?;
        let me = s.value.as_value_ref();
        let users = llvm::users(Def::Inst(s.value));
        self.builder.position_before(&anchor);
        self.store(value, s)?;
        let name = match s.value.get_name().map(|n| n.to_string_lossy().into_owned()) {
            Some(n) if !n.is_empty() => format!("{n}.reload"),
            _ => "reload".to_string(),
        };
        // One reload per incoming block, for all the PHIs that read the
        // value along its edges.
        let mut edges: Vec<(BasicBlock<'ctx>, Vec<(InstructionValue<'ctx>, u32)>)> = Vec::new();
        for u in users {
            if u.get_opcode() == InstructionOpcode::Phi {
                let phi = PhiValue::try_from(u).ok()?;
                for i in 0..phi.count_incoming() {
                    let (v, from) = phi.get_incoming(i)?;
                    if v.as_value_ref() != me {
                        continue;
                    }
                    match edges.iter_mut().find(|(b, _)| *b == from) {
                        Some((_, at)) => at.push((u, i)),
                        None => edges.push((from, vec![(u, i)])),
                    }
                }
                continue;
            }
            self.builder.position_before(&u);
            let reloaded = self.reload(value.get_type(), s, &name)?;
            for k in 0..u.get_num_operands() {
                if value_operand(u, k).is_some_and(|op| op.as_value_ref() == me) {
                    u.set_operand(k, reloaded);
                }
            }
        }
        for (from, at) in edges {
            self.builder.position_before(&from.get_terminator()?);
            let reloaded = self.reload(value.get_type(), s, &name)?;
            for (phi, i) in at {
                phi.set_operand(i, reloaded);
            }
        }
        Some(())
    }

    /// `&array[slot][tid]`.
    fn address(&self, slot: u32) -> Option<PointerValue<'ctx>> {
        let index = self.i32_type.const_int(u64::from(slot), false);
        in_bounds_gep(&self.builder, self.slot_type, self.base, &[index], "")
    }

    /// A 32-bit value goes as it is; a 64-bit one as <2 x i32>, the low
    /// half in the first slot.
    fn store(&self, value: BasicValueEnum<'ctx>, s: &Spill<'ctx>) -> Option<()> {
        if s.words == 1 {
            return self.store_word(value, s.slot);
        }
        let bits = match value {
            BasicValueEnum::PointerValue(p) => self.builder.build_ptr_to_int(p, self.i32_type.get_context().i64_type(), "").ok()?.into(),
            other => other,
        };
        if let Some(split) = self.split {
            let f64_type = self.i32_type.get_context().f64_type();
            let double = match bits {
                BasicValueEnum::FloatValue(_) => bits,
                other => self.builder.build_bit_cast(other, f64_type, "").ok()?,
            };
            for (half, f) in [split.low, split.high].into_iter().enumerate() {
                let word = self.builder.build_call(f, &[double.into()], "").ok()?.try_as_basic_value().basic()?;
                self.store_word(word, s.slot + half as u32)?;
            }
            return Some(());
        }
        let halves = self.builder.build_bit_cast(bits, self.i32_type.vec_type(2), "").ok()?.into_vector_value();
        for half in 0..2 {
            let word = self.builder.build_extract_element(halves, self.i32_type.const_int(u64::from(half), false), "").ok()?;
            self.store_word(word, s.slot + half)?;
        }
        Some(())
    }

    fn store_word(&self, value: BasicValueEnum<'ctx>, slot: u32) -> Option<()> {
        let store = self.builder.build_store(self.address(slot)?, value).ok()?;
        // Volatile: codegen's GVN would forward a plain store to the reload.
        store.set_volatile(true).ok()?;
        store.set_alignment(4).ok()
    }

    /// The value back, as `ty`.
    fn reload(&self, ty: BasicTypeEnum<'ctx>, s: &Spill<'ctx>, name: &str) -> Option<BasicValueEnum<'ctx>> {
        if s.words == 1 {
            return self.load_word(ty, s.slot, name);
        }
        let i32_type = self.i32_type.as_basic_type_enum();
        if let Some(split) = self.split {
            let low = self.load_word(i32_type, s.slot, "")?;
            let high = self.load_word(i32_type, s.slot + 1, "")?;
            let is_double = matches!(ty, BasicTypeEnum::FloatType(_));
            let joined = self.builder.build_call(split.join, &[low.into(), high.into()], if is_double { name } else { "" }).ok()?;
            let double = joined.try_as_basic_value().basic()?;
            let i64_type = self.i32_type.get_context().i64_type();
            return match ty {
                BasicTypeEnum::FloatType(_) => Some(double),
                BasicTypeEnum::PointerType(p) => {
                    let bits = self.builder.build_bit_cast(double, i64_type, "").ok()?.into_int_value();
                    self.builder.build_int_to_ptr(bits, p, name).ok().map(|v| v.as_basic_value_enum())
                }
                other => self.builder.build_bit_cast(double, other, name).ok(),
            };
        }
        let mut halves = self.i32_type.vec_type(2).get_poison();
        for half in 0..2 {
            let word = self.load_word(i32_type, s.slot + half, "")?;
            let index = self.i32_type.const_int(u64::from(half), false);
            halves = self.builder.build_insert_element(halves, word, index, "").ok()?;
        }
        match ty {
            BasicTypeEnum::PointerType(p) => {
                let i64_type = self.i32_type.get_context().i64_type();
                let bits = self.builder.build_bit_cast(halves, i64_type, "").ok()?.into_int_value();
                self.builder.build_int_to_ptr(bits, p, name).ok().map(|v| v.as_basic_value_enum())
            }
            other => self.builder.build_bit_cast(halves, other, name).ok(),
        }
    }

    fn load_word(&self, ty: BasicTypeEnum<'ctx>, slot: u32, name: &str) -> Option<BasicValueEnum<'ctx>> {
        let value = self.builder.build_load(ty, self.address(slot)?, name).ok()?;
        let load = value.as_instruction_value()?;
        load.set_volatile(true).ok()?;
        load.set_alignment(4).ok()?;
        Some(value)
    }
}
