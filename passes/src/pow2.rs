//! `regtune-pow2`: replace `pow(x, 2.0)` with `x * x`, in every form that
//! reaches AMDGPU or NVPTX device IR.
//!
//! A HIP `pow(x, 2.0)` is a call to the device library's `__ocml_pow_f64`,
//! usually through the forwarding overloads of clang's HIP headers
//! (`_ZL3powdd` = `static double pow(double, double)`, `_ZL4powfff` =
//! `powf`, `_ZL3powfi` = `pow(float, int)` -> `_ZL5powiffi` -> `__ocml_pown_f32`,
//! ...). Those calls keep the ~100-instruction ocml routine and its live
//! values in the kernel; a square is one multiply. A CUDA `pow(x, 2.0)` is
//! the same story with NVIDIA's libdevice: clang's CUDA headers forward
//! `pow` (`_ZL3powdd`), `powf`, `powi` and `powif` (and `std::pow`'s
//! float/int overloads) to `__nv_pow`, `__nv_powf`, `__nv_powi` and
//! `__nv_powif`, whose accurate routines stay live in the kernel. The pass
//! runs before the device library is inlined, on:
//!   - `llvm.pow.*` (scalar and vector), `pow`, `powf`, `powl`,
//!   - `__ocml_pow_*`, `__ocml_powr_*`, `__ocml_pown_*` (f16, f32, f64, 2f16),
//!   - `__nv_pow`, `__nv_powf` (pow), `__nv_powi`, `__nv_powif` (pown),
//!   - any single-block function that only forwards its two arguments to
//!     one of those (or to another forwarder) and returns the result.
//!
//! libdevice's `__nv_fast_powf` (CUDA's `__powf`, an approximation through
//! `exp2(y * log2(x))`) is left alone: `x * x` would not give its results.
//!
//! Rewrites, each under the formula it implements; `flags` are the
//! fast-math flags common to the call and to every call on its forwarding
//! chain, and they are copied onto the new instructions. "always" is for a
//! correctly rounded pow; a library pow that is not (below) needs `afn` or
//! `<inexact>` for every rewrite:
//!   pow(x, 2.0)  -> x * x          always: one rounding, as pow's
//!   pow(x, 1.0)  -> x              always
//!   pow(x, 0.0)  -> 1.0            always (pow(NaN, 0) is 1 too)
//!   pow(x, -1.0) -> 1.0 / x        always: one rounding
//!   pow(x, 0.5)  -> sqrt(x)        nsz and ninf: pow(-0, .5) = +0 and
//!                                  pow(-inf, .5) = +inf, sqrt gives -0, NaN
//!   pow(x, -0.5) -> 1.0 / sqrt(x)  nsz, ninf, and afn or reassoc (two roundings)
//!   pow(x, n)    -> x * x * ... (1/... for n < 0), 3 <= |n| <= 16: afn
//!                                  (several roundings), as LLVM's pow -> powi
//!   pown(x, n): the same for integer n (no 0.5 forms);
//!   powr(x, y): the same, and also nnan (powr(x < 0, y) is NaN), and nsz
//!                unless the result is x * x or 1.0 (powr(-0, y) is +0).
//! This follows LLVM's SimplifyLibCalls::optimizePow, except that pow -> sqrt
//! is done only where it needs no fabs/select fix-ups.
//!
//! Why it is legal: each rewrite is exact for every input, or differs only
//! where the call's fast-math flags say the difference cannot be observed.
//! Exact means: what a correctly rounded pow gives, as LLVM's `pow` and
//! `llvm.pow` promise (O3's own pow(x, 2.0) -> x * x relies on it), and as
//! libdevice's `__nv_powi`/`__nv_powif` compute (repeated squaring). The
//! device libraries' other pows are not correctly rounded: ocml's
//! `__ocml_pow_*`, `__ocml_powr_*` and `__ocml_pown_*` (pown too: it runs
//! the same log/exp routine) differ from `x * x` in the last bit for a
//! share of random doubles (bench/ocml counts it, on the CPU), and so do
//! libdevice's `__nv_pow`/`__nv_powf` (bench/gpu). Rewriting those changes results,
//! so it needs `afn` on the call (`-ffast-math`, `-fapprox-func`), or the
//! user's explicit word: the pass parameter `<inexact>`, which `regtune tune
//! --pow2 apply` (or a confirmed suggestion) puts in the decisions db.
//! Calls marked `nobuiltin` or `strictfp`, and forwarders whose body another
//! module may replace (weak, linkonce), are left alone, and so is C's
//! pow -> sqrt outside device code (errno). Functions the rewrite leaves
//! unused (the forwarders, the ocml routine) are deleted when nothing else
//! can refer to them.
//!
//!   opt-22 -load-pass-plugin=target/debug/libregtune_passes.so \
//!     -passes=regtune-pow2 in.ll -S -o out.ll             # exact rewrites only
//!   opt-22 ... -passes='regtune-pow2<inexact>' in.ll ...   # also ocml's, __nv_pow

