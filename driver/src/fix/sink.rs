//! sink → each declaration moved down to just before the statement that
//! first uses it, within its own block, when that is a plain statement
//! move: the source counterpart of `regtune-sink` (passes/src/sink.rs).
//!
//! The plugin moves IR across basic blocks; within a block the backend's
//! scheduler orders code anyway. So a declaration moves only when it
//! would cross control flow (a loop, a branch, a block) on its way down,
//! and only when that is legal in the source, decided from the AST:
//!   - it declares variables with initializers and no side effects: no
//!     assignment, increment, volatile access, or call other than to a
//!     math function or the thread/block index; not `static`, `__shared__`,
//!     a reference or an array;
//!   - what it crosses calls nothing else (no barrier, atomic or asm),
//!     writes no variable its initializer reads, writes no memory if the
//!     initializer reads memory, and has no labels;
//!   - it reads something besides constants (as the plugin, which never
//!     moves values made from constants alone).
//!
//! And only when it pays, as the plugin judges it: the variables whose
//! live ranges the move extends (read by the initializer, used by nothing
//! after the new place, not moving along) must be fewer than those it
//! shortens. Moves are planned bottom-up, so a chain (`rmass` feeding
//! `half_dt_m` and `mass`) moves together, then pruned to a fixed point.
//!
//! A declaration that would cross control flow but may not is named in a
//! note with its lines, not patched. The moved text keeps its lines
//! (comments included); it lands above the comment lines directly above
//! its new neighbour.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::ast::{line_col, Node};
use super::edit::{self, Edit};
use super::{Kernel, Notes};

/// Functions whose calls read only their arguments.
const PURE_CALLS: &[&str] = &[
    "sqrt",
    "rsqrt",
    "cbrt",
    "rcbrt",
    "exp",
    "exp2",
    "exp10",
    "expm1",
    "log",
    "log2",
    "log10",
    "log1p",
    "pow",
    "powi",
    "pown",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "atan2",
    "sinh",
    "cosh",
    "tanh",
    "asinh",
    "acosh",
    "atanh",
    "sinpi",
    "cospi",
    "fabs",
    "abs",
    "labs",
    "llabs",
    "fmin",
    "fmax",
    "min",
    "max",
    "floor",
    "ceil",
    "trunc",
    "round",
    "rint",
    "nearbyint",
    "lround",
    "llround",
    "lrint",
    "llrint",
    "fmod",
    "remainder",
    "copysign",
    "fma",
    "hypot",
    "rhypot",
    "erf",
    "erfc",
    "tgamma",
    "lgamma",
    "ldexp",
    "scalbn",
    "isnan",
    "isinf",
    "isfinite",
    "signbit",
    "norm3d",
    "rnorm3d",
    "norm4d",
    "rnorm4d",
];

const CONTROL_FLOW: &[&str] =
    &["ForStmt", "WhileStmt", "DoStmt", "CXXForRangeStmt", "IfStmt", "SwitchStmt", "CompoundStmt", "AttributedStmt"];

/// What a statement (with everything below it) reads and writes.
#[derive(Debug, Default)]
struct Effects {
    /// Variables and parameters it names, by AST id.
    refs: HashSet<String>,
    /// Variables it assigns, increments or takes the address of.
    writes_vars: HashSet<String>,
    writes_memory: bool,
    reads_memory: bool,
    /// A call that may do anything: not a known math function.
    opaque: Option<String>,
    volatile: bool,
    labels: bool,
}

