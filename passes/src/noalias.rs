//! `regtune-noalias<P;...>`: mark chosen pointer parameters of a kernel
//! `noalias`; `regtune-noalias-rank`: rank which ones are worth trying.
//!
//! The transform. A HIP `__restrict__` on a kernel parameter is `noalias` on
//! the IR argument: while the kernel runs, memory reached through that
//! pointer is reached through no pointer not based on it (LangRef,
//! "Parameter Attributes", `noalias`). Alias analysis then separates the
//! pointer from every other parameter, global and unknown pointer, so GVN
//! may reuse a load across a store through another pointer, LICM may hoist
//! or promote it out of a loop that stores elsewhere, the schedulers may
//! move it above such stores, and AMDGPU may select a uniform load that no
//! store can clobber as a scalar load (`amdgpu.noclobber`).
//!
//! Why it is legal: in general it is not. It is a promise about the caller
//! (no two pointers of the launch overlap) that the IR cannot check, which is
//! why the tuner only suggests it and applies it once the user opts in. The
//! pass itself applies exactly what it is told: only to parameters that
//! exist and are pointers (anything else is skipped, silently), only once
//! (a parameter already `noalias` is left as it is), and only to the
//! functions it is handed (`regtune-noalias` hands it the module's kernels).
//!
//! The ranking (`regtune-noalias-rank`: one JSON line per kernel, each
//! candidate with a `score` and a `reason`; the tuner measures the first
//! few). It reads the IR before optimisation, as clang emits it with
//! `-Xclang -disable-llvm-passes`: every parameter spilled to an alloca and
//! loaded back, each access a GEP on such a load, helpers not yet inlined.
//! The analysis follows each pointer parameter through stack slots (store,
//! load back), GEPs, casts, phis and selects, and into directly called
//! functions small enough to read (as if inlined at the call). It lists the
//! kernel's accesses to memory other than its own stack, in an order where
//! each comes after what may run before it (loops kept together), each
//! with the parameters its pointer may be based on, whether its address is
//! uniform across the wave, and the loops around it.
//!
//! A store is in the way of a load when it may run before it (earlier, or
//! in a loop around both) and may write the same kind of memory through
//! another pointer. Noalias on P takes out of the way of
//!
//! - a load through P: every store through other pointers;
//! - a load through another pointer: the stores through P, which frees it
//!   when they are all that is in its way (or all that lies between it and
//!   an earlier access to the same address).
//!
//! A freed load is worth 6 when an earlier access to the same address
//! through the same pointer comes before a store in its way (GVN reuses the
//! value instead of reloading it), else 4 when it shares a loop with such a
//! store (LICM, loop-carried reuse), else 1 (the schedulers may move it
//! above the stores); plus 4 when its address is uniform and in global
//! memory and no store through its own pointer is in the way (it can become
//! a scalar load, which frees VGPRs). A parameter nothing stores through
//! gets 1 more point per loop level around each of its loads (read-only
//! noalias loads move, and re-issue, freely in the backend; it matters for
//! arrays read in loop nests). The score is the sum. Parameters scoring 0
//! (never dereferenced, nothing in the way of their loads) are left out, as
//! are those already noalias. Best first, ties by index.
//!
//!   opt-22 -load-pass-plugin=target/debug/libregtune_passes.so \
//!     -passes='regtune-noalias<3;5>' in.ll -S -o out.ll
//!   opt-22 -load-pass-plugin=target/debug/libregtune_passes.so \
//!     -passes=regtune-noalias-rank -disable-output pre-O3.bc

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::rc::Rc;

use inkwell::attributes::{Attribute, AttributeLoc};
use inkwell::basic_block::BasicBlock;
use inkwell::types::AnyTypeEnum;
use inkwell::values::{BasicValue, BasicValueEnum, CallSiteValue, FunctionValue, InstructionOpcode, InstructionValue};
use inkwell::{AddressSpace, AtomicOrdering};
use regtune_decisions::Param;
use serde::Serialize;

use crate::ffi::ir::{self as llvm};
use crate::ir;

/// A parameter worth marking `noalias`, as `regtune-noalias-rank` reports it
/// (the driver reads each candidate as a `regtune_decisions::Param` and
/// ignores `score` and `reason`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Candidate {
    pub index: u32,
    /// The parameter's source name (clang's `.coerce` suffix dropped); empty
    /// when clang discarded value names.
    pub name: String,
    pub score: u32,
    /// Why, in a few words.
    pub reason: String,
}

/// Mark `params` of `kernel` noalias (matched by index); true when an
/// attribute was added.
pub fn run(kernel: FunctionValue<'_>, params: &[Param]) -> bool {
    let mut changed = false;
    for p in params {
        // Skip what cannot take the attribute, and what already has it.
        if legality(kernel, p.index) != Legality::Applies {
            continue;
        }
        kernel.add_attribute(AttributeLoc::Param(p.index), noalias_attribute(kernel));
        changed = true;
    }
    changed
}