use std::collections::{HashMap, HashSet};

use inkwell::attributes::{Attribute, AttributeLoc};
use inkwell::builder::Builder;
use inkwell::intrinsics::Intrinsic;
use inkwell::module::Module;
use inkwell::types::{BasicMetadataTypeEnum, BasicTypeEnum, VectorType};
use inkwell::values::{
    BasicMetadataValueEnum, BasicValue, BasicValueEnum, CallSiteValue, FastMathFlags, FloatMathValue, FloatValue, FunctionValue,
    InstructionOpcode, InstructionValue, VectorValue,
};

use crate::ffi::ir::{self as llvm};
use crate::ir;

/// The largest |n| for which pow(x, n) becomes a chain of multiplies: at
/// most 8 of them, fewer live values than the call they replace.
const MAX_CHAIN_EXPONENT: i64 = 16;

/// Whether calls to library pows that are not correctly rounded may be
/// rewritten without `afn`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Rounding {
    /// Only rewrites that give the bits the call gives (the default).
    #[default]
    Exact,
    /// Also those that change the last bit: the user opted in.
    Inexact,
}

/// Rewrite the pow calls of every defined function of the module.
pub fn run(module: &Module<'_>, rounding: Rounding) -> bool {
    run_on(module, &ir::defined_functions(module), rounding)
}

/// Rewrite the pow calls in `functions`, then delete what that left unused.
pub fn run_on<'ctx>(module: &Module<'ctx>, functions: &[FunctionValue<'ctx>], rounding: Rounding) -> bool {
    let mut classifier = Classifier::default();
    let mut rewritten_callees = Vec::new();
    for f in functions {
        // strictfp functions may only use constrained FP operations.
        if has_enum_attribute(*f, "strictfp") {
            continue;
        }
        for inst in ir::instructions(*f) {
            let Some((callee, pow)) = classifier.pow_call(*f, inst) else {
                continue;
            };
            if rewrite_call(module, inst, pow, rounding) {
                rewritten_callees.push(callee);
            }
        }
    }
    let changed = !rewritten_callees.is_empty();
    delete_dead(rewritten_callees);
    changed
}

/// Which pow a function computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    /// pow(x, y), y floating-point.
    Pow,
    /// powr(x, y): pow for x >= 0, NaN for x < 0.
    Powr,
    /// pown(x, n), n an integer.
    Pown,
}

/// A function known to compute a pow, and the fast-math flags every call on
/// its forwarding chain carries (all flags for the pow itself).
#[derive(Debug, Clone, Copy)]
struct PowFn {
    family: Family,
    chain_flags: FastMathFlags,
    /// The C library's pow, which may set errno on a host.
    libc: bool,
    /// Not correctly rounded: any rewrite changes results (ocml's pows,
    /// libdevice's `__nv_pow`, `__nv_powf`).
    inexact: bool,
}