impl Effects {
    fn of(node: &Node) -> Effects {
        let mut e = Effects::default();
        for n in node.walk() {
            e.volatile |= n.ty.as_deref().is_some_and(|t| t.contains("volatile"));
            match n.kind.as_str() {
                "DeclRefExpr" => {
                    if let Some(r) = n.referenced.as_ref().filter(|r| r.kind == "VarDecl" || r.kind == "ParmVarDecl") {
                        e.refs.insert(r.id.clone());
                    }
                }
                "BinaryOperator" if n.opcode.as_deref() == Some("=") => e.write(n.inner.first()),
                "CompoundAssignOperator" => e.write(n.inner.first()),
                "UnaryOperator" => match n.opcode.as_deref() {
                    Some("++" | "--") => e.write(n.inner.first()),
                    Some("&") => {
                        if let Some(r) = n.inner.first().and_then(|o| o.ignoring_implicit().referenced.as_ref()) {
                            e.writes_vars.insert(r.id.clone());
                        }
                    }
                    Some("*") => e.reads_memory = true,
                    _ => {}
                },
                "ArraySubscriptExpr" | "MemberExpr" | "CXXThisExpr" => e.reads_memory = true,
                "CallExpr" => {
                    let callee = n.inner.first().map(Node::ignoring_implicit);
                    let name = callee.and_then(|c| c.referenced.as_ref()).filter(|r| r.kind == "FunctionDecl").map(|r| r.name.as_str());
                    let pure = name.is_some_and(|f| {
                        let base = f.trim_start_matches("__builtin_").trim_start_matches("std::");
                        PURE_CALLS.contains(&base) || PURE_CALLS.contains(&base.trim_end_matches('f'))
                    });
                    if !pure {
                        e.opaque.get_or_insert_with(|| format!("calls `{}`", name.unwrap_or("a function")));
                    }
                }
                "CXXMemberCallExpr" => {
                    let method = n.inner.first().and_then(|m| m.name.as_deref()).unwrap_or_default();
                    // threadIdx.x and friends: HIP's conversion operator, CUDA's __fetch_builtin_x.
                    if method != "operator unsigned int" && !method.starts_with("__fetch_builtin_") {
                        e.opaque.get_or_insert_with(|| format!("calls `{method}`"));
                    }
                }
                "CXXOperatorCallExpr"
                | "CXXConstructExpr"
                | "CXXNewExpr"
                | "CXXDeleteExpr"
                | "AtomicExpr"
                | "GCCAsmStmt"
                | "MSAsmStmt"
                | "CXXThrowExpr" => {
                    e.opaque.get_or_insert_with(|| format!("has a `{}`", n.kind.trim_end_matches("Expr").trim_end_matches("Stmt")));
                }
                "LabelStmt" | "GotoStmt" | "IndirectGotoStmt" | "CaseStmt" | "DefaultStmt" => e.labels = true,
                _ => {}
            }
        }
        e
    }

    fn write(&mut self, target: Option<&Node>) {
        match target.map(Node::ignoring_implicit) {
            Some(t) if t.kind == "DeclRefExpr" => {
                if let Some(r) = &t.referenced {
                    self.writes_vars.insert(r.id.clone());
                }
            }
            _ => self.writes_memory = true,
        }
    }
}

/// One statement of a block.
struct Stmt<'a> {
    node: &'a Node,
    effects: Effects,
    /// The variables a movable declaration declares (id, name); empty otherwise.
    declares: Vec<(String, String)>,
    movable: bool,
}

/// The sink edits for one kernel.
pub(crate) fn edits(kernel: &Kernel<'_>, notes: &mut Notes) -> Vec<Edit> {
    let Some(body) = kernel.body() else { return vec![] };
    if kernel.defined_by_macro() {
        notes.kernel(kernel, "sink: a macro spells its body, and moving lines inside a macro is not a statement move; not patched".into());
        return vec![];
    }
    let mut out = Vec::new();
    for block in body.walk().into_iter().filter(|n| n.kind == "CompoundStmt") {
        out.extend(block_edits(kernel, block, notes));
    }
    out
}

