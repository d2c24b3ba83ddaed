//! Kernel names, from the symbol to what a person or a launch site writes.
//!
//! `_ZN2ns7stencilIfEEvPf` is the symbol; [`demangle`] gives
//! `void ns::stencil<float>(float*)`; [`short_name`] drops the parameter
//! list, as tables show a kernel; [`unqualified`] keeps only `stencil`, as
//! a launch `stencil<<<...>>>` and a definition spell it.

/// The demangled symbol; an unmangled name (`extern "C"`) as it is.
pub(crate) fn demangle(symbol: &str) -> String {
    cpp_demangle::Symbol::new(symbol)
        .ok()
        .and_then(|s| s.demangle(&cpp_demangle::DemangleOptions::default()).ok())
        .unwrap_or_else(|| symbol.to_string())
}

/// The name without its parameter list, as a table shows it.
pub fn short_name(demangled: &str) -> &str {
    demangled.split('(').next().unwrap_or(demangled).trim()
}

/// The name alone, no namespace, template arguments or return type:
/// `_ZN2ns1kIiEEvPf` → `k`, `void k<float>(float*)` → `k`; a name that is
/// not mangled stays as it is.
pub(crate) fn unqualified(symbol: &str) -> String {
    let demangled = demangle(symbol);
    let head = demangled.split('(').next().unwrap_or(&demangled);
    let head = head.split('<').next().unwrap_or(head);
    let head = head.rsplit("::").next().unwrap_or(head);
    head.rsplit(' ').next().unwrap_or(head).trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symbols_demangle() {
        assert_eq!(demangle("_Z4axpyfPKfPfi"), "axpy(float, float const*, float*, int)");
        assert_eq!(demangle("plain_c_kernel"), "plain_c_kernel");
    }

    #[test]
    fn unqualified_names_are_how_launches_spell_kernels() {
        assert_eq!(unqualified("_ZN2ns7stencilIfLi4EEEvPf"), "stencil");
        assert_eq!(unqualified("_Z16md_lj_force_kickPKdS0_"), "md_lj_force_kick");
        assert_eq!(unqualified("plain_c_kernel"), "plain_c_kernel");
        // Already demangled, as tables hold them.
        assert_eq!(unqualified("lbm_collide(double*, double*)"), "lbm_collide");
        assert_eq!(unqualified("void ns::stencil<float, 4>(float*)"), "stencil");
        // A template outside any namespace: the return type goes too.
        assert_eq!(unqualified("void k<float>(float*)"), "k");
    }
}