/// A constant exponent: the same value in every lane.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Exponent {
    Float(f64),
    Int(i64),
}

/// What a call becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rewrite {
    /// x
    Identity,
    /// 1.0
    One,
    /// x * x * ... (n factors); 1.0 / that when `reciprocal`.
    Power { n: u32, reciprocal: bool },
    /// sqrt(x); 1.0 / sqrt(x) when `reciprocal`.
    Sqrt { reciprocal: bool },
}

#[derive(Default)]
struct Classifier<'ctx> {
    memo: HashMap<FunctionValue<'ctx>, Option<PowFn>>,
}

impl<'ctx> Classifier<'ctx> {
    /// `inst` as a direct call, in `caller`, to a function that computes a
    /// pow and that the call may be rewritten as.
    fn pow_call(&mut self, caller: FunctionValue<'ctx>, inst: InstructionValue<'ctx>) -> Option<(FunctionValue<'ctx>, PowFn)> {
        let call = CallSiteValue::try_from(inst).ok()?;
        let callee = call.get_called_fn_value()?;
        let pow = self.classify(callee)?;
        call_may_be_rewritten(caller, call, callee).then_some((callee, pow))
    }

    fn classify(&mut self, f: FunctionValue<'ctx>) -> Option<PowFn> {
        if let Some(known) = self.memo.get(&f) {
            return *known;
        }
        // A forwarding cycle is not a pow: mark before recursing.
        self.memo.insert(f, None);
        let result = match library_pow(f) {
            Some(family) => {
                Some(PowFn { family, chain_flags: FastMathFlags::all(), libc: is_libc_pow(f), inexact: is_inexact_library_pow(f) })
            }
            None => self.forwarder(f),
        };
        self.memo.insert(f, result);
        result
    }