/// The pointer parameters of `kernel` worth marking noalias, best first.
pub fn rank(kernel: FunctionValue<'_>) -> Vec<Candidate> {
    let params = pointer_params(kernel);
    if params.iter().all(|p| p.noalias) {
        return Vec::new();
    }
    profitability(&trace(kernel), &params)
}

/// Every pointer parameter that could still take `noalias`: the ranked
/// ones first, then the rest in order with score 0. The backend also reacts
/// to noalias in ways no IR rule predicts (kernel-argument load layout,
/// scalar loads), so the tuner may measure beyond the ranking.
pub fn rank_all(kernel: FunctionValue<'_>) -> Vec<Candidate> {
    let mut all = rank(kernel);
    for p in pointer_params(kernel).into_iter().filter(|p| !p.noalias) {
        if !all.iter().any(|c| c.index == p.index) {
            all.push(Candidate { index: p.index, name: p.name, score: 0, reason: "no access pattern noalias helps".into() });
        }
    }
    all
}

// ---------------------------------------------------------------------------
// Legality: which parameters can take the attribute.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Legality {
    Applies,
    NoSuchParameter,
    /// `noalias` is only valid on pointers (not on vectors of them).
    NotAPointer,
    AlreadyNoalias,
}

fn legality(f: FunctionValue<'_>, index: u32) -> Legality {
    let Some(arg) = f.get_nth_param(index) else {
        return Legality::NoSuchParameter;
    };
    if !arg.is_pointer_value() {
        return Legality::NotAPointer;
    }
    if has_noalias(f, index) {
        return Legality::AlreadyNoalias;
    }
    Legality::Applies
}

fn noalias_kind() -> u32 {
    Attribute::get_named_enum_kind_id("noalias")
}

fn has_noalias(f: FunctionValue<'_>, index: u32) -> bool {
    f.get_enum_attribute(AttributeLoc::Param(index), noalias_kind()).is_some()
}

fn noalias_attribute(f: FunctionValue<'_>) -> Attribute {
    f.get_type().get_context().create_enum_attribute(noalias_kind(), 0)
}

/// A kernel pointer parameter, as the ranking sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ParamInfo {
    index: u32,
    name: String,
    noalias: bool,
}

fn pointer_params(kernel: FunctionValue<'_>) -> Vec<ParamInfo> {
    (0..kernel.count_params())
        .filter(|&i| !matches!(legality(kernel, i), Legality::NoSuchParameter | Legality::NotAPointer))
        .map(|i| ParamInfo { index: i, name: source_name(kernel, i), noalias: has_noalias(kernel, i) })
        .collect()
}

/// clang names a HIP kernel's pointer parameter `<name>.coerce` (it is
/// passed as a global pointer and cast back); the user knows `<name>`.
fn source_name(f: FunctionValue<'_>, index: u32) -> String {
    let Some(arg) = f.get_nth_param(index) else {
        return String::new();
    };
    let name = arg.get_name().to_string_lossy();
    name.strip_suffix(".coerce").unwrap_or(&name).to_string()
}

// ---------------------------------------------------------------------------
// Profitability: score each parameter from the kernel's memory accesses.

/// A reload that GVN can replace with a value it already has.
const REUSE: u32 = 6;
/// A load in a loop that also stores elsewhere: LICM, loop-carried reuse.
const LOOP: u32 = 4;
/// A load that may only move above the stores (scheduling freedom).
const REORDER: u32 = 1;
/// A uniform global load that becomes a scalar load once nothing clobbers it.
const SCALAR: u32 = 4;

/// What freeing one load from its blockers is worth.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Gain {
    kind: GainKind,
    scalar: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GainKind {
    Reuse,
    Loop,
    Reorder,
}

impl Gain {
    fn points(self) -> u32 {
        let base = match self.kind {
            GainKind::Reuse => REUSE,
            GainKind::Loop => LOOP,
            GainKind::Reorder => REORDER,
        };
        base + if self.scalar { SCALAR } else { 0 }
    }
}

/// What one parameter would free.
#[derive(Debug, Clone, Default)]
struct Tally {
    reuse: u32,
    looped: u32,
    reorder: u32,
    scalar: u32,
    /// Loads through other pointers that only this parameter's stores block.
    unblocked: u32,
    /// Loop levels around the loads of a parameter nothing stores through.
    read_only_depth: u32,
    points: u32,
}

impl Tally {
    fn frees(&mut self, gain: Gain) {
        match gain.kind {
            GainKind::Reuse => self.reuse += 1,
            GainKind::Loop => self.looped += 1,
            GainKind::Reorder => self.reorder += 1,
        }
        self.scalar += u32::from(gain.scalar);
        self.points += gain.points();
    }

    /// A load through another pointer that this parameter's stores alone
    /// keep in place.
    fn unblocks(&mut self, gain: Gain) {
        self.unblocked += 1;
        self.points += gain.points();
    }

