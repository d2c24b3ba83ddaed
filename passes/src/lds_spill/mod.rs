//! `regtune-lds-spill<N>`: keep up to N words per thread of a GPU kernel's
//! long-lived values in shared memory (AMDGPU LDS, NVPTX `.shared`, both
//! `addrspace(3)`) across its point of highest register pressure, instead
//! of in registers: the CDNA2 register-pressure note's "manually spill to
//! LDS", done by a pass. It runs late (after the optimizer, as `regtune-sink`
//! does), on each kernel (`amdgpu_kernel`, `ptx_kernel`) that promises its
//! block size B: `"amdgpu-flat-work-group-size"="1,B"`, or on NVPTX
//! `"nvvm.maxntid"` (LLVM 19: `maxntid{x,y,z}` in `!nvvm.annotations`), B
//! the product of its dimensions.
//!
//!   1. Pressure (`choice.rs`). At each instruction, the 32-bit registers of
//!      the SSA values live into it plus its result, from a liveness
//!      dataflow over the CFG (a PHI's operand is live to the end of its
//!      incoming block). Not counted: `i1` and its vectors (lane masks and
//!      predicates live elsewhere), kernel parameters (kernarg SGPRs,
//!      `ld.param`), and on AMDGPU what a simple uniformity estimate puts in
//!      SGPRs (integer and pointer values computed from parameters,
//!      workgroup ids and constant memory; `legality.rs`). The peak is the
//!      most registers at any instruction.
//!   2. Choice (`choice.rs`). Candidates: `i32`, `i64`, `float`, `double`
//!      and pointer values of 32 or 64 bits (1 or 2 slots; no non-integral
//!      pointers), not allocas, read at no more than 3 places (each PHI
//!      incoming block is one) and none unreachable, not a pure intrinsic
//!      of constants (thread ids and special registers are free to reread),
//!      not read by a convergent call (see below), not one the backend may
//!      fold into a user (below: a multiply an add reads, fast-math flags
//!      other than `contract`), and defined far from their uses: live
//!      across 16 instructions or more (a shorter range the backend's
//!      scheduler can shorten itself).
//!      Greedily, the candidate live across the most instructions at the
//!      current peak goes next (each frees one register per slot; ties: its
//!      store and reloads weighted by 8 per loop level, then program order),
//!      until N slots are used or none is live across the peak. Values whose
//!      spill no longer lowers the final peak are dropped; the rest must
//!      lower it by 2 registers or more (the slot address costs one), or
//!      nothing changes.
//!   3. Rewrite (`transform.rs`). One internal `[S x [B x i32]]
//!      addrspace(3)` global per kernel, `@__regtune_lds_spill.<kernel>`, S
//!      the slots used (<= N), laid out slot-major: slot s of thread t is
//!      word s*B + t, so a wavefront's accesses to a slot are consecutive
//!      words, free of bank conflicts. At the top of the entry block:
//!      t = x + dimx*(y + dimy*z), the flat thread id (AMDGPU:
//!      `llvm.amdgcn.workitem.id.*`, dims from the HSA dispatch packet;
//!      NVPTX: `tid.*`, `ntid.*`), and `&array[0][t]`. A value is stored
//!      right after its definition (after its block's PHIs, for a PHI) and
//!      loaded back right before each use (for a PHI, at the end of the
//!      incoming block); a 64-bit value as two halves, low in slot s (on
//!      NVPTX split and joined by `llvm.nvvm.d2i.*`/`lohi.i2d`, below).
//!
//! Why it is legal: each thread stores to and loads from only its own words
//! (t is unique in the block and below B by the launch promise, the same
//! promise `regtune-occupancy<block=N>` makes), and no other code reaches
//! them: the array is internal, new, and its address goes nowhere else.
//! The definition dominates each use (and the end of each PHI incoming
//! block), so a reload reads what the same thread stored at the latest
//! execution of the definition: the value SSA gives the use. Loads and
//! stores copy bits (NaN payloads, poison). So no barrier is needed, and
//! barriers or other convergent calls may lie between a definition and its
//! uses. The accesses are volatile, which changes nothing of this (the
//! memory is the thread's own) but keeps them: codegen at -O3 runs GVN,
//! which forwards a plain store to its reload and so undoes the spill (on
//! tests/lit/lds-spill/codegen.ll with plain accesses, llc-22 -O3 leaves no
//! ds_read and the original 32 VGPRs; volatile: 8 ds_read, 24 VGPRs). The
//! cost: they stay in order with the kernel's other memory accesses.
//!
//! Bits in, bits out, also through the backend. Two ways it was not so,
//! both found on the H100 with examples/lbm_d3q19.hip, whose every
//! lds-spill build differed from plain (bench/gpu/lds_spill_examples.py):
//!   - NVPTX halves. A 64-bit value split through `<2 x i32>` became
//!     `st.shared.b32 [a], %rd` (LLVM folds the extract into a truncating
//!     store of the 64-bit register), which ptxas compiles, for a register
//!     holding a double, as a conversion (`F2I.U32.F64.TRUNC`): the low
//!     word stored was the double's integer part. On NVPTX the halves are
//!     split and joined with `llvm.nvvm.d2i.lo`/`.hi` and `lohi.i2d`
//!     (`mov.b64 {lo, hi}`: 32-bit registers), as libdevice does
//!     (`transform.rs`).
//!   - Contraction. A floating-point multiply that an add reads is fused
//!     into one `fma` (LLVM's DAG combiner under CUDA's
//!     `-ffp-contract=fast` or HIP's `fast-honor-pragmas`, then ptxas on
//!     the `mul`/`add` left without `.rn`), which rounds once; a reloaded
//!     product is rounded before the add. So such a multiply stays in
//!     registers, and so does a value whose definition or users carry
//!     fast-math flags other than `contract` (`legality.rs`).
//!
//! Refused, with a note on stderr under REGTUNE_VERBOSE:
//!   - no promised block size (the array is sized by it);
//!   - B × N × 4 bytes plus the module's other static shared memory over
//!     64 KiB (AMDGPU LDS) or 48 KiB (NVPTX static shared memory);
//!   - dynamic shared memory in the module (sized only at launch);
//!   - EH, `invoke`, `callbr` (no plain "after the definition"), `optnone`,
//!     more than 50 000 instructions or 5 000 blocks; AMDGPU outside HSA
//!     (no dispatch packet); a kernel that already has its array (the pass
//!     ran).
//!
//! Never spilled: a value a convergent call reads. A reload runs with the
//! lanes active at the use, and cross-lane operations (`readlane`, DPP,
//! `shfl.sync`) may read lanes that are inactive there, whose registers the
//! reload leaves stale while the original value was whole.
//!
//!   opt-22 -load-pass-plugin=target/debug/libregtune_passes.so \
//!     -passes='regtune-lds-spill<8>' in.ll -S -o out.ll

