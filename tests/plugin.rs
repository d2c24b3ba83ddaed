//! Every example through `clang-22 -fpass-plugin` with a decisions db that
//! asks for the transform the example was written for: the build succeeds
//! with the IR verifier on, the plugin says the transform changed the
//! kernel. The same under clang-19 with the plugin built for LLVM 19; and a
//! plugin of the other LLVM is refused by name, before anything loads it.
//! (That the host half is untouched is tests/lit/clang/hip-pow2.hip.)

// A test fails by panicking; `unwrap` says where.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::process::Command;

use common::{hip_device_compile, hip_device_compile_with, plugin, repo};
use serde_json::{json, Value};

/// Kernel symbols of an example, from `regtune report`.
fn kernel_symbols(file: &Path) -> Vec<String> {
    let out = assert_cmd::Command::cargo_bin("regtune").unwrap().args(["report", "--format", "json"]).arg(file).output().unwrap();
    assert!(out.status.success());
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    doc["kernels"].as_array().unwrap().iter().map(|k| k["symbol"].as_str().unwrap().to_string()).collect()
}

/// A db applying `transforms` to every kernel of `file` on gfx90a.
fn db_for(file: &Path, transforms: Value, dir: &Path) -> std::path::PathBuf {
    let mut kernels = serde_json::Map::new();
    for symbol in kernel_symbols(file) {
        kernels.insert(
            format!("gfx90a/{symbol}/test"),
            json!({"symbol": symbol, "arch": "gfx90a", "input_hash": "test", "transforms": transforms}),
        );
    }
    let path = dir.join("decisions.json");
    std::fs::write(&path, serde_json::to_string(&json!({"version": 1, "kernels": kernels})).unwrap()).unwrap();
    path
}

/// An LLVM to build with: its clang and opt, and the plugin built for it.
struct Llvm {
    clang: &'static str,
    opt: &'static str,
    plugin: std::path::PathBuf,
}

fn llvm22() -> Llvm {
    Llvm { clang: "clang-22", opt: "opt-22", plugin: plugin() }
}

/// Compile with the plugin and the verifier; return the plugin's notes.
fn build_with(file: &Path, transforms: Value) -> String {
    build_under(&llvm22(), file, transforms)
}

