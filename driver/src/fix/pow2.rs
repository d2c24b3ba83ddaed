//! pow2 → `x * x` at each call the plugin rewrote (debug_ir.rs: the calls
//! that were gone after it ran, by line and column), found in the AST.
//!
//! The call may be in any of the project's files (an included header or
//! `.cu`); a call in a system header is reported with the kernels whose
//! decision it blocks. In a macro's definition every expansion shares the
//! edit, which fix's rebuild checks for each of them.
//!
//! `x` is the call's first argument as written. When it is a plain name,
//! literal, member or element of the type the call computes in, the square
//! is `x * x`, in parentheses unless the call's place needs none.
//! Otherwise (an expression, something with side effects) `x` must be
//! evaluated once: `regtune_square(x)`, a helper the patch defines once,
//! above the first function that uses it; `regtune_square<double>(x)` when
//! the call converted `x` (a float passed to `pow(double, double)`).

use std::sync::Arc;

use crate::names;

use super::ast::{self, Node};
use super::debug_ir::{CallSite, RemovedCall};
use super::edit::{self, Edit};
use super::{Notes, Source};

/// The helper, defined once per file that uses it (guarded: a unit may
/// include several such files).
pub(crate) const HELPER: &str = "// regtune fix: pow(x, 2) as one multiply, x evaluated once.\n\
#ifndef REGTUNE_SQUARE\n\
#define REGTUNE_SQUARE\n\
template <typename T>\n\
__host__ __device__ inline T regtune_square(T x) { return x * x; }\n\
#endif\n\n";
pub(crate) const HELPER_NAME: &str = "regtune_square";

/// Edits for the calls one target's decisions removed; `owners` gives the
/// kernels a call in a function belongs to. An edit that calls the helper
/// says where the helper must be defined (`Edit::helper`).
pub(crate) fn edits(source: &Source<'_>, calls: &[RemovedCall], owners: &dyn Fn(&str) -> Vec<String>, notes: &mut Notes) -> Vec<Edit> {
    // The calls to rewrite, with how many the pass removed at each place
    // (in a macro, debug info puts them all at the invocation).
    let mut sites: Vec<(CallSite, usize)> = Vec::new();
    for call in calls {
        let kernels = owners(&call.function);
        if kernels.is_empty() {
            continue;
        }
        // This call, or, when it lies in a library's pow overload outside
        // the project (say `pow(float, double)`, which converts its
        // arguments first), the project's calls to that overload.
        let file = ast::canonical(&call.at.file);
        let found: Vec<CallSite> = if source.files.text(&file).is_some() {
            vec![CallSite { function: call.function.clone(), at: call.at.clone(), exponent: call.exponent }]
        } else if POW_NAMES.contains(&names::unqualified(&call.function).as_str()) {
            call.callers.iter().filter(|c| source.files.text(&ast::canonical(&c.at.file)).is_some()).cloned().collect()
        } else {
            vec![]
        };
        if found.is_empty() {
            let why = source.files.refusal(&file).unwrap_or_default();
            let what = format!("pow2 rewrote a call in {}, {why}; not patched", source.function_name(&call.function));
            notes.block(&kernels, &source.files.shown(&file), Some(call.at.line), what);
        }
        for site in found {
            match sites.iter_mut().find(|(s, _)| s.function == site.function && s.at == site.at) {
                Some((_, n)) => *n += 1,
                None => sites.push((site, 1)),
            }
        }
    }
    let mut out = Vec::new();
    for (site, removed) in sites {
        let kernels = owners(&site.function);
        for (file, start, end, text) in rewrite(source, &site, removed, notes) {
            let helper = text.contains(HELPER_NAME).then(|| helper_at(source, &file, start)).flatten();
            for k in &kernels {
                let mut e = Edit::new(&file, start, end, text.clone(), k, "pow2");
                e.helper = helper;
                out.push(e);
            }
        }
    }
    out
}

/// Library functions whose calls with a constant 2 a square replaces.
const POW_NAMES: &[&str] = &["pow", "powf", "powi", "pown", "powr"];

