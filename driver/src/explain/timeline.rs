//! The pressure timeline in source terms: pressure per instruction and per
//! source line, the peak and where it lies, and the values live at the peak
//! grouped by the source variable they hold.
//!
//! Machine instructions carry line-table locations (with inlined-at
//! chains); the optimized IR of a `-g` compile carries the same locations on
//! its instructions and binds values to variables with `#dbg_value`. A value
//! live at the peak is named by the IR instructions at its defining
//! machine instruction's location: the variable they hold where the debug
//! info says, else the IR value's name.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use super::mir::{RegClass, Scratch};
use super::pressure::Liveness;
use crate::ir;
use crate::ir::SourcePos;

#[derive(Debug, Clone, Serialize)]
pub struct Timeline {
    /// Machine instructions, in layout order.
    pub instructions: usize,
    /// Per instruction: live VGPRs, AGPRs and SGPRs.
    pub vgpr: Vec<u32>,
    pub agpr: Vec<u32>,
    pub sgpr: Vec<u32>,
    /// Per instruction: its line in the kernel's file (0: none nearby).
    pub line: Vec<u32>,
    /// Per instruction: a scratch access, if it is one.
    pub scratch: Vec<Option<Scratch>>,
    /// Per source line, in line order.
    pub lines: Vec<LinePressure>,
    pub peak: Peak,
    /// The values occupying vector registers at the first peak instruction.
    pub live_at_peak: Vec<LiveValue>,
}

#[derive(Debug, Clone, Serialize)]
pub struct LinePressure {
    pub line: u32,
    pub instructions: u32,
    /// Most VGPRs (+ AGPRs) live at one of its instructions.
    pub vgpr: u32,
    pub sgpr: u32,
    pub spills: u32,
    pub private_accesses: u32,
}

#[derive(Debug, Clone, Serialize)]
pub struct Peak {
    /// Most VGPRs + AGPRs live at once.
    pub vgpr: u32,
    /// Most SGPRs live at once (VCC, EXEC and the like not counted).
    pub sgpr: u32,
    /// Instructions at the VGPR peak.
    pub instructions: Vec<usize>,
    /// Their source lines.
    pub lines: Vec<u32>,
    /// The innermost loop (its first and last line) holding every peak line.
    pub in_loop: Option<(u32, u32)>,
}

#[derive(Debug, Clone, Serialize)]
pub struct LiveValue {
    /// The source variable(s), else the IR value, else the source position.
    pub name: String,
    /// True when `name` is from the debug info's variables.
    pub variable: bool,
    /// Line of the instruction that made it (0: a kernel input).
    pub line: u32,
    /// 32-bit registers it occupies.
    pub registers: u32,
    pub regs: Vec<String>,
}

/// IR instructions by location, with the variables their results hold,
/// and the calls the kernel makes (before inlining) by location.
pub(crate) struct Names {
    sites: HashMap<Vec<(String, u32, u32)>, Vec<Site>>,
    calls: HashMap<(String, u32, u32), String>,
}

struct Site {
    loads: bool,
    variables: Vec<String>,
    /// What it is when no variable holds it: `u[…]` for a load from `u`,
    /// `&u[…]` for an address into it, else the IR value's name.
    label: String,
}

fn key(chain: &[SourcePos]) -> Vec<(String, u32, u32)> {
    chain.iter().map(|p| (p.file_name().to_string(), p.line, p.col)).collect()
}

/// How a label names an array: the parameter (`u.coerce` → `u`) or the
/// local variable that a pointer is based on.
fn base_of<'a>(
    f: &'a ir::Function,
    defs: &HashMap<&str, &'a ir::Inst>,
    locals: &HashMap<String, String>,
    mut p: &'a str,
) -> Option<String> {
    for _ in 0..16 {
        if f.params.iter().any(|(n, _)| n == p) {
            return Some(p.trim_end_matches(".coerce").to_string());
        }
        let inst = defs.get(p)?;
        match inst.opcode.as_str() {
            "getelementptr" | "addrspacecast" | "bitcast" => p = inst.operands.first()?,
            "alloca" => return Some(locals.get(p).cloned().unwrap_or_else(|| p.to_string())),
            _ => return None,
        }
    }
    None
}