    fn score(&self) -> u32 {
        self.points + self.read_only_depth
    }

    fn reason(&self) -> String {
        let plural = |n: u32, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        let mut parts = Vec::new();
        if self.reuse > 0 {
            parts.push(format!(
                "{} reusable across stores through other pointers",
                plural(self.reuse, "reload", "reloads")
            ));
        }
        if self.looped > 0 {
            parts.push(format!("{} in loops that store through other pointers", plural(self.looped, "load", "loads")));
        }
        if self.reorder > 0 {
            parts.push(format!(
                "{} could move above stores through other pointers",
                plural(self.reorder, "load", "loads")
            ));
        }
        if self.scalar > 0 {
            parts.push(format!("{} could become scalar", plural(self.scalar, "uniform load", "uniform loads")));
        }
        if self.unblocked > 0 {
            parts.push(format!(
                "its stores alone block {} through other pointers",
                plural(self.unblocked, "load", "loads")
            ));
        }
        if self.read_only_depth > 0 {
            parts.push("read-only, loaded in loops".to_string());
        }
        parts.join("; ")
    }
}

fn profitability(trace: &[Access], params: &[ParamInfo]) -> Vec<Candidate> {
    let already: BTreeSet<u32> = params.iter().filter(|p| p.noalias).map(|p| p.index).collect();
    let mut tallies: BTreeMap<u32, Tally> = BTreeMap::new();
    let writes: Vec<&Access> = trace.iter().filter(|a| a.write).collect();
    let mut by_key: HashMap<u32, Vec<&Access>> = HashMap::new();
    for a in trace {
        by_key.entry(a.key).or_default().push(a);
    }

    for load in trace.iter().filter(|a| a.is_movable_load()) {
        let own = load.single_param();
        // Alias analysis already separates a noalias parameter's loads.
        if own.is_some_and(|p| already.contains(&p)) {
            continue;
        }
        let in_the_way: Vec<&Access> = writes.iter().copied().filter(|w| in_the_way(w, load, &already)).collect();
        let in_the_way = behind_fences(load, in_the_way);
        // Stores through the load's own pointer are real dependences, and
        // fences order everything: noalias removes neither. It removes the
        // others.
        let (blockers, own_stores): (Vec<&Access>, Vec<&Access>) =
            in_the_way.into_iter().partition(|w| !w.fence && w.origins.is_disjoint(&load.origins));
        if blockers.is_empty() {
            continue;
        }
        let blocked = Blocked {
            load,
            blockers: &blockers,
            own_stores: &own_stores,
            same_address: by_key.get(&load.key).map_or(&[][..], Vec::as_slice),
        };
        if let Some(p) = own {
            tallies.entry(p).or_default().frees(blocked.gain());
        }
        let writers: BTreeSet<u32> = blockers.iter().filter_map(|w| w.single_param()).collect();
        for q in writers {
            if let Some(gain) = blocked.gain_without(q) {
                tallies.entry(q).or_default().unblocks(gain);
            }
        }
    }

    for p in params.iter().filter(|p| !p.noalias) {
        let through_p = |a: &&Access| a.origins.contains(&Origin::Param(p.index));
        if trace.iter().filter(through_p).any(|a| a.write) {
            continue;
        }
        let depth: usize = trace.iter().filter(through_p).filter(|a| a.is_movable_load()).map(|a| a.loops.len()).sum();
        if depth > 0 {
            tallies.entry(p.index).or_default().read_only_depth = u32::try_from(depth).unwrap_or(u32::MAX);
        }
    }

    let mut out: Vec<Candidate> = params
        .iter()
        .filter(|p| !p.noalias)
        .filter_map(|p| {
            let t = tallies.get(&p.index)?;
            let score = t.score();
            (score > 0).then(|| Candidate { index: p.index, name: p.name.clone(), score, reason: t.reason() })
        })
        .collect();
    out.sort_by(|a, b| b.score.cmp(&a.score).then(a.index.cmp(&b.index)));
    out
}

/// Whether store `w` may stand between `load` and an optimisation: it may
/// run before the load, may write the same kind of memory, and alias
/// analysis cannot already tell them apart (a noalias parameter's stores).
fn in_the_way(w: &Access, load: &Access, already: &BTreeSet<u32>) -> bool {
    w.may_run_before(load)
        && spaces_may_alias(w.space, load.space)
        && !w.single_param().is_some_and(|q| already.contains(&q))
}

/// Drop the stores a fence already separates from the load: nothing moves
/// a load above a fence, so a store before the last fence on the way to the
/// load (or, with a fence in the loop, a store from the previous iteration)
/// no longer matters. The fences stay.
fn behind_fences<'a>(load: &Access, in_the_way: Vec<&'a Access>) -> Vec<&'a Access> {
    let last_fence = in_the_way.iter().filter(|w| w.fence && w.seq < load.seq).map(|w| w.seq).max();
    let fence_in_loop = in_the_way.iter().any(|w| w.fence && w.shares_loop(load));
    in_the_way
        .into_iter()
        .filter(|w| {
            let after_fence = match last_fence {
                Some(f) => w.seq > f,
                None => true,
            };
            w.fence || (after_fence && (w.seq < load.seq || !fence_in_loop))
        })
        .collect()
}

