//! `--compiler nvcc` against nvcc itself: `regtune fix --compiler nvcc`
//! writes a register cap as nvcc's `__maxnreg__`, guarded so that other
//! compilers still build the file, and the patched source, applied with
//! `git apply` and built by nvcc with a command built here (not by
//! regtune), gives the very cubin `tune --compiler nvcc` measured for the
//! candidate, byte for byte; clang-22 still builds the patched file, as
//! CUDA and as HIP (whose headers have no `__maxnreg__`), to the same code. A
//! kernel that states its block size takes the cap as
//! `__launch_bounds__`'s second argument instead (nvcc refuses both on one
//! kernel), to the same cubin.
//!
//! These tests need the nvcc `ci/bootstrap.sh` assembles (or a real
//! toolkit) and its CUDA for clang: without them they fail, naming the fix.

//!
//! And `tune --compiler nvcc` builds the rewrites of the source `regtune fix`
//! can write (issue 38, item 2): a candidate with an unroll cap, or with
//! sink and a register cap, is the source as fix writes those rewrites,
//! built by nvcc. Checked against nvcc itself: the candidate decided by
//! hand, `regtune fix --compiler nvcc` writes its patch, the patch applied
//! with `git apply` and built by nvcc with a command built here (not by
//! regtune) gives the candidate's cubin byte for byte, and the usage the db
//! holds for it; `regtune-nvcc` builds the same cubin from the unpatched
//! source. A rewrite fix cannot write for the kernel (an unroll
//! pragma a macro spells) is not built: tune goes on, says why, and keeps
//! no such candidate.
//!
//! And a kernel template whose instantiations decided different caps
//! (issue 38, item 5): fix writes a trait with a cap per instantiation and
//! `REGTUNE_MAXNREG(trait<...>::value)` on the template; nvcc's build of the
//! applied patch gives each decided instantiation its candidate's code and
//! the undecided one plain's registers (the default 255, or its plain
//! count where 255 gives others), and clang still builds the file.
//!
//! And nvcc's own `-maxrregcount=R` for one kernel (issue 38): the
//! candidate gives the kernel the code of `nvcc -maxrregcount=R`, byte for
//! byte, and the file's other kernels their own, kept where the kernel's
//! code is not its `.maxnreg R` cap's; `regtune-nvcc` builds the candidate
//! byte for byte, each kernel of a file at its own R (one with a block size
//! of its own too, and with line information), and `regtune fix` writes it
//! as the kernel's own `__maxnreg__` where nvcc's build of the applied
//! patch has the candidate's registers, spills and occupancy (R, else
//! another cap), and otherwise says how to build it and patches nothing.
//!

// A test fails by panicking; `unwrap` says where.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command as Process;

use common::{evidence_none, ok, regtune_in as regtune, repo, text};
use regtune::toolchain::nvcc::Nvcc;
use serde_json::Value;

fn nvcc() -> PathBuf {
    Nvcc::detect().unwrap_or_else(|e| panic!("{e}")).path
}

/// The user's nvcc flags in these tests.
const NVCC_FLAGS: [&str; 3] = ["-x", "cu", "-O3"];
const DB: &str = ".regtune/decisions.json";

/// A folder holding `name` (the LBM example, `edit`ed) and the header it includes.
fn project(name: &str, edit: impl Fn(&str) -> String) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let source = std::fs::read_to_string(repo().join("examples/lbm_d3q19.hip")).unwrap();
    std::fs::write(dir.path().join(name), edit(&source)).unwrap();
    std::fs::copy(repo().join("examples/regtune_gpu.h"), dir.path().join("regtune_gpu.h")).unwrap();
    dir
}

