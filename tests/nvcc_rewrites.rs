//! `tune --compiler nvcc` builds the rewrites of the source `regtune fix`
//! can write (issue 38, item 2): a candidate with an unroll cap, or with
//! sink and a register cap, is the source as fix writes those rewrites,
//! built by nvcc. Checked against nvcc itself: the candidate decided by
//! hand, `regtune fix --compiler nvcc` writes its patch, the patch applied
//! with `git apply` and built by nvcc with a command built here (not by
//! regtune) gives the candidate's cubin byte for byte, and the usage the db
//! holds for it. A rewrite fix cannot write for the kernel (an unroll
//! pragma a macro spells) is not built: tune goes on, says why, and keeps
//! no such candidate.
//!
//! These tests need the nvcc `ci/bootstrap.sh` assembles (or a real
//! toolkit), clang-22 and the pass plugin: without them they fail.

// A test fails by panicking; `unwrap` says where.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command as Process, Output};

use assert_cmd::Command;
use common::{evidence_none, repo};
use regtune::toolchain::nvcc::Nvcc;
use serde_json::Value;

/// The user's nvcc flags in these tests.
const NVCC_FLAGS: [&str; 3] = ["-x", "cu", "-O3"];
const DB: &str = ".regtune/decisions.json";

fn nvcc() -> PathBuf {
    Nvcc::detect().unwrap_or_else(|e| panic!("{e}")).path
}

fn regtune(dir: &Path) -> Command {
    let mut c = Command::cargo_bin("regtune").unwrap();
    c.current_dir(dir);
    for v in ["REGTUNE_DECISIONS", "REGTUNE_INPUT_HASH", "REGTUNE_PLUGIN"] {
        c.env_remove(v);
    }
    // Nothing applied unasked: every rewrite is a candidate or a suggestion.
    c.env("REGTUNE_EVIDENCE", evidence_none());
    c
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn ok(out: &Output, what: &str) {
    assert!(out.status.success(), "{what}: {}\n{}{}", out.status, text(&out.stdout), text(&out.stderr));
}

/// A folder holding the example `name` and the header it includes.
fn project(name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(repo().join("examples").join(name), dir.path().join(name)).unwrap();
    std::fs::copy(repo().join("examples/regtune_gpu.h"), dir.path().join("regtune_gpu.h")).unwrap();
    dir
}

/// `regtune tune --compiler nvcc` on `name` with `extra` nvcc flags (no
/// time budget in the way: what is built is the question here); its stderr
/// and the db's one entry.
fn tune(dir: &Path, name: &str, extra: &[&str]) -> (String, Value) {
    let out = regtune(dir)
        .args(["tune", "--compiler", "nvcc", "--offload-arch", "sm_90", "--time-budget", "600", "--db", DB, name, "--"])
        .args(NVCC_FLAGS)
        .args(extra)
        .output()
        .unwrap();
    ok(&out, "regtune tune --compiler nvcc");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(dir.join(DB)).unwrap()).unwrap();
    let entries = doc["kernels"].as_object().unwrap();
    assert_eq!(entries.len(), 1, "one kernel: {doc}");
    (text(&out.stderr), entries.values().next().unwrap().clone())
}

/// The entry's candidate with exactly `transforms`.
fn candidate(entry: &Value, transforms: &Value) -> Option<Value> {
    entry["candidates"].as_array().unwrap().iter().find(|c| &c["transforms"] == transforms).cloned()
}

/// The db's one entry decided by hand to `c` (as a measurement that chose
/// it would), promised its usage; the entry.
fn decide(dir: &Path, c: &Value) -> Value {
    let db = dir.join(DB);
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(&db).unwrap()).unwrap();
    let e = doc["kernels"].as_object_mut().unwrap().values_mut().next().unwrap();
    e["transforms"] = c["transforms"].clone();
    e["after"] = c["usage"].clone();
    e.as_object_mut().unwrap().remove("reason");
    let entry = e.clone();
    std::fs::write(&db, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    entry
}

/// The cubin tune kept beside the db for the entry's decided candidate.
fn candidate_cubin(dir: &Path, entry: &Value) -> Vec<u8> {
    let entry: regtune_decisions::Entry = serde_json::from_value(entry.clone()).unwrap();
    let code = regtune::runtime::code::dir(&dir.join(DB));
    let (_, _, path) = regtune::runtime::code::candidates(&code, &entry).into_iter().find(|(n, _, _)| n == "decided").unwrap();
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `regtune fix --compiler nvcc` on `name`: its exit status must be 0; the patch.
fn fix(dir: &Path, name: &str) -> String {
    let out = regtune(dir)
        .args(["fix", "--compiler", "nvcc", "--offload-arch", "sm_90", "--db", DB, "-o", "fix.patch", name, "--"])
        .args(NVCC_FLAGS)
        .output()
        .unwrap();
    ok(&out, "regtune fix --compiler nvcc");
    std::fs::read_to_string(dir.join("fix.patch")).unwrap()
}

/// A copy of the project's files with `patch` applied by `git apply`.
fn patched_copy(dir: &Path, patch: &str) -> tempfile::TempDir {
    let copy = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            std::fs::copy(&p, copy.path().join(p.file_name().unwrap())).unwrap();
        }
    }
    std::fs::write(copy.path().join("fix.patch"), patch).unwrap();
    let out = Process::new("git").current_dir(copy.path()).args(["apply", "fix.patch"]).output().unwrap();
    ok(&out, "git apply");
    copy
}

