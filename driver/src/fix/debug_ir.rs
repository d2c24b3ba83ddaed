//! What a decision changed, by source line and column: the unit's
//! pre-optimization IR with line tables (`-gline-tables-only`), before and
//! after the plugin's early phase (`opt -passes=regtune-apply<early>`).
//!
//! Two things are read from LLVM's textual IR (with `crate::ir`), nothing else:
//!   - calls that are gone afterwards (pow2 turned them into multiplies),
//!     with their `!dbg` location and the exponent they were passed;
//!   - where each function's loops start, from the start location clang
//!     puts in every loop ID when it emits debug info
//!     (`!{!self, !DILocation(start), !DILocation(end), ...}`), so the
//!     unroller's remarks (unrolled.rs) can be tied to the function whose
//!     source holds the loop.
//!
//! So the source edits follow exactly what the passes did, including
//! their rules about which calls and which functions they may touch.

use std::collections::{BTreeMap, BTreeSet};

use crate::ir;

/// A source position as debug info gives it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Pos {
    /// `directory/filename` of the `DIFile`, or the filename when absolute.
    pub file: String,
    pub line: u32,
    pub col: u32,
}

/// What a source patch asks of the unroller for one loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unroll {
    /// `#pragma nounroll`
    Disable,
    /// `#pragma unroll N`
    Count(u32),
}

/// A call the plugin removed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RemovedCall {
    /// The function the call was in (symbol).
    pub function: String,
    pub callee: String,
    pub at: Pos,
    /// The last argument, when it is a constant.
    pub exponent: Option<f64>,
    /// The calls to `function` (a library overload that converts its
    /// arguments, say, when the removed call is in a header).
    pub callers: Vec<CallSite>,
}

/// A located call.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CallSite {
    pub function: String,
    pub at: Pos,
    pub exponent: Option<f64>,
}

/// A loop whose unrolling the decisions changed (unrolled.rs).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ChangedLoop {
    /// The function whose source holds the loop (before inlining).
    pub function: String,
    pub at: Pos,
    /// What the source must ask for to unroll it as the decision did.
    pub after: Unroll,
}

/// A loop's start, in the function whose source holds it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LoopStart {
    pub function: String,
    pub at: Pos,
}

#[derive(Debug, Default)]
pub(crate) struct Changes {
    pub removed_calls: Vec<RemovedCall>,
    pub loops: Vec<ChangedLoop>,
    /// Loops the decisions changed in a way no pragma spells: (where, why).
    pub unpatchable: Vec<(Pos, String)>,
    /// Each function's direct callees, before any inlining: which kernels
    /// reach the code a change is in.
    pub callees: BTreeMap<String, BTreeSet<String>>,
}

/// Compare two textual modules.
pub(crate) fn changes(before: &str, after: &str) -> Changes {
    let (b, a) = (Module::parse(before), Module::parse(after));
    let mut out = Changes::default();
    for fb in &b.functions {
        // A function the plugin deleted (pow2's forwarders) changed nothing in the source.
        let Some(fa) = a.functions.iter().find(|f| f.name == fb.name) else { continue };
        let mut left: Vec<(String, Option<Pos>)> = fa.calls.iter().map(|c| (c.callee.clone(), a.pos(c.dbg))).collect();
        for call in &fb.calls {
            let pos = b.pos(call.dbg);
            match left.iter().position(|(callee, p)| *callee == call.callee && *p == pos) {
                Some(i) => {
                    left.swap_remove(i);
                }
                None => {
                    if let Some(at) = pos {
                        out.removed_calls.push(RemovedCall {
                            function: fb.name.clone(),
                            callee: call.callee.clone(),
                            at,
                            exponent: call.last_arg.as_deref().and_then(constant),
                            callers: callers_of(&b, &fb.name),
                        });
                    }
                }
            }
        }
    }
    out
}

/// The loops the plugin's early phase marked `llvm.loop.unroll.disable`
/// (a cap of 1 marks every loop of a kernel and the functions it reaches):
/// not only are they not unrolled, nothing downstream may unroll them
/// (ptxas reads the mark as `.pragma "nounroll"`), so the patch says so on
/// each, whether O3 would have unrolled it or not.
pub(crate) fn disabled_loops(before: &str, after: &str) -> Vec<LoopStart> {
    let (b, a) = (Module::parse(before), Module::parse(after));
    let mut out = Vec::new();
    for fa in &a.functions {
        let fb = b.functions.iter().find(|f| f.name == fa.name);
        for &id in fa.loops.iter().filter(|&&id| a.disables(id)) {
            let Some(at) = a.loop_start(id) else { continue };
            let was = fb.is_some_and(|fb| fb.loops.iter().any(|&i| b.disables(i) && b.loop_start(i).as_ref() == Some(&at)));
            if !was {
                out.push(LoopStart { function: fa.name.clone(), at });
            }
        }
    }
    out
}

