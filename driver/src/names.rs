//! Kernel names, from the symbol to what a person or a launch site writes.
//!
//! `_ZN2ns7stencilIfEEvPf` is the symbol; [`demangle`] gives
//! `void ns::stencil<float>(float*)`; [`short_name`] drops the parameter
//! list, as tables show a kernel; [`unqualified`] keeps only `stencil`, as
//! a launch `stencil<<<...>>>` and a definition spell it;
//! [`from_library`] tells a kernel CUB or Thrust instantiated in the file
//! from one the program wrote.

/// The demangled symbol; an unmangled name (`extern "C"`) as it is.
pub(crate) fn demangle(symbol: &str) -> String {
    cpp_demangle::Symbol::new(symbol)
        .ok()
        .and_then(|s| s.demangle(&cpp_demangle::DemangleOptions::default()).ok())
        .unwrap_or_else(|| symbol.to_string())
}

/// The name without its parameter list, as a table shows it: the text
/// before the first `(` outside a template argument list
/// (`void k<(unsigned long)2>(int)` is `void k<(unsigned long)2>`).
pub fn short_name(demangled: &str) -> &str {
    let mut depth = 0usize;
    for (i, c) in demangled.char_indices() {
        match c {
            // `operator<`, `operator<<` open no argument list.
            '<' if demangled[..i].ends_with("operator") || demangled[..i].ends_with("operator<") => {}
            '<' => depth += 1,
            '>' => depth = depth.saturating_sub(1),
            '(' if depth == 0 => return demangled[..i].trim(),
            _ => {}
        }
    }
    demangled.trim()
}

/// A symbol as a table or a note names a kernel: [`demangle`]d, then
/// [`short_name`] (`void fasten_main<(unsigned long)2>`).
pub(crate) fn short(symbol: &str) -> String {
    short_name(&demangle(symbol)).to_string()
}

/// Two mangled symbols name one function: the same symbol, or the same
/// demangled name (a `static` function's symbol as nvcc writes it, without
/// clang's internal-linkage `L`: `_Z1kv` and `_ZL1kv`).
pub(crate) fn same_function(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    let (da, db) = (demangle(a), demangle(b));
    da != a && db != b && da == db
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

/// Namespaces of the GPU vendors' template libraries, whose kernels a
/// program instantiates (RSBench's `thrust` calls bring 30) but did not write.
const LIBRARIES: [&str; 5] = ["cub", "thrust", "rocprim", "hipcub", "cuda"];

/// The kernel is a CUB, Thrust, rocPRIM or hipCUB (or libcu++) template:
/// its mangled name's outermost namespace is one of theirs
/// (`_ZN3cub17CUB_200802_SM_90011EmptyKernelIvEEvv`).
pub(crate) fn from_library(symbol: &str) -> bool {
    let Some(nested) = symbol.strip_prefix("_ZN") else {
        return false;
    };
    let digits = nested.bytes().take_while(u8::is_ascii_digit).count();
    let Ok(len) = nested[..digits].parse::<usize>() else {
        return false;
    };
    nested.get(digits..digits + len).is_some_and(|outer| LIBRARIES.contains(&outer))
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
    fn a_static_functions_symbols_from_nvcc_and_clang_name_one_function() {
        let nvcc = "_Z11fasten_mainILm2EEviiPK4AtomS2_PKfS4_S4_S4_S4_S4_PfPK8FFParamsi";
        let clang = "_ZL11fasten_mainILm2EEviiPK4AtomS2_PKfS4_S4_S4_S4_S4_PfPK8FFParamsi";
        assert!(same_function(nvcc, clang));
        assert!(same_function("_ZN2ns1kEv", "_ZN2nsL1kEv"));
        assert!(!same_function(nvcc, "_ZL11fasten_mainILm4EEviiPK4AtomS2_PKfS4_S4_S4_S4_S4_PfPK8FFParamsi"));
        assert!(!same_function("k", "j"));
        assert_eq!(short_name(&demangle(nvcc)), "void fasten_main<(unsigned long)2>");
        assert_eq!(short_name("k(int)"), "k");
        assert_eq!(short_name("void k<float>(float*)"), "void k<float>");
        assert_eq!(short_name("bool operator<(A const&, A const&)"), "bool operator<");
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

    #[test]
    fn library_kernels_are_told_by_their_outermost_namespace() {
        assert!(from_library("_ZN3cub17CUB_200802_SM_90011EmptyKernelIvEEvv"));
        assert!(from_library("_ZN6thrust20THRUST_200802_SM_900_NS8cuda_cub4core13_kernel_agentIvEEvv"));
        assert!(from_library("_ZN7rocprim6detail11sort_kernelEv"));
        // The program's own kernels, in a namespace or not, and C names.
        assert!(!from_library("_Z25xs_lookup_kernel_baseline5Input14SimulationData"));
        assert!(!from_library("_ZN2ns7stencilIfLi4EEEvPf"));
        assert!(!from_library("_ZN5cubic6kernelEv"));
        assert!(!from_library("cub"));
        assert!(!from_library("_ZN99cubEv"));
    }
}
