//! The register-pressure patterns of the seed articles (AMD's register
//! pressure lab note, the Laplacian series, Intel's registerization guide,
//! the spills article), each found in the IR of a `-g` compile and reported
//! with its source line, a concrete fix, the regtune transform that
//! addresses it and what `tune` measured for it:
//!
//! | kind               | found in                  | rule |
//! |--------------------|---------------------------|------|
//! | `private-array`    | optimized IR              | a local array that survives optimization (`alloca`) is indexed with a run-time value, and the kernel uses scratch |
//! | `address-taken`    | optimized IR              | a surviving local whose address escapes (passed to a call that is not inlined, stored, chosen at run time), and the kernel uses scratch |
//! | `large-argument`   | optimized IR              | a by-value struct argument the kernel writes to, so it works on a private copy, and the kernel uses scratch |
//! | `wide-index`       | optimized IR + debug info | a variable of a 64-bit integer type (`size_t`, `long`) holds index arithmetic made only from 32-bit values and feeds an address |
//! | `pow`              | IR before optimization    | `pow`/`powf`/`pown`/`powr` (or the device library's) called with a constant small integer or ±0.5 exponent |
//! | `hoisted-loads`    | optimized IR              | values loaded (or computed from loads) before a loop, not used in it, and used where the loop leads: at least 4 registers held through the loop |
//! | `no-launch-bounds` | code object               | AMDGPU, no launch bounds (1024 threads allowed), and the kernel is at the register cap that implies, or spills |
//! | `lds-spill`        | the pass's own report     | the db has an `lds-spill` build of the kernel: the values it keeps in shared memory and the bytes ([`super::lds`]) |
//!
//! A local that survives optimization but never reaches scratch (the
//! backend promoted it into registers) gets no diagnostic: its registers
//! show in the timeline. A read-only by-value argument is read from the
//! kernel-argument segment with scalar loads and costs no extra registers,
//! so it gets none either.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use regtune_decisions::{Entry, Usage};
use serde::Serialize;

use super::loops::Cfg;
use crate::gpu::Arch;
use crate::ir::{self, Function, Module};
use crate::names::{demangle, short_name};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    PrivateArray,
    AddressTaken,
    LargeArgument,
    WideIndex,
    Pow,
    HoistedLoads,
    NoLaunchBounds,
    LdsSpill,
}

impl Kind {
    pub(crate) fn title(self) -> &'static str {
        match self {
            Kind::PrivateArray => "private array indexed at run time",
            Kind::AddressTaken => "address-taken local",
            Kind::LargeArgument => "large by-value argument copied",
            Kind::WideIndex => "64-bit index arithmetic",
            Kind::Pow => "pow with a constant exponent",
            Kind::HoistedLoads => "loads held across a loop",
            Kind::NoLaunchBounds => "no launch bounds",
            Kind::LdsSpill => "values kept in shared memory (lds-spill)",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Diagnostic {
    pub kind: Kind,
    /// As the debug info names it.
    pub file: String,
    pub line: u32,
    /// Every line involved (the first is `line`).
    pub lines: Vec<u32>,
    pub message: String,
    pub fix: String,
    /// The regtune transform that addresses it, as `tune` labels it.
    pub transform: Option<String>,
    /// What `tune` measured for that transform, when the db has the kernel.
    pub tune: Option<String>,
}

/// The db's word on a kernel: the entry for this very input, one for an
/// older input (other source or flags), or nothing.
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)] // one per kernel explained: a Box would buy nothing
pub(crate) enum Tuned {
    Current(Entry),
    Stale,
    Never,
}

/// What a diagnosis needs to know about the kernel.
pub(crate) struct Context<'a> {
    pub arch: &'a Arch,
    pub symbol: &'a str,
    pub usage: &'a Usage,
    /// AMDGPU: `.max_flat_workgroup_size` from the code object.
    pub max_flat_workgroup_size: Option<u32>,
    /// Optimized IR (`-O3 -g`).
    pub post: &'a Module,
    /// IR straight from the frontend.
    pub pre: &'a Module,
    /// The block size of every launch of the kernel in its file, if they agree.
    pub launch_block_size: Option<u32>,
    pub tuned: &'a Tuned,
}