/// A load and the stores through other pointers that keep it in place.
struct Blocked<'a> {
    load: &'a Access,
    blockers: &'a [&'a Access],
    /// Stores through the load's own pointer, and fences, that may run
    /// before it.
    own_stores: &'a [&'a Access],
    /// Accesses to the same address (the load among them).
    same_address: &'a [&'a Access],
}

impl Blocked<'_> {
    /// What freeing the load from all its blockers is worth.
    fn gain(&self) -> Gain {
        // Hoisting out of a loop, or carrying the value around it, also
        // needs no store to another address through the same pointer (or
        // fence) in the loop.
        let load = self.load;
        let in_loop = |w: &Access| w.shares_loop(load);
        let kind = if self.reusable(|_| true) {
            GainKind::Reuse
        } else if self.blockers.iter().any(|w| in_loop(w))
            && !self.own_stores.iter().any(|w| in_loop(w) && w.key != load.key)
        {
            GainKind::Loop
        } else {
            GainKind::Reorder
        };
        // amdgpu.noclobber needs no store at all in the way.
        let scalar = load.uniform && load.space == GLOBAL && self.own_stores.is_empty();
        Gain { kind, scalar }
    }

    /// What noalias on store parameter `q` alone frees: everything when all
    /// blockers store through `q`, else a reload whose only obstacles
    /// between the two accesses are `q`'s stores.
    fn gain_without(&self, q: u32) -> Option<Gain> {
        let through_q = |w: &Access| w.single_param() == Some(q);
        if self.blockers.iter().all(|w| through_q(w)) {
            return Some(self.gain());
        }
        self.reusable(through_q).then_some(Gain { kind: GainKind::Reuse, scalar: false })
    }

    /// An earlier access to the same address through the same pointer, with
    /// blockers between the two, all of them `removable`, and no store to
    /// another address through that pointer: GVN can reuse its value once
    /// the blockers are out of the way.
    fn reusable(&self, removable: impl Fn(&Access) -> bool) -> bool {
        let load = self.load;
        let between = |a: &Access, w: &Access| a.seq < w.seq && w.seq < load.seq;
        self.same_address.iter().any(|a| {
            if a.seq >= load.seq || a.origins != load.origins {
                return false;
            }
            if self.own_stores.iter().any(|w| between(a, w) && w.key != load.key) {
                return false;
            }
            let mut blockers = self.blockers.iter().filter(|w| between(a, w)).peekable();
            blockers.peek().is_some() && blockers.all(|w| removable(w))
        })
    }
}

// ---------------------------------------------------------------------------
// The trace: the kernel's memory accesses, callees read in place.

const FLAT: u32 = 0;
const GLOBAL: u32 = 1;
const PRIVATE: u32 = 5;

/// AMDGPU address spaces that are all global memory underneath.
fn is_global_memory(space: u32) -> bool {
    matches!(space, 1 | 4 | 6 | 7 | 8 | 9)
}

/// Constant memory: nothing writes it while a kernel runs.
fn is_constant_memory(space: u32) -> bool {
    matches!(space, 4 | 6)
}

fn spaces_may_alias(a: u32, b: u32) -> bool {
    a == b || a == FLAT || b == FLAT || (is_global_memory(a) && is_global_memory(b))
}

/// What a pointer may be based on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Origin {
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

type Origins = BTreeSet<Origin>;

/// What the analysis knows about one value.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
struct Fact {
    origins: Origins,
    /// May differ between the lanes of a wave.
    divergent: bool,
}

impl Fact {
    fn of(origin: Origin) -> Fact {
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

/// One access to memory that is not the stack.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Access {
    write: bool,
    /// A load optimisations may move or merge (not volatile, not atomic).
    movable: bool,
    origins: Origins,
    /// Address space, after looking through casts to flat.
    space: u32,
    /// The address is the same in every lane.
    uniform: bool,
    /// Equal keys: the same address expression.
    key: u32,
    /// Position in the kernel, callees inlined: what may run before an
    /// access comes earlier, except around loops.
    seq: u32,
    /// The loops around the access.
    loops: Vec<u32>,
    /// A fence: orders every access, whatever noalias says.
    fence: bool,
}

impl Access {
    fn single_param(&self) -> Option<u32> {
        match (self.origins.len(), self.origins.first()) {
            (1, Some(Origin::Param(p))) => Some(*p),
            _ => None,
        }
    }

    fn is_movable_load(&self) -> bool {
        !self.write && self.movable && !is_constant_memory(self.space)
    }

    fn shares_loop(&self, other: &Access) -> bool {
        self.loops.iter().any(|l| other.loops.contains(l))
    }

