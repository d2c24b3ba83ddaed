//! unroll-cap → `#pragma unroll K` (`#pragma nounroll`) on exactly the
//! loops the decision changed, with the factor the capped compile chose
//! (unrolled.rs), found in the AST by the start location clang gave the
//! loop, in whichever of the project's files holds it (an included header
//! or `.cu`). An existing `#pragma unroll` on the loop is replaced; a loop
//! without one gets the pragma on a line of its own; a loop a macro spells
//! gets `_Pragma("nounroll")` in the macro. nvcc ignores `nounroll` (an
//! unknown pragma, with a warning): for nvcc a loop not to unroll gets
//! `#pragma unroll 1`, which both compilers read as no unrolling. Targets that capped one loop
//! differently each get their pragma under `#if` (edit.rs, `per_target`).
//! A loop in a system header is reported with the kernels whose decision
//! it blocks.

use std::sync::Arc;

use crate::gpu::{Arch, SourceCompiler};

use super::ast::{self, Node};
use super::attributes::target_macro;
use super::debug_ir::{ChangedLoop, Unroll};
use super::edit::{self, Edit};
use super::{Notes, Source};

const LOOPS: &[&str] = &["ForStmt", "WhileStmt", "DoStmt", "CXXForRangeStmt"];

/// Edits for the loops one target's decisions changed; `owners` gives the
/// kernels a change in a function belongs to.
pub(crate) fn edits(
    source: &Source<'_>,
    arch: &Arch,
    loops: &[ChangedLoop],
    owners: &dyn Fn(&str) -> Vec<String>,
    compiler: SourceCompiler,
    notes: &mut Notes,
) -> Vec<Edit> {
    let pragma = |after: Unroll| pragma(after, compiler);
    let mut out = Vec::new();
    for change in loops {
        let kernels = owners(&change.function);
        if kernels.is_empty() {
            continue;
        }
        let at = &change.at;
        let file = ast::canonical(&at.file);
        let shown = source.files.shown(&file);
        let Some(text) = source.files.text(&file) else {
            let why = source.files.refusal(&file).unwrap_or_default();
            let what = format!("unroll-cap changed a loop in {}, {why}; not patched", source.function_name(&change.function));
            notes.block(&kernels, &shown, Some(at.line), what);
            continue;
        };
        let Some(offset) = ast::offset_of(text, at.line, at.col) else { continue };
        let nodes = source.function_nodes(&change.function);
        let here = |n: &Node, in_macro: bool| {
            LOOPS.contains(&n.kind.as_str())
                && n.begin.as_ref().is_some_and(|b| b.offset == offset && b.file == file && b.in_macro == in_macro)
        };
        let edit = if let Some((_, parent)) = nodes.iter().find(|(n, _)| here(n, false)) {
            match parent.filter(|p| p.kind == "AttributedStmt") {
                Some(attributed) => replace_pragma(text, &file, attributed, &pragma(change.after), notes, (&shown, at.line)),
                None if edit::starts_line(text, offset) => {
                    let start = edit::line_start(text, offset);
                    Some((file.clone(), start, start, format!("{}{}\n", edit::indentation(text, offset), pragma(change.after))))
                }
                None => {
                    notes.file(&shown, Some(at.line), "unroll-cap: the loop does not start its line; not patched".into());
                    None
                }
            }
        } else {
            let spelled = pragma(change.after);
            in_macro(source, nodes.iter().filter(|(n, _)| here(n, true)).collect(), &spelled, notes, (&shown, at.line))
        };
        if let Some((file, start, end, text)) = edit {
            for k in &kernels {
                let mut e = Edit::new(&file, start, end, text.clone(), k, "unroll-cap");
                e.targets.insert(target_macro(arch));
                out.push(e);
            }
        }
    }
    out
}

fn pragma(after: Unroll, compiler: SourceCompiler) -> String {
    match after {
        Unroll::Disable if matches!(compiler, SourceCompiler::Nvcc { .. }) => "#pragma unroll 1".to_string(),
        Unroll::Disable => "#pragma nounroll".to_string(),
        Unroll::Count(n) => format!("#pragma unroll {n}"),
    }
}