/// [`build_with`] under `llvm`.
fn build_under(llvm: &Llvm, file: &Path, transforms: Value) -> String {
    let dir = tempfile::tempdir().unwrap();
    let db = db_for(file, transforms, dir.path());
    let ir = dir.path().join("device.ll");
    let out = hip_device_compile_with(llvm.clang, file, "gfx90a")
        .arg(format!("-fpass-plugin={}", llvm.plugin.display()))
        .args(["-fverify-intermediate-code", "-S", "-emit-llvm", "-o"])
        .arg(&ir)
        .env("REGTUNE_DECISIONS", &db)
        .env("REGTUNE_VERBOSE", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{}: {stderr}", file.display());
    // And once more through opt's verifier, on the final device IR.
    let verify = Command::new(llvm.opt).args(["-passes=verify", "-disable-output"]).arg(&ir).output().unwrap();
    assert!(verify.status.success(), "{}", String::from_utf8_lossy(&verify.stderr));
    assert!(!stderr.contains("regtune: warning"), "{stderr}");
    stderr
}

fn example(name: &str) -> std::path::PathBuf {
    repo().join("examples").join(name)
}

#[test]
fn pow2_rewrites_the_lattice_boltzmann_kernel_only_when_inexact_is_allowed() {
    // ocml's pow is not correctly rounded: plain pow2 leaves it.
    let notes = build_with(&example("lbm_d3q19.hip"), json!({"pow2": true}));
    assert!(!notes.contains("changed"), "{notes}");
    let notes = build_with(&example("lbm_d3q19.hip"), json!({"pow2": true, "pow2_inexact": true}));
    assert!(notes.contains("regtune: pow2=inexact changed"), "{notes}");
}

#[test]
fn noalias_marks_lattice_boltzmann_pointers() {
    let notes = build_with(&example("lbm_d3q19.hip"), json!({"noalias": [{"index": 1}, {"index": 2}]}));
    assert!(notes.contains("regtune: noalias changed _Z24lbm_d3q19_collide_stream"), "{notes}");
}

#[test]
fn unroll_cap_rewrites_the_laplacian_tile_loop() {
    let notes = build_with(&example("laplacian3d.hip"), json!({"unroll_cap": 2}));
    assert!(notes.contains("regtune: unroll-cap=2 changed"), "{notes}");
}

#[test]
fn sink_moves_the_long_lived_definitions() {
    let notes = build_with(&example("long_lived.hip"), json!({"sink": true}));
    assert!(notes.contains("regtune: sink changed"), "{notes}");
}

#[test]
fn launch_bounds_and_waves_per_eu_set_the_kernel_attributes() {
    let notes = build_with(&example("launch_bounds_spill.hip"), json!({"launch_bounds": 256, "waves_per_eu": 2}));
    assert!(notes.contains("regtune: occupancy changed _Z18block_jacobi_solve"), "{notes}");
}

#[test]
fn every_example_builds_with_every_transform_at_once() {
    let all = json!({"pow2": true, "pow2_inexact": true, "sink": true, "unroll_cap": 1, "noalias": [{"index": 0}], "waves_per_eu": 4, "launch_bounds": 256});
    for file in common::examples() {
        build_with(&file, all.clone());
    }
}

#[test]
fn report_through_the_plugin_shows_pow2_saving_registers_on_lattice_boltzmann() {
    let file = example("lbm_d3q19.hip");
    let dir = tempfile::tempdir().unwrap();
    let db = db_for(&file, json!({"pow2": true, "pow2_inexact": true}), dir.path());
    let vgprs = |extra: &[String]| -> u64 {
        let out = assert_cmd::Command::cargo_bin("regtune")
            .unwrap()
            .args(["report", "--format", "json"])
            .arg(&file)
            .arg("--")
            .args(extra)
            .env("REGTUNE_DECISIONS", &db)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        doc["kernels"][0]["usage"]["vgpr"].as_u64().unwrap()
    };
    let plain = vgprs(&[]);
    let tuned = vgprs(&[format!("-fpass-plugin={}", plugin().display())]);
    assert!(tuned < plain, "pow2 through the plugin: {plain} → {tuned} VGPRs");
}

/// The same builds under LLVM 19: clang-19 with the plugin built for it.
/// Each transform changes the kernel of the example written for it, and all
/// of them at once build every example, the verifier on throughout.
#[test]
fn every_transform_builds_under_llvm_19() {
    let Some(plugin) = common::llvm19_plugin() else { return };
    let llvm = Llvm { clang: "clang-19", opt: "opt-19", plugin };
    for (file, transforms, note) in [
        ("lbm_d3q19.hip", json!({"pow2": true, "pow2_inexact": true}), "regtune: pow2=inexact changed"),
        ("lbm_d3q19.hip", json!({"noalias": [{"index": 1}, {"index": 2}]}), "regtune: noalias changed _Z24lbm_d3q19_collide_stream"),
        ("laplacian3d.hip", json!({"unroll_cap": 2}), "regtune: unroll-cap=2 changed"),
        ("long_lived.hip", json!({"sink": true}), "regtune: sink changed"),
        ("launch_bounds_spill.hip", json!({"launch_bounds": 256, "waves_per_eu": 2}), "regtune: occupancy changed _Z18block_jacobi_solve"),
    ] {
        let notes = build_under(&llvm, &example(file), transforms);
        assert!(notes.contains(note), "{file}: {notes}");
    }
    let all = json!({"pow2": true, "sink": true, "unroll_cap": 1, "noalias": [{"index": 0}], "waves_per_eu": 4, "launch_bounds": 256});
    for file in common::examples() {
        build_under(&llvm, &file, all.clone());
    }
}

fn regtune_with_plugin(plugin: &Path) -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::cargo_bin("regtune").unwrap();
    cmd.env("REGTUNE_PLUGIN", plugin);
    cmd
}