pub(crate) fn diagnose(cx: &Context<'_>) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    if let Some(f) = cx.post.function(cx.symbol) {
        private_memory(cx, f, &mut out);
        wide_index(cx, f, &mut out);
        hoisted_loads(cx, f, &mut out);
    }
    pow_calls(cx, &mut out);
    no_launch_bounds(cx, &mut out);
    for d in &mut out {
        if let Some(t) = &d.transform {
            d.tune = tune_note(cx.tuned, t);
        }
    }
    out.sort_by_key(|d| (d.line, d.kind));
    out
}

/// The position (file, line) of an instruction in the function it was
/// inlined into: the last element of its inlined-at chain.
fn place(m: &Module, inst: &ir::Inst) -> Option<(String, u32)> {
    let chain = m.location(inst.dbg?);
    chain.last().filter(|p| p.line > 0).map(|p| (p.file.clone(), p.line))
}

fn users(f: &Function) -> HashMap<&str, Vec<&ir::Inst>> {
    let mut out: HashMap<&str, Vec<&ir::Inst>> = HashMap::new();
    for inst in f.blocks.iter().flat_map(|b| &b.insts) {
        for o in &inst.operands {
            out.entry(o.as_str()).or_default().push(inst);
        }
    }
    out
}

fn subprogram_file(m: &Module, f: &Function) -> String {
    f.blocks.iter().flat_map(|b| &b.insts).find_map(|i| place(m, i)).map(|(file, _)| file).unwrap_or_default()
}

/// How a surviving local is used, from its address's users.
#[derive(Default)]
struct LocalUse<'a> {
    /// First access through a run-time index.
    dynamic: Option<&'a ir::Inst>,
    /// First use that lets the address escape, and how.
    escape: Option<(&'a ir::Inst, String)>,
    /// First store into it.
    store: Option<&'a ir::Inst>,
}

fn local_use<'a>(users: &HashMap<&str, Vec<&'a ir::Inst>>, alloca: &str) -> LocalUse<'a> {
    let mut u = LocalUse::default();
    let mut work = vec![alloca.to_string()];
    let mut seen = BTreeSet::new();
    while let Some(p) = work.pop() {
        if !seen.insert(p.clone()) {
            continue;
        }
        for &inst in users.get(p.as_str()).map(Vec::as_slice).unwrap_or_default() {
            let first = inst.operands.first().map(String::as_str);
            match inst.opcode.as_str() {
                "getelementptr" if first == Some(&p) => {
                    if inst.operands.len() > 1 && u.dynamic.is_none() {
                        u.dynamic = Some(inst);
                    }
                    work.extend(inst.result.clone());
                }
                "addrspacecast" | "bitcast" => work.extend(inst.result.clone()),
                "load" => {}
                // `store v, p`: a constant `v` is not listed, so the address
                // is stored only when it is the first of two operands.
                "store" if first == Some(&p) && inst.operands.len() == 2 => {
                    u.escape.get_or_insert((inst, "stored to memory".into()));
                }
                "store" => {
                    if u.store.is_none() && inst.dbg.is_some() {
                        u.store = Some(inst);
                    }
                }
                "call" | "invoke" => {
                    let callee = inst.callee().unwrap_or("");
                    let harmless = ["llvm.memcpy", "llvm.memmove", "llvm.memset", "llvm.lifetime"].iter().any(|p| callee.starts_with(p));
                    if !harmless {
                        let name = short_name(&demangle(callee)).to_string();
                        u.escape.get_or_insert((inst, format!("passed to `{name}`")));
                    }
                }
                "phi" | "select" => {
                    u.escape.get_or_insert((inst, "chosen at run time among addresses".into()));
                }
                _ => {
                    u.escape.get_or_insert((inst, "used as a value".into()));
                }
            }
        }
    }
    u
}