    /// A function that only forwards its two arguments to a pow, in order,
    /// and returns the result: either SSA (`ret (call @pow(%0, %1))`), or as
    /// clang emits the HIP headers' overloads before optimisation, with
    /// each argument spilled to an alloca and loaded back.
    fn forwarder(&mut self, f: FunctionValue<'ctx>) -> Option<PowFn> {
        // Skip bodies another module may replace, and anything bigger than a
        // wrapper.
        if !ir::definition_is_exact(f) || f.count_basic_blocks() != 1 {
            return None;
        }
        // T(T, T) or T(T, i32): checked before the parameters are looked at.
        if !signature_fits(f, Family::Pow) && !signature_fits(f, Family::Pown) {
            return None;
        }
        let params = f.get_params();
        let insts = ir::instructions(f);
        let mut pow_call: Option<(InstructionValue<'ctx>, PowFn)> = None;
        for inst in &insts {
            match inst.get_opcode() {
                InstructionOpcode::Alloca | InstructionOpcode::AddrSpaceCast => {}
                // Loads only read those allocas back.
                InstructionOpcode::Load => {
                    if inst.get_volatile().unwrap_or(true) || local_alloca(llvm::value_operand(*inst, 0)?).is_none() {
                        return None;
                    }
                }
                // Stores only spill parameters into this function's allocas.
                InstructionOpcode::Store => {
                    let value = llvm::value_operand(*inst, 0)?;
                    let ptr = llvm::value_operand(*inst, 1)?;
                    if !params.contains(&value) || local_alloca(ptr).is_none() {
                        return None;
                    }
                }
                InstructionOpcode::Call => {
                    let call = CallSiteValue::try_from(*inst).ok()?;
                    let callee = call.get_called_fn_value()?;
                    if is_marker_intrinsic(callee) {
                        continue;
                    }
                    let pow = self.classify(callee)?;
                    if pow_call.is_some() || !call_may_be_rewritten(f, call, callee) {
                        return None;
                    }
                    // Same signature as the pow it forwards to.
                    if callee.get_type() != f.get_type() {
                        return None;
                    }
                    pow_call = Some((*inst, pow));
                }
                InstructionOpcode::Return => {}
                _ => return None,
            }
        }
        let (call, inner) = pow_call?;
        // ret (call pow(a, b)), where a and b are parameters 0 and 1.
        let ret = insts.last().copied().filter(|i| i.get_opcode() == InstructionOpcode::Return)?;
        let returned = llvm::value_operand(ret, 0)?;
        if returned.as_instruction_value() != Some(call) {
            return None;
        }
        for i in 0..2u32 {
            let arg = llvm::value_operand(call, i)?;
            if forwarded_parameter(&insts, &params, arg) != Some(i as usize) {
                return None;
            }
        }
        let flags = call.get_fast_math_flags().unwrap_or(FastMathFlags::empty());
        Some(PowFn { chain_flags: inner.chain_flags & flags, ..inner })
    }
}

/// The pow a library or intrinsic function computes, by name and signature.
fn library_pow(f: FunctionValue<'_>) -> Option<Family> {
    let name = f.get_name().to_str().ok()?;
    let family = if name.starts_with("llvm.pow.") || matches!(name, "pow" | "powf" | "powl" | "__nv_pow" | "__nv_powf") {
        Family::Pow
    } else if matches!(name, "__nv_powi" | "__nv_powif") {
        Family::Pown
    } else {
        let (op, ty) = name.strip_prefix("__ocml_")?.split_once('_')?;
        if !matches!(ty, "f16" | "f32" | "f64" | "2f16") {
            return None;
        }
        match op {
            "pow" => Family::Pow,
            "powr" => Family::Powr,
            "pown" => Family::Pown,
            _ => return None,
        }
    };
    signature_fits(f, family).then_some(family)
}

/// The device libraries' pows that are not correctly rounded: every ocml
/// pow (pow, powr, pown share one log/exp routine) and libdevice's pow and
/// powf. libdevice's powi squares exactly, as the rewrite does.
fn is_inexact_library_pow(f: FunctionValue<'_>) -> bool {
    let name = f.get_name().to_bytes();
    name.starts_with(b"__ocml_pow") || matches!(name, b"__nv_pow" | b"__nv_powf")
}

fn is_libc_pow(f: FunctionValue<'_>) -> bool {
    matches!(f.get_name().to_bytes(), b"pow" | b"powf" | b"powl")
}

/// T(T, T) for pow and powr, T(T, i32) for pown; T floating-point, or a
/// fixed vector of it (with as many i32 lanes for pown).
fn signature_fits(f: FunctionValue<'_>, family: Family) -> bool {
    let ty = f.get_type();
    let (Some(ret), params) = (ty.get_return_type(), ty.get_param_types()) else {
        return false;
    };
    let ret_param: BasicMetadataTypeEnum<'_> = ret.into();
    if params.len() != 2 || !is_fp_or_fp_vector(ret) || params[0] != ret_param {
        return false;
    }
    match family {
        Family::Pow | Family::Powr => params[1] == ret_param,
        Family::Pown => match (ret, params[1]) {
            (BasicTypeEnum::FloatType(_), BasicMetadataTypeEnum::IntType(i)) => i.get_bit_width() == 32,
            (BasicTypeEnum::VectorType(v), BasicMetadataTypeEnum::VectorType(n)) => {
                v.get_size() == n.get_size() && matches!(n.get_element_type(), BasicTypeEnum::IntType(i) if i.get_bit_width() == 32)
            }
            _ => false,
        },
    }
}

fn is_fp_or_fp_vector(t: BasicTypeEnum<'_>) -> bool {
    match t {
        BasicTypeEnum::FloatType(_) => true,
        BasicTypeEnum::VectorType(v) => v.get_element_type().is_float_type(),
        _ => false,
    }
}

/// Calls that compute nothing: lifetime markers and debug intrinsics.
fn is_marker_intrinsic(f: FunctionValue<'_>) -> bool {
    let name = f.get_name().to_bytes();
    name.starts_with(b"llvm.lifetime.") || name.starts_with(b"llvm.dbg.")
}

/// Legality of touching a call at all: not `nobuiltin` (-fno-builtin) for a
/// C library name, and not in strict floating-point code.
fn call_may_be_rewritten(caller: FunctionValue<'_>, call: CallSiteValue<'_>, callee: FunctionValue<'_>) -> bool {
    if call_has_enum_attribute(call, "strictfp") || has_enum_attribute(caller, "strictfp") {
        return false;
    }
    let name = callee.get_name().to_string_lossy();
    if is_libc_pow(callee)
        && (call_has_enum_attribute(call, "nobuiltin")
            || ir::string_attribute(caller, "no-builtins").is_some()
            || ir::string_attribute(caller, &format!("no-builtin-{name}")).is_some())
    {
        return false;
    }
    true
}

fn has_enum_attribute(f: FunctionValue<'_>, name: &str) -> bool {
    let kind = Attribute::get_named_enum_kind_id(name);
    kind != 0 && f.get_enum_attribute(AttributeLoc::Function, kind).is_some()
}

fn call_has_enum_attribute(call: CallSiteValue<'_>, name: &str) -> bool {
    let kind = Attribute::get_named_enum_kind_id(name);
    kind != 0 && call.get_enum_attribute(AttributeLoc::Function, kind).is_some()
}

/// The alloca a pointer names, through address-space casts.
fn local_alloca<'ctx>(ptr: BasicValueEnum<'ctx>) -> Option<InstructionValue<'ctx>> {
    let mut inst = ptr.as_instruction_value()?;
    while inst.get_opcode() == InstructionOpcode::AddrSpaceCast {
        inst = llvm::value_operand(inst, 0)?.as_instruction_value()?;
    }
    (inst.get_opcode() == InstructionOpcode::Alloca).then_some(inst)
}