    fn may_run_before(&self, other: &Access) -> bool {
        self.seq < other.seq || self.shares_loop(other)
    }
}

/// Bounds that keep the ranking cheap on big modules.
const MAX_CALL_DEPTH: usize = 6;
const MAX_CALLEE_INSTRUCTIONS: usize = 5_000;
/// Instruction visits over all functions, fixpoint rounds included.
const VISIT_BUDGET: usize = 500_000;
const MAX_ROUNDS: usize = 16;
const MAX_KEY_DEPTH: u32 = 48;

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

fn trace(kernel: FunctionValue<'_>) -> Vec<Access> {
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

/// A function body: its blocks in execution order (see `ordered_blocks`), with its loops.
struct Body<'ctx> {
    /// Every instruction, and the index of its block.
    insts: Vec<(InstructionValue<'ctx>, usize)>,
    /// For each block, the (function-local) loops it is in.
    block_loops: Vec<Vec<u32>>,
    loop_count: u32,
    args: HashMap<BasicValueEnum<'ctx>, usize>,
    /// The values stored into each stack slot, and whether the store
    /// addresses the slot itself (not an element of it).
    slot_stores: HashMap<InstructionValue<'ctx>, Vec<(BasicValueEnum<'ctx>, bool)>>,
}

impl<'ctx> Body<'ctx> {
    fn of(f: FunctionValue<'ctx>) -> Body<'ctx> {
        let (blocks, block_loops, loop_count) = ordered_blocks(f);
        let mut insts = Vec::new();
        let mut slot_stores: HashMap<InstructionValue<'ctx>, Vec<(BasicValueEnum<'ctx>, bool)>> = HashMap::new();
        for (i, b) in blocks.iter().enumerate() {
            for inst in b.get_instructions() {
                insts.push((inst, i));
                if inst.get_opcode() == InstructionOpcode::Store {
                    if let (Some(v), Some((slot, direct))) =
                        (llvm::value_operand(inst, 0), llvm::value_operand(inst, 1).and_then(slot_of))
                    {
                        slot_stores.entry(slot).or_default().push((v, direct));
                    }
                }
            }
        }
        let args = f.get_params().into_iter().enumerate().map(|(i, p)| (p, i)).collect();
        Body { insts, block_loops, loop_count, args, slot_stores }
    }
}

fn successors(b: BasicBlock<'_>) -> Vec<BasicBlock<'_>> {
    b.get_terminator().map(llvm::successors).unwrap_or_default()
}

/// The reachable blocks of `f` in an order where each block comes after
/// every block that may run before it, except around loops, whose blocks
/// are kept together (the loop before what follows it), and the loops each
/// block is in.
fn ordered_blocks(f: FunctionValue<'_>) -> (Vec<BasicBlock<'_>>, Vec<Vec<u32>>, u32) {
    let first = reverse_post_order(f, |_, succs| succs);
    let index: HashMap<BasicBlock<'_>, usize> = first.iter().enumerate().map(|(i, b)| (*b, i)).collect();
    let succs: Vec<Vec<usize>> =
        first.iter().map(|b| successors(*b).iter().filter_map(|s| index.get(s).copied()).collect()).collect();
    let (members, count) = loops(&succs);
    let shared = |a: BasicBlock<'_>, b: BasicBlock<'_>| match (index.get(&a), index.get(&b)) {
        (Some(&a), Some(&b)) => members[a].iter().filter(|l| members[b].contains(l)).count(),
        _ => 0,
    };
    // Depth first into the loop exits before the loop body: the exits then
    // finish first, and come last in the reverse post-order.
    let order = reverse_post_order(f, |from, mut succs| {
        succs.sort_by_key(|s| shared(from, *s));
        succs
    });
    let loops_of = order.iter().map(|b| index.get(b).map(|&i| members[i].clone()).unwrap_or_default()).collect();
    (order, loops_of, count)
}

/// Reverse post-order of a depth-first walk that takes each block's
/// successors in the order `arrange` gives them.
fn reverse_post_order<'ctx>(
    f: FunctionValue<'ctx>,
    arrange: impl Fn(BasicBlock<'ctx>, Vec<BasicBlock<'ctx>>) -> Vec<BasicBlock<'ctx>>,
) -> Vec<BasicBlock<'ctx>> {
    let Some(entry) = f.get_first_basic_block() else {
        return Vec::new();
    };
    let next = |b: BasicBlock<'ctx>| arrange(b, successors(b));
    let mut seen = HashSet::from([entry]);
    let mut post = Vec::new();
    let mut stack = vec![(entry, next(entry), 0usize)];
    while let Some(top) = stack.last_mut() {
        if let Some(&s) = top.1.get(top.2) {
            top.2 += 1;
            if seen.insert(s) {
                stack.push((s, next(s), 0));
            }
        } else {
            post.push(top.0);
            stack.pop();
        }
    }
    post.reverse();
    post
}