/// Locals that survive optimization and so live in private memory:
/// by-value arguments written to, address-taken locals, arrays indexed at
/// run time.
fn private_memory(cx: &Context<'_>, f: &Function, out: &mut Vec<Diagnostic>) {
    let scratch = cx.usage.scratch_bytes;
    if scratch == 0 {
        return;
    }
    let m = cx.post;
    let users = users(f);
    let declared: HashMap<&str, ir::Variable> =
        f.records.iter().filter(|r| r.declare).filter_map(|r| Some((r.value.as_str(), m.variable(r.variable)?))).collect();
    let params = f.dbg.map(|sp| m.parameters(sp)).unwrap_or_default();
    let file = subprogram_file(m, f);
    let line_of = |i: &ir::Inst| place(m, i).map_or(0, |(_, l)| l);
    for alloca in f.blocks.iter().flat_map(|b| &b.insts).filter(|i| i.opcode == "alloca") {
        let Some(a) = alloca.result.as_deref() else { continue };
        let u = local_use(&users, a);
        // A by-value argument the kernel changes: clang copies it from the
        // kernel-argument segment into this local first.
        let copied_param = users.get(a).into_iter().flatten().find_map(|i| {
            let callee = i.callee()?;
            if !callee.starts_with("llvm.memcpy") || i.operands.first().map(String::as_str) != Some(a) {
                return None;
            }
            let src = i.operands.get(1)?;
            let index = f.params.iter().position(|(n, _)| n == src)?;
            params.iter().find(|v| v.arg == Some(index as u32 + 1)).cloned()
        });
        let var = copied_param.clone().or_else(|| declared.get(a).cloned());
        let name = var.as_ref().map_or_else(|| a.to_string(), |v| v.name.clone());
        // Without debug info for the variable: where it is first used.
        let first_use = users.get(a).into_iter().flatten().filter_map(|i| place(m, i)).map(|(_, l)| l).min().unwrap_or(0);
        let decl = var.as_ref().map_or(first_use, |v| v.line);
        let ty = var.as_ref().and_then(|v| v.ty);
        let what = match ty {
            Some(t) => match m.type_bytes(t) {
                Some(b) => format!("{}, {b} bytes", m.type_name(t)),
                None => m.type_name(t),
            },
            None => alloca.text.trim_start_matches("alloca ").split(',').next().unwrap_or("").to_string(),
        };
        let (kind, at, message, fix) = if copied_param.is_some() {
            let at = u.store.map_or(decl, line_of);
            (
                Kind::LargeArgument,
                at,
                format!(
                    "`{name}` ({what}) is passed by value and the kernel writes to it (line {at}), so it works on a private copy: \
                     the copy lives in scratch memory ({scratch} bytes per lane for this kernel)"
                ),
                format!(
                    "keep kernel arguments read-only: copy only the fields you change into locals, or pass a pointer to the data in \
                     device memory (`const {}* __restrict__`)",
                    ty.map_or_else(|| "T".to_string(), |t| m.type_name(t))
                ),
            )
        } else if let Some((inst, how)) = &u.escape {
            let at = line_of(inst);
            (
                Kind::AddressTaken,
                at,
                format!(
                    "`{name}` (line {decl}) has its address taken ({how}, line {at}), so it lives in scratch memory \
                     ({scratch} bytes per lane for this kernel) instead of a register"
                ),
                "pass the value and return the result instead of a pointer (or let the callee be inlined), so the variable can \
                 stay in a register"
                    .to_string(),
            )
        } else if let Some(inst) = u.dynamic {
            let at = line_of(inst);
            (
                Kind::PrivateArray,
                at,
                format!(
                    "`{name}` ({what}, line {decl}) is indexed at run time (line {at}), so it cannot be kept in registers: it lives \
                     in scratch memory ({scratch} bytes per lane for this kernel) and every access goes to memory"
                ),
                "index it only with compile-time constants (a fully unrolled loop over it), make it smaller, or share it per block \
                 in LDS (`__shared__`)"
                    .to_string(),
            )
        } else {
            continue;
        };
        let mut lines = vec![at];
        if decl > 0 && decl != at {
            lines.push(decl);
        }
        out.push(Diagnostic { kind, file: file.clone(), line: at, lines, message, fix, transform: None, tune: None });
    }
}

