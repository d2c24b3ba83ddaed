//! noalias on a kernel parameter → `__restrict__` on that parameter's
//! declaration, written just before its name (`double* __restrict__ f0`).
//!
//! The db names a parameter by IR position and by source name (clang's
//! `.coerce` suffix already dropped, passes/src/noalias.rs); the name finds
//! the `ParmVarDecl`, the position does when clang kept no name. Top-level
//! qualifiers are not part of a function's type, so the kernel's symbol
//! and any other declaration of it stay as they are.

use regtune_decisions::Param;

use super::ast::Node;
use super::edit::Edit;
use super::{Kernel, Notes};

/// One edit per parameter in `params`.
pub(crate) fn edits(kernel: &Kernel<'_>, params: &[Param], notes: &mut Notes) -> Vec<Edit> {
    let decls: Vec<&Node> = kernel.decl.inner.iter().filter(|n| n.kind == "ParmVarDecl").collect();
    let mut out = Vec::new();
    for p in params {
        let name = p.name.strip_suffix(".coerce").unwrap_or(&p.name);
        let found = if name.is_empty() {
            decls.get(p.index as usize).copied()
        } else {
            decls.iter().copied().find(|d| d.name.as_deref() == Some(name))
        };
        let Some(decl) = found else {
            notes.kernel(kernel, format!("no parameter `{p}` in the source for `__restrict__`; not patched"));
            continue;
        };
        let ty = decl.ty.as_deref().unwrap_or_default();
        if ty.contains("__restrict") || ty.contains("restrict") {
            continue;
        }
        if !is_pointer(ty) {
            notes.kernel(kernel, format!("parameter `{p}` has type `{ty}`, not a pointer; `__restrict__` not written"));
            continue;
        }
        let Some(at) = decl.loc.as_ref().filter(|_| decl.name.is_some()).map(|l| l.spelled()) else {
            notes.kernel(kernel, format!("parameter `{p}` is unnamed; `__restrict__` not written"));
            continue;
        };
        match kernel.files.text(&at.file) {
            Some(text) if text.get(at.offset..at.token_end()) == Some(name) => {
                out.push(Edit::new(&at.file, at.offset, at.offset, "__restrict__ ", kernel.symbol, "noalias"))
            }
            Some(_) => notes.kernel(kernel, format!("parameter `{p}` is named by a macro; `__restrict__` not written")),
            None => {
                let why = kernel.files.refusal(&at.file).unwrap_or_default();
                notes.blocked(kernel, format!("`__restrict__` on `{p}` would edit {} ({why})", kernel.files.shown(&at.file)));
            }
        }
    }
    out
}

/// Whether a parameter of type `ty`, as clang's AST spells it, is a
/// pointer: `double *`, and also `double *const` (clang writes no space
/// before a top-level qualifier), where `__restrict__` goes after the
/// qualifier, before the name.
fn is_pointer(ty: &str) -> bool {
    let mut bare = ty.trim_end();
    while let Some(rest) = bare.strip_suffix("const").or_else(|| bare.strip_suffix("volatile")) {
        bare = rest.trim_end();
    }
    bare.ends_with('*')
}

#[cfg(test)]
mod tests {
    use super::is_pointer;

    #[test]
    fn a_pointer_is_one_with_its_own_qualifiers_too() {
        for ty in ["double *", "const double *", "double *const", "const double *const", "float * const volatile", "int **"] {
            assert!(is_pointer(ty), "{ty}");
        }
        for ty in ["double", "const double", "par_str", "double &", "const double &", "int[4]"] {
            assert!(!is_pointer(ty), "{ty}");
        }
    }
}