/// Each function's direct callees in `module`.
pub(crate) fn callees(module: &str) -> BTreeMap<String, BTreeSet<String>> {
    let m = Module::parse(module);
    m.functions.iter().map(|f| (f.name.clone(), f.calls.iter().map(|c| c.callee.clone()).collect())).collect()
}

/// `from` is `to`, or calls it, directly or not.
pub(crate) fn reaches(callees: &BTreeMap<String, BTreeSet<String>>, from: &str, to: &str) -> bool {
    let mut seen = BTreeSet::from([from]);
    let mut todo = vec![from];
    while let Some(f) = todo.pop() {
        if f == to {
            return true;
        }
        for c in callees.get(f).into_iter().flatten() {
            if seen.insert(c) {
                todo.push(c);
            }
        }
    }
    false
}

/// Where every located loop of `module` starts, by function.
pub(crate) fn loop_starts(module: &str) -> Vec<LoopStart> {
    let m = Module::parse(module);
    let mut out = Vec::new();
    for f in &m.functions {
        for &id in &f.loops {
            if let Some(at) = m.loop_start(id) {
                out.push(LoopStart { function: f.name.clone(), at });
            }
        }
    }
    out
}

/// Every located call to `function` in `module`.
fn callers_of(module: &Module, function: &str) -> Vec<CallSite> {
    let mut out = Vec::new();
    for f in &module.functions {
        for c in f.calls.iter().filter(|c| c.callee == function) {
            if let Some(at) = module.pos(c.dbg) {
                out.push(CallSite { function: f.name.clone(), at, exponent: c.last_arg.as_deref().and_then(constant) });
            }
        }
    }
    out
}

struct Call {
    callee: String,
    dbg: Option<u32>,
    last_arg: Option<String>,
}

struct Function {
    name: String,
    calls: Vec<Call>,
    /// Loop IDs of the function's latches, first seen first.
    loops: Vec<u32>,
}

/// The module as `crate::ir` reads it, with each function's direct calls
/// and loop IDs gathered.
struct Module {
    functions: Vec<Function>,
    ir: ir::Module,
}

impl Module {
    fn parse(text: &str) -> Module {
        let ir = ir::parse(text);
        let functions = ir
            .functions
            .iter()
            .map(|f| {
                let insts = || f.blocks.iter().flat_map(|b| &b.insts);
                let calls = insts()
                    .filter_map(|i| {
                        let last_arg = i.call_args().last().and_then(|a| a.split_whitespace().last()).map(str::to_string);
                        Some(Call { callee: i.callee()?.to_string(), dbg: i.dbg, last_arg })
                    })
                    .collect();
                let mut loops: Vec<u32> = Vec::new();
                for id in insts().filter_map(|i| i.loop_md) {
                    if !loops.contains(&id) {
                        loops.push(id);
                    }
                }
                Function { name: f.name.clone(), calls, loops }
            })
            .collect();
        Module { functions, ir }
    }

    /// The source position of a `!DILocation` node.
    fn pos(&self, id: Option<u32>) -> Option<Pos> {
        self.ir.full_position(id?).map(|p| Pos { file: p.file, line: p.line, col: p.col })
    }

    /// A loop ID holds `!{!"llvm.loop.unroll.disable"}`.
    fn disables(&self, id: u32) -> bool {
        self.ir.disables_unroll(id)
    }

    /// A loop ID's start location: its first `!DILocation` operand.
    fn loop_start(&self, id: u32) -> Option<Pos> {
        self.ir.loop_start(id).map(|p| Pos { file: p.file, line: p.line, col: p.col })
    }
}

