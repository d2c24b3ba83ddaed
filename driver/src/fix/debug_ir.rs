//! What a decision changed, by source line and column: the unit's
//! pre-optimization IR with line tables (`-gline-tables-only`), before and
//! after the plugin's early phase (`opt -passes=regtune-apply<early>`).
//!
//! Two things are read from LLVM's textual IR, nothing else:
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

use std::collections::{BTreeMap, BTreeSet, HashMap};

/// A source position as debug info gives it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Pos {
    /// `directory/filename` of the `DIFile`, or the filename when absolute.
    pub file: String,
    pub line: u32,
    pub col: u32,
}

/// What a source patch asks of the unroller for one loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unroll {
    /// `#pragma nounroll`
    Disable,
    /// `#pragma unroll N`
    Count(u32),
}

/// A call the plugin removed.
#[derive(Debug, Clone, PartialEq)]
pub struct RemovedCall {
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
pub struct CallSite {
    pub function: String,
    pub at: Pos,
    pub exponent: Option<f64>,
}

/// A loop whose unrolling the decisions changed (unrolled.rs).
#[derive(Debug, Clone, PartialEq)]
pub struct ChangedLoop {
    /// The function whose source holds the loop (before inlining).
    pub function: String,
    pub at: Pos,
    /// What the source must ask for to unroll it as the decision did.
    pub after: Unroll,
}

/// A loop's start, in the function whose source holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct LoopStart {
    pub function: String,
    pub at: Pos,
}

#[derive(Debug, Default)]
pub struct Changes {
    pub removed_calls: Vec<RemovedCall>,
    pub loops: Vec<ChangedLoop>,
    /// Loops the decisions changed in a way no pragma spells: (where, why).
    pub unpatchable: Vec<(Pos, String)>,
    /// Each function's direct callees, before any inlining: which kernels
    /// reach the code a change is in.
    pub callees: BTreeMap<String, BTreeSet<String>>,
}

