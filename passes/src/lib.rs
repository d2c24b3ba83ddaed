//! regtune's register-pressure transforms as LLVM passes, and the pass plugin
//! that runs them inside `opt` and `clang`.
//!
//! One module per transform, each opening with what it does, why it is legal
//! and the `opt` command that runs it alone (the largest are folders,
//! split the way LLVM splits such passes: `sink/` into legality, placement
//! and profitability, `noalias/` into the transform and the ranking,
//! `lds_spill/` into legality, choice and the rewrite):
//!
//! | pass name                         | module          |
//! |-----------------------------------|-----------------|
//! | `regtune-pow2[<inexact>]`         | [`pow2`]        |
//! | `regtune-unroll-cap<N>`           | [`unroll_cap`]  |
//! | `regtune-occupancy<W;block=N>`    | [`occupancy`]   |
//! | `regtune-noalias<P;...>`          | [`noalias`]     |
//! | `regtune-noalias-rank`            | [`noalias`]     |
//! | `regtune-sink`                    | [`sink`]        |
//! | `regtune-spill-to-shared`         | [`spill_to_shared`] |
//! | `regtune-lds-spill<N>`            | [`lds_spill`]   |
//! | `regtune-apply[<early\|late>]`    | [`apply`]       |
//!
//! [`spec`] parses those names, [`run_pass`] dispatches them, [`ir`] holds
//! the IR queries the passes share, and [`ffi`] is the only place that talks
//! to LLVM through raw pointers (the C ABI the shim calls, and the few LLVM-C
//! calls inkwell does not wrap).

// `unsafe` lives in `ffi` alone; everything else goes through safe wrappers.
#![deny(unsafe_code)]

// One LLVM per build (Cargo.toml's `llvm22`/`llvm19` features); the code
// says `llvm_sys` whichever it is.
#[cfg(all(feature = "llvm22", feature = "llvm19"))]
compile_error!("features `llvm22` and `llvm19` exclude each other: build one plugin per LLVM (`--no-default-features --features llvm19`)");
#[cfg(not(any(feature = "llvm22", feature = "llvm19")))]
compile_error!("choose the LLVM to build the plugin for: feature `llvm22` (the default) or `llvm19`");
#[cfg(all(feature = "llvm19", not(feature = "llvm22")))]
extern crate llvm_sys_191 as llvm_sys;
#[cfg(all(feature = "llvm22", not(feature = "llvm19")))]
extern crate llvm_sys_221 as llvm_sys;

pub mod apply;
pub mod ffi;
pub mod inspect;
pub mod ir;
pub mod lds_spill;
pub mod noalias;
pub mod occupancy;
pub mod only_kernel;
pub mod pow2;
pub mod sink;
pub mod spec;
pub mod spill_to_shared;
pub mod unroll_cap;

use std::io::Write;

use inkwell::module::Module;

use spec::{ParamRef, PassSpec};

/// The environment the plugin reads: the decisions crate names it, for
/// the driver and the plugin both.
pub use regtune_decisions::plugin::{DECISIONS_ENV, INPUT_HASH_ENV, ONLY_KERNEL_ENV, VERBOSE_ENV};

/// Options the host tool hands to every pass run.
#[derive(Debug, Default, Clone)]
pub struct RunOptions {
    /// The `-regtune-decisions=` option (empty: not given).
    pub decisions: Option<String>,
}

/// Run one parsed pass over `module`; true when the IR changed.
pub fn run_pass(module: &Module<'_>, pass: &PassSpec, options: &RunOptions) -> bool {
    match pass {
        PassSpec::Pow2(rounding) => pow2::run(module, *rounding),
        PassSpec::UnrollCap(cap) => unroll_cap::run(module, *cap),
        PassSpec::Occupancy(occ) => occupancy::run(module, occ),
        PassSpec::Noalias(params) => run_noalias(module, params),
        PassSpec::NoaliasRank => {
            print_noalias_rank(module);
            false
        }
        PassSpec::Inspect => {
            inspect::print(module);
            false
        }
        PassSpec::Sink => sink::run(&ir::defined_functions(module)),
        PassSpec::SpillToShared => spill_to_shared::run(module),
        PassSpec::LdsSpill(slots) => lds_spill::run(module, *slots),
        PassSpec::Apply(phase) => apply::run(module, *phase, options),
    }
}

/// `regtune-noalias<P;...>`: resolve each parameter against each kernel
/// (an index, or the IR name of an argument) and hand them to the noalias
/// transform. A name a kernel does not have is skipped for that kernel.
fn run_noalias(module: &Module<'_>, params: &[ParamRef]) -> bool {
    let mut changed = false;
    for kernel in ir::kernels(module) {
        let resolved: Vec<_> = params.iter().filter_map(|p| ir::resolve_param(kernel, p)).collect();
        if resolved.is_empty() {
            continue;
        }
        changed |= noalias::run(kernel, &resolved);
    }
    changed
}

/// `regtune-noalias-rank`: one JSON line per kernel on stdout, for the
/// driver (`opt -disable-output -passes=regtune-noalias-rank`).
fn print_noalias_rank(module: &Module<'_>) {
    #[derive(serde::Serialize)]
    struct Line<'a> {
        kernel: &'a str,
        candidates: Vec<noalias::Candidate>,
    }
    let mut out = std::io::stdout().lock();
    for kernel in ir::kernels(module) {
        let name = ir::symbol(kernel);
        let line = Line { kernel: &name, candidates: noalias::rank(kernel) };
        match serde_json::to_string(&line) {
            // A closed stdout is the reader's choice; nothing to report.
            Ok(json) => {
                let _ = writeln!(out, "{json}");
            }
            Err(e) => eprintln!("regtune: warning: cannot print noalias ranking for {name}: {e}"),
        }
    }
    let _ = out.flush();
}
