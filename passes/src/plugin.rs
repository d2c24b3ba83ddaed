//! The plugin's C ABI, called by `opt`/`clang` and by the C++ shim
//! (`shim/plugin.cpp`), and with [`crate::ffi`] the only code in this crate
//! that handles raw pointers:
//!   - `llvmGetPassPluginInfo()`: the new-PM plugin entry point; it hands
//!     LLVM the shim's `regtune_shim_register` as the registration callback.
//!   - `regtune_pass_is_known(name, len) -> bool`: whether a pipeline
//!     element is a valid regtune pass (an invalid parameter prints why).
//!   - `regtune_run_pass(module, name, len, decisions, decisions_len) -> bool`:
//!     run that pass over a module ([`crate::run_pass`]); true when the IR
//!     changed.

#![allow(unsafe_code)]

use std::ffi::{c_char, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

use llvm_sys::prelude::LLVMModuleRef;

use crate::apply::RunOptions;
use crate::ffi::ir;
use crate::spec;

/// `llvm::PassPluginLibraryInfo`: LLVM_PLUGIN_API_VERSION 2 in LLVM 22
/// (llvm/Plugins/PassPlugin.h), 1 in LLVM 19 (llvm/Passes/PassPlugin.h),
/// which lacks the pre-codegen callback.
#[repr(C)]
pub struct PassPluginLibraryInfo {
    api_version: u32,
    plugin_name: *const c_char,
    plugin_version: *const c_char,
    /// `void (*)(llvm::PassBuilder &)`: a reference is a pointer in the ABI.
    register_pass_builder_callbacks: Option<unsafe extern "C" fn(*mut c_void)>,
    /// `bool (*)(Module &, TargetMachine &, CodeGenFileType, raw_pwrite_stream &)`;
    /// regtune does not generate code itself.
    #[cfg(feature = "llvm22")]
    pre_codegen_callback: Option<unsafe extern "C" fn(*mut c_void, *mut c_void, u32, *mut c_void) -> bool>,
}

#[cfg(feature = "llvm22")]
const LLVM_PLUGIN_API_VERSION: u32 = 2;
#[cfg(not(feature = "llvm22"))]
const LLVM_PLUGIN_API_VERSION: u32 = 1;

/// The LLVM version the plugin was built for (`llvm-config --version`),
/// NUL-terminated, in a section of its own so that `regtune doctor` and the
/// wrapper can read it from the file (`llvm-readelf -p .regtune_llvm`)
/// without loading the plugin; also exported, for `dlsym`.
#[allow(non_upper_case_globals)]
#[no_mangle]
#[used]
#[link_section = ".regtune_llvm"]
pub static regtune_plugin_llvm_version: [u8; LLVM_VERSION.len()] = byte_array(LLVM_VERSION);

const LLVM_VERSION: &str = concat!(env!("REGTUNE_LLVM_VERSION"), "\0");

/// The bytes of `s` as an array: a static's type needs its size.
const fn byte_array<const N: usize>(s: &str) -> [u8; N] {
    let (bytes, mut out, mut i) = (s.as_bytes(), [0u8; N], 0);
    while i < N {
        out[i] = bytes[i];
        i += 1;
    }
    out
}

// Unit tests are executables, not plugins: nothing loads LLVM for them, so
// they, and only they, link the shared libLLVM the plugin runs against.
#[cfg(test)]
#[link(name = "LLVM")]
extern "C" {}

extern "C" {
    /// shim/plugin.cpp: registers the parsing and extension-point callbacks.
    fn regtune_shim_register(pass_builder: *mut c_void);
}

/// The new-PM plugin entry point `opt -load-pass-plugin` and
/// `clang -fpass-plugin` look up.
#[no_mangle]
pub extern "C" fn llvmGetPassPluginInfo() -> PassPluginLibraryInfo {
    PassPluginLibraryInfo {
        api_version: LLVM_PLUGIN_API_VERSION,
        plugin_name: c"regtune".as_ptr(),
        plugin_version: concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast(),
        register_pass_builder_callbacks: Some(regtune_shim_register),
        #[cfg(feature = "llvm22")]
        pre_codegen_callback: None,
    }
}

/// Borrow `len` bytes at `ptr` as UTF-8 text; `None` when not UTF-8.
///
/// # Safety
/// `ptr` must be null or point at `len` readable bytes that outlive `'a`.
unsafe fn text<'a>(ptr: *const c_char, len: usize) -> Option<&'a str> {
    if ptr.is_null() || len == 0 {
        return Some("");
    }
    // SAFETY: the caller guarantees `len` readable bytes at `ptr`.
    let bytes = unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) };
    std::str::from_utf8(bytes).ok()
}

/// Whether `name` is a regtune pass the shim should add to the pipeline.
///
/// # Safety
/// `name` must point at `len` readable bytes (a StringRef's data and size).
#[no_mangle]
pub unsafe extern "C" fn regtune_pass_is_known(name: *const c_char, len: usize) -> bool {
    // SAFETY: as the caller guarantees.
    let Some(name) = (unsafe { text(name, len) }) else {
        return false;
    };
    match spec::parse(name) {
        Ok(Some(_)) => true,
        Ok(None) => false,
        Err(e) => {
            eprintln!("regtune: error: {e}");
            false
        }
    }
}

/// Run the pass `name` over `module`; true when the IR changed.
///
/// # Safety
/// `module` must be the live module the pass manager is running the pass
/// on; `name` and `decisions` must point at `name_len` and `decisions_len`
/// readable bytes (the data and size of std::strings).
#[no_mangle]
pub unsafe extern "C" fn regtune_run_pass(
    module: LLVMModuleRef,
    name: *const c_char,
    name_len: usize,
    decisions: *const c_char,
    decisions_len: usize,
) -> bool {
    // SAFETY: as the caller guarantees.
    let (Some(name), Some(decisions)) = (unsafe { text(name, name_len) }, unsafe { text(decisions, decisions_len) }) else {
        return false;
    };
    // The shim only builds passes whose names parsed.
    let Ok(Some(pass)) = spec::parse(name) else {
        return false;
    };
    let options = RunOptions { decisions: (!decisions.is_empty()).then(|| decisions.to_string()) };
    // SAFETY: the pass manager runs one pass at a time on `module`.
    run_guarded(name, || unsafe { ir::with_module(module, |m| crate::run_pass(m, &pass, &options)) })
}

/// A panic must not unwind into C++. After one the module may be half
/// rewritten, so the process cannot carry on compiling it: say which pass
/// failed and abort, the way an LLVM assertion would.
fn run_guarded(name: &str, f: impl FnOnce() -> bool) -> bool {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(changed) => changed,
        Err(_) => {
            eprintln!("regtune: internal error in pass '{name}' (a bug: please report it with the input IR)");
            std::process::abort()
        }
    }
}