/// Which parameter `v` is: the parameter itself, or a load from an alloca
/// that exactly one store fills, with that parameter.
fn forwarded_parameter<'ctx>(insts: &[InstructionValue<'ctx>], params: &[BasicValueEnum<'ctx>], v: BasicValueEnum<'ctx>) -> Option<usize> {
    if let Some(i) = params.iter().position(|p| *p == v) {
        return Some(i);
    }
    let load = v.as_instruction_value().filter(|i| i.get_opcode() == InstructionOpcode::Load)?;
    let slot = local_alloca(llvm::value_operand(load, 0)?)?;
    let mut stored = insts
        .iter()
        .filter(|i| i.get_opcode() == InstructionOpcode::Store)
        .filter(|s| llvm::value_operand(**s, 1).and_then(local_alloca) == Some(slot));
    let only = stored.next()?;
    if stored.next().is_some() {
        return None;
    }
    let value = llvm::value_operand(*only, 0)?;
    params.iter().position(|p| *p == value)
}

/// The constant exponent of a call, the same in every lane.
fn constant_exponent(family: Family, expo: BasicValueEnum<'_>) -> Option<Exponent> {
    let scalar = |v: BasicValueEnum<'_>| match family {
        Family::Pown => llvm::const_int(v).map(Exponent::Int),
        Family::Pow | Family::Powr => llvm::const_float(v).map(Exponent::Float),
    };
    match expo {
        BasicValueEnum::VectorValue(v) => {
            let lanes = v.get_type().get_size();
            let first = scalar(llvm::constant_element(expo, 0)?)?;
            (1..lanes).all(|i| llvm::constant_element(expo, i).and_then(scalar) == Some(first)).then_some(first)
        }
        _ => scalar(expo),
    }
}