/// Variables of a 64-bit integer type holding index arithmetic built only
/// from 32-bit values.
fn wide_index(cx: &Context<'_>, f: &Function, out: &mut Vec<Diagnostic>) {
    let m = cx.post;
    let defs: HashMap<&str, &ir::Inst> = f.blocks.iter().flat_map(|b| &b.insts).filter_map(|i| Some((i.result.as_deref()?, i))).collect();
    let users = users(f);
    let mut found: BTreeMap<(u32, String), String> = BTreeMap::new();
    for r in f.records.iter().filter(|r| !r.declare) {
        let Some(var) = m.variable(r.variable) else { continue };
        let Some(ty) = var.ty.filter(|&t| m.is_64bit_integer(t)) else { continue };
        let Some(inst) = defs.get(r.value.as_str()) else { continue };
        if inst.ty != "i64" || found.contains_key(&(var.line, var.name.clone())) {
            continue;
        }
        if narrow_origin(&defs, &r.value) && feeds_address(&users, &r.value) {
            found.insert((var.line, var.name.clone()), m.type_name(ty));
        }
    }
    if found.is_empty() {
        return;
    }
    let names: Vec<String> = found.iter().map(|((_, n), t)| format!("`{n}` ({t})")).collect();
    let lines: Vec<u32> = found.keys().map(|(l, _)| *l).collect();
    out.push(Diagnostic {
        kind: Kind::WideIndex,
        file: subprogram_file(m, f),
        line: lines[0],
        lines,
        message: format!(
            "{} hold{} index arithmetic in 64 bits although it is computed from 32-bit values (thread and block ids, int \
             parameters): each such value takes a register pair, and each multiply or add on it several instructions",
            names.join(", "),
            if names.len() == 1 { "s" } else { "" }
        ),
        fix: "declare them `int` (or `unsigned`) where every index they hold stays below 2^31".to_string(),
        transform: None,
        tune: None,
    });
}

/// Every leaf of the 64-bit computation of `v` is a 32-bit (or narrower)
/// value widened, or a constant; at least one is widened.
fn narrow_origin(defs: &HashMap<&str, &ir::Inst>, v: &str) -> bool {
    let mut widened = false;
    let mut work = vec![v.to_string()];
    let mut seen = BTreeSet::new();
    while let Some(x) = work.pop() {
        if !seen.insert(x.clone()) || seen.len() > 256 {
            continue;
        }
        // A value with no defining instruction is a parameter: 64-bit input.
        let Some(inst) = defs.get(x.as_str()) else { return false };
        match inst.opcode.as_str() {
            "sext" | "zext" => {
                let from = inst.text.split_whitespace().find(|w| w.starts_with('i')).unwrap_or("");
                if !matches!(from, "i32" | "i16" | "i8" | "i1") {
                    return false;
                }
                widened = true;
            }
            "add" | "sub" | "mul" | "shl" | "or" | "and" | "xor" | "phi" | "select" | "freeze" => {
                // The condition of a select is an i1, not part of the value.
                let ops = if inst.opcode == "select" { &inst.operands[1.min(inst.operands.len())..] } else { &inst.operands[..] };
                work.extend(ops.iter().cloned());
            }
            _ => return false,
        }
    }
    widened
}

/// `v`, or 64-bit arithmetic on it, is an index of an address computation.
fn feeds_address(users: &HashMap<&str, Vec<&ir::Inst>>, v: &str) -> bool {
    let mut work = vec![v.to_string()];
    let mut seen = BTreeSet::new();
    while let Some(x) = work.pop() {
        if !seen.insert(x.clone()) || seen.len() > 256 {
            continue;
        }
        for inst in users.get(x.as_str()).map(Vec::as_slice).unwrap_or_default() {
            match inst.opcode.as_str() {
                "getelementptr" if inst.operands.iter().skip(1).any(|o| *o == x) => return true,
                "add" | "sub" | "mul" | "shl" | "or" | "phi" | "select" if inst.ty == "i64" => work.extend(inst.result.clone()),
                _ => {}
            }
        }
    }
    false
}

/// The pow family: C's and HIP's/CUDA's overloads, and what they forward to.
fn is_pow(symbol: &str) -> bool {
    let base = short_name(&demangle(symbol)).rsplit("::").next().unwrap_or("").to_string();
    matches!(base.as_str(), "pow" | "powf" | "powl" | "pown" | "powr" | "powi" | "powif" | "powil")
        || ["__ocml_pow_", "__ocml_pown_", "__ocml_powr_", "llvm.pow.", "llvm.powi."].iter().any(|p| symbol.starts_with(p))
        || matches!(symbol, "__nv_pow" | "__nv_powf" | "__nv_powi" | "__nv_powif")
}

