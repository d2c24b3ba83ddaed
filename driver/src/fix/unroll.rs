//! unroll-cap → `#pragma unroll K` (`#pragma nounroll`) on exactly the
//! loops the decision changed, with the factor the capped compile chose
//! (unrolled.rs), found in the AST by the start location clang gave the
//! loop. An existing `#pragma unroll` on the loop is
//! replaced; a loop without one gets the pragma on a line of its own.
//! Targets that capped one loop differently each get their pragma under
//! `#if` (edit.rs, `per_target`).

use crate::target::Arch;

use super::ast::{self, Node};
use super::attributes::target_macro;
use super::debug_ir::{ChangedLoop, Unroll};
use super::edit::{self, Edit};
use super::{Notes, Source};

const LOOPS: &[&str] = &["ForStmt", "WhileStmt", "DoStmt", "CXXForRangeStmt"];

/// Edits for the loops one target's decisions changed; `owners` gives the
/// kernels a change in a function belongs to.
pub fn edits(
    unit: &Source<'_>,
    arch: &Arch,
    loops: &[ChangedLoop],
    owners: &dyn Fn(&str) -> Vec<String>,
    notes: &mut Notes,
) -> Vec<Edit> {
    let mut out = Vec::new();
    for change in loops {
        let kernels = owners(&change.function);
        if kernels.is_empty() {
            continue;
        }
        let pragma = match change.after {
            Unroll::Disable => "#pragma nounroll".to_string(),
            Unroll::Count(n) => format!("#pragma unroll {n}"),
        };
        let at = &change.at;
        if !ast::same_file(&at.file, unit.path) {
            notes.file(None, format!("unroll-cap changed a loop at {}:{} (in {}), outside this file; not patched", at.file, at.line, unit.function_name(&change.function)));
            continue;
        }
        let Some(offset) = ast::offset_of(unit.text, at.line, at.col) else { continue };
        let found = unit.function_nodes(&change.function).into_iter().find(|(n, _)| {
            LOOPS.contains(&n.kind.as_str()) && n.begin.as_ref().is_some_and(|b| b.offset == offset && &*b.file == unit.file && !b.in_macro)
        });
        let Some((_, parent)) = found else {
            notes.file(Some(at.line), "unroll-cap: no loop in the source here (a macro?); not patched".into());
            continue;
        };
        let edit = match parent.filter(|p| p.kind == "AttributedStmt") {
            Some(attributed) => replace_pragma(unit, attributed, &pragma, notes, at.line),
            None if edit::starts_line(unit.text, offset) => {
                let start = edit::line_start(unit.text, offset);
                Some((start, start, format!("{}{pragma}\n", edit::indentation(unit.text, offset))))
            }
            None => {
                notes.file(Some(at.line), "unroll-cap: the loop does not start its line; not patched".into());
                None
            }
        };
        if let Some((start, end, text)) = edit {
            for k in &kernels {
                let mut e = Edit::new(start, end, text.clone(), k, "unroll-cap");
                e.targets.insert(target_macro(arch));
                out.push(e);
            }
        }
    }
    out
}

/// The line of the loop's `#pragma unroll`/`#pragma nounroll`, replaced.
fn replace_pragma(unit: &Source<'_>, attributed: &Node, pragma: &str, notes: &mut Notes, line: u32) -> Option<(usize, usize, String)> {
    let hint = attributed.inner.iter().find(|a| a.kind == "LoopHintAttr" && {
        let b = a.begin.as_ref();
        b.is_some_and(|b| matches!(unit.text.get(b.offset..b.token_end()), Some("unroll" | "nounroll")))
    });
    let Some(b) = hint.and_then(|h| h.begin.as_ref()).filter(|b| !b.in_macro && &*b.file == unit.file) else {
        notes.file(Some(line), "unroll-cap: the loop has a `#pragma clang loop` hint; not patched".into());
        return None;
    };
    let (start, end) = (edit::line_start(unit.text, b.offset), edit::line_end(unit.text, b.offset));
    let old = &unit.text[start..end];
    if !old.trim_start().starts_with("#pragma") || old.trim_end().ends_with('\\') {
        notes.file(Some(line), "unroll-cap: the unroll pragma is not a line of its own; not patched".into());
        return None;
    }
    let indent = &old[..old.len() - old.trim_start().len()];
    Some((start, end, format!("{indent}{pragma}\n")))
}