/// Natural loops from the retreating edges of a reverse post-order (the
/// back edges, in a reducible CFG): one loop per header, holding the blocks
/// that reach a latch without passing the header.
fn loops(succs: &[Vec<usize>]) -> (Vec<Vec<u32>>, u32) {
    let n = succs.len();
    let mut preds = vec![Vec::new(); n];
    for (u, ss) in succs.iter().enumerate() {
        for &s in ss {
            preds[s].push(u);
        }
    }
    let mut header_id: BTreeMap<usize, u32> = BTreeMap::new();
    let mut members: Vec<Vec<u32>> = vec![Vec::new(); n];
    for (latch, ss) in succs.iter().enumerate() {
        for &header in ss.iter().filter(|&&h| h <= latch) {
            let next = u32::try_from(header_id.len()).unwrap_or(u32::MAX);
            let id = *header_id.entry(header).or_insert(next);
            let mut body = HashSet::from([header]);
            let mut work = vec![latch];
            while let Some(b) = work.pop() {
                if body.insert(b) {
                    work.extend(preds[b].iter().copied());
                }
            }
            for b in body {
                if !members[b].contains(&id) {
                    members[b].push(id);
                }
            }
        }
    }
    for m in &mut members {
        m.sort_unstable();
    }
    (members, u32::try_from(header_id.len()).unwrap_or(u32::MAX))
}

/// The alloca a pointer addresses, through GEPs and casts, and whether it
/// addresses the slot itself (no GEP on the way).
fn slot_of(ptr: BasicValueEnum<'_>) -> Option<(InstructionValue<'_>, bool)> {
    let mut v = ptr;
    let mut direct = true;
    for _ in 0..32 {
        let inst = v.as_instruction_value()?;
        match inst.get_opcode() {
            InstructionOpcode::Alloca => return Some((inst, direct)),
            InstructionOpcode::GetElementPtr => direct = false,
            InstructionOpcode::BitCast | InstructionOpcode::AddrSpaceCast => {}
            _ => return None,
        }
        v = llvm::value_operand(inst, 0)?;
    }
    None
}

/// A pointer's address space as a number.
fn space_of(ptr: BasicValueEnum<'_>) -> u32 {
    if !ptr.is_pointer_value() {
        return FLAT;
    }
    let space = ptr.into_pointer_value().get_type().get_address_space();
    (0u16..=16).find(|&n| AddressSpace::from(n) == space).map_or(u32::MAX, u32::from)
}

fn may_hold_pointer(ty: AnyTypeEnum<'_>) -> bool {
    match ty {
        AnyTypeEnum::IntType(_) | AnyTypeEnum::FloatType(_) | AnyTypeEnum::VoidType(_) => false,
        AnyTypeEnum::VectorType(v) => v.get_element_type().is_pointer_type(),
        _ => true,
    }
}

fn is_intrinsic(f: FunctionValue<'_>) -> bool {
    f.get_name().to_bytes().starts_with(b"llvm.")
}

fn name_of(f: FunctionValue<'_>) -> String {
    f.get_name().to_string_lossy().into_owned()
}

/// A call's `memory(...)` effects (llvm/Support/ModRef.h: two bits per
/// location, ArgMem first, Other fourth; Mod is the high bit of a pair).
#[derive(Debug, Clone, Copy)]
struct Effects(u64);

impl Effects {
    const ARG_MOD: u64 = 0b10;
    const OTHER_MOD: u64 = 0b10 << 6;
    /// ArgMem, InaccessibleMem, ErrnoMem, Other.
    const IR_LOCATIONS: u64 = 0xff;

    fn of(call: Option<CallSiteValue<'_>>, callee: Option<FunctionValue<'_>>) -> Effects {
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

    fn writes_args(self) -> bool {
        self.0 & Self::ARG_MOD != 0
    }

    fn writes_other(self) -> bool {
        self.0 & Self::OTHER_MOD != 0
    }
}

/// The facts of one function body under one set of argument facts.
struct Solution<'ctx> {
    env: Vec<Fact>,
    values: HashMap<InstructionValue<'ctx>, Fact>,
    slots: HashMap<InstructionValue<'ctx>, Fact>,
    ret: Fact,
}