/// `regtune tune --compiler nvcc` on `name`, then its one kernel decided
/// by hand to the register cap of the search's candidate with the most
/// warps per SM that needs fewer registers than plain, promised that
/// candidate's usage (as a measurement that chose it would): the entry.
fn tune_and_decide_a_cap(dir: &Path, name: &str) -> Value {
    let out = regtune(dir)
        .args(["tune", "--compiler", "nvcc", "--offload-arch", "sm_90", "--db", DB, name, "--"])
        .args(NVCC_FLAGS)
        .output()
        .unwrap();
    ok(&out, "regtune tune --compiler nvcc");
    let db = dir.join(DB);
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(&db).unwrap()).unwrap();
    let entries = doc["kernels"].as_object_mut().unwrap();
    assert_eq!(entries.len(), 1, "one kernel: {entries:?}");
    let e = entries.values_mut().next().unwrap();
    let plain = e["before"]["vgpr"].as_u64().unwrap();
    let cap = e["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["transforms"].as_object().unwrap().keys().eq(["warps_per_sm"]))
        .filter(|c| c["usage"]["vgpr"].as_u64().unwrap() < plain)
        .max_by_key(|c| c["transforms"]["warps_per_sm"].as_u64().unwrap())
        .unwrap_or_else(|| panic!("no register cap below plain's {plain} registers among the candidates: {e}"))
        .clone();
    e["transforms"] = cap["transforms"].clone();
    e["after"] = cap["usage"].clone();
    e.as_object_mut().unwrap().remove("reason");
    let entry = e.clone();
    std::fs::write(&db, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    entry
}

/// The cubin tune kept beside the db for the entry's decided candidate.
fn candidate_cubin(dir: &Path, entry: &Value) -> Vec<u8> {
    let entry: regtune_decisions::Entry = serde_json::from_value(entry.clone()).unwrap();
    let code = regtune::measure::code::dir(&dir.join(DB));
    let (_, _, path) = regtune::measure::code::candidates(&code, &entry).into_iter().find(|(n, _, _)| n == "decided").unwrap();
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

/// A copy of the project with `patch` applied by `git apply`.
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

/// nvcc's build of `name` in `dir` as a user's build would run it (host
/// and device, `-c`); its exit status must be 0; the sm_90 cubin it kept.
fn nvcc_build(dir: &Path, name: &str) -> Vec<u8> {
    let keep = dir.join("keep");
    std::fs::create_dir_all(&keep).unwrap();
    let out = Process::new(nvcc())
        .current_dir(dir)
        .args(NVCC_FLAGS)
        .args(["-arch=sm_90", "-c", "-o", "k.o", "--keep", "--keep-dir"])
        .arg(&keep)
        .arg(name)
        .output()
        .unwrap();
    ok(&out, "nvcc -c of the patched file");
    let stem = Path::new(name).file_stem().unwrap().to_string_lossy().into_owned();
    std::fs::read(keep.join(format!("{stem}.sm_90.cubin"))).unwrap()
}

/// clang-22 (`regtune report` without --compiler) builds the file for
/// `arch` and reports its kernel; the usage it reports.
fn clang_report(dir: &Path, name: &str, arch: &str) -> Value {
    let out = regtune(dir).args(["report", "--format", "json", "--offload-arch", arch, name]).output().unwrap();
    ok(&out, &format!("regtune report (clang-22) for {arch}"));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let kernels = doc["kernels"].as_array().unwrap();
    assert_eq!(kernels.len(), 1, "{doc}");
    assert!(kernels[0]["usage"]["vgpr"].as_u64().is_some_and(|r| r > 0), "{doc}");
    kernels[0]["usage"].clone()
}

#[test]
fn fix_for_nvcc_writes_a_guarded_maxnreg_that_nvcc_builds_to_the_measured_cubin_and_clang_ignores() {
    let dir = project("lbm_d3q19.hip", str::to_string);
    let name = "lbm_d3q19.hip";
    // The example is HIP too (regtune_gpu.h): clang's CUDA headers define
    // `__maxnreg__` (clang ignores the attribute), HIP's do not.
    let clang_before = ["sm_90", "gfx90a"].map(|arch| clang_report(dir.path(), name, arch));
    let entry = tune_and_decide_a_cap(dir.path(), name);
    let warps = entry["transforms"]["warps_per_sm"].as_u64().unwrap() as u32;
    // The cap that lets W warps share an SM's register file: floor(64 / ceil(W / 4)) * 8, at most 255.
    let cap = ((64 / warps.div_ceil(4)) * 8).min(255);
    let patch = fix(dir.path(), name);

    // The cap, guarded: nvcc 12.4 on takes __maxnreg__, every other compiler nothing.
    assert!(patch.contains(&format!("+REGTUNE_MAXNREG({cap})\n __global__ void lbm_d3q19_collide_stream(")), "{patch}");
    assert!(patch.contains("+#define REGTUNE_MAXNREG(n) __maxnreg__(n)\n"), "{patch}");
    assert!(patch.contains("+#if defined(__NVCC__) && (__CUDACC_VER_MAJOR__ > 12"), "{patch}");
    assert!(patch.contains("+#define REGTUNE_MAXNREG(n)\n"), "{patch}");
    assert_eq!(patch.matches("#define REGTUNE_MAXNREG(n) __maxnreg__").count(), 1, "defined once: {patch}");
    assert!(patch.contains("verified by nvcc's build"), "{patch}");
    assert!(patch.contains("nvcc's cubin is the measured candidate's, byte for byte"), "{patch}");

    let copy = patched_copy(dir.path(), &patch);
    let built = nvcc_build(copy.path(), name);
    assert!(built == candidate_cubin(dir.path(), &entry), "nvcc's build of the patched file is the candidate tune measured, byte for byte");
    // The same build of the original is not: the patch is what made it so.
    assert!(nvcc_build(dir.path(), name) != built, "the original builds to another cubin");
    // clang: the macro is empty, the file builds as before, CUDA and HIP.
    for (arch, before) in ["sm_90", "gfx90a"].iter().zip(&clang_before) {
        assert_eq!(&clang_report(copy.path(), name, arch), before, "clang-22 builds the patched file for {arch} as it did the original");
    }
}

#[test]
fn fix_for_nvcc_gives_a_kernel_with_launch_bounds_the_cap_as_its_blocks_per_sm() {
    let name = "lbm_bounded.cu";
    let bounded = |s: &str| {
        let to = "__global__ void __launch_bounds__(256) lbm_d3q19_collide_stream(";
        let out = s.replace("__global__ void lbm_d3q19_collide_stream(", to);
        assert!(out.contains(to));
        out
    };
    let dir = project(name, bounded);
    let entry = tune_and_decide_a_cap(dir.path(), name);
    let patch = fix(dir.path(), name);
    // nvcc refuses __maxnreg__ beside __launch_bounds__: none is written.
    assert!(!patch.contains("REGTUNE_MAXNREG"), "{patch}");
    assert!(patch.contains("+__global__ void __launch_bounds__(256, "), "{patch}");
    assert!(patch.contains("nvcc's cubin is the measured candidate's, byte for byte"), "{patch}");
    let copy = patched_copy(dir.path(), &patch);
    assert!(nvcc_build(copy.path(), name) == candidate_cubin(dir.path(), &entry), "the candidate's cubin, byte for byte");
}

/// A directory holding `examples/NAME` and the header the examples include.
fn example(name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(repo().join("examples").join(name), dir.path().join(name)).unwrap();
    std::fs::copy(repo().join("examples/regtune_gpu.h"), dir.path().join("regtune_gpu.h")).unwrap();
    dir
}

/// `regtune tune --compiler nvcc` on `name` with `extra` nvcc flags (no
/// time budget in the way: what is built is the question here); its stderr
/// and the db.
fn tune_db(dir: &Path, name: &str, extra: &[&str]) -> (String, Value) {
    let out = regtune(dir)
        // Nothing applied unasked: every rewrite is a candidate or a suggestion.
        .env("REGTUNE_EVIDENCE", evidence_none())
        .args(["tune", "--compiler", "nvcc", "--offload-arch", "sm_90", "--time-budget", "600", "--db", DB, name, "--"])
        .args(NVCC_FLAGS)
        .args(extra)
        .output()
        .unwrap();
    ok(&out, "regtune tune --compiler nvcc");
    (text(&out.stderr), serde_json::from_str(&std::fs::read_to_string(dir.join(DB)).unwrap()).unwrap())
}

/// [`tune_db`]: its stderr and the db's one entry.
fn tune(dir: &Path, name: &str, extra: &[&str]) -> (String, Value) {
    let (stderr, doc) = tune_db(dir, name, extra);
    let entries = doc["kernels"].as_object().unwrap();
    assert_eq!(entries.len(), 1, "one kernel: {doc}");
    (stderr, entries.values().next().unwrap().clone())
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
    // regtune-nvcc builds the same rewrite from the unpatched source.
    let said = wrapper(dir, &["-cubin", "-o", "wrapped.cubin", name]);
    assert!(!said.contains("warning"), "{said}");
    assert!(std::fs::read(dir.join("wrapped.cubin")).unwrap() == built, "regtune-nvcc builds the candidate, byte for byte: {said}");
    patch
}

#[test]
fn an_unroll_cap_candidate_is_what_nvcc_builds_of_the_pragma_fix_writes() {
    let name = "laplacian3d.hip";
    let dir = example(name);
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
    let dir = example(name);
    let (_, entry) = tune(dir.path(), name, &[]);
    // Sink with the cap of each occupancy step: the cap's entry edit on the
    // PTX of the sunk source. The one with the most warps that spills nothing.
    let sunk = entry["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["transforms"].as_object().unwrap().keys().eq(["sink", "warps_per_sm"]))
        .filter(|c| c["usage"]["vgpr_spills"].as_u64() == Some(0))
        .max_by_key(|c| c["transforms"]["warps_per_sm"].as_u64().unwrap())
        .unwrap_or_else(|| panic!("no sink + register cap candidate: {entry}"))
        .clone();
    let patch = patched_build_is_the_candidate(dir.path(), name, &sunk);
    assert!(patch.contains("+REGTUNE_MAXNREG("), "{patch}");
    assert!(patch.contains("-    const double lambda = lambda_thermo[i];"), "{patch}");
}

#[test]
fn a_rewrite_fix_cannot_write_is_not_built_and_tune_goes_on() {
    let name = "laplacian3d.hip";
    let dir = example(name);
    // The tile loop's pragma comes from a macro (`PRAGMA(unroll 8)`), which
    // fix does not rewrite: no unroll cap can be written for nvcc.
    let (stderr, entry) = tune(dir.path(), name, &["-DTILE_UNROLL=8"]);
    assert!(stderr.contains("laplacian3d_o8_ztile: regtune fix cannot write unroll-cap="), "{stderr}");
    assert!(stderr.contains("not patched"), "{stderr}");
    let candidates = entry["candidates"].as_array().unwrap();
    assert!(!candidates.iter().any(|c| c["transforms"].get("unroll_cap").is_some()), "{entry}");
    assert!(!entry["suggested"].as_array().is_some_and(|s| s.iter().any(|s| s["transforms"].get("unroll_cap").is_some())), "{entry}");
    // The register caps are built all the same.
    assert!(candidates.iter().filter(|c| c["transforms"].as_object().unwrap().keys().eq(["warps_per_sm"])).count() >= 4, "{entry}");
}

/// nvcc's own cubin of `name` in `dir` for sm_90 with `extra` flags (the
/// hand sweep's `-maxrregcount=R`), as a user's build makes it.
fn nvcc_cubin_with(dir: &Path, name: &str, extra: &[&str]) -> Vec<u8> {
    let out = Process::new(nvcc())
        .current_dir(dir)
        .args(NVCC_FLAGS)
        .args(extra)
        .args(["-arch=sm_90", "-cubin", "-o", "sweep.cubin", name])
        .output()
        .unwrap();
    ok(&out, "nvcc -cubin");
    std::fs::read(dir.join("sweep.cubin")).unwrap()
}

/// The cubin tune kept beside the db for the entry's candidate `transforms`.
fn kept_cubin(dir: &Path, entry: &Value, transforms: &Value) -> Vec<u8> {
    let t: regtune_decisions::Transforms = serde_json::from_value(transforms.clone()).unwrap();
    let entry: regtune_decisions::Entry = serde_json::from_value(entry.clone()).unwrap();
    let code = regtune::measure::code::dir(&dir.join(DB));
    let (_, _, path) = regtune::measure::code::candidates(&code, &entry).into_iter().find(|(_, c, _)| *c == t).unwrap();
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A kernel's registers in a cubin, as ptxas wrote them.
fn registers(cubin: &[u8], symbol: &str) -> u32 {
    regtune::gpu::nvptx::cubin::read(cubin).unwrap().into_iter().find(|k| k.name == symbol).unwrap().registers
}

/// `regtune-nvcc` (the wrapper) in `dir` with the tests' flags and `args`:
/// its exit status must be 0; its stderr.
fn wrapper(dir: &Path, args: &[&str]) -> String {
    let out = Process::new(assert_cmd::cargo::cargo_bin("regtune-nvcc"))
        .current_dir(dir)
        .env("REGTUNE_VERBOSE", "1")
        .env_remove("REGTUNE_DB")
        .args(NVCC_FLAGS)
        .arg("-arch=sm_90")
        .args(args)
        .output()
        .unwrap();
    ok(&out, "regtune-nvcc");
    text(&out.stderr)
}

#[test]
fn a_maxrregcount_candidate_is_the_kernels_code_under_nvcc_maxrregcount() {
    let name = "long_lived.hip";
    let dir = example(name);
    let (_, entry) = tune(dir.path(), name, &[]);
    let symbol = entry["symbol"].as_str().unwrap().to_string();
    let candidates = entry["candidates"].as_array().unwrap();
    let cap_at = |warps: u64| candidate(&entry, &serde_json::json!({ "warps_per_sm": warps }));
    let wide = |r: u64| candidate(&entry, &serde_json::json!({ "maxrregcount": r }));
    // ptxas 13.5 on sm_90: at R = 255 the kernel's own cap (.maxnreg 255,
    // 8 warps per SM) takes 88 registers, nvcc -maxrregcount=255 (cicc's
    // -maxreg too) 102: another build, kept.
    let own = cap_at(8).unwrap_or_else(|| panic!("no cap at 8 warps: {entry}"));
    let capped = wide(255).unwrap_or_else(|| panic!("no -maxrregcount=255 candidate: {entry}"));
    assert_eq!((own["usage"]["vgpr"].as_u64(), capped["usage"]["vgpr"].as_u64()), (Some(88), Some(102)));
    // Each one kept gives the kernel the hand sweep's code, byte for byte, with the registers the db says.
    let code = |cubin: &[u8]| regtune::gpu::nvptx::cubin::kernel_code(cubin, &symbol).unwrap();
    let kept: Vec<u64> = candidates.iter().filter_map(|c| c["transforms"]["maxrregcount"].as_u64()).collect();
    assert!(kept.len() >= 3, "{kept:?}");
    for r in &kept {
        let flag = format!("-maxrregcount={r}");
        let sweep = nvcc_cubin_with(dir.path(), name, &[&flag]);
        let c = wide(*r).unwrap();
        assert!(code(&kept_cubin(dir.path(), &entry, &c["transforms"])) == code(&sweep), "the candidate is nvcc {flag}'s code");
        assert_eq!(u64::from(registers(&sweep, &symbol)), c["usage"]["vgpr"].as_u64().unwrap(), "{flag}");
    }
    // One not kept (R = 64: 32 warps per SM) is the .maxnreg cap's own code.
    assert!(!kept.contains(&64), "{kept:?}");
    let sweep = nvcc_cubin_with(dir.path(), name, &["-maxrregcount=64"]);
    let cap = kept_cubin(dir.path(), &entry, &cap_at(32).unwrap()["transforms"]);
    assert!(code(&sweep) == code(&cap), "-maxrregcount=64 gives the kernel the code of .maxnreg 64");

    // Decided (as a measurement that chose it would): regtune-nvcc builds
    // the candidate's cubin, byte for byte.
    let entry = decide(dir.path(), &capped);
    let said = wrapper(dir.path(), &["-cubin", name, "-o", "wrapped.cubin"]);
    assert!(said.contains("md_lj_force_kick on sm_90: maxrregcount=255") && !said.contains("warning"), "{said}");
    let wrapped = std::fs::read(dir.path().join("wrapped.cubin")).unwrap();
    assert!(wrapped == kept_cubin(dir.path(), &entry, &capped["transforms"]), "the wrapper builds the measured candidate");
    // fix writes it as the kernel's own __maxnreg__ only where nvcc's build
    // of that reaches the candidate's registers, spills and occupancy: no
    // cap gives the kernel the 102 registers of cicc's -maxreg 255 PTX
    // (255 and 102 both give 88), so it stays out, the flag suggested.
    let out = regtune(dir.path())
        .args(["fix", "--compiler", "nvcc", "--offload-arch", "sm_90", "--db", DB, "-o", "fix.patch", name, "--"])
        .args(NVCC_FLAGS)
        .output()
        .unwrap();
    let said = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    let refused = "long_lived.hip: md_lj_force_kick (sm_90): maxrregcount=255: not in the patch: no __maxnreg__ reaches the \
                   registers, spills and occupancy of nvcc's -maxrregcount=255 (__maxnreg__(255) gives registers 88 where the \
                   candidate has 102; __maxnreg__(102) gives registers 88 where the candidate has 102): build through \
                   regtune-nvcc, which gives it to this kernel alone, or add -maxrregcount=255 to this file's nvcc flags (CMake: \
                   set_source_files_properties(long_lived.hip PROPERTIES COMPILE_OPTIONS -maxrregcount=255)), which gives it to every \
                   kernel of the file; not patched\n";
    assert!(said.contains(refused), "{refused}\nnot in\n{said}");
    assert!(said.contains("regtune fix: 1 of 1 decision(s) could not be expressed"), "{said}");
    assert!(!std::fs::read_to_string(dir.path().join("fix.patch")).unwrap().contains("+++"), "nothing patched");

    // -maxrregcount=48 (kept: other code than .maxnreg 48, the same numbers):
    // __maxnreg__(48), which nvcc's build of the applied patch gives the
    // candidate's registers, spills and occupancy, not its bytes.
    let capped = wide(48).unwrap_or_else(|| panic!("no -maxrregcount=48 candidate: {entry}"));
    let entry = decide(dir.path(), &capped);
    let patch = fix(dir.path(), name);
    let line = "long_lived.hip: md_lj_force_kick (sm_90): maxrregcount=48 written as __maxnreg__(48) (nvcc's -maxrregcount=48 also \
                gives cicc -maxreg 48, which no source spelling carries: regtune-nvcc builds the candidate's code); verified by nvcc's build: registers 74 → 48, spill stores 0 → 100 bytes, occupancy 24 → \
                40; registers, spills and occupancy are the measured candidate's (its cubin sections .nv.info, .text differ)\n";
    assert!(patch.contains(line), "{line}\nnot in\n{patch}");
    assert!(patch.contains("\n \n+REGTUNE_MAXNREG(48)\n __global__ void md_lj_force_kick(\n"), "{patch}");
    assert_eq!(patch.matches("#define REGTUNE_MAXNREG(n) __maxnreg__(n)").count(), 1, "{patch}");
    let copy = patched_copy(dir.path(), &patch);
    let built = nvcc_cubin(copy.path(), name);
    assert_eq!(registers(&built, &symbol), 48, "nvcc's build of the applied patch");
    let usage = nvcc_usage(copy.path(), name);
    let three = |u: &Value| ["vgpr", "vgpr_spills", "occupancy"].map(|k| u[k].as_u64().unwrap());
    assert_eq!(three(&usage), three(&capped["usage"]), "the candidate's registers, spills and occupancy: {usage}");
    assert_eq!(three(&usage), [48, 100, 40]);
    let candidate = kept_cubin(dir.path(), &entry, &capped["transforms"]);
    assert!(code(&candidate) == code(&nvcc_cubin_with(dir.path(), name, &["-maxrregcount=48"])), "the flag builds its code");
    assert!(built != candidate, "__maxnreg__(48) is another build than -maxrregcount=48");

    // Where __maxnreg__(R) misses the promise, the next cap: a db edited by
    // hand to promise -maxrregcount=64 the numbers of tune's .maxnreg 56
    // build (12 warps per SM). __maxnreg__(64) gives 64 registers; the
    // .maxnreg 56 candidate's cap, written instead, gives its numbers.
    let own56 = cap_at(36).unwrap_or_else(|| panic!("no cap at 36 warps: {entry}"));
    assert_eq!(three(&own56["usage"]), [56, 68, 32], "{own56}");
    decide(dir.path(), &serde_json::json!({ "transforms": { "maxrregcount": 64 }, "usage": own56["usage"] }));
    let patch = fix(dir.path(), name);
    let line = "long_lived.hip: md_lj_force_kick (sm_90): maxrregcount=64 written as __maxnreg__(56) (__maxnreg__(64) gives registers \
                64 where the candidate has 56, spills 72 where the candidate has 136; 56: tune's .maxnreg 56 build (warps-per-sm=36) \
                measured the candidate's registers, spills and occupancy; nvcc's -maxrregcount=64 also gives cicc -maxreg 64, which \
                no source spelling carries: regtune-nvcc builds the candidate's code); verified by nvcc's build: registers 74 → 56, spill stores 0 → 68 bytes, occupancy 24 → 32; ";
    assert!(patch.contains(line), "{line}\nnot in\n{patch}");
    assert!(
        patch.contains("\n+REGTUNE_MAXNREG(56)\n __global__ void md_lj_force_kick(\n") && !patch.contains("REGTUNE_MAXNREG(64)"),
        "{patch}"
    );
    let built = nvcc_cubin(patched_copy(dir.path(), &patch).path(), name);
    assert_eq!(registers(&built, &symbol), 56, "nvcc's build of the applied patch");
}

/// The LBM example with two more kernels: a small one, and one that
/// states its block size (ptxas's own cap does not reach it).
fn three_kernels() -> tempfile::TempDir {
    project("three.cu", |s| {
        let more = "__global__ void scale_field(double* f, double a, int n)\n{\n    const int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n)\n        f[i] *= a;\n}\n\n\
__global__ void __launch_bounds__(128) mix_field(double* f, const double* g, int n)\n{\n    const int i = blockIdx.x * blockDim.x + threadIdx.x;\n    double s[12];\n    for (int k = 0; k < 12; k++)\n        s[k] = g[(i + k) % n];\n    double t = 0;\n    for (int j = 0; j < n; j++)\n        for (int k = 0; k < 12; k++)\n            t += s[k] * s[(k + j) % 12] * g[j];\n    if (i < n)\n        f[i] = t;\n}\n\n";
        let at = s.find("#define HIP_CHECK").unwrap();
        format!("{}{more}{}", &s[..at], &s[at..])
    })
}

const LBM: &str = "_Z24lbm_d3q19_collide_streamPKiPdS1_S1_S1_S1_S1_S1_S1_S1_S1_S1_S1_S1_S1_S1_S1_S1_S1_S1_S1_S1_S1_S1_PKdS3_S3_S3_iiiii";
const SCALE: &str = "_Z11scale_fieldPddi";
const MIX: &str = "_Z9mix_fieldPdPKdi";

#[test]
fn the_wrapper_gives_each_kernel_of_a_file_its_own_maxrregcount() {
    let dir = three_kernels();
    let name = "three.cu";
    // With line information, whose tables the spliced entries must keep right.
    let flags = ["-lineinfo"];
    let out = regtune(dir.path())
        .args(["tune", "--compiler", "nvcc", "--offload-arch", "sm_90", "--candidates", "0", "--db", DB, name, "--"])
        .args(NVCC_FLAGS)
        .args(flags)
        .output()
        .unwrap();
    ok(&out, "regtune tune --compiler nvcc");
    let decide_each = |each: &[(&str, Value)]| {
        let db = dir.path().join(DB);
        let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(&db).unwrap()).unwrap();
        let entries = doc["kernels"].as_object_mut().unwrap();
        assert_eq!(entries.len(), 3, "{entries:?}");
        for e in entries.values_mut() {
            let symbol = e["symbol"].as_str().unwrap().to_string();
            e["transforms"] = each.iter().find(|(s, _)| *s == symbol).map_or(serde_json::json!({}), |(_, t)| t.clone());
        }
        std::fs::write(&db, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    };
    let sweep = |r: Option<u32>| {
        let flag = r.map(|r| format!("-maxrregcount={r}"));
        nvcc_cubin_with(dir.path(), name, &flags.iter().copied().chain(flag.as_deref()).collect::<Vec<_>>())
    };
    let code = |cubin: &[u8], symbol: &str| regtune::gpu::nvptx::cubin::kernel_code(cubin, symbol).unwrap();
    let (plain, at64, at32) = (sweep(None), sweep(Some(64)), sweep(Some(32)));
    // ptxas 13.5: the LBM kernel takes 80 registers plain, 64 under -maxrregcount=64.
    assert_eq!((registers(&plain, LBM), registers(&at64, LBM)), (80, 64));
    // ptxas's cap does not reach the kernel that states its block size.
    assert_eq!(registers(&at32, MIX), registers(&plain, MIX));
    assert!(registers(&plain, MIX) > 32, "{}", registers(&plain, MIX));
    let r = |r: u32| serde_json::json!({ "maxrregcount": r });
    let mut i = 0;
    let mut built = |each: &[(&str, Value)]| {
        decide_each(each);
        i += 1;
        let out = format!("{i}.cubin");
        let said = wrapper(dir.path(), &["-lineinfo", "-cubin", name, "-o", &out]);
        assert!(!said.contains("warning"), "{said}");
        assert_eq!(said.matches("maxrregcount=").count(), each.len(), "{said}");
        std::fs::read(dir.path().join(out)).unwrap()
    };
    // Each kernel its own R, or none: each one's code is the hand sweep's at its R.
    let cases: [&[(&str, Value)]; 3] = [&[(LBM, r(64)), (SCALE, r(32)), (MIX, r(32))], &[(LBM, r(32)), (MIX, r(64))], &[(SCALE, r(64))]];
    for each in cases {
        let cubin = built(each);
        for (symbol, sweeps) in [(LBM, [&plain, &at64, &at32]), (SCALE, [&plain, &at64, &at32]), (MIX, [&plain, &at64, &at32])] {
            let at = each.iter().find(|(s, _)| *s == symbol).map(|(_, t)| t["maxrregcount"].as_u64().unwrap());
            let expected = match at {
                None => sweeps[0],
                Some(64) => sweeps[1],
                _ => sweeps[2],
            };
            assert!(code(&cubin, symbol) == code(expected, symbol), "{symbol} at {at:?}: {each:?}");
        }
    }
}

#[test]
fn each_kernels_candidates_are_that_kernel_alone_and_a_maxrregcount_one_its_code_under_nvccs_flag() {
    let dir = three_kernels();
    let name = "three.cu";
    let (_, doc) = tune_db(dir.path(), name, &[]);
    let plain = nvcc_cubin_with(dir.path(), name, &[]);
    let code = |cubin: &[u8], symbol: &str| regtune::gpu::nvptx::cubin::kernel_code(cubin, symbol).unwrap();
    let mut checked = 0;
    for entry in doc["kernels"].as_object().unwrap().values() {
        let symbol = entry["symbol"].as_str().unwrap();
        for c in entry["candidates"].as_array().into_iter().flatten().filter(|c| c["transforms"]["maxrregcount"].is_u64()) {
            let r = c["transforms"]["maxrregcount"].as_u64().unwrap();
            let candidate = kept_cubin(dir.path(), entry, &c["transforms"]);
            let sweep = nvcc_cubin_with(dir.path(), name, &[&format!("-maxrregcount={r}")]);
            assert!(code(&candidate, symbol) == code(&sweep, symbol), "{symbol} at {r}");
            checked += 1;
        }
        // Each candidate is ptxas's build of the kernel alone (`-e`): its code, no other kernel's.
        for c in entry["candidates"].as_array().into_iter().flatten() {
            let candidate = kept_cubin(dir.path(), entry, &c["transforms"]);
            let kernels: Vec<String> = regtune::gpu::nvptx::cubin::read(&candidate).unwrap().into_iter().map(|k| k.name).collect();
            assert_eq!(kernels, [symbol], "{c}");
        }
    }
    assert!(checked >= 3, "{doc}");
    // The LBM kernel's cap of 32 warps built alone is the code nvcc's whole
    // build of the file gives it, spelled in the source as fix spells it.
    let lbm = doc["kernels"].as_object().unwrap().values().find(|e| e["symbol"] == LBM).unwrap();
    let alone = kept_cubin(dir.path(), lbm, &serde_json::json!({ "warps_per_sm": 32 }));
    let source = std::fs::read_to_string(dir.path().join(name)).unwrap();
    let spelled = source.replace("__global__ void lbm_d3q19_collide_stream", "__global__ void __maxnreg__(64) lbm_d3q19_collide_stream");
    std::fs::write(dir.path().join("spelled.cu"), spelled).unwrap();
    let whole = nvcc_cubin_with(dir.path(), "spelled.cu", &[]);
    assert_eq!(regtune::gpu::nvptx::cubin::read(&whole).unwrap().len(), 3);
    assert!(code(&alone, LBM) == code(&whole, LBM) && code(&whole, LBM) != code(&plain, LBM));
}

#[test]
fn a_kernel_that_calls_printf_is_built_with_the_whole_file() {
    // vprintf's address sits where the file's layout puts it: ptxas's build
    // of the LBM kernel alone gives it other bytes, so its candidates are
    // builds of the whole file; the other kernels' are built alone.
    let dir = three_kernels();
    let name = "three.cu";
    let source = std::fs::read_to_string(dir.path().join(name)).unwrap();
    let at = "    if (flags[cell] != FLUID)\n        return;\n";
    assert!(source.contains(at));
    std::fs::write(
        dir.path().join(name),
        source.replacen(at, &format!("{at}    if (cell == -7)\n        printf(\"cell %d\\n\", cell);\n"), 1),
    )
    .unwrap();
    let (_, doc) = tune_db(dir.path(), name, &[]);
    let entry = |symbol: &str| doc["kernels"].as_object().unwrap().values().find(|e| e["symbol"] == symbol).unwrap().clone();
    let kernels_in = |e: &Value| -> Vec<usize> {
        let held = |c: &Value| regtune::gpu::nvptx::cubin::read(&kept_cubin(dir.path(), e, &c["transforms"])).unwrap().len();
        e["candidates"].as_array().into_iter().flatten().map(held).collect()
    };
    let (lbm, mix) = (kernels_in(&entry(LBM)), kernels_in(&entry(MIX)));
    assert!(!lbm.is_empty() && lbm.iter().all(|&n| n == 3), "{lbm:?}");
    assert!(!mix.is_empty() && mix.iter().all(|&n| n == 1), "{mix:?}");
}

/// The kernel template of tests/fixtures (three instantiations) and its symbols.
const TEMPLATE: &str = "template_caps.cu";
const DOUBLE6: &str = "_Z6smoothIdLm6EEvPKT_PS0_i";
const DOUBLE8: &str = "_Z6smoothIdLm8EEvPKT_PS0_i";
const FLOAT8: &str = "_Z6smoothIfLm8EEvPKT_PS0_i";

/// Every kernel clang-22 (`regtune report` without --compiler) reports for
/// `name` on `arch`: its name and usage.
fn clang_usages(dir: &Path, name: &str, arch: &str) -> Vec<(String, Value)> {
    let out = regtune(dir).args(["report", "--format", "json", "--offload-arch", arch, name]).output().unwrap();
    ok(&out, &format!("regtune report (clang-22) for {arch}"));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    doc["kernels"].as_array().unwrap().iter().map(|k| (k["name"].as_str().unwrap().to_string(), k["usage"].clone())).collect()
}

/// The tuned db (`tuned`, its text) with each of `caps` decided by hand to
/// the search's candidate at that many warps per SM, promised its usage (as
/// a measurement that chose it would), every other entry as tune left it
/// (plain); written as the db. The decided entries, by symbol.
fn decide_caps(dir: &Path, tuned: &str, caps: &[(&str, u64)]) -> Vec<(String, Value)> {
    let mut doc: Value = serde_json::from_str(tuned).unwrap();
    let mut decided = Vec::new();
    for e in doc["kernels"].as_object_mut().unwrap().values_mut() {
        assert!(e["transforms"].as_object().unwrap().is_empty(), "tune left it plain: {e}");
        let Some((_, warps)) = caps.iter().find(|(s, _)| e["symbol"] == *s) else { continue };
        let c = candidate(e, &serde_json::json!({ "warps_per_sm": warps })).unwrap_or_else(|| panic!("no cap at {warps} warps: {e}"));
        e["transforms"] = c["transforms"].clone();
        e["after"] = c["usage"].clone();
        e.as_object_mut().unwrap().remove("reason");
        decided.push((e["symbol"].as_str().unwrap().to_string(), e.clone()));
    }
    assert_eq!(decided.len(), caps.len(), "{doc}");
    std::fs::write(dir.join(DB), serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    decided
}

/// The patch applied and built by nvcc (a command built here): each
/// instantiation's registers in its cubin, each decided one's code the
/// candidate tune kept; clang-22 builds the patched file to what it built
/// of the original, as CUDA and as HIP (the macro is empty there, and the
/// trait plain C++).
fn built_as_decided(dir: &Path, patch: &str, decided: &[(String, Value)], clang_before: &[Vec<(String, Value)>; 2]) -> [u32; 3] {
    let copy = patched_copy(dir, patch);
    let built = nvcc_cubin(copy.path(), TEMPLATE);
    let code = |cubin: &[u8], symbol: &str| regtune::gpu::nvptx::cubin::kernel_code(cubin, symbol).unwrap();
    for (symbol, entry) in decided {
        let kept = kept_cubin(dir, entry, &entry["transforms"]);
        assert!(code(&built, symbol) == code(&kept, symbol), "{symbol}: nvcc's build of the patch has the candidate's code");
        assert_eq!(u64::from(registers(&built, symbol)), entry["after"]["vgpr"].as_u64().unwrap(), "{symbol}");
    }
    for (arch, before) in ["sm_90", "gfx90a"].iter().zip(clang_before) {
        assert_eq!(
            &clang_usages(copy.path(), TEMPLATE, arch),
            before,
            "clang-22 builds the patched file for {arch} as it did the original"
        );
    }
    [DOUBLE6, DOUBLE8, FLOAT8].map(|s| registers(&built, s))
}

#[test]
fn fix_for_nvcc_gives_each_instantiation_of_a_kernel_template_its_own_cap_through_a_trait() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(repo().join("tests/fixtures").join(TEMPLATE), dir.path().join(TEMPLATE)).unwrap();
    std::fs::copy(repo().join("examples/regtune_gpu.h"), dir.path().join("regtune_gpu.h")).unwrap();
    let clang_before = ["sm_90", "gfx90a"].map(|arch| clang_usages(dir.path(), TEMPLATE, arch));
    assert_eq!(clang_before[1].len(), 3, "{clang_before:?}");
    let out = regtune(dir.path())
        .args(["tune", "--compiler", "nvcc", "--offload-arch", "sm_90", "--db", DB, TEMPLATE, "--"])
        .args(NVCC_FLAGS)
        .output()
        .unwrap();
    ok(&out, "regtune tune --compiler nvcc");
    let tuned = std::fs::read_to_string(dir.path().join(DB)).unwrap();
    // ptxas 13.5, plain: smooth<double, 6> 62 registers, smooth<double, 8> 82, smooth<float, 8> 45.
    let plain = nvcc_cubin(dir.path(), TEMPLATE);
    assert_eq!([DOUBLE6, DOUBLE8, FLOAT8].map(|s| registers(&plain, s)), [62, 82, 45]);

    // smooth<double, 6> capped at 40 warps per SM (48 registers), smooth<double, 8>
    // at 28 (72), smooth<float, 8> undecided: the trait's default, 255, which
    // leaves it plain's 45 registers.
    let decided = decide_caps(dir.path(), &tuned, &[(DOUBLE6, 40), (DOUBLE8, 28)]);
    let patch = fix(dir.path(), TEMPLATE);
    let lines = [
        "template_caps.cu: void smooth<double, (unsigned long)6> (sm_90): warps-per-sm=40 (its template's cap per instantiation, regtune_maxnreg_smooth); verified by nvcc's build: registers 62 → 48, spill stores 0 → 72 bytes, occupancy 32 → 40; the kernel's code in nvcc's cubin is the measured candidate's (its sections byte for byte, the symbols they name by name)\n",
        "template_caps.cu: void smooth<double, (unsigned long)8> (sm_90): warps-per-sm=28 (its template's cap per instantiation, regtune_maxnreg_smooth); verified by nvcc's build: registers 82 → 72, spill stores 0 → 40 bytes, occupancy 16 → 24; the kernel's code in nvcc's cubin is the measured candidate's (its sections byte for byte, the symbols they name by name)\n",
        "template_caps.cu: note: smooth: register caps per instantiation (regtune_maxnreg_smooth); without a decision, the default cap 255 (__maxnreg__ has no \"none\": not plain's code), verified by nvcc's build at plain's registers, spills and occupancy: void smooth<float, (unsigned long)8> on sm_90 (registers 45, spill stores 0 bytes, occupancy 40)\n",
    ];
    for l in lines {
        assert!(patch.contains(l), "{l}\nnot in\n{patch}");
    }
    let trait_and_cap = "
 #include \"regtune_gpu.h\"
 
+// regtune fix: smooth's register cap per instantiation, for REGTUNE_MAXNREG (255 where none was decided).
+template <typename Real, size_t N> struct regtune_maxnreg_smooth { static constexpr int value = 255; };
+template <> struct regtune_maxnreg_smooth<double, 6> { static constexpr int value = 48; };
+template <> struct regtune_maxnreg_smooth<double, 8> { static constexpr int value = 72; };
 template <typename Real, size_t N>
+REGTUNE_MAXNREG((regtune_maxnreg_smooth<Real, N>::value))
 __global__ void smooth(const Real *in, Real *out, int n)
";
    assert!(patch.contains(trait_and_cap), "{patch}");
    assert_eq!(patch.matches("#define REGTUNE_MAXNREG(n) __maxnreg__(n)").count(), 1, "{patch}");
    assert_eq!(built_as_decided(dir.path(), &patch, &decided, &clang_before), [48, 72, 45]);

    // smooth<double, 6> undecided: 255 gives it 64 registers, not plain's 62;
    // its plain count, 62, as its cap gives it 62 (other code, the same numbers).
    let decided = decide_caps(dir.path(), &tuned, &[(FLOAT8, 48), (DOUBLE8, 28)]);
    let patch = fix(dir.path(), TEMPLATE);
    let note = "template_caps.cu: note: smooth: register caps per instantiation (regtune_maxnreg_smooth); without a decision, its plain register count as its cap (__maxnreg__ has no \"none\": not plain's code; with the default cap 255, void smooth<double, (unsigned long)6> on sm_90 gives registers 64 where plain has 62), verified by nvcc's build at plain's registers, spills and occupancy: void smooth<double, (unsigned long)6> on sm_90 (registers 62, spill stores 0 bytes, occupancy 32)\n";
    assert!(patch.contains(note), "{patch}");
    assert!(patch.contains("template_caps.cu: void smooth<float, (unsigned long)8> (sm_90): warps-per-sm=48 (its template's cap per instantiation, regtune_maxnreg_smooth); verified by nvcc's build: registers 45 → 40, spill stores 0 bytes, occupancy 40 → 48; "), "{patch}");
    let trait_and_cap = "
+template <typename Real, size_t N> struct regtune_maxnreg_smooth { static constexpr int value = 255; };
+template <> struct regtune_maxnreg_smooth<double, 6> { static constexpr int value = 62; }; // no decision: plain's registers
+template <> struct regtune_maxnreg_smooth<double, 8> { static constexpr int value = 72; };
+template <> struct regtune_maxnreg_smooth<float, 8> { static constexpr int value = 40; };
 template <typename Real, size_t N>
+REGTUNE_MAXNREG((regtune_maxnreg_smooth<Real, N>::value))
";
    assert!(patch.contains(trait_and_cap), "{patch}");
    assert_eq!(built_as_decided(dir.path(), &patch, &decided, &clang_before), [62, 72, 40]);
}