/// Compare two textual modules.
pub fn changes(before: &str, after: &str) -> Changes {
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
pub fn disabled_loops(before: &str, after: &str) -> Vec<LoopStart> {
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
pub fn callees(module: &str) -> BTreeMap<String, BTreeSet<String>> {
    let m = Module::parse(module);
    m.functions.iter().map(|f| (f.name.clone(), f.calls.iter().map(|c| c.callee.clone()).collect())).collect()
}

/// `from` is `to`, or calls it, directly or not.
pub fn reaches(callees: &BTreeMap<String, BTreeSet<String>>, from: &str, to: &str) -> bool {
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
pub fn loop_starts(module: &str) -> Vec<LoopStart> {
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

struct Module {
    functions: Vec<Function>,
    /// `!N = ...`: the text after the `=`.
    metadata: HashMap<u32, String>,
}

impl Module {
    fn parse(text: &str) -> Module {
        let mut functions = Vec::new();
        let mut metadata = HashMap::new();
        let mut current: Option<Function> = None;
        for line in text.lines() {
            if let Some(f) = current.as_mut() {
                if line == "}" {
                    functions.extend(current.take());
                    continue;
                }
                if let Some(call) = call_of(line) {
                    f.calls.push(call);
                }
                if let Some(id) = attachment(line, "!llvm.loop") {
                    if !f.loops.contains(&id) {
                        f.loops.push(id);
                    }
                }
            } else if line.starts_with("define ") {
                if let Some(name) = global_name(line) {
                    current = Some(Function { name, calls: vec![], loops: vec![] });
                }
            } else if let Some(rest) = line.strip_prefix('!') {
                let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
                if let (Ok(n), Some(body)) = (rest[..digits].parse::<u32>(), rest[digits..].strip_prefix(" = ")) {
                    metadata.insert(n, body.trim_start_matches("distinct ").to_string());
                }
            }
        }
        Module { functions, metadata }
    }

    /// The source position of a `!DILocation` node.
    fn pos(&self, id: Option<u32>) -> Option<Pos> {
        let loc = self.metadata.get(&id?)?.strip_prefix("!DILocation(")?;
        let line: u32 = field(loc, "line")?.parse().ok()?;
        let col: u32 = field(loc, "column").and_then(|c| c.parse().ok()).unwrap_or(0);
        let file = self.file_of_scope(node_ref(&field(loc, "scope")?)?)?;
        (line > 0).then_some(Pos { file, line, col })
    }

    /// The file of a scope (subprogram, lexical block): its `file:` field.
    fn file_of_scope(&self, scope: u32) -> Option<String> {
        let node = self.metadata.get(&scope)?;
        let file = self.metadata.get(&node_ref(&field(node, "file")?)?)?.strip_prefix("!DIFile(")?;
        let name = unquote(&field(file, "filename")?);
        let dir = field(file, "directory").map(|d| unquote(&d)).unwrap_or_default();
        Some(if name.starts_with('/') || dir.is_empty() { name } else { format!("{dir}/{name}") })
    }

    /// A loop ID holds `!{!"llvm.loop.unroll.disable"}`.
    fn disables(&self, id: u32) -> bool {
        let Some(ops) = self.metadata.get(&id).and_then(|m| m.strip_prefix("!{")) else { return false };
        ops.trim_end_matches('}').split(", ").filter_map(node_ref).any(|op| self.metadata.get(&op).is_some_and(|n| n == "!{!\"llvm.loop.unroll.disable\"}"))
    }

    /// A loop ID's start location: its first `!DILocation` operand.
    fn loop_start(&self, id: u32) -> Option<Pos> {
        let ops = self.metadata.get(&id)?.strip_prefix("!{")?.trim_end_matches('}');
        ops.split(", ")
            .filter_map(node_ref)
            .filter(|&op| op != id)
            .find(|op| self.metadata.get(op).is_some_and(|n| n.starts_with("!DILocation(")))
            .and_then(|op| self.pos(Some(op)))
    }
}

/// The callee, `!dbg` and last argument of a direct call instruction.
fn call_of(line: &str) -> Option<Call> {
    let at = line.find(" call ")?;
    let rest = &line[at + " call ".len()..];
    let callee_at = rest.find('@')?;
    // An indirect call has its callee in a register, not after the type.
    if rest[..callee_at].contains('%') {
        return None;
    }
    let callee = global_name(&rest[callee_at..])?;
    let args_from = callee_at + rest[callee_at..].find('(')?;
    let args = balanced(&rest[args_from..])?;
    let last_arg = split_top_level(args).pop().and_then(|a| a.split_whitespace().last().map(str::to_string));
    Some(Call { callee, dbg: attachment(line, "!dbg"), last_arg })
}

/// `@name` or `@"quoted name"` at the first `@` of `text`.
fn global_name(text: &str) -> Option<String> {
    let rest = &text[text.find('@')? + 1..];
    if let Some(q) = rest.strip_prefix('"') {
        return Some(q[..q.find('"')?].to_string());
    }
    let len = rest.bytes().take_while(|b| b.is_ascii_alphanumeric() || b"$._-".contains(b)).count();
    (len > 0).then(|| rest[..len].to_string())
}

/// The text inside the parenthesis that `text` starts with.
fn balanced(text: &str) -> Option<&str> {
    let mut depth = 0i32;
    let mut quoted = false;
    for (i, c) in text.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '(' | '[' | '{' | '<' if !quoted => depth += 1,
            ')' | ']' | '}' | '>' if !quoted => {
                depth -= 1;
                if depth == 0 {
                    return Some(&text[1..i]);
                }
            }
            _ => {}
        }
    }
    None
}

fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' | '[' | '{' | '<' => depth += 1,
            ')' | ']' | '}' | '>' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(text[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    if !text[start..].trim().is_empty() {
        parts.push(text[start..].trim());
    }
    parts
}

/// `, !dbg !12` -> 12.
fn attachment(line: &str, name: &str) -> Option<u32> {
    let at = line.find(&format!("{name} !"))?;
    let rest = &line[at + name.len() + 2..];
    rest[..rest.bytes().take_while(u8::is_ascii_digit).count()].parse().ok()
}

/// `key: value` inside a specialized metadata node; a quoted value whole.
fn field(node: &str, key: &str) -> Option<String> {
    let pat = format!("{key}: ");
    let mut search = 0;
    let at = loop {
        let i = search + node[search..].find(&pat)?;
        // A whole field name: after `(` or `, `.
        if i == 0 || node[..i].ends_with('(') || node[..i].ends_with(", ") {
            break i;
        }
        search = i + pat.len();
    };
    let rest = &node[at + pat.len()..];
    if let Some(q) = rest.strip_prefix('"') {
        let mut end = 0;
        let bytes = q.as_bytes();
        while end < bytes.len() && bytes[end] != b'"' {
            end += if bytes[end] == b'\\' { 2 } else { 1 };
        }
        return Some(format!("\"{}\"", &q[..end.min(q.len())]));
    }
    let end = rest.find([',', ')']).unwrap_or(rest.len());
    Some(rest[..end].trim().to_string())
}

fn node_ref(text: &str) -> Option<u32> {
    text.trim().strip_prefix('!')?.parse().ok()
}

/// A quoted metadata string, with LLVM's `\XX` escapes undone.
fn unquote(text: &str) -> String {
    let inner = text.trim_matches('"');
    let mut out = Vec::new();
    let bytes = inner.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 2 < bytes.len() + 1 {
            if let Some(b) = inner.get(i + 1..i + 3).and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
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
        assert_eq!(
            loop_starts(BEFORE),
            [LoopStart { function: "_Z1kPd".into(), at: Pos { file: "/src/k.hip".into(), line: 8, col: 5 } }]
        );
    }

    #[test]
    fn deleted_functions_and_unchanged_modules_report_nothing() {
        let without_forwarder = BEFORE.lines().filter(|l| !l.contains("_ZL3powdd(double noundef %0") && !l.contains("@__ocml")).collect::<Vec<_>>().join("\n");
        assert!(changes(BEFORE, BEFORE).removed_calls.is_empty());
        assert!(changes(BEFORE, &without_forwarder).removed_calls.is_empty());
    }

    #[test]
    fn loops_the_early_phase_disables_are_found() {
        let after = BEFORE.replace("!30 = distinct !{!30, !31, !32, !33, !34}", "!30 = distinct !{!30, !31, !32, !33, !35}")
            + "!35 = !{!\"llvm.loop.unroll.disable\"}\n";
        assert_eq!(disabled_loops(BEFORE, &after), [LoopStart { function: "_Z1kPd".into(), at: Pos { file: "/src/k.hip".into(), line: 8, col: 5 } }]);
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
