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
//! [`plugin`] is the C ABI `opt`, `clang` and the C++ shim call, [`spec`]
//! parses the pass names, [`run_pass`] dispatches them, [`ir`] holds the IR
//! queries the passes share (with [`ir::cfg`]: blocks, dominators and natural
//! loops, over the `regtune-cfg` crate that `regtune explain` uses too), and
//! [`ffi`] wraps the few LLVM-C calls inkwell does not.

// `unsafe` lives in `plugin` and `ffi` alone; everything else goes through
// safe wrappers.
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
pub mod plugin;
pub mod pow2;
pub mod sink;
pub mod spec;
pub mod spill_to_shared;
pub mod unroll_cap;

use inkwell::module::Module;

use apply::RunOptions;
use spec::PassSpec;

/// Run one parsed pass over `module`; true when the IR changed.
pub fn run_pass(module: &Module<'_>, pass: &PassSpec, options: &RunOptions) -> bool {
    match pass {
        PassSpec::Pow2(rounding) => pow2::run(module, *rounding),
        PassSpec::UnrollCap(cap) => unroll_cap::run(module, *cap),
        PassSpec::Occupancy(occ) => occupancy::run(module, occ),
        PassSpec::Noalias(params) => noalias::run_named(module, params),
        PassSpec::NoaliasRank => {
            noalias::print_rank(module);
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