/// nvcc's own cubin of `name` in `dir` for sm_90, as a user's build makes it.
fn nvcc_cubin(dir: &Path, name: &str) -> Vec<u8> {
    let out =
        Process::new(nvcc()).current_dir(dir).args(NVCC_FLAGS).args(["-arch=sm_90", "-cubin", "-o", "k.cubin", name]).output().unwrap();
    ok(&out, "nvcc -cubin");
    std::fs::read(dir.join("k.cubin")).unwrap()
}

/// The usage `regtune report --compiler nvcc` reads from nvcc's build of `name` in `dir`.
fn nvcc_usage(dir: &Path, name: &str) -> Value {
    let out = regtune(dir)
        .args(["report", "--compiler", "nvcc", "--format", "json", "--offload-arch", "sm_90", name, "--"])
        .args(NVCC_FLAGS)
        .output()
        .unwrap();
    ok(&out, "regtune report --compiler nvcc");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    doc["kernels"][0]["usage"].clone()
}

/// What a register count, spills, local memory and occupancy say of a usage.
fn numbers(u: &Value) -> Vec<u64> {
    ["vgpr", "vgpr_spills", "scratch_bytes", "lds_bytes", "occupancy"].iter().map(|k| u[k].as_u64().unwrap()).collect()
}

/// The candidate decided, patched by fix, built by nvcc from the applied
/// patch: the candidate's cubin byte for byte, with the db's usage for it,
/// and not the original's. The patch.
fn patched_build_is_the_candidate(dir: &Path, name: &str, c: &Value) -> String {
    let entry = decide(dir, c);
    let patch = fix(dir, name);
    assert!(patch.contains("nvcc's cubin is the measured candidate's, byte for byte"), "{patch}");
    let copy = patched_copy(dir, &patch);
    let built = nvcc_cubin(copy.path(), name);
    assert!(built == candidate_cubin(dir, &entry), "nvcc's build of the patched file is the candidate tune measured, byte for byte");
    assert!(nvcc_cubin(dir, name) != built, "the original builds to another cubin");
    assert_eq!(numbers(&nvcc_usage(copy.path(), name)), numbers(&c["usage"]), "the db's usage for the candidate is its build's: {c}");
    patch
}

#[test]
fn an_unroll_cap_candidate_is_what_nvcc_builds_of_the_pragma_fix_writes() {
    let name = "laplacian3d.hip";
    let dir = project(name);
    let (_, entry) = tune(dir.path(), name, &[]);
    let plain = numbers(&entry["before"]);
    // The tile loop's `#pragma unroll` capped: fewer registers than plain.
    let capped = [2, 4, 8]
        .into_iter()
        .find_map(|n| candidate(&entry, &serde_json::json!({ "unroll_cap": n })).filter(|c| numbers(&c["usage"]) != plain))
        .unwrap_or_else(|| panic!("no unroll-cap candidate that changes the kernel: {entry}"));
    let n = capped["transforms"]["unroll_cap"].as_u64().unwrap();
    let patch = patched_build_is_the_candidate(dir.path(), name, &capped);
    assert!(patch.contains(&format!("-#pragma unroll\n+#pragma unroll {n}\n")), "{patch}");
}

#[test]
fn a_sink_candidate_with_a_register_cap_is_what_nvcc_builds_of_fixs_patch() {
    let name = "long_lived.hip";
    let dir = project(name);
    let (_, entry) = tune(dir.path(), name, &[]);
    // Sink with the cap of each occupancy step: the cap's entry edit on the
    // PTX of the sunk source. The one with the most warps that spills nothing.
    let sunk = entry["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["transforms"].as_object().unwrap().keys().eq(["sink", "waves_per_eu"]))
        .filter(|c| c["usage"]["vgpr_spills"].as_u64() == Some(0))
        .max_by_key(|c| c["transforms"]["waves_per_eu"].as_u64().unwrap())
        .unwrap_or_else(|| panic!("no sink + register cap candidate: {entry}"))
        .clone();
    let patch = patched_build_is_the_candidate(dir.path(), name, &sunk);
    assert!(patch.contains("+REGTUNE_MAXNREG("), "{patch}");
    assert!(patch.contains("-    const double lambda = lambda_thermo[i];"), "{patch}");
}

#[test]
fn a_rewrite_fix_cannot_write_is_not_built_and_tune_goes_on() {
    let name = "laplacian3d.hip";
    let dir = project(name);
    // The tile loop's pragma comes from a macro (`PRAGMA(unroll 8)`), which
    // fix does not rewrite: no unroll cap can be written for nvcc.
    let (stderr, entry) = tune(dir.path(), name, &["-DTILE_UNROLL=8"]);
    assert!(stderr.contains("laplacian3d_o8_ztile: regtune fix cannot write unroll-cap="), "{stderr}");
    assert!(stderr.contains("not patched"), "{stderr}");
    let candidates = entry["candidates"].as_array().unwrap();
    assert!(!candidates.iter().any(|c| c["transforms"].get("unroll_cap").is_some()), "{entry}");
    assert!(!entry["suggested"].as_array().is_some_and(|s| s.iter().any(|s| s["transforms"].get("unroll_cap").is_some())), "{entry}");
    // The register caps are built all the same.
    assert!(candidates.iter().filter(|c| c["transforms"].as_object().unwrap().keys().eq(["waves_per_eu"])).count() >= 4, "{entry}");
}