impl Names {
    /// From the kernel `f` of the optimized IR, and the same kernel `before`
    /// optimization (for its calls).
    pub(crate) fn new(module: &ir::Module, f: &ir::Function, pre: Option<(&ir::Module, &ir::Function)>) -> Names {
        let vars = f.variables_of(module);
        let defs: HashMap<&str, &ir::Inst> =
            f.blocks.iter().flat_map(|b| &b.insts).filter_map(|i| Some((i.result.as_deref()?, i))).collect();
        let locals: HashMap<String, String> =
            f.records.iter().filter(|r| r.declare).filter_map(|r| Some((r.value.clone(), module.variable(r.variable)?.name))).collect();
        let mut sites: HashMap<_, Vec<Site>> = HashMap::new();
        for inst in f.blocks.iter().flat_map(|b| &b.insts) {
            let (Some(result), Some(dbg)) = (&inst.result, inst.dbg) else { continue };
            let variables = vars.get(result).map(|v| v.iter().map(|v| v.name.clone()).collect()).unwrap_or_default();
            let base = || inst.operands.first().and_then(|p| base_of(f, &defs, &locals, p));
            let label = match inst.opcode.as_str() {
                "load" => base().map(|b| format!("{b}[…]")),
                "getelementptr" => base().map(|b| format!("&{b}[…]")),
                _ => None,
            };
            sites.entry(key(&module.location(dbg))).or_default().push(Site {
                loads: inst.opcode == "load",
                variables,
                label: label.unwrap_or_else(|| format!("%{result}")),
            });
        }
        let mut calls = HashMap::new();
        if let Some((pm, pf)) = pre {
            for inst in pf.blocks.iter().flat_map(|b| &b.insts) {
                let (Some(callee), Some(dbg)) = (inst.callee(), inst.dbg) else { continue };
                if callee.starts_with("llvm.") {
                    continue;
                }
                if let Some(k) = key(&pm.location(dbg)).pop() {
                    let name = crate::names::demangle(callee);
                    let name = crate::names::short_name(&name).rsplit("::").next().unwrap_or(callee).to_string();
                    calls.insert(k, name);
                }
            }
        }
        Names { sites, calls }
    }

    /// What the value made at `chain` is: the variables it holds (`true`),
    /// else the call it is part of, else a description of the IR value. A
    /// load matches IR loads first, anything else non-loads first.
    fn lookup(&self, chain: &[SourcePos], loads: bool) -> Option<(String, bool)> {
        let sites = self.sites.get(&key(chain));
        let chosen: Vec<&Site> = sites.map_or_else(Vec::new, |sites| {
            let same: Vec<&Site> = sites.iter().filter(|s| s.loads == loads).collect();
            if same.is_empty() {
                sites.iter().collect()
            } else {
                same
            }
        });
        let mut vars: Vec<String> = chosen.iter().flat_map(|s| s.variables.iter().cloned()).collect();
        vars.sort();
        vars.dedup();
        if !vars.is_empty() {
            return Some((vars.join(", "), true));
        }
        // Inlined code: name the call it came from (`pow() at 103:25`).
        if chain.len() > 1 {
            let outer = key(chain).pop()?;
            if let Some(callee) = self.calls.get(&outer) {
                return Some((format!("{callee}() at {}:{}", outer.1, outer.2), false));
            }
        }
        let labels: Vec<&str> = chosen.iter().map(|s| s.label.as_str()).collect();
        // `u[…]` says more than `%12`.
        labels
            .iter()
            .find(|l| !l.starts_with('%'))
            .or(labels.iter().find(|l| !l[1..].chars().all(|c| c.is_ascii_digit())))
            .or(labels.first())
            .map(|l| (l.to_string(), false))
    }
}