/// The loop a macro expanded here, given its pragma where the macro spells
/// it: `_Pragma("nounroll")` before the `for`, the one spelling a macro's
/// body can hold. Only when one loop of the function comes from this
/// expansion: debug info places all of them at the invocation.
fn in_macro(
    source: &Source<'_>,
    found: Vec<&(&Node, Option<&Node>)>,
    pragma: &str,
    notes: &mut Notes,
    (shown, line): (&str, u32),
) -> Option<(Arc<str>, usize, usize, String)> {
    let [(node, parent)] = found.as_slice() else {
        let why = if found.is_empty() {
            "no loop in the source here"
        } else {
            "several loops of one macro expansion here, which debug info does not tell apart"
        };
        notes.file(shown, Some(line), format!("unroll-cap: {why}; not patched"));
        return None;
    };
    if parent.is_some_and(|p| p.kind == "AttributedStmt") {
        notes.file(shown, Some(line), "unroll-cap: the loop a macro spells here has a pragma of its own; not patched".into());
        return None;
    }
    let at = node.begin.as_ref()?.spelled();
    let Some(text) = source.files.text(&at.file) else {
        let why = source.files.refusal(&at.file).unwrap_or_default();
        notes.file(shown, Some(line), format!("unroll-cap: the loop is spelled in {}, {why}; not patched", source.files.shown(&at.file)));
        return None;
    };
    if !matches!(text.get(at.offset..at.token_end()), Some("for" | "while" | "do")) {
        notes.file(shown, Some(line), "unroll-cap: the loop's keyword comes from another macro; not patched".into());
        return None;
    }
    let spelled = pragma.replacen("#pragma ", "", 1);
    let (end, text) = edit::aligned(text, at.offset, at.offset, &format!("_Pragma(\"{spelled}\") "));
    Some((at.file.clone(), at.offset, end, text))
}

/// The line of the loop's `#pragma unroll`/`#pragma nounroll`, replaced.
fn replace_pragma(
    text: &str,
    file: &Arc<str>,
    attributed: &Node,
    pragma: &str,
    notes: &mut Notes,
    (shown, line): (&str, u32),
) -> Option<(Arc<str>, usize, usize, String)> {
    let hint = attributed.inner.iter().find(|a| {
        a.kind == "LoopHintAttr" && {
            let b = a.begin.as_ref();
            b.is_some_and(|b| matches!(text.get(b.offset..b.token_end()), Some("unroll" | "nounroll")))
        }
    });
    let Some(b) = hint.and_then(|h| h.begin.as_ref()).filter(|b| !b.in_macro && b.file == *file) else {
        notes.file(shown, Some(line), "unroll-cap: the loop has a `#pragma clang loop` hint; not patched".into());
        return None;
    };
    let (start, end) = (edit::line_start(text, b.offset), edit::line_end(text, b.offset));
    let old = &text[start..end];
    if !old.trim_start().starts_with("#pragma") || old.trim_end().ends_with('\\') {
        notes.file(shown, Some(line), "unroll-cap: the unroll pragma is not a line of its own; not patched".into());
        return None;
    }
    let indent = &old[..old.len() - old.trim_start().len()];
    Some((file.clone(), start, end, format!("{indent}{pragma}\n")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvcc_is_told_not_to_unroll_in_the_spelling_it_reads() {
        assert_eq!(pragma(Unroll::Disable, SourceCompiler::Clang), "#pragma nounroll");
        // nvcc warns that `nounroll` is unknown and unrolls anyway.
        assert_eq!(pragma(Unroll::Disable, SourceCompiler::Nvcc { maxnreg: true }), "#pragma unroll 1");
        assert_eq!(pragma(Unroll::Count(4), SourceCompiler::Nvcc { maxnreg: false }), "#pragma unroll 4");
    }
}