/// The squares in place of the calls at `site`: (file, start, end, text).
fn rewrite(source: &Source<'_>, site: &CallSite, removed: usize, notes: &mut Notes) -> Vec<(Arc<str>, usize, usize, String)> {
    let line = site.at.line;
    let file = ast::canonical(&site.at.file);
    let shown = source.files.shown(&file);
    if site.exponent != Some(2.0) {
        let e = site.exponent.map_or("a variable".to_string(), |e| e.to_string());
        notes.file(&shown, Some(line), format!("pow2 rewrote a call with exponent {e}; only pow(x, 2) is patched"));
        return vec![];
    }
    let Some(text) = source.files.text(&file) else { return vec![] };
    let Some(offset) = ast::offset_of(text, line, site.at.col) else { return vec![] };
    let nodes = source.function_nodes(&site.function);
    if let Some(i) = nodes.iter().position(|(n, _)| n.kind == "CallExpr" && n.inner.len() == 3 && starts_at(n, &file, offset)) {
        let node = nodes[i].0;
        let (Some((start, end)), Some((a, b))) = (node.span_in(&file), node.inner[1].span_in(&file)) else {
            notes.file(&shown, Some(line), "pow2: the call or its argument is spelled by a macro; not patched".into());
            return vec![];
        };
        return square(&nodes, i, &text[a..b]).map(|t| (file.clone(), start, end, t)).into_iter().collect();
    }
    // A macro's expansion: every call to pow with 2 from it, when those are
    // exactly as many as the pass removed here.
    let from_macro: Vec<usize> = (0..nodes.len())
        .filter(|&i| {
            let n = nodes[i].0;
            n.kind == "CallExpr"
                && n.inner.len() == 3
                && is_square_call(n)
                && n.begin.as_ref().is_some_and(|b| b.in_macro && b.file == file && b.offset == offset)
        })
        .collect();
    if from_macro.is_empty() {
        notes.file(&shown, Some(line), "pow2: no call in the source here; not patched".into());
        return vec![];
    }
    if from_macro.len() != removed {
        notes.file(
            &shown,
            Some(line),
            format!("pow2: the macro expanded here calls pow(x, 2) {} times and the pass rewrote {removed}; not patched", from_macro.len()),
        );
        return vec![];
    }
    let mut out = Vec::new();
    for i in from_macro {
        let node = nodes[i].0;
        let spelled = node.spelled_span().zip(node.inner[1].spelled_span());
        let Some(((f, start, end), (_, a, b))) = spelled.filter(|((f, s, e), (g, a, b))| f == g && s <= a && b <= e) else {
            notes.file(&shown, Some(line), "pow2: the macro takes the call's argument from its own; not patched".into());
            return vec![];
        };
        let Some(text) = source.files.text(f) else {
            let why = source.files.refusal(f).unwrap_or_default();
            notes.file(&shown, Some(line), format!("pow2: the call is spelled in {}, {why}; not patched", source.files.shown(f)));
            return vec![];
        };
        match square(&nodes, i, &text[a..b]) {
            // The helper goes above the macro's definition, ahead of every expansion.
            Some(t) if t.contains(HELPER_NAME) && macro_definition(text, start).is_none() => {
                notes.file(
                    &shown,
                    Some(line),
                    "pow2: the macro squares an expression, and its definition is not found to define the helper above; not patched".into(),
                );
                return vec![];
            }
            Some(t) => {
                let (end, t) = edit::aligned(text, start, end, &t);
                out.push((f.clone(), start, end, t))
            }
            None => return vec![],
        }
    }
    out
}

/// The square that replaces call `i`, whose first argument reads `x`.
fn square(nodes: &[(&Node, Option<&Node>)], i: usize, x: &str) -> Option<String> {
    let arg = &nodes[i].0.inner[1];
    let converted = plain_type(arg.ty.as_deref()) != plain_type(strip_casts(arg).ty.as_deref());
    Some(if is_simple(arg.ignoring_implicit()) && !converted {
        let square = format!("{x} * {x}");
        if needs_parentheses(nodes, i) {
            format!("({square})")
        } else {
            square
        }
    } else if converted {
        format!("{HELPER_NAME}<{}>({x})", plain_type(arg.ty.as_deref()))
    } else {
        // No type named: a template's instantiations share this text.
        format!("{HELPER_NAME}({x})")
    })
}

