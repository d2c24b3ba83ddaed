//! pow2 → `x * x` at each call the plugin rewrote (debug_ir.rs: the calls
//! that were gone after it ran, by line and column), found in the AST.
//!
//! `x` is the call's first argument as written. When it is a plain name,
//! literal, member or element of the type the call computes in, the square
//! is `x * x`, in parentheses unless the call's place needs none.
//! Otherwise (an expression, something with side effects) `x` must be
//! evaluated once: `regtune_square(x)`, a helper the patch defines once,
//! above the first function that uses it; `regtune_square<double>(x)` when
//! the call converted `x` (a float passed to `pow(double, double)`).

use crate::compile;

use super::ast::{self, Node};
use super::debug_ir::{CallSite, RemovedCall};
use super::edit::Edit;
use super::{Notes, Source};

/// The helper, defined once per file.
pub const HELPER: &str = "// regtune fix: pow(x, 2) as one multiply, x evaluated once.\n\
template <typename T>\n\
__host__ __device__ inline T regtune_square(T x) { return x * x; }\n\n";
pub const HELPER_NAME: &str = "regtune_square";

/// Edits for the calls one target's decisions removed; `owners` gives the
/// kernels a call in a function belongs to. An edit that calls the helper
/// names it in its text; the caller defines it (see [`HELPER`]).
pub fn edits(
    source: &Source<'_>,
    calls: &[RemovedCall],
    owners: &dyn Fn(&str) -> Vec<String>,
    notes: &mut Notes,
) -> Vec<Edit> {
    let mut out = Vec::new();
    for call in calls {
        if owners(&call.function).is_empty() {
            continue;
        }
        // The calls to rewrite: this one, or, when it lies in a library's pow
        // overload outside the file (say `pow(float, double)`, which converts
        // its arguments first), the calls to that overload from this file.
        let sites: Vec<CallSite> = if ast::same_file(&call.at.file, source.path) {
            vec![CallSite { function: call.function.clone(), at: call.at.clone(), exponent: call.exponent }]
        } else if POW_NAMES.contains(&compile::unqualified_name(&call.function).as_str()) {
            call.callers.iter().filter(|c| ast::same_file(&c.at.file, source.path)).cloned().collect()
        } else {
            vec![]
        };
        if sites.is_empty() {
            notes.file(None, format!("pow2 rewrote a call at {}:{} (in {}), outside this file; not patched", call.at.file, call.at.line, source.function_name(&call.function)));
        }
        for site in sites {
            let kernels = owners(&site.function);
            if let Some((start, end, text)) = rewrite(source, &site, notes) {
                for k in &kernels {
                    out.push(Edit::new(start, end, text.clone(), k, "pow2"));
                }
            }
        }
    }
    out
}

/// Library functions whose calls with a constant 2 a square replaces.
const POW_NAMES: &[&str] = &["pow", "powf", "powi", "pown", "powr"];

/// The square in place of the call at `site`: (start, end, text).
fn rewrite(source: &Source<'_>, site: &CallSite, notes: &mut Notes) -> Option<(usize, usize, String)> {
    let line = site.at.line;
    if site.exponent != Some(2.0) {
        let e = site.exponent.map_or("a variable".to_string(), |e| e.to_string());
        notes.file(Some(line), format!("pow2 rewrote a call with exponent {e}; only pow(x, 2) is patched"));
        return None;
    }
    let offset = ast::offset_of(source.text, line, site.at.col)?;
    let nodes = source.function_nodes(&site.function);
    let Some(i) = nodes.iter().position(|(n, _)| n.kind == "CallExpr" && n.inner.len() == 3 && starts_at(n, source.file, offset)) else {
        notes.file(Some(line), "pow2: no call in the source here (a macro?); not patched".into());
        return None;
    };
    let node = nodes[i].0;
    let (Some((start, end)), Some((a, b))) = (node.span_in(source.file), node.inner[1].span_in(source.file)) else {
        notes.file(Some(line), "pow2: the call or its argument is spelled by a macro; not patched".into());
        return None;
    };
    let arg = &node.inner[1];
    let x = &source.text[a..b];
    let converted = plain_type(arg.ty.as_deref()) != plain_type(strip_casts(arg).ty.as_deref());
    let text = if is_simple(arg.ignoring_implicit()) && !converted {
        let square = format!("{x} * {x}");
        if needs_parentheses(&nodes, i) {
            format!("({square})")
        } else {
            square
        }
    } else if converted {
        format!("{HELPER_NAME}<{}>({x})", plain_type(arg.ty.as_deref()))
    } else {
        // No type named: a template's instantiations share this text.
        format!("{HELPER_NAME}({x})")
    };
    Some((start, end, text))
}

/// The call begins at `offset`, or its callee's name does (`std::pow`).
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
    fn simple_arguments_are_names_members_and_literals() {
        let name = Node { kind: "DeclRefExpr".into(), ..Default::default() };
        assert!(is_simple(&name));
        assert!(is_simple(&Node { kind: "MemberExpr".into(), inner: vec![name.clone()], ..Default::default() }));
        assert!(!is_simple(&op("+", name.clone(), name.clone())));
        assert!(!is_simple(&Node { kind: "DeclRefExpr".into(), ty: Some("volatile double".into()), ..Default::default() }));
    }
}