/// An address expression, up to the names of its values.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum KeyNode<'ctx> {
    Param(u32),
    Constant(BasicValueEnum<'ctx>),
    /// A stack slot of one function instance, whatever it holds.
    Slot(u32, InstructionValue<'ctx>),
    Op(InstructionOpcode, Vec<u32>),
    Call(FunctionValue<'ctx>, Vec<u32>),
    Unique(u32, InstructionValue<'ctx>),
}

/// What key computation needs from one function instance.
struct Instance<'a, 'ctx> {
    id: u32,
    body: &'a Body<'ctx>,
    sol: &'a Solution<'ctx>,
    arg_keys: &'a [u32],
    memo: HashMap<BasicValueEnum<'ctx>, u32>,
    slot_memo: HashMap<InstructionValue<'ctx>, u32>,
    in_progress: HashSet<InstructionValue<'ctx>>,
}

struct Analyzer<'ctx> {
    /// Each kernel parameter's address space (flat for non-pointers).
    param_spaces: Vec<u32>,
    bodies: HashMap<FunctionValue<'ctx>, Rc<Body<'ctx>>>,
    solved: HashMap<(FunctionValue<'ctx>, Vec<Fact>), Rc<Solution<'ctx>>>,
    solving: Vec<FunctionValue<'ctx>>,
    collecting: Vec<FunctionValue<'ctx>>,
    budget: usize,
    pure: HashMap<FunctionValue<'ctx>, bool>,
    keys: HashMap<KeyNode<'ctx>, u32>,
    seq: u32,
    next_loop: u32,
    next_instance: u32,
    trace: Vec<Access>,
}

impl<'ctx> Analyzer<'ctx> {
    fn new(kernel: FunctionValue<'ctx>) -> Self {
        Analyzer {
            param_spaces: kernel.get_params().into_iter().map(space_of).collect(),
            bodies: HashMap::new(),
            solved: HashMap::new(),
            solving: Vec::new(),
            collecting: Vec::new(),
            budget: VISIT_BUDGET,
            pure: HashMap::new(),
            keys: HashMap::new(),
            seq: 0,
            next_loop: 0,
            next_instance: 0,
            trace: Vec::new(),
        }
    }

    fn body(&mut self, f: FunctionValue<'ctx>) -> Rc<Body<'ctx>> {
        self.bodies.entry(f).or_insert_with(|| Rc::new(Body::of(f))).clone()
    }

    // --- facts -------------------------------------------------------------

    /// Solve `f` under `env` to a fixpoint (stack slots make later stores
    /// feed earlier loads in loops).
    fn solve(&mut self, f: FunctionValue<'ctx>, env: Vec<Fact>) -> Rc<Solution<'ctx>> {
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

    // --- accesses ----------------------------------------------------------

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
            let loops: Vec<u32> = outer_loops
                .iter()
                .copied()
                .chain(body.block_loops[block].iter().map(|l| l.saturating_add(loop_base)))
                .collect();
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
                    self.push(Access {
                        write: true,
                        movable: false,
                        origins,
                        space: FLAT,
                        uniform: true,
                        key,
                        seq: 0,
                        loops,
                        fence: true,
                    });
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
        let pointer_args: Vec<BasicValueEnum<'ctx>> =
            args.iter().flatten().copied().filter(|v| v.is_pointer_value()).collect();
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

    fn record(
        &mut self,
        cx: &mut Instance<'_, 'ctx>,
        ptr: BasicValueEnum<'ctx>,
        write: bool,
        movable: bool,
        loops: &[u32],
    ) {
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
        self.push(Access {
            write,
            movable,
            origins,
            space,
            uniform: !f.divergent,
            key,
            seq: 0,
            loops: loops.to_vec(),
            fence: false,
        });
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

    // --- address keys -------------------------------------------------------

    fn intern(&mut self, node: KeyNode<'ctx>) -> u32 {
        let next = u32::try_from(self.keys.len()).unwrap_or(u32::MAX);
        *self.keys.entry(node).or_insert(next)
    }

    fn unique(&mut self, cx: &Instance<'_, 'ctx>, inst: InstructionValue<'ctx>) -> u32 {
        self.intern(KeyNode::Unique(cx.id, inst))
    }

    /// Equal keys for values computed the same way from the same inputs; a
    /// load of a stack slot stands for what is stored there when every
    /// store stores the same thing (a parameter spilled once), else for the
    /// slot itself (a loop counter).
    fn key(&mut self, cx: &mut Instance<'_, 'ctx>, v: BasicValueEnum<'ctx>, depth: u32) -> u32 {
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
            Op::GetElementPtr
            | Op::BitCast
            | Op::AddrSpaceCast
            | Op::PtrToInt
            | Op::IntToPtr
            | Op::ZExt
            | Op::SExt
            | Op::Trunc
            | Op::Add
            | Op::Sub
            | Op::Mul
            | Op::Shl
            | Op::LShr
            | Op::AShr
            | Op::And
            | Op::Or
            | Op::Xor
            | Op::UDiv
            | Op::SDiv
            | Op::URem
            | Op::SRem => {
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
                                    || call_args(inst, c)
                                        .iter()
                                        .flatten()
                                        .all(|v| !v.is_pointer_value() || slot_of(*v).is_some()))
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

/// The argument operands of a call, `None` where one is not a plain value
/// (metadata, a label).
fn call_args<'ctx>(
    inst: InstructionValue<'ctx>,
    call: Option<CallSiteValue<'ctx>>,
) -> Vec<Option<BasicValueEnum<'ctx>>> {
    let count = match call {
        Some(c) => c.count_arguments(),
        // invoke / callbr: the callee (and destinations) come last.
        None => inst.get_num_operands().saturating_sub(1),
    };
    (0..count).map(|i| llvm::value_operand(inst, i)).collect()
}

/// The fact of any operand: an instruction's solved fact, an argument's
/// fact from the environment, or a constant's.
fn fact<'ctx>(body: &Body<'ctx>, sol: &Solution<'ctx>, v: BasicValueEnum<'ctx>) -> Fact {
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

    fn param(index: u32) -> ParamInfo {
        ParamInfo { index, name: format!("p{index}"), noalias: false }
    }

    /// An access through parameter `p` (or through an unknown pointer), at
    /// position `seq` of the trace.
    fn access(p: Option<u32>, write: bool, seq: u32, key: u32) -> Access {
        let origin = p.map_or(Origin::Unknown, Origin::Param);
        Access {
            write,
            movable: !write,
            origins: BTreeSet::from([origin]),
            space: GLOBAL,
            uniform: false,
            key,
            seq,
            loops: vec![],
            fence: false,
        }
    }

    fn scores(c: &[Candidate]) -> Vec<(u32, u32)> {
        c.iter().map(|c| (c.index, c.score)).collect()
    }

    #[test]
    fn a_reload_across_a_foreign_store_is_freed_by_either_pointer() {
        // x = a[i]; b[i] = x; y = a[i]; c is never touched.
        let trace = [access(Some(0), false, 0, 7), access(Some(1), true, 1, 8), access(Some(0), false, 2, 7)];
        let ranked = profitability(&trace, &[param(0), param(1), param(2)]);
        assert_eq!(scores(&ranked), [(0, REUSE), (1, REUSE)]);
        assert_eq!(ranked[0].reason, "1 reload reusable across stores through other pointers");
        assert_eq!(ranked[1].reason, "its stores alone block 1 load through other pointers");
    }

    #[test]
    fn a_store_between_two_loads_frees_the_reload_even_with_other_stores_in_the_loop() {
        // loop { x = a[i]; b[k] = x; y = a[i]; c[k] = y; }
        let in_loop = |mut a: Access| {
            a.loops = vec![0];
            a
        };
        let trace = [
            in_loop(access(Some(0), false, 0, 7)),
            in_loop(access(Some(1), true, 1, 8)),
            in_loop(access(Some(0), false, 2, 7)),
            in_loop(access(Some(2), true, 3, 9)),
        ];
        let ranked = profitability(&trace, &[param(0), param(1), param(2)]);
        // a: the reload (6), the first load in a storing loop (4), and 2
        // loads at loop depth 1 of a read-only pointer; b: the reload; c:
        // nothing on its own.
        assert_eq!(scores(&ranked), [(0, REUSE + LOOP + 2), (1, REUSE)]);
    }

    #[test]
    fn loads_before_every_store_gain_nothing() {
        let trace = [access(Some(0), false, 0, 1), access(Some(1), true, 1, 2)];
        assert!(profitability(&trace, &[param(0), param(1)]).is_empty());
    }

    #[test]
    fn a_store_through_the_same_pointer_is_a_real_dependence() {
        let trace = [access(Some(0), true, 0, 1), access(Some(0), false, 1, 1)];
        assert!(profitability(&trace, &[param(0)]).is_empty());
    }

    #[test]
    fn loops_and_uniform_addresses_add_up() {
        let mut store = access(Some(1), true, 0, 1);
        store.loops = vec![3];
        let mut load = access(Some(0), false, 1, 2);
        load.loops = vec![3];
        load.uniform = true;
        let ranked = profitability(&[store, load], &[param(0), param(1)]);
        assert_eq!(scores(&ranked), [(0, LOOP + SCALAR + 1), (1, LOOP + SCALAR)]);
        assert_eq!(
            ranked[0].reason,
            "1 load in loops that store through other pointers; 1 uniform load could become scalar; read-only, loaded in loops"
        );
    }

    #[test]
    fn noalias_parameters_are_left_out_and_already_separate() {
        let trace = [access(Some(0), false, 0, 7), access(Some(1), true, 1, 8), access(Some(0), false, 2, 7)];
        let mut b = param(1);
        b.noalias = true;
        // b's stores cannot block a's loads: alias analysis knows already.
        assert!(profitability(&trace, &[param(0), b]).is_empty());
    }

    #[test]
    fn several_writers_share_no_credit_and_ties_go_by_index() {
        let trace = [
            access(Some(2), true, 0, 1),
            access(Some(3), true, 1, 2),
            access(Some(1), false, 2, 3),
            access(Some(0), false, 3, 4),
        ];
        let ranked = profitability(&trace, &[param(0), param(1), param(2), param(3)]);
        assert_eq!(scores(&ranked), [(0, REORDER), (1, REORDER)]);
    }

    #[test]
    fn unknown_writes_block_but_earn_nothing() {
        let trace = [access(None, true, 0, 1), access(Some(0), false, 1, 2)];
        assert_eq!(scores(&profitability(&trace, &[param(0)])), [(0, REORDER)]);
    }

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
