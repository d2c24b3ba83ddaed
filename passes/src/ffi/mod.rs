//! The FFI layer: with `plugin.rs` (the plugin's C ABI), the only
//! code in this crate that handles raw LLVM pointers.
//!
//! * [`ir`]: safe wrappers over the LLVM-C calls inkwell lacks.
//! * `compat`: LLVM-C calls LLVM 19 lacks, rebuilt from calls it has.
//! * `nvvm` (LLVM 19 only): `!nvvm.annotations`, where LLVM 19 marks NVPTX
//!   kernels and their launch limits.
//! * [`sink`]: the instruction queries `regtune-sink` and
//!   `regtune-lds-spill` need.

#![allow(unsafe_code)]

mod compat;
pub mod ir;
#[cfg(feature = "llvm19")]
pub mod nvvm;
pub mod sink;