/// A constant as IR prints it: `2.000000e+00`, `0x4000000000000000`, `2`.
fn constant(arg: &str) -> Option<f64> {
    let token = arg.rsplit(' ').next()?;
    if let Some(hex) = token.strip_prefix("0x") {
        return u64::from_str_radix(hex, 16).ok().map(f64::from_bits);
    }
    token.parse().ok()
}

fn pow_calls(cx: &Context<'_>, out: &mut Vec<Diagnostic>) {
    let m = cx.pre;
    let by_name: HashMap<&str, &Function> = m.functions.iter().map(|f| (f.name.as_str(), f)).collect();
    // Functions the kernel reaches through direct calls.
    let mut reach = vec![cx.symbol];
    let mut seen = BTreeSet::from([cx.symbol]);
    let mut sites = Vec::new();
    while let Some(name) = reach.pop() {
        let Some(f) = by_name.get(name) else { continue };
        for inst in f.blocks.iter().flat_map(|b| &b.insts) {
            let Some(callee) = inst.callee() else { continue };
            if is_pow(callee) && !is_pow(name) {
                let args = inst.call_args();
                let exp = args.get(1).and_then(|a| constant(a));
                let small = exp.is_some_and(|e| (e.fract() == 0.0 && (2.0..=16.0).contains(&e.abs())) || e == -1.0 || e.abs() == 0.5);
                if let (true, Some(e), Some((file, line))) = (small, exp, place(m, inst)) {
                    sites.push((file, line, short_name(&demangle(callee)).rsplit("::").next().unwrap_or("pow").to_string(), e));
                }
            }
            if seen.insert(callee) {
                reach.push(callee);
            }
        }
    }
    if sites.is_empty() {
        return;
    }
    sites.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    // `pow(x, 2.0) at lines 103 (3 calls), 118`.
    let mut calls: Vec<(String, Vec<(u32, usize)>)> = Vec::new();
    for (_, line, f, e) in &sites {
        let call = format!("{f}(x, {e:?})");
        let i = calls.iter().position(|c| c.0 == call).unwrap_or_else(|| {
            calls.push((call, vec![]));
            calls.len() - 1
        });
        match calls[i].1.last_mut() {
            Some((l, n)) if l == line => *n += 1,
            _ => calls[i].1.push((*line, 1)),
        }
    }
    let calls: Vec<String> = calls
        .iter()
        .map(|(call, lines)| {
            let at: Vec<String> = lines.iter().map(|(l, n)| if *n == 1 { l.to_string() } else { format!("{l} ({n} calls)") }).collect();
            format!("{call} at line{} {}", if lines.len() == 1 { "" } else { "s" }, at.join(", "))
        })
        .collect();
    let library = crate::gpu::of(cx.arch).pow_library().1;
    let squares = sites.iter().all(|s| s.3 == 2.0);
    out.push(Diagnostic {
        kind: Kind::Pow,
        file: sites[0].0.clone(),
        line: sites[0].1,
        lines: sites.iter().map(|s| s.1).collect(),
        message: format!(
            "{} call{} of pow with a constant exponent: {}; each one brings in {library} whole pow routine (logarithm and \
             exponential in extended precision, special cases), whose temporaries and constants need registers",
            sites.len(),
            if sites.len() == 1 { "" } else { "s" },
            calls.join(", ")
        ),
        fix: if squares {
            "write `x * x`: the correctly rounded square (the library's pow is not correctly rounded, so the last bit of some \
             results changes)"
                .to_string()
        } else {
            "write the product (`x * x * x`; `sqrt(x)` for 0.5, `1.0 / x` for -1): exact for 2 and -1, within a rounding or two \
             otherwise"
                .to_string()
        },
        transform: Some("pow2".to_string()),
        tune: None,
    });
}