mod choice;
mod legality;
mod transform;

use std::collections::HashMap;

use inkwell::module::Module;
use inkwell::values::{FunctionValue, InstructionOpcode, InstructionValue};

use crate::ffi::sink::{self as llvm, Def, Source};
use crate::ir;
use crate::ir::cfg::Cfg;

use choice::{Block, Candidate, Model, Point};
use legality::{Refusal, Target, MAX_RELOADS};
use transform::Spill;

/// Spill up to `slots` words per thread in every kernel of the module;
/// true when the IR changed.
pub fn run(module: &Module<'_>, slots: u32) -> bool {
    ir::kernels(module).into_iter().fold(false, |changed, k| run_on(module, k, slots) | changed)
}

/// Spill up to `slots` words per thread of `kernel`'s values to LDS, if it
/// is a kernel the pass may change and spilling lowers its peak; true when
/// the IR changed.
pub fn run_on<'ctx>(module: &Module<'ctx>, kernel: FunctionValue<'ctx>, slots: u32) -> bool {
    let k = match legality::check_kernel(module, kernel, slots) {
        Ok(k) => k,
        Err(Refusal::NotAKernel) => return false,
        Err(why) => {
            note(kernel, slots, &format!("not applied: {why}"));
            return false;
        }
    };
    let Some(cfg) = Cfg::new(kernel) else {
        note(kernel, slots, &format!("not applied: {}", Refusal::ControlFlow));
        return false;
    };
    let body = Body::new(module, &cfg, k.target);
    let choice = choice::choose(&body.model, &body.candidates, slots);
    if choice.chosen.is_empty() {
        note(
            kernel,
            slots,
            &format!("no change: no values lower the estimated peak of {} registers by {}", choice.peak_before, choice::MIN_GAIN),
        );
        return false;
    }
    let mut spills = Vec::new();
    let mut next = 0;
    for &c in &choice.chosen {
        let cand = body.candidates[c];
        spills.push(Spill { value: body.insts[cand.value], slot: next, words: cand.slots });
        next += cand.slots;
    }
    // Named before the rewrite: `regtune explain` shows them.
    let names: Vec<String> = spills.iter().map(|s| value_name(s.value)).collect();
    let complete = transform::rewrite(module, kernel, k, &spills).is_some();
    note(
        kernel,
        slots,
        &format!(
            "{} values ({}) in {next} slots of {} threads ({} bytes of shared memory){}; estimated peak {} -> {} registers",
            spills.len(),
            names.join(", "),
            k.block,
            u64::from(next) * u64::from(k.block) * 4,
            if complete { "" } else { " (stopped early)" },
            choice.peak_before,
            choice.peak_after
        ),
    );
    true
}