/// Build the timeline of one kernel. `file` is the kernel's source file
/// (lines count only there); `loops` are the loop line ranges of its IR.
pub(crate) fn build(l: &Liveness<'_>, file: &str, names: Option<&Names>, loops: &[(u32, u32)]) -> Timeline {
    let points = l.points();
    let n = points.len();
    let file_name = file.rsplit('/').next().unwrap_or(file);
    let own_line = |k: usize| -> Option<u32> { l.instr(k).outer().filter(|p| p.file_name() == file_name && p.line > 0).map(|p| p.line) };
    // An instruction without a location takes the nearest located one's
    // line in its block: before it, else after it.
    let line: Vec<u32> = (0..n)
        .map(|k| {
            let block = l.order[k].0;
            let same_block = |j: &usize| l.order[*j].0 == block;
            own_line(k)
                .or_else(|| (0..k).rev().take_while(same_block).find_map(own_line))
                .or_else(|| (k + 1..n).take_while(same_block).find_map(own_line))
                .unwrap_or(0)
        })
        .collect();
    let scratch: Vec<Option<Scratch>> = (0..n).map(|k| l.instr(k).scratch).collect();
    let mut per_line: BTreeMap<u32, LinePressure> = BTreeMap::new();
    for k in 0..n {
        if line[k] == 0 {
            continue;
        }
        let e = per_line.entry(line[k]).or_insert(LinePressure {
            line: line[k],
            instructions: 0,
            vgpr: 0,
            sgpr: 0,
            spills: 0,
            private_accesses: 0,
        });
        e.instructions += 1;
        e.vgpr = e.vgpr.max(points[k].vector());
        e.sgpr = e.sgpr.max(points[k].sgpr);
        match scratch[k] {
            Some(Scratch::Spill) => e.spills += 1,
            Some(Scratch::Private) => e.private_accesses += 1,
            None => {}
        }
    }
    let top = points.iter().map(|p| p.vector()).max().unwrap_or(0);
    let at_peak: Vec<usize> = (0..n).filter(|&k| points[k].vector() == top).collect();
    let peak_lines: BTreeSet<u32> = at_peak.iter().map(|&k| line[k]).filter(|&x| x > 0).collect();
    let in_loop = match (peak_lines.first(), peak_lines.last()) {
        (Some(&lo), Some(&hi)) => loops.iter().filter(|(a, b)| *a <= lo && hi <= *b).min_by_key(|(a, b)| b - a).copied(),
        _ => None,
    };
    let live_at_peak = at_peak.first().map(|&k| live_values(l, k, &line, names)).unwrap_or_default();
    Timeline {
        instructions: n,
        vgpr: points.iter().map(|p| p.vgpr).collect(),
        agpr: points.iter().map(|p| p.agpr).collect(),
        sgpr: points.iter().map(|p| p.sgpr).collect(),
        line,
        scratch,
        lines: per_line.into_values().collect(),
        peak: Peak {
            vgpr: top,
            sgpr: points.iter().map(|p| p.sgpr).max().unwrap_or(0),
            instructions: at_peak,
            lines: peak_lines.into_iter().collect(),
            in_loop,
        },
        live_at_peak,
    }
}

/// The vector registers occupied at instruction `k`, grouped by the value
/// they hold, largest groups first.
fn live_values(l: &Liveness<'_>, k: usize, line: &[u32], names: Option<&Names>) -> Vec<LiveValue> {
    let mut groups: BTreeMap<(String, u32), LiveValue> = BTreeMap::new();
    for reg in l.occupied[k].iter().filter(|r| r.class != RegClass::Sgpr) {
        // A value with several definitions (a loop-carried one: its start
        // value and its update) is named by the most telling one.
        let named: Vec<(usize, Option<(String, bool)>)> =
            l.origins(reg, k).into_iter().map(|d| (d, names.and_then(|n| n.lookup(&l.instr(d).location, l.instr(d).loads)))).collect();
        let best = named
            .iter()
            .find(|(_, n)| n.as_ref().is_some_and(|n| n.1))
            .or_else(|| named.iter().find(|(_, n)| n.is_some()))
            .or(named.first());
        let (name, variable, def_line) = match best {
            None => ("kernel input (work-item id)".to_string(), false, 0),
            Some((d, Some((name, variable)))) => (name.clone(), *variable, line[*d]),
            Some((d, None)) => {
                let pos = l.instr(*d).outer().map_or_else(|| format!("line {}", line[*d]), |p| format!("{}:{}", p.line, p.col));
                (format!("value made at {pos}"), false, line[*d])
            }
        };
        let g = groups.entry((name.clone(), def_line)).or_insert(LiveValue { name, variable, line: def_line, registers: 0, regs: vec![] });
        g.registers += 1;
        g.regs.push(reg.to_string());
    }
    let mut out: Vec<LiveValue> = groups.into_values().collect();
    out.sort_by(|a, b| b.registers.cmp(&a.registers).then(a.line.cmp(&b.line)).then(a.name.cmp(&b.name)));
    out
}

