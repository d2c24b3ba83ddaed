//! `regtune report` against the real backend: its numbers must equal clang's
//! own `-Rpass-analysis=kernel-resource-usage` remarks, and bad input must
//! end in one line naming the cause.

// A test fails by panicking; `unwrap` says where.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use assert_cmd::Command;
use common::{examples, remarks_for, repo};
use predicates::prelude::*;
use serde_json::Value;

fn regtune() -> Command {
    let mut cmd = Command::cargo_bin("regtune").expect("regtune binary");
    cmd.current_dir(repo());
    cmd
}

fn report_json(file: &Path, arch: &str) -> Vec<Value> {
    let out = regtune().args(["report", "--format", "json", "--offload-arch", arch]).arg(file).output().expect("run regtune");
    assert!(out.status.success(), "report failed on {}: {}", file.display(), String::from_utf8_lossy(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("report prints JSON");
    doc["kernels"].as_array().expect("kernels array").clone()
}

fn check_against_remarks(arch: &str) {
    for file in examples() {
        let kernels = report_json(&file, arch);
        let remarks = remarks_for(&file, arch);
        assert_eq!(kernels.len(), remarks.len(), "{}: kernel count on {arch}", file.display());
        for k in &kernels {
            let symbol = k["symbol"].as_str().unwrap();
            let r: &BTreeMap<String, u64> = remarks.get(symbol).unwrap_or_else(|| panic!("no remark for {symbol}"));
            let u = &k["usage"];
            let ctx = format!("{} {symbol} on {arch}", file.display());
            assert_eq!(u["vgpr"].as_u64(), Some(r["VGPRs"]), "{ctx}: VGPRs");
            // Targets without AGPRs (wave32 RDNA) print no AGPR line.
            assert_eq!(u["agpr"].as_u64(), Some(r.get("AGPRs").copied().unwrap_or(0)), "{ctx}: AGPRs");
            assert_eq!(u["sgpr"].as_u64(), Some(r["TotalSGPRs"]), "{ctx}: SGPRs");
            assert_eq!(u["scratch_bytes"].as_u64(), Some(r["ScratchSize [bytes/lane]"]), "{ctx}: scratch");
            assert_eq!(u["vgpr_spills"].as_u64(), Some(r["VGPRs Spill"]), "{ctx}: VGPR spills");
            assert_eq!(u["sgpr_spills"].as_u64(), Some(r["SGPRs Spill"]), "{ctx}: SGPR spills");
            assert_eq!(u["lds_bytes"].as_u64(), Some(r["LDS Size [bytes/block]"]), "{ctx}: LDS");
            assert_eq!(u["occupancy"].as_u64(), Some(r["Occupancy [waves/SIMD]"]), "{ctx}: occupancy");
            assert!(u["code_bytes"].as_u64().unwrap() > 0, "{ctx}: code size");
            assert!(k["line"].as_u64().unwrap() > 0, "{ctx}: line");
            assert_eq!(k["arch"], arch, "{ctx}");
        }
    }
}

#[test]
fn report_equals_clang_remarks_on_gfx90a() {
    check_against_remarks("gfx90a");
}

#[test]
fn report_equals_clang_remarks_on_wave32_gfx1100() {
    check_against_remarks("gfx1100");
}

#[test]
fn targets_newer_than_the_debian_device_libraries_compile() {
    let file = repo().join("examples/lbm_d3q19.hip");
    for arch in ["gfx942", "gfx950", "gfx1100"] {
        let kernels = report_json(&file, arch);
        assert!(!kernels.is_empty(), "{arch}");
        assert!(kernels.iter().all(|k| k["usage"]["occupancy"].as_u64().unwrap() > 0), "{arch}");
    }
}

#[test]
fn table_and_csv_list_every_kernel() {
    let file = repo().join("examples/lbm_d3q19.hip");
    let n = report_json(&file, "gfx90a").len();
    let table = regtune().args(["report"]).arg(&file).output().unwrap();
    assert!(table.status.success());
    let table = String::from_utf8(table.stdout).unwrap();
    assert_eq!(table.lines().count(), n + 1, "{table}");
    assert!(table.lines().next().unwrap().contains("occupancy"));
    let csv = regtune().args(["report", "--format", "csv"]).arg(&file).output().unwrap();
    let csv = String::from_utf8(csv.stdout).unwrap();
    assert_eq!(csv.lines().count(), n + 1);
    assert!(csv.starts_with("kernel,arch,VGPR,AGPR,SGPR,"));
}

/// The last line of stderr is the one-line error; nothing panicked.
fn fails_with(cmd: &mut Command, message: &str) {
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(1), "exit status");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(!stderr.contains("panicked"), "{stderr}");
    let last = stderr.lines().last().unwrap_or_default();
    assert!(last.starts_with("error: ") && last.contains(message), "expected `{message}` in: {stderr}");
}

#[test]
fn missing_file_is_one_line_naming_it() {
    fails_with(regtune().args(["report", "no/such/kernel.hip"]), "cannot read no/such/kernel.hip");
}

#[test]
fn unknown_target_is_one_line_naming_it() {
    fails_with(regtune().args(["report", "--offload-arch", "gfx9999", "examples/lbm_d3q19.hip"]), "unknown target `gfx9999`");
}

#[test]
fn compile_error_shows_clangs_diagnostics_and_fails() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("broken.hip");
    std::fs::write(&bad, "#include <hip/hip_runtime.h>\n__global__ void k(float* p) { p[0] = undeclared; }\n").unwrap();
    let out = regtune().arg("report").arg(&bad).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("error: use of undeclared identifier 'undeclared'"), "{stderr}");
    assert!(stderr.lines().last().unwrap().starts_with("error: clang failed to compile"), "{stderr}");
}

#[test]
fn file_without_kernels_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("helpers.hip");
    std::fs::write(&empty, "#include <hip/hip_runtime.h>\n__device__ float twice(float x) { return 2 * x; }\n").unwrap();
    fails_with(regtune().arg("report").arg(&empty), "defines no kernels");
}

#[test]
fn unwritable_output_is_one_line_naming_the_path() {
    fails_with(
        regtune().args(["report", "-o", "/nonexistent-dir/report.json", "examples/lbm_d3q19.hip"]),
        "cannot write /nonexistent-dir/report.json",
    );
}

#[test]
fn one_bad_file_does_not_lose_the_others() {
    let out = regtune().args(["report", "--format", "json", "missing.hip", "examples/lbm_d3q19.hip"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("the good file is still reported");
    assert!(!doc["kernels"].as_array().unwrap().is_empty());
}

#[test]
fn doctor_reports_the_toolchain() {
    regtune().arg("doctor").assert().success().stdout(predicate::str::contains("using"));
}