/// `%name` as the IR spells it (`%<opcode>` for an unnamed value), with
/// the source line of its definition where the IR has one.
fn value_name(value: InstructionValue<'_>) -> String {
    let name = match value.get_name().map(|n| n.to_string_lossy().into_owned()).filter(|n| !n.is_empty()) {
        Some(n) => format!("%{n}"),
        None => format!("%<{:?}>", value.get_opcode()).to_lowercase(),
    };
    match crate::ffi::ir::debug_line(value) {
        0 => name,
        line => format!("{name} (line {line})"),
    }
}

fn note(kernel: FunctionValue<'_>, slots: u32, message: &str) {
    if regtune_decisions::plugin::verbose() {
        eprintln!("regtune: lds-spill<{slots}> {}: {message}", ir::symbol(kernel));
    }
}

/// Loop levels past this weigh no more (8^4 accesses).
const MAX_LOOP_WEIGHT_DEPTH: u32 = 4;

/// The kernel's instructions, numbered, and the model and candidates the
/// choice works on (a value's number is its instruction's).
struct Body<'ctx> {
    insts: Vec<InstructionValue<'ctx>>,
    model: Model,
    candidates: Vec<Candidate>,
}

impl<'ctx> Body<'ctx> {
    fn new(module: &Module<'ctx>, cfg: &Cfg<'ctx>, target: Target) -> Self {
        let nb = cfg.blocks.len();
        let mut insts = Vec::new();
        let mut block_of = Vec::new();
        let mut block_insts = vec![Vec::new(); nb];
        for (b, bb) in cfg.blocks.iter().enumerate() {
            for inst in bb.get_instructions() {
                block_insts[b].push(insts.len());
                insts.push(inst);
                block_of.push(b);
            }
        }
        let index: HashMap<InstructionValue<'ctx>, usize> = insts.iter().enumerate().map(|(i, x)| (*x, i)).collect();
        let scalar = match target {
            Target::Amdgpu => {
                let order: Vec<usize> = cfg.rpo.iter().flat_map(|&b| block_insts[b].iter().copied()).collect();
                legality::scalar_values(&insts, &order, |x| index.get(&x).copied())
            }
            Target::Nvptx => vec![false; insts.len()],
        };
        let regs: Vec<u32> = insts.iter().zip(&scalar).map(|(inst, &s)| if s { 0 } else { legality::registers(*inst) }).collect();
        let tracked = |s: &Source<'ctx>| match s {
            Source::Inst(x) => index.get(x).copied().filter(|&k| regs[k] > 0),
            Source::Param(_) | Source::Other => None,
        };