/// Legality: the rewrite of `pow(x, e)` that is exact, or exact under
/// `flags`; `None` when there is none.
fn legal_rewrite(family: Family, e: Exponent, flags: FastMathFlags) -> Option<Rewrite> {
    let rewrite = pow_rewrite(e, flags)?;
    if family == Family::Powr {
        // powr(x < 0, y) is NaN where the rewrites give a number ...
        if !flags.contains(FastMathFlags::NoNaNs) {
            return None;
        }
        // ... and powr(-0, y) is +0 (or +inf) where x, 1/x, x*x*x keep the sign.
        let sign_free = matches!(rewrite, Rewrite::One | Rewrite::Power { n: 2, reciprocal: false });
        if !sign_free && !flags.contains(FastMathFlags::NoSignedZeros) {
            return None;
        }
    }
    Some(rewrite)
}

/// The rewrite of pow(x, e) (or pown), exact or exact under `flags`.
fn pow_rewrite(e: Exponent, flags: FastMathFlags) -> Option<Rewrite> {
    let has = |f: FastMathFlags| flags.contains(f);
    let n = match e {
        Exponent::Int(n) => n,
        Exponent::Float(y) if y.fract() == 0.0 && y.abs() <= i64::MAX as f64 => y as i64,
        Exponent::Float(y) if y.abs() == 0.5 => {
            // pow(x, 0.5) differs from sqrt(x) at -0 and -inf only.
            if !has(FastMathFlags::NoSignedZeros | FastMathFlags::NoInfs) {
                return None;
            }
            let reciprocal = y < 0.0;
            // 1/sqrt(x) rounds twice.
            if reciprocal && !has(FastMathFlags::ApproxFunc) && !has(FastMathFlags::AllowReassoc) {
                return None;
            }
            return Some(Rewrite::Sqrt { reciprocal });
        }
        Exponent::Float(_) => return None,
    };
    match n {
        0 => Some(Rewrite::One),
        1 => Some(Rewrite::Identity),
        2 => Some(Rewrite::Power { n: 2, reciprocal: false }),
        -1 => Some(Rewrite::Power { n: 1, reciprocal: true }),
        // Several roundings instead of one: only as an approximation.
        _ if has(FastMathFlags::ApproxFunc) => Some(Rewrite::Power { n: u32::try_from(n.unsigned_abs()).ok()?, reciprocal: n < 0 }),
        _ => None,
    }
}

/// Profitability: a call to the device library's pow keeps its whole
/// routine live in the kernel; the rewrites cost at most a sqrt, a division
/// and a short chain of multiplies.
fn is_profitable(rewrite: Rewrite) -> bool {
    match rewrite {
        Rewrite::Power { n, .. } => i64::from(n) <= MAX_CHAIN_EXPONENT,
        Rewrite::Identity | Rewrite::One | Rewrite::Sqrt { .. } => true,
    }
}

/// Rewrite one pow call in place; true when it was replaced.
fn rewrite_call<'ctx>(module: &Module<'ctx>, call: InstructionValue<'ctx>, pow: PowFn, rounding: Rounding) -> bool {
    let (Some(x), Some(expo)) = (llvm::value_operand(call, 0), llvm::value_operand(call, 1)) else {
        return false;
    };
    let Some(e) = constant_exponent(pow.family, expo) else {
        return false;
    };
    let flags = call.get_fast_math_flags().unwrap_or(FastMathFlags::empty()) & pow.chain_flags;
    // An inexact library pow gives other bits than x * x: only where
    // approximate functions are allowed, or the user said so.
    if pow.inexact && !flags.contains(FastMathFlags::ApproxFunc) && rounding == Rounding::Exact {
        return false;
    }
    let Some(rewrite) = legal_rewrite(pow.family, e, flags).filter(|r| is_profitable(*r)) else {
        return false;
    };
    // On a host, C's pow(x < 0, 0.5) sets errno (EDOM) and llvm.sqrt does
    // not; GPUs have no errno.
    if pow.libc && matches!(rewrite, Rewrite::Sqrt { .. }) && !ir::is_device_module(module) {
        return false;
    }
    let builder = module.get_context().create_builder();
    builder.position_before(&call);
    let emitter = Emitter { module, builder: &builder, flags, call };
    let new = match x {
        BasicValueEnum::FloatValue(x) => emitter.emit(x, rewrite).map(|v| v.as_basic_value_enum()),
        BasicValueEnum::VectorValue(x) => emitter.emit(x, rewrite).map(|v| v.as_basic_value_enum()),
        _ => None,
    };
    let Some(new) = new else {
        return false;
    };
    if !llvm::replace_all_uses(call, new) {
        return false;
    }
    call.erase_from_basic_block();
    true
}