/// An IR constant as a number: `2.000000e+00`, `0x4000000000000000`, `2`.
fn constant(text: &str) -> Option<f64> {
    if let Some(hex) = text.strip_prefix("0x") {
        return (hex.len() == 16).then(|| u64::from_str_radix(hex, 16).ok().map(f64::from_bits)).flatten();
    }
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEFORE: &str = r#"
define internal noundef double @_ZL3powdd(double noundef %0, double noundef %1) #5 !dbg !20 {
  %3 = call contract double @__ocml_pow_f64(double noundef %0, double noundef %1) #26, !dbg !21
  ret double %3, !dbg !21
}
define dso_local amdgpu_kernel void @_Z1kPd(ptr addrspace(1) noundef %x.coerce) #0 !dbg !10 {
  %5 = call contract noundef double @_ZL3powdd(double noundef %4, double noundef 2.000000e+00) #25, !dbg !14
  %6 = call i32 @llvm.amdgcn.workitem.id.x(), !dbg !15
  br label %7, !dbg !16, !llvm.loop !30
  br label %7, !dbg !16, !llvm.loop !30
}
!10 = distinct !DISubprogram(name: "k", scope: !11, file: !11, line: 3, type: !17, unit: !0)
!11 = !DIFile(filename: "k.hip", directory: "/src", checksumkind: CSK_MD5, checksum: "ab")
!12 = distinct !DILexicalBlock(scope: !10, file: !11, line: 4, column: 3)
!14 = !DILocation(line: 5, column: 25, scope: !12)
!15 = !DILocation(line: 6, column: 3, scope: !10)
!16 = !DILocation(line: 7, column: 3, scope: !10)
!20 = distinct !DISubprogram(name: "pow", scope: !22, file: !22, line: 9, type: !17, unit: !0)
!21 = !DILocation(line: 10, column: 3, scope: !20)
!22 = !DIFile(filename: "/usr/include/math.h", directory: "")
!30 = distinct !{!30, !31, !32, !33, !34}
!31 = !DILocation(line: 8, column: 5, scope: !10)
!32 = !DILocation(line: 9, column: 5, scope: !10)
!33 = !{!"llvm.loop.mustprogress"}
!34 = !{!"llvm.loop.unroll.enable"}
"#;

    #[test]
    fn removed_calls_and_loop_starts_are_located() {
        let after = BEFORE.replace(
            "  %5 = call contract noundef double @_ZL3powdd(double noundef %4, double noundef 2.000000e+00) #25, !dbg !14\n",
            "  %5 = fmul contract double %4, %4, !dbg !14\n",
        );
        let c = changes(BEFORE, &after);
        assert_eq!(
            c.removed_calls,
            [RemovedCall {
                function: "_Z1kPd".into(),
                callee: "_ZL3powdd".into(),
                at: Pos { file: "/src/k.hip".into(), line: 5, col: 25 },
                exponent: Some(2.0),
                callers: vec![],
            }]
        );
        assert_eq!(loop_starts(BEFORE), [LoopStart { function: "_Z1kPd".into(), at: Pos { file: "/src/k.hip".into(), line: 8, col: 5 } }]);
    }

    #[test]
    fn deleted_functions_and_unchanged_modules_report_nothing() {
        let without_forwarder =
            BEFORE.lines().filter(|l| !l.contains("_ZL3powdd(double noundef %0") && !l.contains("@__ocml")).collect::<Vec<_>>().join("\n");
        assert!(changes(BEFORE, BEFORE).removed_calls.is_empty());
        assert!(changes(BEFORE, &without_forwarder).removed_calls.is_empty());
    }

    #[test]
    fn loops_the_early_phase_disables_are_found() {
        let after = BEFORE.replace("!30 = distinct !{!30, !31, !32, !33, !34}", "!30 = distinct !{!30, !31, !32, !33, !35}")
            + "!35 = !{!\"llvm.loop.unroll.disable\"}\n";
        assert_eq!(
            disabled_loops(BEFORE, &after),
            [LoopStart { function: "_Z1kPd".into(), at: Pos { file: "/src/k.hip".into(), line: 8, col: 5 } }]
        );
        assert!(disabled_loops(&after, &after).is_empty(), "already disabled: nothing new");
    }

    #[test]
    fn kernels_reach_what_they_call() {
        let g = callees(BEFORE);
        assert!(reaches(&g, "_Z1kPd", "__ocml_pow_f64"));
        assert!(!reaches(&g, "_ZL3powdd", "_Z1kPd"));
    }

    #[test]
    fn constants_in_both_spellings() {
        assert_eq!(constant("2.000000e+00"), Some(2.0));
        assert_eq!(constant("0x4000000000000000"), Some(2.0));
        assert_eq!(constant("2"), Some(2.0));
        assert_eq!(constant("%4"), None);
    }
}
