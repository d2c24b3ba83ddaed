//! Occupancy target and block size as kernel attributes:
//!   - AMDGPU: `__attribute__((amdgpu_waves_per_eu(W)))` (what the plugin
//!     sets as `"amdgpu-waves-per-eu"="W"`) and `__launch_bounds__(N)`
//!     (HIP's `amdgpu_flat_work_group_size(1, N)`);
//!   - NVPTX: `__launch_bounds__(N)`, and with a warps-per-SM target W
//!     `__launch_bounds__(N, W / warps-per-block)`, from which ptxas derives
//!     its register cap. Without a block size there is nothing clang 22
//!     honours: it ignores CUDA 12.4's `__maxnreg__`, so that is a note;
//!     for nvcc (`fix --compiler nvcc`) the cap is `REGTUNE_MAXNREG(R)`, a
//!     macro defined once at the file's top as `__maxnreg__(R)` for nvcc
//!     12.4 on and as nothing for any other compiler (`gpu/nvptx`), and a
//!     kernel with `__launch_bounds__(N)` takes its second argument as
//!     with clang (nvcc refuses both on one kernel).
//!
//! Written on a line of their own above the kernel's declaration (else just
//! before its name). When the targets of one run decided differently, each
//! target gets its own attributes under `#if` on the compiler's target
//! macro (`__gfx90a__`, `__CUDA_ARCH__ == 900`).
//!
//! A kernel a macro defines (`KERNEL(scale, float)`) cannot take them in
//! its text, which every expansion shares: it gets a declaration of its own
//! with the attributes, on the line above the macro's invocation
//! (`__attribute__((amdgpu_waves_per_eu(6))) __global__ void scale(float *);`),
//! which the definition inherits, as clang merges attributes over
//! redeclarations.

use crate::gpu::{Arch, SourceCompiler};

use super::ast::Node;
use super::edit::{self, Edit};
use super::{Decision, Kernel, Notes};

/// The attribute edit for one kernel, from its decisions on every target,
/// for the compiler that builds the patched source.
pub(crate) fn edit(kernel: &Kernel<'_>, decisions: &[&Decision], compiler: SourceCompiler, notes: &mut Notes) -> Option<Edit> {
    let edit = attributes_edit(kernel, decisions, compiler, notes)?;
    // A guarded macro the attributes use: its definition goes at the file's top.
    let defined =
        decisions.iter().filter_map(|d| crate::gpu::of(&d.arch).source_macro(compiler)).find(|(name, _)| edit.text.contains(name));
    Some(Edit { defines: defined.map(|(_, definition)| definition), ..edit })
}

fn attributes_edit(kernel: &Kernel<'_>, decisions: &[&Decision], compiler: SourceCompiler, notes: &mut Notes) -> Option<Edit> {
    if let Some(extended) = extend_launch_bounds(kernel, decisions, notes) {
        return extended;
    }
    let mut per_arch: Vec<(&Arch, String)> = Vec::new();
    for d in decisions {
        let t = &d.transforms;
        let parts = match crate::gpu::of(&d.arch).source_attributes(t.launch_bounds, t.occupancy(), compiler) {
            // nvcc's -maxrregcount=R, as the kernel's own cap.
            Ok(_) if d.as_maxnreg.is_some() => d.as_maxnreg.iter().map(|f| f.attribute()).collect(),
            Ok(parts) => parts,
            Err(why) => {
                notes.kernel(kernel, why);
                vec![]
            }
        };
        per_arch.push((&d.arch, parts.join(" ")));
    }
    if per_arch.iter().all(|(_, a)| a.is_empty()) {
        return None;
    }
    let macros: Vec<&str> = decisions.iter().filter_map(|d| crate::gpu::of(&d.arch).source_macro(compiler)).map(|(name, _)| name).collect();
    place(kernel, &per_arch, &macros, notes)
}