/// A call to a pow function whose exponent is the literal 2.
fn is_square_call(call: &Node) -> bool {
    let callee = call.inner[0].ignoring_implicit();
    let named = callee.referenced.as_ref().is_some_and(|r| {
        let base = r.name.trim_start_matches("std::").trim_start_matches("__builtin_");
        POW_NAMES.contains(&base)
    });
    let two = |n: &Node| {
        matches!(n.kind.as_str(), "FloatingLiteral" | "IntegerLiteral")
            && n.value.as_deref().and_then(|v| v.parse::<f64>().ok()) == Some(2.0)
    };
    named && strip_casts(&call.inner[2]).walk().iter().any(|n| two(n))
}

/// Where the helper goes for a use at `offset` of `file`: above the
/// outermost declaration around it, from the line it starts; in a macro's
/// definition, above the `#define`.
fn helper_at(source: &Source<'_>, file: &str, offset: usize) -> Option<usize> {
    let text = source.files.text(file)?;
    if let Some(define) = macro_definition(text, offset) {
        return Some(edit::above_comments(text, define));
    }
    let begin = source
        .nodes
        .iter()
        .flat_map(|n| n.walk())
        .filter(|n| matches!(n.kind.as_str(), "FunctionDecl" | "FunctionTemplateDecl" | "CXXRecordDecl" | "ClassTemplateDecl"))
        .filter_map(|n| Some((n.begin.as_ref()?, n.end.as_ref()?)))
        .filter(|(b, e)| &*b.file == file && b.offset <= offset && offset <= e.token_end())
        .map(|(b, _)| b.offset)
        .min()?;
    Some(edit::above_comments(text, edit::line_start(text, begin)))
}

/// The start of the `#define` whose (continued) lines hold `offset`, if one does.
fn macro_definition(text: &str, offset: usize) -> Option<usize> {
    let mut start = edit::line_start(text, offset);
    loop {
        let line = text[start..edit::line_end(text, start)].trim_start();
        if let Some(rest) = line.strip_prefix('#') {
            return rest.trim_start().starts_with("define").then_some(start);
        }
        // The line above continues into this one?
        if start == 0 || !text[..start - 1].trim_end_matches('\r').ends_with('\\') {
            return None;
        }
        start = edit::line_start(text, start - 1);
    }
}

/// The call begins at `offset`, or its callee's name does (`std::pow`),
/// outside any macro.
fn starts_at(call: &Node, file: &str, offset: usize) -> bool {
    let at = |n: &Node| n.begin.as_ref().is_some_and(|b| b.offset == offset && &*b.file == file && !b.in_macro);
    let name_at = |n: &Node| n.end.as_ref().is_some_and(|e| e.offset == offset && &*e.file == file && !e.in_macro);
    at(call) || call.inner.first().is_some_and(|c| name_at(c.ignoring_implicit()))
}

/// The argument without the conversions clang added (parentheses kept).
fn strip_casts(n: &Node) -> &Node {
    let mut n = n;
    while n.kind == "ImplicitCastExpr" && n.inner.len() == 1 {
        n = &n.inner[0];
    }
    n
}

/// `const double` → `double`.
fn plain_type(ty: Option<&str>) -> String {
    ty.unwrap_or_default().replace("const ", "").trim().to_string()
}

/// A name, a literal, a member or an element of simple expressions:
/// evaluating it twice reads the same value and has no side effect.
fn is_simple(n: &Node) -> bool {
    let ty = n.ty.as_deref().unwrap_or_default();
    if ty.contains("volatile") {
        return false;
    }
    match n.kind.as_str() {
        "DeclRefExpr" | "FloatingLiteral" | "IntegerLiteral" => true,
        "MemberExpr" => n.inner.first().is_some_and(|b| is_simple(b.ignoring_implicit())),
        "ArraySubscriptExpr" => n.inner.len() == 2 && n.inner.iter().all(|c| is_simple(c.ignoring_implicit())),
        _ => false,
    }
}

