//! Occupancy target and block size as kernel attributes:
//!   - AMDGPU: `__attribute__((amdgpu_waves_per_eu(W)))` (what the plugin
//!     sets as `"amdgpu-waves-per-eu"="W"`) and `__launch_bounds__(N)`
//!     (HIP's `amdgpu_flat_work_group_size(1, N)`);
//!   - NVPTX: `__launch_bounds__(N)`, and with a warps-per-SM target W
//!     `__launch_bounds__(N, W / warps-per-block)`, from which ptxas derives
//!     its register cap. Without a block size there is nothing clang 22
//!     honours: it ignores CUDA 12.4's `__maxnreg__`, so that is a note.
//!
//! Written on a line of their own above the kernel's declaration (else just
//! before its name). When the targets of one run decided differently, each
//! target gets its own attributes under `#if` on the compiler's target
//! macro (`__gfx90a__`, `__CUDA_ARCH__ == 900`).

use crate::target::Arch;

use super::ast::Node;
use super::edit::{self, Edit};
use super::{Decision, Kernel, Notes};

/// The attribute edit for one kernel, from its decisions on every target.
pub fn edit(kernel: &Kernel<'_>, decisions: &[&Decision], notes: &mut Notes) -> Option<Edit> {
    let mut per_arch: Vec<(&Arch, String)> = Vec::new();
    for d in decisions {
        let t = &d.transforms;
        let parts = match crate::target::of(&d.arch).source_attributes(&d.arch, t.launch_bounds, t.waves_per_eu) {
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
    if let Some(existing) = existing_attribute(kernel.decl, &per_arch) {
        notes.kernel(kernel, format!("already has {existing}; change it by hand to {}", per_arch[0].1));
        return None;
    }
    let symbol = kernel.symbol;
    let begin = kernel.decl.begin.as_ref().filter(|b| &*b.file == kernel.file && edit::starts_line(kernel.text, b.offset));
    if per_arch.iter().all(|(_, a)| *a == per_arch[0].1) {
        let attrs = &per_arch[0].1;
        // On a line of its own above the declaration, else just before the name.
        if let Some(b) = begin {
            let at = edit::line_start(kernel.text, b.offset);
            return Some(Edit::new(at, at, format!("{}{attrs}\n", edit::indentation(kernel.text, b.offset)), symbol, "occupancy"));
        }
        let name = kernel.decl.loc.as_ref().filter(|l| !l.in_macro && &*l.file == kernel.file)?;
        return Some(Edit::new(name.offset, name.offset, format!("{attrs} "), symbol, "occupancy"));
    }
    // Targets disagree: one `#if` branch per target, above the declaration.
    let Some(begin) = begin else {
        notes.kernel(kernel, "the targets decided different attributes, and the declaration does not start its line; not patched".into());
        return None;
    };
    let mut block = String::new();
    for (arch, attrs) in per_arch.iter().filter(|(_, a)| !a.is_empty()) {
        let keyword = if block.is_empty() { "#if" } else { "#elif" };
        block.push_str(&format!("{keyword} {}\n{attrs}\n", target_macro(arch)));
    }
    block.push_str("#endif\n");
    let at = edit::line_start(kernel.text, begin.offset);
    Some(Edit::new(at, at, block, symbol, "occupancy"))
}

/// The preprocessor test for compiling device code for `arch`.
pub fn target_macro(arch: &Arch) -> String {
    crate::target::of(arch).device_macro(arch)
}

/// An attribute of the kind we would add that the kernel already has.
fn existing_attribute(decl: &Node, per_arch: &[(&Arch, String)]) -> Option<&'static str> {
    let adds = |s: &str| per_arch.iter().any(|(_, a)| a.contains(s));
    decl.inner.iter().find_map(|n| match n.kind.as_str() {
        "AMDGPUWavesPerEUAttr" if adds("amdgpu_waves_per_eu") => Some("an amdgpu_waves_per_eu attribute"),
        "AMDGPUFlatWorkGroupSizeAttr" | "CUDALaunchBoundsAttr" if adds("__launch_bounds__") => Some("__launch_bounds__"),
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