        let mut blocks = Vec::with_capacity(nb);
        for b in 0..nb {
            if !cfg.reachable(b) {
                blocks.push(Block::default());
                continue;
            }
            let mut block = Block { succs: cfg.succs[b].clone(), ..Default::default() };
            for &i in &block_insts[b] {
                if insts[i].get_opcode() == InstructionOpcode::Phi {
                    if regs[i] > 0 {
                        block.phis.push(i);
                    }
                    continue;
                }
                // `sources` lists each operand once.
                let uses: Vec<usize> = llvm::sources(insts[i]).iter().filter_map(tracked).collect();
                block.points.push(Point { def: (regs[i] > 0).then_some(i), uses });
            }
            // The terminator reads what the successors' PHIs take from here.
            let here = cfg.blocks[b];
            let mut edge_reads = Vec::new();
            for &s in &cfg.succs[b] {
                for &j in block_insts[s].iter().take_while(|&&j| insts[j].get_opcode() == InstructionOpcode::Phi) {
                    for src in llvm::sources(insts[j]) {
                        let Some(v) = tracked(&src) else { continue };
                        if llvm::phi_edges_of(insts[j], Def::Inst(insts[v])).contains(&here) && !edge_reads.contains(&v) {
                            edge_reads.push(v);
                        }
                    }
                }
            }
            if let Some(terminator) = block.points.last_mut() {
                for v in edge_reads {
                    if !terminator.uses.contains(&v) {
                        terminator.uses.push(v);
                    }
                }
            }
            blocks.push(block);
        }

        let non_integral = legality::non_integral_spaces(module);
        let weight = |b: usize| 8u64.pow((cfg.loop_depth(b) as u32).min(MAX_LOOP_WEIGHT_DEPTH));
        let mut candidates = Vec::new();
        for (i, &inst) in insts.iter().enumerate() {
            if regs[i] == 0 || !cfg.reachable(block_of[i]) || inst.get_opcode() == InstructionOpcode::Alloca {
                continue;
            }
            let Some(slots) = legality::slots_for(inst, &non_integral) else { continue };
            // A pure intrinsic of constants (a thread id, a special
            // register): cheaper to recompute, and the backend keeps its
            // source register anyway.
            if llvm::is_pure_intrinsic_call(inst) && llvm::sources(inst).iter().all(|s| matches!(s, Source::Other)) {
                continue;
            }
            let users = llvm::users(Def::Inst(inst));
            if legality::read_by_convergent_call(&users) || legality::fused_with_user(inst, &users) {
                continue;
            }
            // Where the reloads go: before each user, at the end of each
            // block a PHI takes the value from.
            let mut sites: Vec<usize> = Vec::new();
            let mut ok = true;
            for u in &users {
                let Some(&ui) = index.get(u) else {
                    ok = false;
                    break;
                };
                if !cfg.reachable(block_of[ui]) {
                    ok = false;
                    break;
                }
                if u.get_opcode() == InstructionOpcode::Phi {
                    for from in llvm::phi_edges_of(*u, Def::Inst(inst)) {
                        let Some(&fb) = cfg.index.get(&from).filter(|&&fb| cfg.reachable(fb)) else {
                            ok = false;
                            break;
                        };
                        let site = *block_insts[fb].last().unwrap_or(&ui);
                        if !sites.contains(&site) {
                            sites.push(site);
                        }
                    }
                } else if !sites.contains(&ui) {
                    sites.push(ui);
                }
            }
            if !ok || sites.is_empty() || sites.len() > MAX_RELOADS {
                continue;
            }
            let cost = weight(block_of[i]) + sites.iter().map(|&s| weight(block_of[s])).sum::<u64>();
            candidates.push(Candidate { value: i, slots, cost });
        }
        Body { insts, model: Model { regs, blocks }, candidates }
    }
}