/// Values loaded before a loop, not used in it, used after it: they hold
/// registers through every iteration.
fn hoisted_loads(cx: &Context<'_>, f: &Function, out: &mut Vec<Diagnostic>) {
    let m = cx.post;
    let cfg = Cfg::new(f);
    let loops = cfg.loops(f, m);
    if loops.is_empty() {
        return;
    }
    let block_of: HashMap<&str, usize> =
        f.blocks.iter().enumerate().flat_map(|(b, blk)| blk.insts.iter().filter_map(move |i| Some((i.result.as_deref()?, b)))).collect();
    // Loads from global, flat or LDS memory (not kernel arguments or
    // private memory), and arithmetic on them, arguments and constants.
    let mut from_args: BTreeSet<&str> = f.params.iter().map(|(n, _)| n.as_str()).collect();
    let mut from_loads: BTreeSet<&str> = BTreeSet::new();
    for _ in 0..2 {
        for inst in f.blocks.iter().flat_map(|b| &b.insts) {
            let Some(r) = inst.result.as_deref() else { continue };
            let load = inst.opcode == "load"
                && !inst.text.contains("volatile")
                && !inst.text.contains("addrspace(4)")
                && !inst.text.contains("addrspace(5)");
            let arithmetic = matches!(
                inst.opcode.as_str(),
                "fadd"
                    | "fsub"
                    | "fmul"
                    | "fdiv"
                    | "fneg"
                    | "add"
                    | "sub"
                    | "mul"
                    | "sitofp"
                    | "uitofp"
                    | "fpext"
                    | "fptrunc"
                    | "sext"
                    | "zext"
            );
            let ops = || inst.operands.iter().map(String::as_str);
            if arithmetic && ops().all(|o| from_args.contains(o)) {
                from_args.insert(r);
            } else if load
                || (arithmetic && ops().any(|o| from_loads.contains(o)) && ops().all(|o| from_loads.contains(o) || from_args.contains(o)))
            {
                from_loads.insert(r);
            }
        }
    }
    let users = users(f);
    let vars = f.variables_of(m);
    let use_block = |user: &ir::Inst, v: &str| -> Vec<usize> {
        if user.opcode != "phi" {
            return user.result.as_deref().and_then(|r| block_of.get(r).copied()).into_iter().collect();
        }
        // A phi uses the value at the end of the incoming block.
        user.text
            .split('[')
            .skip(1)
            .filter(|arm| arm.split(',').next().is_some_and(|x| x.trim().trim_start_matches('%') == v))
            .filter_map(|arm| arm.split(',').nth(1).map(|b| b.trim().trim_end_matches(']').trim().trim_start_matches('%')))
            .filter_map(|b| f.blocks.iter().position(|blk| blk.name == b))
            .collect()
    };
    // Instructions without a result (stores) are placed by a scan.
    let inst_block = |inst: &ir::Inst| -> Option<usize> { f.blocks.iter().position(|b| b.insts.iter().any(|i| std::ptr::eq(i, inst))) };
    for l in &loops {
        // Blocks the loop can reach: a use there keeps the value live through it.
        let mut after_loop = BTreeSet::new();
        let mut work = vec![l.header];
        while let Some(b) = work.pop() {
            if after_loop.insert(b) {
                work.extend(cfg.succs[b].iter().copied());
            }
        }
        let mut held = Vec::new();
        for (b, blk) in f.blocks.iter().enumerate() {
            if l.body.contains(&b) || !cfg.dominates(b, l.header) {
                continue;
            }
            for inst in &blk.insts {
                let Some(v) = inst.result.as_deref().filter(|v| from_loads.contains(v)) else { continue };
                let blocks: Vec<usize> = users
                    .get(v)
                    .into_iter()
                    .flatten()
                    .flat_map(
                        |u| if u.result.is_some() || u.opcode == "phi" { use_block(u, v) } else { inst_block(u).into_iter().collect() },
                    )
                    .collect();
                let in_loop = blocks.iter().any(|b| l.body.contains(b));
                let after: Vec<usize> = blocks.iter().copied().filter(|&u| !l.body.contains(&u) && after_loop.contains(&u)).collect();
                if in_loop || after.is_empty() {
                    continue;
                }
                let first_use = users.get(v).into_iter().flatten().filter_map(|u| place(m, u).map(|(_, line)| line)).min().unwrap_or(0);
                let name = vars.get(v).and_then(|vs| vs.first()).map_or_else(|| format!("%{v}"), |var| var.name.clone());
                held.push((place(m, inst).map_or(0, |(_, line)| line), name, ir::registers_of_type(&inst.ty), first_use));
            }
        }
        let registers: u32 = held.iter().map(|h| h.2).sum();
        if registers < 4 {
            continue;
        }
        held.sort();
        let mut names: Vec<String> = Vec::new();
        for h in &held {
            if !names.contains(&h.1) {
                names.push(h.1.clone());
            }
        }
        let names: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
        let def_lines: BTreeSet<u32> = held.iter().map(|h| h.0).filter(|&x| x > 0).collect();
        let first_use = held.iter().map(|h| h.3).filter(|&x| x > 0).min().unwrap_or(0);
        let loop_lines = l.lines.map_or_else(String::new, |(a, b)| format!(" at lines {a}-{b}"));
        let writes = l.body.iter().flat_map(|&b| &f.blocks[b].insts).any(|i| {
            matches!(i.opcode.as_str(), "store" | "atomicrmw" | "cmpxchg")
                || i.callee().is_some_and(|c| !c.starts_with("llvm.") || c.starts_with("llvm.memcpy") || c.starts_with("llvm.memset"))
        });
        let defined = match (def_lines.first(), def_lines.last()) {
            (Some(a), Some(b)) if a != b => format!("lines {a}-{b}"),
            (Some(a), _) => format!("line {a}"),
            _ => "the top".to_string(),
        };
        let mut lines: Vec<u32> = def_lines.iter().copied().collect();
        lines.extend(l.lines.map(|(a, _)| a));
        out.push(Diagnostic {
            kind: Kind::HoistedLoads,
            file: subprogram_file(m, f),
            line: lines[0],
            lines,
            message: format!(
                "{} ({registers} registers) {} loaded at {defined}, before the loop{loop_lines}, and first used after it \
                 (line {first_use}): {} {} registers through every iteration",
                names.join(", "),
                if names.len() == 1 { "is" } else { "are" },
                if names.len() == 1 { "it holds" } else { "they hold" },
                if names.len() == 1 { "its" } else { "their" },
            ),
            fix: format!(
                "load them after the loop, next to their first use (line {first_use}){}",
                if writes {
                    "; the loop stores to memory, so that is only legal if those stores cannot change them (`__restrict__` on \
                     the pointers says so)"
                } else {
                    ""
                }
            ),
            transform: Some("sink".to_string()),
            tune: None,
        });
    }
}