fn block_edits(kernel: &Kernel<'_>, block: &Node, notes: &mut Notes) -> Vec<Edit> {
    let stmts: Vec<Stmt<'_>> = block.inner.iter().filter(|n| !n.is_placeholder()).map(|n| statement(kernel, n)).collect();
    if stmts.iter().any(|s| s.effects.labels && !CONTROL_FLOW.contains(&s.node.kind.as_str())) {
        return vec![];
    }
    // Every variable a declaration of this block declares, and where.
    let declared_here: HashMap<&str, usize> = stmts
        .iter()
        .enumerate()
        .filter(|(_, s)| s.node.kind == "DeclStmt")
        .flat_map(|(i, s)| s.node.inner.iter().map(move |v| (v.id.as_str(), i)))
        .collect();
    let mut pinned: HashSet<usize> = HashSet::new();
    let (order, moved, why_not) = loop {
        let Plan { order, moved, why_not } = plan(kernel.text, &stmts, &pinned);
        let position = |i: usize| order.iter().position(|&j| j == i).unwrap_or(0);
        let unprofitable: Vec<usize> = moved
            .keys()
            .copied()
            .filter(|&d| {
                let init_reads = &stmts[d].effects.refs;
                let extended = init_reads
                    .iter()
                    .filter(|v| match declared_here.get(v.as_str()) {
                        // Declared outside this block, or a parameter: live anyway.
                        None => false,
                        Some(decl) if moved.contains_key(decl) => false,
                        Some(_) => !order[position(d) + 1..].iter().any(|&j| stmts[j].effects.refs.contains(*v)),
                    })
                    .count();
                extended >= stmts[d].declares.len()
            })
            .collect();
        if unprofitable.is_empty() {
            break (order, moved, why_not);
        }
        pinned.extend(unprofitable);
    };
    for (i, reason) in why_not {
        let (line, _) = line_col(kernel.text, offset(stmts[i].node));
        let names: Vec<&str> = stmts[i].declares.iter().map(|(_, n)| n.as_str()).collect();
        notes.at(kernel, line, format!("sink: `{}` stays: moving it down {reason}; not patched", names.join("`, `")));
    }
    if moved.is_empty() {
        return vec![];
    }
    // Each statement that stays gets the moved declarations placed right before it.
    let mut before: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    let mut run = Vec::new();
    for &i in &order {
        if moved.contains_key(&i) {
            run.push(i);
        } else if !run.is_empty() {
            // In their original order, which defines before it uses.
            run.sort_unstable();
            before.insert(i, std::mem::take(&mut run));
        }
    }
    let mut out = Vec::new();
    for &i in moved.keys() {
        let (start, end) = lines_of(kernel.text, stmts[i].node);
        out.push(Edit::new(kernel.file, start, end, "", kernel.symbol, "sink"));
    }
    for (target, decls) in before {
        let at = edit::above_comments(kernel.text, edit::line_start(kernel.text, offset(stmts[target].node)));
        let mut insert = Edit::new(kernel.file, at, at, "", kernel.symbol, "sink");
        insert.copies = decls.iter().map(|&d| lines_of(kernel.text, stmts[d].node)).collect();
        out.push(insert);
    }
    out
}