/// The attributes each target asks for (`per_arch`, those that may use
/// the guarded `macros`) written on the kernel: on a line of their own
/// above its declaration (else just before its name), one `#if` branch per
/// target where they differ, on a redeclaration where a macro defines it.
/// None where the kernel has such attributes already, or they cannot be
/// placed (noted).
pub(crate) fn place(kernel: &Kernel<'_>, per_arch: &[(&Arch, String)], macros: &[&str], notes: &mut Notes) -> Option<Edit> {
    if let Some(existing) = existing_attribute(kernel.decl, per_arch, macros).or_else(|| spelled_cap(kernel, per_arch, macros)) {
        notes.kernel(kernel, format!("already has {existing}; change it by hand to {}", per_arch[0].1));
        return None;
    }
    let symbol = kernel.symbol;
    let begin = kernel.decl.begin.as_ref().filter(|b| b.file == *kernel.file && edit::starts_line(kernel.text, b.offset));
    let redeclaration = match kernel.defined_by_macro() {
        false => None,
        true => match (begin, redeclaration(kernel)) {
            (Some(_), Ok(r)) => Some(r),
            (None, _) => {
                notes.kernel(kernel, "a macro defines it, and its invocation does not start its line; attributes not written".into());
                return None;
            }
            (_, Err(why)) => {
                notes.kernel(kernel, format!("a macro defines it, and {why}; attributes not written"));
                return None;
            }
        },
    };
    let line_of = |attrs: &str| match &redeclaration {
        Some(r) => format!("{attrs} {r}\n"),
        None => format!("{attrs}\n"),
    };
    if per_arch.iter().all(|(_, a)| *a == per_arch[0].1) {
        let attrs = &per_arch[0].1;
        // On a line of its own above the declaration, else just before the name.
        if let Some(b) = begin {
            let at = edit::line_start(kernel.text, b.offset);
            let text = format!("{}{}", edit::indentation(kernel.text, b.offset), line_of(attrs));
            return Some(Edit::new(kernel.file, at, at, text, symbol, "occupancy"));
        }
        let name = kernel.decl.loc.as_ref().filter(|l| !l.in_macro && l.file == *kernel.file)?;
        return Some(Edit::new(kernel.file, name.offset, name.offset, format!("{attrs} "), symbol, "occupancy"));
    }
    // Targets disagree: one `#if` branch per target, above the declaration.
    let Some(begin) = begin else {
        notes.kernel(kernel, "the targets decided different attributes, and the declaration does not start its line; not patched".into());
        return None;
    };
    let mut block = String::new();
    for (arch, attrs) in per_arch.iter().filter(|(_, a)| !a.is_empty()) {
        let keyword = if block.is_empty() { "#if" } else { "#elif" };
        block.push_str(&format!("{keyword} {}\n{}", target_macro(arch), line_of(attrs)));
    }
    block.push_str("#endif\n");
    let at = edit::line_start(kernel.text, begin.offset);
    Some(Edit::new(kernel.file, at, at, block, symbol, "occupancy"))
}

/// NVPTX, a kernel whose source already promises its block size with
/// `__launch_bounds__(threads)`: its occupancy target becomes the second
/// argument (blocks per SM), written in place, so no new assumption about
/// the launches is made; a second argument the source has already (a
/// smaller minimum: the tuned build obeyed it and still needed the cap) is
/// replaced. None where this does not apply (the usual path follows);
/// Some(None) where it applies but cannot be written (noted).
fn extend_launch_bounds(kernel: &Kernel<'_>, decisions: &[&Decision], notes: &mut Notes) -> Option<Option<Edit>> {
    let bounds = launch_bounds_in_source(kernel)?;
    let mut args = Vec::new();
    for d in decisions {
        let (None, Some(w)) = (d.transforms.launch_bounds, d.transforms.occupancy()) else { return None };
        match crate::gpu::of(&d.arch).min_blocks_argument(w, &bounds.threads)? {
            Ok(a) => args.push(a),
            Err(why) => {
                notes.kernel(kernel, why);
                return Some(None);
            }
        }
    }
    if args.is_empty() {
        return None;
    }
    if args.iter().any(|a| *a != args[0]) {
        notes.kernel(kernel, format!("its targets need different blocks per SM ({}); not patched", args.join(", ")));
        return Some(None);
    }
    let (from, to, text) = match bounds.min_blocks {
        Some((from, to)) => (from, to, args[0].clone()),
        None => (bounds.close, bounds.close, format!(", {}", args[0])),
    };
    Some(Some(Edit::new(kernel.file, from, to, text, kernel.symbol, "occupancy")))
}

/// A `__launch_bounds__(threads[, min blocks])` the kernel's declaration has
/// in its own file: the first argument's text, the span of the second, and
/// the offset of the closing parenthesis.
struct LaunchBounds {
    threads: String,
    min_blocks: Option<(usize, usize)>,
    close: usize,
}

fn launch_bounds_in_source(kernel: &Kernel<'_>) -> Option<LaunchBounds> {
    let attr = kernel.decl.inner.iter().find(|n| n.kind == "CUDALaunchBoundsAttr")?;
    let at = attr.begin.as_ref().filter(|b| b.file == *kernel.file)?.offset;
    let text = kernel.text;
    let rest = text.get(at..)?.strip_prefix("__launch_bounds__")?;
    let open = at + "__launch_bounds__".len() + rest.find(|c: char| !c.is_whitespace())?;
    (text.as_bytes()[open] == b'(').then_some(())?;
    // Top-level commas and the closing parenthesis.
    let (mut depth, mut commas) = (0, Vec::new());
    for (i, c) in text[open..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' if depth == 1 => {
                let close = open + i;
                let trimmed = |from: usize, to: usize| {
                    let s = &text[from..to];
                    let lead = s.len() - s.trim_start().len();
                    (from + lead, from + lead + s.trim().len())
                };
                let (first_end, min_blocks) = match commas[..] {
                    [] => (close, None),
                    [c] => (c, Some(trimmed(c + 1, close))),
                    // A third argument (blocks per cluster): left to the user.
                    _ => return None,
                };
                let threads = text[open + 1..first_end].trim();
                return (!threads.is_empty()).then(|| LaunchBounds { threads: threads.to_string(), min_blocks, close });
            }
            ')' => depth -= 1,
            ',' if depth == 1 => commas.push(open + i),
            _ => {}
        }
    }
    None
}