/// Does `x * x` in place of node `i` need parentheses? Not where the call
/// is a whole operand already (in parentheses, an initializer, an
/// argument, a subscript, a return value, either side of an operator that
/// binds less tightly than `*`), nor as the left operand of `*`, `/`, `%`.
fn needs_parentheses(nodes: &[(&Node, Option<&Node>)], i: usize) -> bool {
    let mut child = nodes[i].0;
    let mut parent = nodes[i].1;
    while let Some(p) = parent.filter(|p| matches!(p.kind.as_str(), "ImplicitCastExpr" | "ExprWithCleanups" | "MaterializeTemporaryExpr")) {
        child = p;
        parent = nodes.iter().find(|(n, _)| std::ptr::eq(*n, p)).and_then(|(_, pp)| *pp);
    }
    let Some(p) = parent else { return true };
    let is_first = p.inner.first().is_some_and(|f| std::ptr::eq(f, child));
    match p.kind.as_str() {
        "ParenExpr" | "VarDecl" | "ReturnStmt" | "InitListExpr" | "CompoundStmt" | "ConditionalOperator" => false,
        "CallExpr" | "CXXMemberCallExpr" | "CXXOperatorCallExpr" | "ArraySubscriptExpr" => is_first,
        "CompoundAssignOperator" => is_first,
        "BinaryOperator" => match p.opcode.as_deref() {
            Some("*" | "/" | "%") => !is_first,
            Some(".*" | "->*") => true,
            _ => false,
        },
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(opcode: &str, lhs: Node, rhs: Node) -> Node {
        Node { kind: "BinaryOperator".into(), opcode: Some(opcode.into()), inner: vec![lhs, rhs], ..Default::default() }
    }

    fn call() -> Node {
        Node { kind: "CallExpr".into(), ..Default::default() }
    }

    fn lit() -> Node {
        Node { kind: "FloatingLiteral".into(), ..Default::default() }
    }

    /// Parentheses for the call at `path` (child indices) under `root`.
    fn parens(root: &Node, path: &[usize]) -> bool {
        let mut pairs: Vec<(&Node, Option<&Node>)> = vec![(root, None)];
        let mut n = root;
        for &i in path {
            pairs.push((&n.inner[i], Some(n)));
            n = &n.inner[i];
        }
        needs_parentheses(&pairs, pairs.len() - 1)
    }

    #[test]
    fn squares_keep_the_call_s_precedence() {
        // 4.5 * pow(cu, 2) -> 4.5 * (cu * cu): (4.5 * cu) * cu rounds differently.
        assert!(parens(&op("*", lit(), call()), &[1]));
        assert!(!parens(&op("*", call(), lit()), &[0]));
        assert!(parens(&op("/", lit(), call()), &[1]));
        assert!(!parens(&op("+", call(), call()), &[0]));
        assert!(!parens(&op("-", lit(), call()), &[1]));
        let unary = Node { kind: "UnaryOperator".into(), opcode: Some("-".into()), inner: vec![call()], ..Default::default() };
        assert!(parens(&unary, &[0]));
    }

    #[test]
    fn a_macro_s_definition_is_found_from_any_of_its_lines() {
        let text = "int a;\n#define K(n) \\\n  void n() { \\\n    pow(x, 2); }\nK(k)\n";
        let call = text.find("pow").unwrap();
        assert_eq!(macro_definition(text, call), Some(7));
        assert_eq!(macro_definition(text, text.find("K(k)").unwrap()), None);
        assert_eq!(macro_definition(text, 0), None);
    }

    #[test]
    fn simple_arguments_are_names_members_and_literals() {
        let name = Node { kind: "DeclRefExpr".into(), ..Default::default() };
        assert!(is_simple(&name));
        assert!(is_simple(&Node { kind: "MemberExpr".into(), inner: vec![name.clone()], ..Default::default() }));
        assert!(!is_simple(&op("+", name.clone(), name.clone())));
        assert!(!is_simple(&Node { kind: "DeclRefExpr".into(), ty: Some("volatile double".into()), ..Default::default() }));
    }
}
