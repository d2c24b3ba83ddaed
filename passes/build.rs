//! Compiles the C++ shim (`shim/*.cpp`) that bridges LLVM's PassBuilder to
//! the Rust passes. Nothing here links LLVM: the plugin is loaded into opt or
//! clang, whose libLLVM is the only copy in the process, and every LLVM
//! symbol the shim and llvm-sys use resolves against it at load time.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The LLVM majors the plugin can be built for, by cargo feature, with the
/// llvm-sys crate version that serves each.
const LLVMS: [(&str, u32, u32); 2] = [("LLVM19", 19, 191), ("LLVM22", 22, 221)];

fn main() {
    println!("cargo:rerun-if-changed=shim");
    println!("cargo:rerun-if-env-changed=LLVM_CONFIG");
    // Default to LLVM 22 when no feature names one (lib.rs then refuses to
    // compile with a clearer message than a build script could give).
    let (major, sys) = LLVMS
        .iter()
        .find(|(feature, ..)| env::var_os(format!("CARGO_FEATURE_{feature}")).is_some())
        .map_or((22, 221), |&(_, major, sys)| (major, sys));
    let prefix_var = format!("LLVM_SYS_{sys}_PREFIX");
    println!("cargo:rerun-if-env-changed={prefix_var}");

    let llvm_config = find_llvm_config(major, &prefix_var);
    let version = llvm_config_output(&llvm_config, "--version").trim().to_string();
    let found_major: u32 = version.split('.').next().and_then(|m| m.parse().ok()).unwrap_or(0);
    if found_major != major {
        panic!(
            "{} is LLVM {version}, but this build is for LLVM {major}: point LLVM_CONFIG or {prefix_var} \
             at an LLVM {major}, or build for LLVM {found_major} (features: llvm19, llvm22)",
            llvm_config.display()
        );
    }
    // The plugin says which LLVM it was built for (src/ffi/mod.rs), so
    // `regtune doctor` and the wrapper can tell before loading it.
    println!("cargo:rustc-env=REGTUNE_LLVM_VERSION={version}");
    let cxxflags = llvm_config_output(&llvm_config, "--cxxflags");
    let rtti = llvm_config_output(&llvm_config, "--has-rtti");

    let mut sources: Vec<PathBuf> = std::fs::read_dir("shim")
        .expect("passes/shim exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "cpp"))
        .collect();
    sources.sort();
    for s in &sources {
        println!("cargo:rerun-if-changed={}", s.display());
    }

    let mut build = cc::Build::new();
    build.cpp(true).files(&sources).warnings(true).extra_warnings(false);
    // binutils' archiver, which comes with the C toolchain Rust needs: cc
    // would otherwise take whatever `llvm-ar` happens to be on PATH.
    build.archiver("ar").ranlib("ranlib");
    for flag in cxxflags.split_whitespace() {
        // llvm-config hands out the flags LLVM itself was built with; keep
        // the ones that matter for ABI and headers, and leave optimisation
        // and warning choices to cc.
        if flag.starts_with("-I") || flag.starts_with("-D") || flag.starts_with("-std=") || flag == "-fno-exceptions" {
            build.flag(flag);
        }
    }
    // A plugin must match LLVM's RTTI setting, or vtables of classes
    // derived from LLVM's (the pass models) refer to typeinfo that libLLVM
    // does not have.
    if rtti.trim() != "YES" {
        build.flag("-fno-rtti");
    }
    build.flag_if_supported("-Wno-unused-parameter");
    // The shim checks that LLVM's headers are the version the Rust side
    // (inkwell, llvm-sys) was built for.
    build.define("REGTUNE_LLVM_MAJOR", major.to_string().as_str());
    build.compile("regtune_shim");

    // Where `cargo test` finds libLLVM (src/ffi/mod.rs links it into unit
    // test executables only; the plugin itself links nothing).
    let libdir = llvm_config_output(&llvm_config, "--libdir");
    println!("cargo:rustc-link-search=native={}", libdir.trim());
}

fn find_llvm_config(major: u32, prefix_var: &str) -> PathBuf {
    if let Ok(p) = env::var("LLVM_CONFIG") {
        return PathBuf::from(p);
    }
    if let Ok(prefix) = env::var(prefix_var) {
        let p = Path::new(&prefix).join("bin/llvm-config");
        if p.exists() {
            return p;
        }
    }
    PathBuf::from(format!("llvm-config-{major}"))
}

fn llvm_config_output(llvm_config: &Path, arg: &str) -> String {
    let out = Command::new(llvm_config).arg(arg).output().unwrap_or_else(|e| panic!("cannot run {} {arg}: {e}", llvm_config.display()));
    assert!(out.status.success(), "{} {arg} failed", llvm_config.display());
    String::from_utf8(out.stdout).expect("llvm-config prints UTF-8")
}