fn no_launch_bounds(cx: &Context<'_>, out: &mut Vec<Diagnostic>) {
    let target = crate::gpu::of(cx.arch);
    let cap_for = |threads: u32| target.register_cap_for_block(threads);
    let (Some(cap), Some(max)) = (cap_for(1024), cx.max_flat_workgroup_size) else { return };
    if max != 0 && max != 1024 {
        return;
    }
    let u = cx.usage;
    let at_cap = u.vgpr.max(u.agpr) >= cap;
    if !at_cap && u.vgpr_spills == 0 {
        return;
    }
    let Some(f) = cx.post.function(cx.symbol).or_else(|| cx.pre.function(cx.symbol)) else { return };
    let m = if cx.post.function(cx.symbol).is_some() { cx.post } else { cx.pre };
    let (file, line) = (subprogram_file(m, f), f.dbg.and_then(|sp| m.line_of(sp)).unwrap_or(0));
    let spills = if u.vgpr_spills > 0 {
        format!(" and spills {} VGPRs ({} bytes of scratch per lane)", u.vgpr_spills, u.scratch_bytes)
    } else {
        String::new()
    };
    let fix = match cx.launch_block_size {
        Some(n) => format!(
            "add `__launch_bounds__({n})` to the kernel (every launch of it in this file uses {n} threads): the cap becomes {} \
             VGPRs. Occupancy can drop when the kernel then uses more of them; `regtune tune --block-size {n} --objective \
             no-spill` measures both",
            cap_for(n).unwrap_or(cap)
        ),
        None => "add `__launch_bounds__(N)` with the largest block size your launches use (256 threads: a cap of {} VGPRs)"
            .replace("{}", &cap_for(256).unwrap_or(cap).to_string()),
    };
    out.push(Diagnostic {
        kind: Kind::NoLaunchBounds,
        file,
        line,
        lines: vec![line],
        message: format!(
            "the kernel may be launched with 1024 threads per block, so on {} it may use at most {cap} VGPRs; it uses {}{spills}",
            cx.arch, u.vgpr
        ),
        fix,
        transform: Some("launch-bounds".to_string()),
        tune: None,
    });
}