/// Plan the block's moves; `pinned` declarations stay.
fn plan(text: &str, stmts: &[Stmt<'_>], pinned: &HashSet<usize>) -> Plan {
    let mut order: Vec<usize> = (0..stmts.len()).collect();
    let mut moved = HashMap::new();
    let mut why_not = Vec::new();
    for d in (0..stmts.len()).rev() {
        if !stmts[d].movable || pinned.contains(&d) {
            continue;
        }
        let p = order.iter().position(|&j| j == d).expect("every statement is in the order");
        let vars: HashSet<&str> = stmts[d].declares.iter().map(|(id, _)| id.as_str()).collect();
        let Some(q) = (p + 1..order.len()).find(|&j| stmts[order[j]].effects.refs.iter().any(|r| vars.contains(r.as_str()))) else {
            continue;
        };
        let crossed: Vec<usize> = order[p + 1..q].to_vec();
        if !crossed.iter().any(|&j| CONTROL_FLOW.contains(&stmts[j].node.kind.as_str())) {
            continue;
        }
        if let Some(reason) = crossing_problem(text, stmts, d, &crossed) {
            why_not.push((d, reason));
            continue;
        }
        let target = order[q];
        order.remove(p);
        let at = order.iter().position(|&j| j == target).expect("the target stays in the order");
        order.insert(at, d);
        moved.insert(d, target);
    }
    Plan { order, moved, why_not }
}

/// A block's statements in their new order, the moved declarations with
/// the statement each now precedes, and why others that would cross
/// control flow stay.
struct Plan {
    order: Vec<usize>,
    moved: HashMap<usize, usize>,
    why_not: Vec<(usize, String)>,
}

/// Why declaration `d` may not move past `crossed`, if it may not.
fn crossing_problem(text: &str, stmts: &[Stmt<'_>], d: usize, crossed: &[usize]) -> Option<String> {
    let init = &stmts[d].effects;
    for &j in crossed {
        let s = &stmts[j];
        let what = describe(text, s.node);
        if let Some(call) = &s.effects.opaque {
            return Some(format!("past {what}, which {call}"));
        }
        if s.effects.labels {
            return Some(format!("past {what}, which has labels"));
        }
        if init.reads_memory && s.effects.writes_memory {
            return Some(format!("past {what}, which writes memory its initializer may read"));
        }
        if init.refs.iter().any(|v| s.effects.writes_vars.contains(v)) {
            return Some(format!("past {what}, which changes a variable its initializer reads"));
        }
        // A name the move would put in the scope of another declaration.
        let reads: HashSet<&str> = stmts[d].node.walk().iter().filter_map(|n| n.referenced.as_ref()).map(|r| r.name.as_str()).collect();
        if s.declares_names().any(|n| reads.contains(n)) {
            return Some(format!("past {what}, which declares a name its initializer uses"));
        }
    }
    None
}

impl Stmt<'_> {
    fn declares_names(&self) -> impl Iterator<Item = &str> {
        let all = (self.node.kind == "DeclStmt").then_some(&self.node.inner).into_iter().flatten();
        all.filter_map(|n| n.name.as_deref())
    }
}

fn statement<'a>(kernel: &Kernel<'_>, node: &'a Node) -> Stmt<'a> {
    let effects = Effects::of(node);
    let mut declares = Vec::new();
    let movable = node.kind == "DeclStmt" && movable(kernel, node, &effects) && {
        declares = node.inner.iter().map(|v| (v.id.clone(), v.name.clone().unwrap_or_default())).collect();
        true
    };
    Stmt { node, effects, declares, movable }
}

/// A declaration whose move is a plain statement move of whole lines.
fn movable(kernel: &Kernel<'_>, decl: &Node, effects: &Effects) -> bool {
    let plain_var = |v: &Node| {
        let ty = v.ty.as_deref().unwrap_or_default();
        v.kind == "VarDecl"
            && v.storage_class.is_none()
            && !ty.contains('&')
            && !ty.contains('[')
            && v.inner.iter().any(|n| !n.kind.ends_with("Attr"))
            && !v.inner.iter().any(|n| n.kind.ends_with("Attr"))
    };
    let whole_lines =
        decl.span_in(kernel.file).is_some_and(|(start, end)| edit::starts_line(kernel.text, start) && edit::ends_line(kernel.text, end));
    !decl.inner.is_empty()
        && decl.inner.iter().all(plain_var)
        && whole_lines
        && effects.opaque.is_none()
        && !effects.writes_memory
        && effects.writes_vars.is_empty()
        && !effects.volatile
        && !effects.labels
        && (effects.reads_memory || !effects.refs.is_empty())
}

fn offset(node: &Node) -> usize {
    node.begin.as_ref().map_or(0, |b| b.offset)
}

/// The whole lines a declaration occupies.
fn lines_of(text: &str, node: &Node) -> (usize, usize) {
    let start = edit::line_start(text, offset(node));
    let end = node.end.as_ref().map_or(start, |e| edit::line_end(text, e.token_end()));
    (start, end)
}

/// "the loop at lines 46-68".
fn describe(text: &str, node: &Node) -> String {
    let kind = match node.kind.as_str() {
        "ForStmt" | "WhileStmt" | "DoStmt" | "CXXForRangeStmt" | "AttributedStmt" => "the loop",
        "IfStmt" => "the `if`",
        "SwitchStmt" => "the `switch`",
        "CompoundStmt" => "the block",
        "DeclStmt" => "the declaration",
        _ => "the statement",
    };
    let first = line_col(text, offset(node)).0;
    let last = node.end.as_ref().map_or(first, |e| line_col(text, e.offset).0);
    if first == last {
        format!("{kind} at line {first}")
    } else {
        format!("{kind} at lines {first}-{last}")
    }
}