/// Floating-point scalars and vectors, as the rewrites build them.
trait Fp<'ctx>: FloatMathValue<'ctx> + Copy + TryFrom<BasicValueEnum<'ctx>> {
    fn one(self) -> Self;
}

impl<'ctx> Fp<'ctx> for FloatValue<'ctx> {
    fn one(self) -> Self {
        self.get_type().const_float(1.0)
    }
}

impl<'ctx> Fp<'ctx> for VectorValue<'ctx> {
    fn one(self) -> Self {
        let ty = self.get_type();
        let one = ty.get_element_type().into_float_type().const_float(1.0);
        VectorType::const_vector(&vec![one; ty.get_size() as usize])
    }
}

/// Builds a rewrite before the call it replaces, with its fast-math flags
/// and debug location.
struct Emitter<'a, 'ctx> {
    module: &'a Module<'ctx>,
    builder: &'a Builder<'ctx>,
    flags: FastMathFlags,
    call: InstructionValue<'ctx>,
}

impl<'ctx> Emitter<'_, 'ctx> {
    fn emit<T: Fp<'ctx>>(&self, x: T, rewrite: Rewrite) -> Option<T> {
        match rewrite {
            // pow(x, 1.0) -> x
            Rewrite::Identity => Some(x),
            // pow(x, 0.0) -> 1.0
            Rewrite::One => Some(x.one()),
            // pow(x, n) -> x * x * ...;  pow(x, -n) -> 1.0 / (x * x * ...)
            Rewrite::Power { n, reciprocal } => {
                let p = self.power(x, n)?;
                if reciprocal {
                    self.reciprocal(p)
                } else {
                    Some(p)
                }
            }
            // pow(x, 0.5) -> sqrt(x);  pow(x, -0.5) -> 1.0 / sqrt(x)
            Rewrite::Sqrt { reciprocal } => {
                let s = self.sqrt(x)?;
                if reciprocal {
                    self.reciprocal(s)
                } else {
                    Some(s)
                }
            }
        }
    }

    /// x^n by repeated squaring: x*x for n = 2, (x*x)*x for 3, ...
    fn power<T: Fp<'ctx>>(&self, x: T, mut n: u32) -> Option<T> {
        let mut result: Option<T> = None;
        let mut base = x;
        while n > 0 {
            if n & 1 == 1 {
                result = Some(match result {
                    None => base,
                    Some(r) => self.finish(self.builder.build_float_mul(r, base, "power").ok()?),
                });
            }
            n >>= 1;
            if n > 0 {
                base = self.finish(self.builder.build_float_mul(base, base, "square").ok()?);
            }
        }
        result
    }

    fn reciprocal<T: Fp<'ctx>>(&self, x: T) -> Option<T> {
        Some(self.finish(self.builder.build_float_div(x.one(), x, "reciprocal").ok()?))
    }

    fn sqrt<T: Fp<'ctx>>(&self, x: T) -> Option<T> {
        let ty = x.as_basic_value_enum().get_type();
        let decl = Intrinsic::find("llvm.sqrt")?.get_declaration(self.module, &[ty])?;
        let args: [BasicMetadataValueEnum<'ctx>; 1] = [x.as_basic_value_enum().into()];
        let call = self.builder.build_call(decl, &args, "sqrt").ok()?;
        let v = call.try_as_basic_value().basic()?;
        Some(self.finish(T::try_from(v).ok()?))
    }

    /// Copy the call's fast-math flags and debug location onto a new value.
    fn finish<T: Fp<'ctx>>(&self, v: T) -> T {
        if let Some(inst) = v.as_instruction_value() {
            let _ = inst.set_fast_math_flags(self.flags);
            inst.set_debug_location(self.call.get_debug_location());
        }
        v
    }
}