/// What `tune` recorded about `transform` for this kernel.
fn tune_note(tuned: &Tuned, transform: &str) -> Option<String> {
    let e = match tuned {
        Tuned::Never => return None,
        Tuned::Stale => {
            return Some("the db's entry for this kernel is from another version of the source or other flags: tune again".into())
        }
        Tuned::Current(e) => e,
    };
    let has = |labels: Vec<String>| labels.iter().any(|l| l == transform || l.starts_with(&format!("{transform}=")));
    let change = |a: &Usage, b: &Usage| {
        format!(
            "VGPRs {} → {}, spills {} → {}, occupancy {} → {}",
            a.vgpr,
            b.vgpr,
            a.vgpr_spills + a.sgpr_spills,
            b.vgpr_spills + b.sgpr_spills,
            a.occupancy,
            b.occupancy
        )
    };
    if has(e.transforms.labels()) {
        let measured = match (&e.before, &e.after) {
            (Some(a), Some(b)) => format!(": {}", change(a, b)),
            _ => String::new(),
        };
        return Some(format!("tune applied {}{measured}", e.transforms.labels().join(" + ")));
    }
    if let Some(s) = e.suggested.iter().find(|s| has(s.transforms.labels())) {
        let from = e.after.or(e.before);
        let measured = from.map_or_else(String::new, |a| format!(": {}", change(&a, &s.usage)));
        let state = if s.confirmed { "confirmed, applied on the next build" } else { "suggested, not applied (confirm it in the db)" };
        return Some(format!("tune measured {}{measured}; {state}", s.transforms.labels().join(" + ")));
    }
    Some(format!(
        "tune kept no {transform} for this kernel ({})",
        if e.transforms.is_empty() {
            "it kept the plain build".to_string()
        } else {
            format!("it applied {}", e.transforms.labels().join(" + "))
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use regtune_decisions::{Suggestion, Transforms};

    #[test]
    fn pow_family_and_exponents() {
        assert!(is_pow("_ZL3powdd") && is_pow("__ocml_pow_f64") && is_pow("powf") && is_pow("__nv_powi") && is_pow("llvm.pow.f32"));
        assert!(!is_pow("__nv_fast_powf") && !is_pow("_Z4sqrtd") && !is_pow("power"));
        assert_eq!(constant("double noundef 2.000000e+00"), Some(2.0));
        assert_eq!(constant("double 0x4000000000000000"), Some(2.0));
        assert_eq!(constant("i32 noundef 3"), Some(3.0));
        assert_eq!(constant("double %x"), None);
    }

    fn entry(transforms: Transforms, suggested: Vec<Suggestion>) -> Entry {
        Entry {
            symbol: "k".into(),
            arch: "gfx90a".into(),
            input_hash: "h".into(),
            name: String::new(),
            file: String::new(),
            transforms,
            reason: None,
            suggested,
            candidates: vec![],
            left_out: vec![],
            measured: None,
            before: Some(Usage { vgpr: 99, sgpr_spills: 16, occupancy: 4, ..Usage::default() }),
            after: Some(Usage { vgpr: 82, occupancy: 5, ..Usage::default() }),
        }
    }

    #[test]
    fn tune_notes_say_what_the_db_measured() {
        let applied = Tuned::Current(entry(Transforms { pow2: true, ..Transforms::default() }, vec![]));
        assert_eq!(tune_note(&applied, "pow2").unwrap(), "tune applied pow2: VGPRs 99 → 82, spills 16 → 0, occupancy 4 → 5");
        assert_eq!(tune_note(&applied, "sink").unwrap(), "tune kept no sink for this kernel (it applied pow2)");
        let suggestion = Suggestion {
            transforms: Transforms { launch_bounds: Some(256), ..Transforms::default() },
            usage: Usage { vgpr: 162, occupancy: 3, ..Usage::default() },
            message: String::new(),
            reasons: vec![],
            confirmed: false,
        };
        let suggested = Tuned::Current(entry(Transforms::default(), vec![suggestion]));
        assert_eq!(
            tune_note(&suggested, "launch-bounds").unwrap(),
            "tune measured launch-bounds=256: VGPRs 82 → 162, spills 0 → 0, occupancy 5 → 3; suggested, not applied (confirm it in the db)"
        );
        assert!(tune_note(&Tuned::Never, "pow2").is_none());
        assert!(tune_note(&Tuned::Stale, "pow2").unwrap().contains("tune again"));
    }
}