#[cfg(test)]
mod tests {
    use super::super::{ir, mir, pressure};
    use super::*;

    const MIR: &str = "\
# Machine code for function k: NoPHIs, TracksLiveness, NoVRegs
Function Live Ins: $vgpr0

bb.0:
  liveins: $vgpr0
  renamable $vgpr2_vgpr3 = GLOBAL_LOAD_DWORDX2 renamable $vgpr0_vgpr1, 0, 0, implicit $exec :: (load (s64) from %ir.p, addrspace 1); /w/k.hip:4:9
  renamable $vgpr4_vgpr5 = V_ADD_F64_e64 0, $vgpr2_vgpr3, 0, $vgpr2_vgpr3, 0, 0, implicit $mode, implicit $exec; /w/inc/h.h:2:3 @[ /w/k.hip:5:7 ]
  renamable $vgpr6_vgpr7 = V_MOV_B64_e32 0, implicit $exec
  GLOBAL_STORE_DWORDX2 $vgpr6_vgpr7, killed $vgpr4_vgpr5, 0, 0, implicit $exec; /w/k.hip:6:3
  GLOBAL_STORE_DWORDX2 killed $vgpr0_vgpr1, killed $vgpr2_vgpr3, 0, 0, implicit $exec; /w/k.hip:7:3
  S_ENDPGM 0
# End machine code for function k.
";

    const IR: &str = r#"
define amdgpu_kernel void @k(ptr addrspace(1) %p) !dbg !10 {
entry:
  %gep = getelementptr inbounds double, ptr addrspace(1) %p, i64 1, !dbg !31
  %x = load double, ptr addrspace(1) %gep, align 8, !dbg !31
    #dbg_value(double %x, !20, !DIExpression(), !30)
  %twice = fadd double %x, %x, !dbg !32
  ret void
}
!10 = distinct !DISubprogram(name: "k", scope: !11, file: !11, line: 1, unit: !0)
!11 = !DIFile(filename: "k.hip", directory: "/w")
!12 = distinct !DISubprogram(name: "twice", scope: !13, file: !13, line: 1, unit: !0)
!13 = !DIFile(filename: "inc/h.h", directory: "/w")
!20 = !DILocalVariable(name: "x", scope: !10, file: !11, line: 4, type: !0)
!30 = !DILocation(line: 0, scope: !10)
!31 = !DILocation(line: 4, column: 9, scope: !10)
!32 = !DILocation(line: 2, column: 3, scope: !12, inlinedAt: !33)
!33 = !DILocation(line: 5, column: 7, scope: !10)
"#;

    #[test]
    fn lines_peak_and_live_values_in_source_terms() {
        let f = &mir::parse(MIR)[0];
        let l = pressure::liveness(f);
        let m = ir::parse(IR);
        let names = Names::new(&m, m.function("k").unwrap(), None);
        let t = build(&l, "k.hip", Some(&names), &[(3, 8)]);
        assert_eq!(t.vgpr, [4, 6, 8, 8, 4, 0]);
        // The move without a location takes the line before it, in its block.
        assert_eq!(t.line, [4, 5, 5, 6, 7, 7]);
        assert_eq!((t.peak.vgpr, t.peak.instructions.as_slice(), t.peak.lines.as_slice()), (8, &[2, 3][..], &[5, 6][..]));
        assert_eq!(t.peak.in_loop, Some((3, 8)));
        let live: Vec<(&str, bool, u32, u32)> = t.live_at_peak.iter().map(|v| (v.name.as_str(), v.variable, v.line, v.registers)).collect();
        assert_eq!(
            live,
            [
                ("kernel input (work-item id)", false, 0, 2),
                ("x", true, 4, 2),
                ("%twice", false, 5, 2),
                ("value made at line 5", false, 5, 2),
            ]
        );
        assert_eq!(
            t.lines.iter().map(|p| (p.line, p.instructions, p.vgpr)).collect::<Vec<_>>(),
            [(4, 1, 4), (5, 2, 8), (6, 1, 8), (7, 2, 4)]
        );
    }
}
