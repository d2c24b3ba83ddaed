//! A kernel's listings, plain and tuned: the unified diffs of `--diff`,
//! and the assembly the cost model profiles.

use regtune_decisions::Transforms;

use crate::cost;
use crate::gpu::{self};
use crate::session::{Listing, Session};

/// Unified diffs of the kernel's optimized IR and assembly, plain vs tuned.
pub(super) fn diff_listings(session: &Session<'_>, symbol: &str, t: &Transforms) -> Result<String, crate::session::SessionError> {
    let tuned = [(symbol.to_string(), t.clone())];
    let mut out = String::new();
    let target = gpu::of(session.arch);
    let asm = |listing: &str, symbol: &str| target.kernel_listing(listing, symbol);
    for (kind, extract, label) in
        [(Listing::Ir, &ir_function as &dyn Fn(&str, &str) -> String, "IR"), (Listing::Asm, &asm as &dyn Fn(&str, &str) -> String, "asm")]
    {
        let before = extract(&session.listing(&[], kind)?, symbol);
        let after = extract(&session.listing(&tuned, kind)?, symbol);
        let diff = similar::TextDiff::from_lines(&before, &after);
        out.push_str(
            &diff
                .unified_diff()
                .context_radius(3)
                .header(&format!("{symbol} ({label}, plain)"), &format!("{symbol} ({label}, tuned)"))
                .to_string(),
        );
    }
    Ok(out)
}

/// The cost model's profile of a kernel built with `t`: one more compile,
/// to assembly (PTX on NVPTX).
pub(crate) fn profile(session: &Session<'_>, symbol: &str, t: &Transforms) -> Result<cost::Profile, crate::session::SessionError> {
    let listing = session.listing(&[(symbol.to_string(), t.clone())], Listing::Asm)?;
    let code = gpu::of(session.arch).kernel_listing(&listing, symbol);
    Ok(cost::profile_of(&code, session.arch))
}

/// The `define ... @symbol(...) { ... }` block of an IR listing.
pub(super) fn ir_function(listing: &str, symbol: &str) -> String {
    let start = format!("@{symbol}(");
    crate::gpu::listing::cut(listing, |l| l.starts_with("define") && l.contains(&start), |l| l == "}", true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::Arch;

    #[test]
    fn kernel_functions_are_cut_from_listings() {
        let ir = "define void @a() {\n  ret void\n}\ndefine amdgpu_kernel void @k(ptr %p) #0 {\nentry:\n  ret void\n}\n";
        assert_eq!(ir_function(ir, "k"), "define amdgpu_kernel void @k(ptr %p) #0 {\nentry:\n  ret void\n}\n");
        let asm = "a:\n  s_endpgm\n.Lfunc_end0:\nk:\n  s_load_dword s0\n  s_endpgm\n.Lfunc_end1:\n";
        let gfx90a = Arch::parse("gfx90a").unwrap();
        assert_eq!(gpu::of(&gfx90a).kernel_listing(asm, "k"), "k:\n  s_load_dword s0\n  s_endpgm\n");
    }
}