#[test]
fn doctor_says_which_llvm_the_plugin_is_for_and_that_clang_loads_it() {
    let out = regtune_with_plugin(&plugin()).arg("doctor").output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = |what: &str| stdout.lines().find(|l| l.contains(what)).unwrap_or_else(|| panic!("no `{what}` line: {stdout}")).to_string();
    assert!(line("regtune pass plugin").contains("(built for LLVM 22."), "{stdout}");
    let loads = line("pass plugin loads into the compiler");
    assert!(loads.starts_with("ok ") && loads.contains("clang version 22."), "{stdout}");
}

/// A plugin built for LLVM 19 crashes clang 22 when loaded: doctor, tune and
/// batch tell from the plugin's record, without loading it, and name the
/// command that builds the right one.
#[test]
fn a_plugin_for_another_llvm_is_named_with_the_fix_before_it_is_loaded() {
    let Some(plugin) = common::llvm19_plugin() else { return };
    let out = regtune_with_plugin(&plugin).arg("doctor").output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains(&format!("{} (built for LLVM 19.", plugin.display())), "{stdout}");
    let mismatch = stdout.lines().find(|l| l.contains("pass plugin loads into the compiler")).unwrap();
    assert!(mismatch.starts_with("missing "), "{stdout}");
    assert!(mismatch.contains(&format!("fix: pass plugin {} is built for LLVM 19.", plugin.display())), "{mismatch}");
    assert!(mismatch.contains("is LLVM 22; build it for LLVM 22: "), "{mismatch}");
    assert!(mismatch.ends_with("cargo build --release -p regtune-passes"), "{mismatch}");

    let out = regtune_with_plugin(&plugin).args(["tune", "--offload-arch", "gfx90a"]).arg(example("lbm_d3q19.hip")).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with(&format!("error: pass plugin {} is built for LLVM 19.", plugin.display())), "{stderr}");
}
/// Instructions in the defined functions of an IR listing.
fn instruction_count(ir: &str) -> usize {
    let mut inside = false;
    let mut n = 0;
    for line in ir.lines() {
        if line.starts_with("define ") {
            inside = true;
        } else if line == "}" {
            inside = false;
        } else if inside && line.starts_with("  ") && !line.trim_start().starts_with(';') {
            n += 1;
        }
    }
    n
}

/// The optimized device IR of `file` for gfx90a, plainly or with a db
/// applying `transforms` to every kernel.
fn optimized_ir(file: &Path, transforms: Option<Value>) -> String {
    let dir = tempfile::tempdir().unwrap();
    let ir = dir.path().join("device.ll");
    let mut cmd = hip_device_compile(file, "gfx90a");
    if let Some(t) = transforms {
        cmd.arg(format!("-fpass-plugin={}", plugin().display())).env("REGTUNE_DECISIONS", db_for(file, t, dir.path()));
    }
    let out = cmd.args(["-S", "-emit-llvm", "-o"]).arg(&ir).output().unwrap();
    assert!(out.status.success(), "{}: {}", file.display(), String::from_utf8_lossy(&out.stderr));
    std::fs::read_to_string(&ir).unwrap()
}

#[test]
fn unroll_caps_never_grow_the_optimized_ir_of_any_example() {
    for file in common::examples() {
        let plain = instruction_count(&optimized_ir(&file, None));
        for cap in [1, 2, 4, 8] {
            let capped = instruction_count(&optimized_ir(&file, Some(json!({"unroll_cap": cap}))));
            assert!(capped <= plain, "{} with unroll-cap={cap}: {capped} instructions, plain O3 {plain}", file.display());
        }
    }
}