/// Delete the functions the rewrites left unused, and then what those
/// called and nothing else uses, as far as the chain goes.
fn delete_dead(mut work: Vec<FunctionValue<'_>>) {
    let mut deleted = HashSet::new();
    while let Some(f) = work.pop() {
        if deleted.contains(&f) || ir::is_kernel(f) || llvm::has_uses(f) || !ir::discardable_if_unused(f) {
            continue;
        }
        let callees = ir::direct_callees(f);
        if llvm::delete_unused_function(f) {
            deleted.insert(f);
            work.extend(callees.into_iter().filter(|c| !deleted.contains(c)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NONE: FastMathFlags = FastMathFlags::empty();

    fn pow(y: f64, flags: FastMathFlags) -> Option<Rewrite> {
        legal_rewrite(Family::Pow, Exponent::Float(y), flags)
    }

    #[test]
    fn exact_rewrites_need_no_flags() {
        assert_eq!(pow(2.0, NONE), Some(Rewrite::Power { n: 2, reciprocal: false }));
        assert_eq!(pow(-1.0, NONE), Some(Rewrite::Power { n: 1, reciprocal: true }));
        assert_eq!(pow(1.0, NONE), Some(Rewrite::Identity));
        assert_eq!(pow(0.0, NONE), Some(Rewrite::One));
        assert_eq!(legal_rewrite(Family::Pown, Exponent::Int(2), NONE), Some(Rewrite::Power { n: 2, reciprocal: false }));
    }

    #[test]
    fn sqrt_needs_nsz_and_ninf() {
        assert_eq!(pow(0.5, NONE), None);
        assert_eq!(pow(0.5, FastMathFlags::NoSignedZeros), None);
        assert_eq!(pow(0.5, FastMathFlags::ApproxFunc), None);
        let ok = FastMathFlags::NoSignedZeros | FastMathFlags::NoInfs;
        assert_eq!(pow(0.5, ok), Some(Rewrite::Sqrt { reciprocal: false }));
        assert_eq!(pow(-0.5, ok), None);
        assert_eq!(pow(-0.5, ok | FastMathFlags::ApproxFunc), Some(Rewrite::Sqrt { reciprocal: true }));
    }

    #[test]
    fn other_integers_need_afn() {
        assert_eq!(pow(3.0, NONE), None);
        assert_eq!(pow(3.0, FastMathFlags::ApproxFunc), Some(Rewrite::Power { n: 3, reciprocal: false }));
        assert_eq!(pow(-4.0, FastMathFlags::ApproxFunc), Some(Rewrite::Power { n: 4, reciprocal: true }));
        assert_eq!(pow(2.5, FastMathFlags::all()), None);
        let r = pow(100.0, FastMathFlags::ApproxFunc).expect("legal");
        assert!(!is_profitable(r));
    }

    #[test]
    fn powr_needs_nnan_and_for_signed_results_nsz() {
        let powr = |y, flags| legal_rewrite(Family::Powr, Exponent::Float(y), flags);
        assert_eq!(powr(2.0, NONE), None);
        assert_eq!(powr(2.0, FastMathFlags::NoNaNs), Some(Rewrite::Power { n: 2, reciprocal: false }));
        assert_eq!(powr(-1.0, FastMathFlags::NoNaNs), None);
        assert_eq!(powr(1.0, FastMathFlags::NoNaNs), None);
        let both = FastMathFlags::NoNaNs | FastMathFlags::NoSignedZeros;
        assert_eq!(powr(-1.0, both), Some(Rewrite::Power { n: 1, reciprocal: true }));
    }
}