/// A register cap for nvcc the kernel's source already spells (clang's
/// AST has none: clang ignores `__maxnreg__`, and the macro is empty for
/// it), on its declaration or the line above it, where fix would add one.
fn spelled_cap(kernel: &Kernel<'_>, per_arch: &[(&Arch, String)], macros: &[&str]) -> Option<&'static str> {
    if !macros.iter().any(|m| per_arch.iter().any(|(_, a)| a.contains(m))) {
        return None;
    }
    let begin = kernel.decl.begin.as_ref().filter(|b| b.file == *kernel.file)?.offset;
    let name = kernel.decl.loc.as_ref().filter(|l| l.file == *kernel.file && !l.in_macro).map_or(begin, |l| l.offset.max(begin));
    let line = edit::line_start(kernel.text, begin);
    let from = if line > 0 { edit::line_start(kernel.text, line - 1) } else { 0 };
    let head = kernel.text.get(from..name)?;
    if head.contains("__maxnreg__") {
        return Some("`__maxnreg__`");
    }
    macros.iter().any(|m| head.contains(&format!("{m}("))).then_some("a register cap regtune fix wrote (`REGTUNE_MAXNREG`)")
}

/// A declaration of the kernel that the attributes can go before:
/// `__global__ void name(float *, int);`, from clang's own types.
fn redeclaration(kernel: &Kernel<'_>) -> Result<String, String> {
    let name = kernel.decl.name.as_deref().ok_or("clang gives it no name")?;
    if kernel.template {
        return Err("it is a template".into());
    }
    let ty = kernel.decl.ty.as_deref().unwrap_or_default();
    if !ty.starts_with("void (") {
        return Err(format!("its type `{ty}` is not a kernel's"));
    }
    let params: Vec<&str> = kernel.decl.inner.iter().filter(|n| n.kind == "ParmVarDecl").map(|p| p.ty.as_deref().unwrap_or("")).collect();
    if params.iter().any(|p| p.is_empty()) || ty.contains("...") {
        return Err("its parameters have no type clang names".into());
    }
    // Linkage and storage as the definition has them, or clang refuses the pair.
    let linkage = if kernel.symbol.starts_with("_Z") { "" } else { "extern \"C\" " };
    let storage = if kernel.decl.storage_class.as_deref() == Some("static") { "static " } else { "" };
    Ok(format!("{linkage}{storage}__global__ void {name}({});", params.join(", ")))
}

/// The preprocessor test for compiling device code for `arch`.
pub(crate) fn target_macro(arch: &Arch) -> String {
    crate::gpu::of(arch).device_macro()
}

/// An attribute of the kind we would add that the kernel already has, or
/// one that excludes it: nvcc takes no `__maxnreg__` (`macros`) beside
/// `__launch_bounds__` (one whose second argument fix does not write: a
/// third argument, or spelled by a macro).
fn existing_attribute(decl: &Node, per_arch: &[(&Arch, String)], macros: &[&str]) -> Option<&'static str> {
    let adds = |s: &str| per_arch.iter().any(|(_, a)| a.contains(s));
    decl.inner.iter().find_map(|n| match n.kind.as_str() {
        "AMDGPUWavesPerEUAttr" if adds("amdgpu_waves_per_eu") => Some("an amdgpu_waves_per_eu attribute"),
        "AMDGPUFlatWorkGroupSizeAttr" | "CUDALaunchBoundsAttr" if adds("__launch_bounds__") => Some("__launch_bounds__"),
        "CUDALaunchBoundsAttr" if macros.iter().any(|m| adds(m)) => {
            Some("__launch_bounds__, which nvcc does not take with a `__maxnreg__` (its blocks-per-SM argument would cap the registers)")
        }
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_macros() {
        assert_eq!(target_macro(&Arch::parse("gfx90a").unwrap()), "defined(__gfx90a__)");
        assert_eq!(target_macro(&Arch::parse("sm_90a").unwrap()), "defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 900");
        assert_eq!(target_macro(&Arch::parse("sm_75").unwrap()), "defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 750");
    }
}
