//! NVPTX targets against the real tools: `regtune report` must equal what
//! `ptxas -v` says of clang's own CUDA compile (a command line built here,
//! not by regtune), its occupancy must equal NVIDIA's calculator
//! (`cuda_occupancy.h`, compiled here as an oracle), and `tune` must keep
//! its promise in a plain `clang -fpass-plugin` build.
//!
//! These tests need the CUDA installation `ci/bootstrap.sh` assembles (or a
//! real toolkit): without one they fail, naming the fix.

// A test fails by panicking; `unwrap` says where.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command as Process;
use std::sync::OnceLock;

use assert_cmd::Command;
use common::{evidence_all_proven, evidence_none, examples, repo};
use regtune::gpu::nvptx::nvidia::{self, KernelResources};
use regtune::toolchain::cuda::Cuda;
use serde_json::Value;

fn cuda() -> &'static Cuda {
    static CUDA: OnceLock<Cuda> = OnceLock::new();
    CUDA.get_or_init(|| Cuda::detect().unwrap_or_else(|e| panic!("{e}")))
}

fn regtune() -> Command {
    let mut cmd = Command::cargo_bin("regtune").expect("regtune binary");
    cmd.current_dir(repo());
    // Only the evidence a test passes.
    cmd.env_remove("REGTUNE_EVIDENCE");
    cmd
}

fn json(cmd: &mut Command) -> Vec<Value> {
    let out = cmd.output().expect("run regtune");
    assert!(out.status.success(), "regtune failed: {}", String::from_utf8_lossy(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("regtune prints JSON");
    doc["kernels"].as_array().expect("kernels array").clone()
}

fn report(file: &Path, arch: &str, extra: &[&str]) -> Vec<Value> {
    json(regtune().args(["report", "--format", "json", "--offload-arch", arch]).args(extra).arg(file))
}

/// clang's CUDA device compile of `file` for `arch`, as a user would type it.
fn cuda_compile(file: &Path, arch: &str) -> Process {
    let mut cmd = Process::new("clang-22");
    cmd.args(["-x", "cuda", "--cuda-device-only", "-O3", "-Wno-unknown-cuda-version"])
        .arg(format!("--cuda-gpu-arch={arch}"))
        .arg(format!("--cuda-path={}", cuda().root.display()))
        .arg(file);
    cmd
}

/// One entry function of a `ptxas -v` report.
#[derive(Debug, Default, Clone)]
struct Ptxas {
    registers: u64,
    barriers: u64,
    stack: u64,
    spill_stores: u64,
    spill_loads: u64,
    smem: u64,
}

/// `ptxas -v` of clang's compile: per entry function, the numbers it prints.
fn ptxas_v(file: &Path, arch: &str, extra: &[&str], decisions: Option<&Path>) -> BTreeMap<String, Ptxas> {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = cuda_compile(file, arch);
    if let Some(db) = decisions {
        cmd.env("REGTUNE_DECISIONS", db);
    }
    let out = cmd.args(extra).args(["-c", "-Xcuda-ptxas", "-v", "-o"]).arg(dir.path().join("k.cubin")).output().unwrap();
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{text}");
    let mut all = BTreeMap::new();
    let mut current: Option<String> = None;
    let number = |s: &str, suffix: &str| -> Option<u64> {
        s.split(',').map(str::trim).find_map(|p| p.strip_suffix(suffix).map(|n| n.trim().rsplit(' ').next().unwrap().parse().unwrap()))
    };
    for line in text.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            current = Some(rest.split('\'').next().unwrap().to_string());
            all.insert(current.clone().unwrap(), Ptxas::default());
        } else if line.contains("Function properties for ") && !line.contains(current.as_deref().unwrap_or("\u{0}")) {
            current = None;
        } else if let Some(k) = current.as_ref().and_then(|c| all.get_mut(c)) {
            if line.contains("bytes stack frame") {
                k.stack = number(line, " bytes stack frame").unwrap();
                k.spill_stores = number(line, " bytes spill stores").unwrap();
                k.spill_loads = number(line, " bytes spill loads").unwrap();
            }
            if let Some(used) = line.split("Used ").nth(1) {
                k.registers = used.split(' ').next().unwrap().parse().unwrap();
                k.barriers = number(line, " barriers").unwrap_or(0);
                k.smem = number(line, " bytes smem").unwrap_or(0);
            }
        }
    }
    all
}

/// NVIDIA's calculator, `cuda_occupancy.h`, as a program: one line of
/// "major minor regs block smem barriers" in, active blocks per SM out.
fn oracle(cases: &[(u32, u32, u32, u32, u32, u32)]) -> Vec<u32> {
    static BIN: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    let (_, bin) = BIN.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("occupancy_oracle");
        let status = Process::new("clang-22")
            .args(["-O1", "-w", "-x", "c"])
            .arg(format!("-I{}", cuda().root.join("include").display()))
            .arg(repo().join("tests/nvptx/occupancy_oracle.c"))
            .arg("-o")
            .arg(&bin)
            .status()
            .unwrap();
        assert!(status.success(), "the cuda_occupancy.h oracle does not build");
        (dir, bin)
    });
    let input: String = cases.iter().map(|c| format!("{} {} {} {} {} {}\n", c.0, c.1, c.2, c.3, c.4, c.5)).collect();
    // Through a file: a pipe both ways would fill up and block.
    let mut cases_file = tempfile::NamedTempFile::new().unwrap();
    std::io::Write::write_all(&mut cases_file, input.as_bytes()).unwrap();
    let out = Process::new(bin).stdin(std::fs::File::open(cases_file.path()).unwrap()).output().unwrap();
    String::from_utf8(out.stdout).unwrap().lines().map(|l| l.parse().unwrap_or_else(|_| panic!("oracle said {l}"))).collect()
}

#[test]
fn occupancy_calculator_equals_cuda_occupancy_h() {
    let mut cases = Vec::new();
    for sm in nvidia::SMS {
        for regs in (1..=255).step_by(7).chain([32, 40, 64, 128, 168, 255]) {
            for block in [32, 64, 96, 128, 192, 256, 320, 384, 512, 640, 768, 1024] {
                for smem in [0, 1000, 8 * 1024, 20 * 1024, 48 * 1024 - 1024, 48 * 1024] {
                    for barriers in [0, 1, 16] {
                        cases.push((sm.major, sm.minor, regs, block, smem, barriers));
                    }
                }
            }
        }
    }
    let expected = oracle(&cases);
    assert_eq!(expected.len(), cases.len());
    for (c, want) in cases.iter().zip(expected) {
        let sm = nvidia::SMS.iter().find(|s| (s.major, s.minor) == (c.0, c.1)).unwrap();
        let k = KernelResources { regs: c.2, static_smem: c.4, dynamic_smem: 0, barriers: c.5 };
        let got = sm.occupancy(&k, c.3);
        assert_eq!(got.blocks, want, "{} regs={} block={} smem={} barriers={}: {got:?}", sm.name, c.2, c.3, c.4, c.5);
        assert_eq!(got.warps, want * c.3.div_ceil(32));
    }
}

fn check_against_ptxas(arch: &str) {
    for file in examples() {
        check_file_against_ptxas(&file, arch, None);
    }
}

/// `report` of `file` on `arch` against clang's compile with `ptxas -v`, and
/// its occupancy against the calculator, at `--block-size` if given, else
/// at the default 256 (no example has launch bounds).
fn check_file_against_ptxas(file: &Path, arch: &str, block_size: Option<u32>) {
    let sm = nvidia::sm(arch).unwrap();
    let size = block_size.map(|b| b.to_string());
    let extra: Vec<&str> = size.iter().flat_map(|s| ["--block-size", s.as_str()]).collect();
    let (block, from) = match block_size {
        Some(b) => (b, "option"),
        None => (256, "default"),
    };
    let kernels = report(file, arch, &extra);
    let truth = ptxas_v(file, arch, &[], None);
    assert_eq!(kernels.len(), truth.len(), "{}: kernel count on {arch}", file.display());
    for k in &kernels {
        let symbol = k["symbol"].as_str().unwrap();
        let p = truth.get(symbol).unwrap_or_else(|| panic!("ptxas reported no {symbol}"));
        let (u, n) = (&k["usage"], &k["nvidia"]);
        let ctx = format!("{} {symbol} on {arch}", file.display());
        assert_eq!(u["vgpr"].as_u64(), Some(p.registers), "{ctx}: registers");
        assert_eq!(u["scratch_bytes"].as_u64(), Some(p.stack), "{ctx}: stack frame");
        assert_eq!(u["vgpr_spills"].as_u64(), Some(p.spill_stores), "{ctx}: spill stores");
        assert_eq!(u["sgpr_spills"].as_u64(), Some(p.spill_loads), "{ctx}: spill loads");
        assert_eq!(u["lds_bytes"].as_u64(), Some(p.smem), "{ctx}: shared memory");
        assert_eq!(n["barriers"].as_u64(), Some(p.barriers), "{ctx}: barriers");
        assert_eq!((u["agpr"].as_u64(), u["sgpr"].as_u64()), (Some(0), Some(0)), "{ctx}");
        assert_eq!((n["block_size"].as_u64(), n["block_size_from"].as_str()), (Some(u64::from(block)), Some(from)), "{ctx}");
        let blocks = oracle(&[(sm.major, sm.minor, p.registers as u32, block, p.smem as u32, p.barriers as u32)])[0];
        assert_eq!(u["occupancy"].as_u64(), Some(u64::from(blocks * block.div_ceil(32))), "{ctx}: occupancy (warps/SM)");
        assert!(u["code_bytes"].as_u64().unwrap() > 0, "{ctx}: code size");
        assert!(k["line"].as_u64().unwrap() > 0, "{ctx}: line");
        assert_eq!(k["arch"], arch, "{ctx}");
    }
}

#[test]
fn report_equals_ptxas_on_sm_90() {
    check_against_ptxas("sm_90");
}

#[test]
fn report_equals_ptxas_on_sm_75_and_sm_86() {
    check_against_ptxas("sm_75");
    check_against_ptxas("sm_86");
}

/// Blackwell: ptxas 12.9 assembles clang 22's PTX for sm_100 and sm_120.
#[test]
fn report_equals_ptxas_on_sm_100_and_sm_120() {
    check_against_ptxas("sm_100");
    check_against_ptxas("sm_120");
}

/// Where shared memory and named barriers limit: 40 KB a block fits 5 times
/// in sm_100's 228 KB and twice in sm_120's 100 KB (40 and 16 warps at 256
/// threads); 2 barriers a block allow 32 blocks on sm_100 (2 per block slot)
/// but 12 on sm_120 (1 per slot): 64 and 24 warps at 64 threads.
#[test]
fn report_equals_ptxas_where_shared_memory_and_barriers_limit_on_blackwell() {
    let file = repo().join("tests/nvptx/shared_barriers.cu");
    for arch in ["sm_90", "sm_100", "sm_120"] {
        check_file_against_ptxas(&file, arch, None);
        check_file_against_ptxas(&file, arch, Some(64));
    }
    let occupancy = |arch: &str, extra: &[&str], name: &str| {
        let rows = report(&file, arch, extra);
        let k = rows.iter().find(|k| k["name"].as_str().unwrap().starts_with(name)).unwrap();
        k["usage"]["occupancy"].as_u64().unwrap()
    };
    assert_eq!(occupancy("sm_100", &[], "tile_transpose_sum"), 40);
    assert_eq!(occupancy("sm_120", &[], "tile_transpose_sum"), 16);
    assert_eq!(occupancy("sm_100", &["--block-size", "64"], "two_barriers"), 64);
    assert_eq!(occupancy("sm_120", &["--block-size", "64"], "two_barriers"), 24);
}

#[test]
fn block_size_comes_from_the_option_then_launch_bounds_then_256() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bounded.cu");
    std::fs::write(
        &file,
        "__global__ void __launch_bounds__(128) bounded(float* x) { x[threadIdx.x] *= 2.0f; }\n\
         __global__ void free_size(float* x) { x[threadIdx.x] += 1.0f; }\n",
    )
    .unwrap();
    let rows = report(&file, "sm_90", &[]);
    let from = |rows: &[Value], name: &str| {
        let k = rows.iter().find(|k| k["name"].as_str().unwrap().starts_with(name)).unwrap();
        (k["nvidia"]["block_size"].as_u64().unwrap(), k["nvidia"]["block_size_from"].as_str().unwrap().to_string())
    };
    assert_eq!(from(&rows, "bounded"), (128, "launch-bounds".to_string()));
    assert_eq!(from(&rows, "free_size"), (256, "default".to_string()));
    let given = report(&file, "sm_90", &["--block-size", "64"]);
    assert_eq!(from(&given, "bounded"), (64, "option".to_string()));
    // 64 threads: two warps a block, 32 block slots.
    let k = given.iter().find(|k| k["name"].as_str().unwrap().starts_with("free_size")).unwrap();
    assert_eq!(k["usage"]["occupancy"], 64);
    let table = regtune().args(["report", "--offload-arch", "sm_90"]).arg(&file).output().unwrap();
    let table = String::from_utf8(table.stdout).unwrap();
    assert!(table.contains("@128 (launch bounds)") && table.contains("@256 (default)"), "{table}");
}

#[test]
fn target_nvptx_defaults_to_sm_90_and_rejects_amdgpu_archs() {
    let file = repo().join("examples/long_lived.hip");
    let rows = json(regtune().args(["report", "--format", "json", "--target", "nvptx"]).arg(&file));
    assert_eq!(rows[0]["arch"], "sm_90");
    let out = regtune().args(["report", "--target", "nvptx", "--offload-arch", "gfx90a"]).arg(&file).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("--offload-arch gfx90a is not a target of --target nvptx"), "{stderr}");
}

#[test]
fn doctor_names_the_cuda_installation() {
    let out = regtune().arg("doctor").output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let line = text.lines().find(|l| l.contains("CUDA for NVPTX targets")).expect("a CUDA line");
    assert!(line.starts_with("ok") && line.contains(&cuda().root.display().to_string()), "{text}");
}

fn spills(u: &Value) -> u64 {
    u["vgpr_spills"].as_u64().unwrap() + u["sgpr_spills"].as_u64().unwrap()
}

/// Every example tuned on sm_90 under an evidence table, with its db.
fn tune_examples(evidence: &Path) -> (tempfile::TempDir, Vec<Value>) {
    let dir = tempfile::tempdir().unwrap();
    let files = examples();
    let rows = json(
        regtune()
            .args(["tune", "--format", "json", "--offload-arch", "sm_90", "--evidence"])
            .arg(evidence)
            .arg("--db")
            .arg(dir.path().join("db.json"))
            .args(&files),
    );
    (dir, rows)
}

/// One tune over every example on sm_90 with every class proven (what the
/// default decided before it followed GPU evidence), shared by the tests below.
fn tuned() -> &'static (tempfile::TempDir, Vec<Value>) {
    static TUNED: OnceLock<(tempfile::TempDir, Vec<Value>)> = OnceLock::new();
    TUNED.get_or_init(|| tune_examples(&evidence_all_proven()))
}

fn labels_of(k: &Value, list: &str) -> Vec<String> {
    k[list].as_array().unwrap().iter().map(|l| l.as_str().unwrap().to_string()).collect()
}

/// How a suggestion held back for speed alone ends (the GPU decides), and
/// one that also changes rounding or rests on the callers.
const MEASURE_HINT: &str =
    "`regtune measure -- PROGRAM ARGS` times it inside your program and keeps it only if faster with the same results";
const CONFIRM_HINT: &str =
    "`regtune measure -- PROGRAM ARGS` times it inside your program; once you confirm it, the build uses it only if faster with the same results";

#[test]
fn without_evidence_nothing_is_applied_unasked_on_sm_90_and_the_former_decisions_are_suggested() {
    let (dir, none) = tune_examples(&evidence_none());
    assert_eq!(none.len(), examples().len());
    let db: Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("db.json")).unwrap()).unwrap();
    let entries: Vec<&Value> = db["kernels"].as_object().unwrap().values().collect();
    assert_eq!(entries.len(), none.len());
    for e in &entries {
        assert!(e.get("transforms").is_none_or(|t| t.as_object().unwrap().is_empty()), "nothing decided: {e}");
    }
    for k in &none {
        assert!(labels_of(k, "applied").is_empty(), "{k}");
        assert_eq!(k["after"], k["before"], "{k}");
        let reasons = k["suggestion_reasons"].as_array().unwrap();
        let speed = |r: &Value| r == "unproven" || r == "trades-ilp";
        let timed = reasons.iter().any(speed);
        let speed_alone = timed && reasons.iter().all(speed);
        for m in k["suggestions"].as_array().unwrap() {
            assert_eq!(m.as_str().unwrap().ends_with(MEASURE_HINT), speed_alone, "{k}");
            assert_eq!(m.as_str().unwrap().ends_with(CONFIRM_HINT), timed && !speed_alone, "{k}");
        }
    }
    // What the all-proven table decides is suggested, for the reason its class waits for.
    let (_, proven) = tuned();
    let mut former = 0;
    for p in proven.iter().filter(|p| !labels_of(p, "applied").is_empty()) {
        former += 1;
        let k = none.iter().find(|k| k["symbol"] == p["symbol"]).unwrap();
        for label in labels_of(p, "applied") {
            assert!(labels_of(k, "suggested").contains(&label), "{label}: {k}");
            let reason = match label.split('=').next().unwrap() {
                "sink" | "pow2" => "unproven",
                "unroll-cap" | "warps-per-sm" => "trades-ilp",
                other => panic!("{other} is applied only when asked: {p}"),
            };
            assert!(k["suggestion_reasons"].as_array().unwrap().contains(&Value::from(reason)), "{label}: {k}");
        }
    }
    assert!(former >= 1, "{proven:?}");
    let md = |rows: &[Value]| rows.iter().find(|k| k["name"].as_str().unwrap().starts_with("md_lj_force_kick(")).unwrap().clone();
    let (p, k) = (md(proven), md(&none));
    assert_eq!(labels_of(&p, "applied"), ["sink"], "{p}");
    assert_eq!(p["after"]["occupancy"], 32, "{p}");
    assert_eq!(
        (k["suggested"].clone(), k["suggestion_reasons"].clone()),
        (serde_json::json!(["sink"]), serde_json::json!(["unproven"])),
        "{k}"
    );
    assert_eq!(k["reason"], "unproven", "{k}");
    let message = k["suggestions"][0].as_str().unwrap();
    assert!(message.starts_with("moving definitions next to their first use (sink) would reach occupancy 32 ("), "{message}");
    assert!(message.contains("no GPU has timed it on real kernels yet (sink)") && message.ends_with(MEASURE_HINT), "{message}");
}

/// The Kalman filter's private matrices: fully unrolled they are registers
/// (168, no spills on sm_90); an unroll cap turns them back into arrays in
/// local memory. Spill counts alone would call the cap an improvement; the
/// local-memory accesses nvdisasm counts do not, whatever the evidence.
#[test]
fn kalman_unroll_caps_put_the_matrices_in_local_memory_and_are_never_applied() {
    let nvdisasm = cuda().root.join("bin/nvdisasm");
    assert!(nvdisasm.is_file(), "{} is missing: ci/bootstrap.sh installs it", nvdisasm.display());
    let file = repo().join("examples/kalman_private.hip");
    let local = |u: &Value| u["local_accesses"].as_u64().unwrap_or(0);
    for evidence in [evidence_none(), evidence_all_proven()] {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("db.json");
        // Room for the whole search (and every candidate) on a busy machine.
        let rows = json(
            regtune()
                .args(["tune", "--format", "json", "--offload-arch", "sm_90", "--time-budget", "600", "--candidates", "16", "--evidence"])
                .arg(&evidence)
                .arg("--db")
                .arg(&db)
                .arg(&file),
        );
        let ctx = evidence.file_name().unwrap().to_string_lossy().into_owned();
        assert_eq!(rows.len(), 1, "{ctx}");
        let k = &rows[0];
        assert_eq!(k["budget_reached"], false, "{ctx}: {k}");
        assert!(!labels_of(k, "applied").iter().any(|l| l.starts_with("unroll-cap")), "{ctx}: {k}");
        assert!(!labels_of(k, "suggested").iter().any(|l| l.starts_with("unroll-cap")), "{ctx}: {k}");
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&db).unwrap()).unwrap();
        let e = doc["kernels"].as_object().unwrap().values().next().unwrap();
        assert!(e["transforms"].get("unroll_cap").is_none(), "{ctx}: {e}");
        let before = &e["before"];
        assert_eq!((before["vgpr"].as_u64(), spills(before), local(before)), (Some(168), 0, 0), "{ctx}: {before}");
        let candidates = e["candidates"].as_array().unwrap();
        let cap1 =
            candidates.iter().find(|c| c["transforms"] == serde_json::json!({"unroll_cap": 1})).unwrap_or_else(|| panic!("{ctx}: {e}"));
        let top = candidates
            .iter()
            .filter(|c| c["transforms"].get("warps_per_sm").is_some())
            .max_by_key(|c| c["usage"]["occupancy"].as_u64())
            .unwrap_or_else(|| panic!("{ctx}: {e}"));
        let (cap_u, top_u) = (&cap1["usage"], &top["usage"]);
        // What spill counts see: no spills and far more occupancy.
        assert_eq!(spills(cap_u), 0, "{ctx}: {cap1}");
        assert!(cap_u["occupancy"].as_u64() > before["occupancy"].as_u64(), "{ctx}: {cap1}");
        // What the code does: the matrices in local memory, more accesses
        // than the plain build and than the highest register cap's spills.
        assert!(spills(top_u) > 0 && local(top_u) > 0, "{ctx}: {top}");
        assert!(local(cap_u) > local(before), "{ctx}: {cap1}");
        assert!(local(cap_u) > local(top_u), "{ctx}: unroll-cap=1 {cap1} against {top}");
    }
}

#[test]
fn tune_on_sm_90_raises_occupancy_and_never_makes_a_kernel_worse() {
    let (_, rows) = tuned();
    assert_eq!(rows.len(), examples().len());
    let mut applied = std::collections::BTreeSet::new();
    for k in rows {
        let (b, a) = (&k["before"], &k["after"]);
        let name = k["name"].as_str().unwrap();
        assert!(a["occupancy"].as_u64() >= b["occupancy"].as_u64(), "{name}: occupancy went down");
        assert!(spills(a) <= spills(b), "{name}: spills went up");
        if k["applied"].as_array().unwrap().is_empty() {
            assert_eq!(a, b, "{name}: nothing applied, so nothing changed");
        } else {
            assert!(a["occupancy"].as_u64() > b["occupancy"].as_u64(), "{name}: applied without a gain");
        }
        for l in k["applied"].as_array().unwrap() {
            applied.insert(l.as_str().unwrap().split('=').next().unwrap().to_string());
        }
        // The plain compile tune starts from is the one report measures.
        let file = repo().join(k["file"].as_str().unwrap());
        let reported = report(&file, "sm_90", &[]);
        let r = reported.iter().find(|r| r["symbol"] == k["symbol"]).unwrap();
        assert_eq!(r["usage"], *b, "{name}: tune's before is report's usage");
    }
    assert!(applied.contains("sink"), "sink decided no kernel on sm_90: {applied:?}");
    // Unrolling traded for occupancy is suggested, not applied (the Laplacian).
    assert!(!applied.contains("unroll-cap"), "{applied:?}");
    let lap = rows.iter().find(|k| k["name"].as_str().unwrap().starts_with("laplacian3d")).unwrap();
    assert!(lap["suggested"].as_array().unwrap().iter().any(|l| l.as_str().unwrap().starts_with("unroll-cap")), "{lap}");
    assert_eq!(lap["suggestion_reasons"], serde_json::json!(["trades-ilp"]), "{lap}");
}

/// Issue 23: `-include hdr.h` (a header that includes `<cuda_runtime.h>`)
/// and `-imacros` reached the compile of the frontend's IR, an empty CUDA
/// file made with `-nocudainc`, and failed there. They are the frontend's.
#[test]
fn frontend_only_flags_do_not_reach_the_compile_of_the_ir() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("hdr.h"), "#include <cuda_runtime.h>\n#define SCALE 2.0f\n").unwrap();
    std::fs::write(dir.path().join("macros.h"), "#define SCALE2 3.0f\n").unwrap();
    let file = dir.path().join("axpy.cu");
    std::fs::write(&file, "__global__ void axpy(float a, const float* x, float* y, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) y[i] = SCALE * SCALE2 * a * x[i] + y[i];\n}\n").unwrap();
    let flags = ["--", "-include", "hdr.h", "-imacros", "macros.h"];
    let mut tune = regtune();
    tune.current_dir(dir.path()).args(["tune", "--format", "json", "--offload-arch", "sm_90", "--db", "db.json", "axpy.cu"]).args(flags);
    let tuned = json(&mut tune);
    let mut report = regtune();
    report.current_dir(dir.path()).args(["report", "--format", "json", "--offload-arch", "sm_90", "axpy.cu"]).args(flags);
    let reported = json(&mut report);
    assert_eq!(tuned.len(), 1);
    assert_eq!(tuned[0]["before"], reported[0]["usage"], "the variants' plain build is the frontend's");
}

#[test]
fn a_plugin_build_with_the_db_gives_exactly_the_promised_usage_on_sm_90() {
    let (dir, rows) = tuned();
    let plugin = common::plugin();
    let db = dir.path().join("db.json");
    for file in examples() {
        let plugin_arg = format!("-fpass-plugin={}", plugin.display());
        let truth = ptxas_v(&file, "sm_90", &[&plugin_arg], Some(&db));
        for (symbol, p) in &truth {
            let k = rows.iter().find(|k| k["symbol"] == symbol.as_str()).unwrap();
            let a = &k["after"];
            let ctx = format!("{} {} ({})", file.display(), k["name"], k["applied"]);
            assert_eq!(a["vgpr"].as_u64(), Some(p.registers), "{ctx}: registers");
            assert_eq!(a["vgpr_spills"].as_u64(), Some(p.spill_stores), "{ctx}: spill stores");
            assert_eq!(a["scratch_bytes"].as_u64(), Some(p.stack), "{ctx}: stack");
        }
    }
}

#[test]
fn pow2_rewrites_libdevice_pow_only_where_approximate_functions_are_allowed() {
    let file = repo().join("examples/lbm_d3q19.hip");
    // Exact pow2 proven on the GPU: applied where the build allows it.
    let tune = |extra: &[&str]| {
        let dir = tempfile::tempdir().unwrap();
        let rows = json(
            regtune()
                .args(["tune", "--format", "json", "--offload-arch", "sm_90", "--evidence"])
                .arg(evidence_all_proven())
                .arg("--db")
                .arg(dir.path().join("db.json"))
                .arg(&file)
                .arg("--")
                .args(extra),
        );
        rows[0]["applied"].as_array().unwrap().iter().map(|l| l.as_str().unwrap().to_string()).collect::<Vec<_>>()
    };
    // libdevice's pow(x, 2.0) is not correctly rounded: x * x changes bits.
    assert!(!tune(&["-O3"]).iter().any(|l| l.starts_with("pow2")));
    assert!(tune(&["-ffast-math"]).contains(&"pow2".to_string()));
}

#[test]
fn gpu_runner_reports_the_first_differing_element() {
    let out = Process::new("python3").arg(repo().join("bench/gpu/run.py")).arg("self-test").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("MISMATCH demo_kernel [tuned]: out[617] original=308.5"), "{text}");
    assert!(text.contains("self-test: ok"), "{text}");
}

#[test]
fn gpu_runner_has_inputs_for_every_example_kernel() {
    let runner = std::fs::read_to_string(repo().join("bench/gpu/run.py")).unwrap();
    for file in examples() {
        for k in report(&file, "sm_90", &[]) {
            let name = k["name"].as_str().unwrap().split('(').next().unwrap().to_string();
            assert!(runner.contains(&format!("\"{name}\": case_")), "bench/gpu/run.py has no case for {name}");
        }
    }
}

/// ptxas's spilling to shared memory is a candidate only at the steps where
/// the cap alone spills more, over every thread an SM holds, than a quarter
/// of the largest shared-memory carveout (57 KiB on sm_90): local memory
/// is cached in the L1 that shared memory is carved from, and on an H100
/// the twins of caps that spilled less lost to the cap. The LBM kernel's
/// caps spill 18 KiB, 42 KiB and 96 KiB at 24, 28 and 32 warps per SM.
/// regtune's own LDS spill is tried only where the cap spills nothing.
#[test]
fn spilling_to_shared_is_a_candidate_only_where_the_caps_spills_outgrow_l1() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.json");
    let out = regtune()
        .args([
            "tune",
            "--format",
            "json",
            "--offload-arch",
            "sm_90",
            "--candidates",
            "64",
            "--time-budget",
            "600",
            "--block-size",
            "256",
            "--evidence",
        ])
        .arg(evidence_none())
        .arg("--db")
        .arg(&db)
        .arg(repo().join("examples/lbm_d3q19.hip"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&db).unwrap()).unwrap();
    let entry = doc["kernels"].as_object().unwrap().values().find(|e| e["symbol"].as_str().unwrap().contains("lbm_d3q19_collide")).unwrap();
    let candidates = entry["candidates"].as_array().unwrap();
    assert!(entry.get("left_out").is_none_or(|l| l.as_array().unwrap().is_empty()), "every candidate built: {entry}");
    let step = |c: &Value| c["transforms"]["warps_per_sm"].as_u64();
    let alone = |c: &Value| c["transforms"].as_object().unwrap().keys().all(|k| k == "warps_per_sm");
    let twin_at = |w: Option<u64>| candidates.iter().find(|c| c["transforms"]["spill_to_shared"] == true && step(c) == w);
    let (mut with, mut without) = (vec![], vec![]);
    for cap in candidates.iter().filter(|c| alone(c) && c["usage"]["vgpr_spills"].as_u64().unwrap() > 0) {
        let footprint = cap["usage"]["vgpr_spills"].as_u64().unwrap() * cap["usage"]["occupancy"].as_u64().unwrap() * 32;
        match twin_at(step(cap)) {
            Some(twin) => {
                assert!(4 * footprint >= 228 * 1024, "{cap} has a twin: {twin}");
                assert!(twin["usage"]["vgpr_spills"].as_u64() < cap["usage"]["vgpr_spills"].as_u64(), "{twin} against {cap}");
                with.push(step(cap).unwrap());
            }
            None => {
                assert!(4 * footprint < 228 * 1024, "{cap} has no twin");
                without.push(step(cap).unwrap());
            }
        }
    }
    with.sort_unstable();
    without.sort_unstable();
    assert!(with.contains(&32) && without == [24, 28], "{with:?} {without:?}: {candidates:?}");
    // regtune's own LDS spill goes where ptxas's has nothing to move: the
    // steps where the cap alone spills nothing.
    let lds: Vec<&Value> = candidates.iter().filter(|c| c["transforms"]["lds_spill"].is_u64()).collect();
    assert!(!lds.is_empty(), "{candidates:?}");
    for c in lds {
        let cap = candidates.iter().find(|k| alone(k) && step(k) == step(c));
        assert!(cap.is_none_or(|k| k["usage"]["vgpr_spills"] == 0), "{c} at a step where the cap spills: {cap:?}");
    }
}

/// nvcc (ci/bootstrap.sh's, or a real toolkit's).
fn nvcc() -> PathBuf {
    regtune::toolchain::nvcc::Nvcc::detect().unwrap_or_else(|e| panic!("{e}")).path
}

/// A copy of the LBM example and the header it includes, in a directory of its own.
fn lbm_copy() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    for f in ["lbm_d3q19.hip", "regtune_gpu.h"] {
        std::fs::copy(repo().join("examples").join(f), dir.path().join(f)).unwrap();
    }
    let file = dir.path().join("lbm_d3q19.hip");
    (dir, file)
}

/// `regtune tune --compiler nvcc --offload-arch sm_90 --db DB FILE -- FLAGS`, which must succeed.
fn tune_with_nvcc(db: &Path, file: &Path, flags: &[&str]) {
    let out = regtune()
        .args(["tune", "--compiler", "nvcc", "--offload-arch", "sm_90", "--db"])
        .arg(db)
        .arg(file)
        .arg("--")
        .args(flags)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// The db's only entry given `transforms` as its decision (as measure or
/// confirm would); the entry as it was.
fn decide(db: &Path, transforms: Value) -> Value {
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(db).unwrap()).unwrap();
    let entry = doc["kernels"].as_object_mut().unwrap().values_mut().next().unwrap();
    let was = entry.clone();
    entry["transforms"] = transforms;
    std::fs::write(db, serde_json::to_string(&doc).unwrap()).unwrap();
    was
}

/// nvcc's own cubin of `file` for sm_90 with `flags`, as a user's build makes it.
fn nvcc_cubin(file: &Path, flags: &[&str]) -> Vec<u8> {
    let out = file.with_extension("user.cubin");
    let status = Process::new(nvcc()).args(flags).args(["-arch=sm_90", "-cubin", "-o"]).arg(&out).arg(file).status().unwrap();
    assert!(status.success());
    std::fs::read(out).unwrap()
}

/// `regtune tune --compiler nvcc`: the plain candidate is nvcc's own cubin
/// byte for byte, a register cap's candidate is the cubin nvcc builds
/// from the source with `__maxnreg__` (what `regtune fix` writes), with at
/// most the cap's registers, and nvcc's `-maxrregcount=R` candidate gives
/// the kernel the code of `nvcc -maxrregcount=R` (the hand sweep's build),
/// byte for byte.
#[test]
fn nvcc_candidates_are_the_cubins_nvcc_builds() {
    let (dir, file) = lbm_copy();
    let flags = ["-x", "cu", "-O3"];
    let db = dir.path().join("db/decisions.json");
    tune_with_nvcc(&db, &file, &flags);
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&db).unwrap()).unwrap();
    let entry = doc["kernels"].as_object().unwrap().values().next().unwrap().clone();
    let code = dir.path().join("db/decisions.code").join(entry["input_hash"].as_str().unwrap());
    assert_eq!(std::fs::read(code.join("plain.cubin")).unwrap(), nvcc_cubin(&file, &flags), "plain is nvcc's cubin");
    // nvcc's code, not clang's: 80 registers (clang's is 91).
    assert_eq!(entry["before"]["vgpr"], 80);
    let caps: Vec<u64> = entry["candidates"].as_array().unwrap().iter().filter_map(|c| c["transforms"]["warps_per_sm"].as_u64()).collect();
    assert!(caps.contains(&32), "a step at 32 warps (cap 64): {caps:?}");
    // floor(64 / ceil(W / 4)) * 8 registers at W warps per SM, at most 255.
    let cap = |w: u64| (64 / w.div_ceil(4) * 8).min(255);
    for c in entry["candidates"].as_array().unwrap() {
        let Some(warps) = c["transforms"]["warps_per_sm"].as_u64() else { continue };
        assert!(c["usage"]["vgpr"].as_u64().unwrap() <= cap(warps), "{c}");
    }
    // Every step is built with nvcc: one ptxas run each. Caps 168 and 128
    // (12 and 16 warps) give another step's code (88 registers; only the
    // cap ptxas records it was asked for differs): kept once.
    assert!(caps.len() >= 9, "{caps:?}");
    // nvcc's own -maxrregcount=R: the hand sweep's code, byte for byte,
    // with at most R registers; kept where the kernel's code is not its
    // .maxnreg R cap's (ptxas 13.5: from R = 64 down, at the same
    // registers and spills).
    let wide: Vec<(u64, Value)> = entry["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| Some((c["transforms"]["maxrregcount"].as_u64()?, c.clone())))
        .collect();
    let rs: Vec<u64> = wide.iter().map(|(r, _)| *r).collect();
    assert!(rs.contains(&64) && rs.contains(&32), "{rs:?}");
    let kept = regtune::measure::code::candidates(&dir.path().join("db/decisions.code"), &serde_json::from_value(entry.clone()).unwrap());
    for (r, c) in &wide {
        let transforms: regtune_decisions::Transforms = serde_json::from_value(c["transforms"].clone()).unwrap();
        let (_, _, kept) = kept.iter().find(|(_, t, _)| *t == transforms).unwrap();
        let flag = format!("-maxrregcount={r}");
        let sweep = nvcc_cubin(&file, &[&flags[..], &[flag.as_str()]].concat());
        let code = |cubin: &[u8]| regtune::gpu::nvptx::cubin::kernel_code(cubin, entry["symbol"].as_str().unwrap()).unwrap();
        assert!(code(&std::fs::read(kept).unwrap()) == code(&sweep), "the candidate is nvcc {flag}'s code");
        assert!(c["usage"]["vgpr"].as_u64().unwrap() <= *r, "{c}");
    }
    // The cap of 32 warps, spelled in the source as `regtune fix` spells it.
    let capped = dir.path().join("capped.hip");
    let source = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        &capped,
        source.replace("__global__ void lbm_d3q19_collide_stream", "__global__ void __maxnreg__(64) lbm_d3q19_collide_stream"),
    )
    .unwrap();
    let from_source = nvcc_cubin(&capped, &flags);
    let candidates: Vec<Vec<u8>> =
        std::fs::read_dir(&code).unwrap().map(|e| std::fs::read(e.unwrap().path()).unwrap()).filter(|b| *b == from_source).collect();
    assert_eq!(candidates.len(), 1, "one candidate is nvcc's build of __maxnreg__(64)");
}

/// `report --compiler nvcc` reads nvcc's build (its ptxas's own report),
/// and what nvcc's path cannot tune says so in one line.
#[test]
fn nvcc_report_and_its_refusals() {
    let (_dir, file) = lbm_copy();
    let rows = json(
        regtune().args(["report", "--format", "json", "--compiler", "nvcc", "--offload-arch", "sm_90"]).arg(&file).args(["--", "-x", "cu"]),
    );
    assert_eq!((rows.len(), rows[0]["usage"]["vgpr"].as_u64()), (1, Some(80)), "{rows:?}");
    // regtune ARGS FILE -- FLAGS must fail; its stderr.
    let refused = |args: &[&str], flags: &[&str]| {
        let out = regtune().args(args).arg(&file).arg("--").args(flags).output().unwrap();
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let nvcc_sm = |arch| ["report", "--compiler", "nvcc", "--offload-arch", arch];
    let e = refused(&nvcc_sm("gfx90a"), &["-x", "cu"]);
    assert!(e.contains("--compiler nvcc builds CUDA code: gfx90a is not an NVIDIA target"), "{e}");
    let e = refused(&nvcc_sm("sm_90"), &["-x", "cu", "-rdc=true"]);
    assert!(e.contains("relocatable device code is linked by nvlink"), "{e}");
    let e = refused(&nvcc_sm("sm_80"), &["-x", "cu", "-arch=sm_90"]);
    assert!(e.contains("the nvcc flags build no sm_80 code (ptxas ran for: sm_90)"), "{e}");
    let e = refused(&["report", "--compiler", "gcc"], &[]);
    assert!(e.contains("--compiler gcc: regtune tunes clang's code or nvcc's"), "{e}");
}

/// `regtune-nvcc` builds with the db's decision: the cubin is the candidate
/// `measure` timed, byte for byte; without a decision for the source, and
/// for the user's own compile errors, it is nvcc untouched.
#[test]
fn regtune_nvcc_builds_the_measured_candidate() {
    let (dir, file) = lbm_copy();
    let flags = ["-x", "cu", "-O3", "-arch=sm_90"];
    let db = dir.path().join(".regtune/decisions.json");
    tune_with_nvcc(&db, &file, &flags);
    let plain_cubin = nvcc_cubin(&file, &flags[..3]);
    let wrapper = |args: &[&str]| {
        let mut cmd = Process::new(assert_cmd::cargo::cargo_bin("regtune-nvcc"));
        cmd.current_dir(dir.path()).env("REGTUNE_VERBOSE", "1").args(flags).args(args);
        cmd.output().unwrap()
    };
    // No decision yet: nvcc's own cubin.
    let out = wrapper(&["-cubin", "lbm_d3q19.hip", "-o", "none.cubin"]);
    assert!(out.status.success() && out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read(dir.path().join("none.cubin")).unwrap(), plain_cubin);
    // Decide 32 warps per SM (cap 64), as measure or confirm would.
    let entry = decide(&db, serde_json::json!({"warps_per_sm": 32}));
    let code = dir.path().join(".regtune/decisions.code").join(entry["input_hash"].as_str().unwrap());
    let out = wrapper(&["-cubin", "lbm_d3q19.hip", "-o", "tuned.cubin"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && said.contains("lbm_d3q19_collide_stream on sm_90: warps-per-sm=32"), "{said}");
    let built = std::fs::read(dir.path().join("tuned.cubin")).unwrap();
    assert_ne!(built, plain_cubin);
    let same: Vec<_> = std::fs::read_dir(&code).unwrap().filter(|e| std::fs::read(e.as_ref().unwrap().path()).unwrap() == built).collect();
    assert_eq!(same.len(), 1, "the cubin is one of the candidates tune kept");
    // Older dbs spelled NVIDIA's step as waves_per_eu: it reads the same.
    decide(&db, serde_json::json!({"waves_per_eu": 32}));
    let out = wrapper(&["-cubin", "lbm_d3q19.hip", "-o", "older.cubin"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read(dir.path().join("older.cubin")).unwrap(), built);
    // Other flags make other PTX (line information here): plain, said in one line.
    let out = wrapper(&["-lineinfo", "-cubin", "lbm_d3q19.hip", "-o", "stale.cubin"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && said.contains("lbm_d3q19_collide_stream on sm_90: the db's decisions were tuned from other inputs"),
        "{said}"
    );
    assert_eq!(said.matches("regtune: warning").count(), 1, "{said}");
    // An object too; a compile error is the user's, with nvcc's exit code and no regtune line.
    assert!(wrapper(&["-c", "lbm_d3q19.hip", "-o", "k.o"]).status.success());
    std::fs::write(dir.path().join("broken.cu"), "__global__ void k(float *x) { x[0] = y; }\n").unwrap();
    let out = wrapper(&["-c", "broken.cu", "-o", "b.o"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("identifier \"y\" is undefined") && !said.contains("regtune"), "{said}");
}

/// `batch` reads nvcc's entries in compile_commands.json (CMake's with nvcc
/// as CMAKE_CUDA_COMPILER): each is tuned as nvcc builds it, with its own
/// flags and architectures, to the same db entry `tune --compiler nvcc` makes.
#[test]
fn batch_tunes_nvcc_entries_as_nvcc_builds_them() {
    let (dir, file) = lbm_copy();
    let nvcc = nvcc();
    let entries = serde_json::json!([{
        "directory": dir.path(),
        "arguments": [nvcc, "-x", "cu", "-O3", "-gencode", "arch=compute_90,code=[sm_90,compute_90]", "-c", "lbm_d3q19.hip", "-o", "k.o"],
        "file": "lbm_d3q19.hip",
    }]);
    std::fs::write(dir.path().join("compile_commands.json"), entries.to_string()).unwrap();
    let (batch_db, tune_db) = (dir.path().join("batch/decisions.json"), dir.path().join("tune/decisions.json"));
    let out = regtune().args(["batch", "-p"]).arg(dir.path()).arg("--db").arg(&batch_db).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    tune_with_nvcc(&tune_db, &file, &["-x", "cu", "-O3", "-gencode", "arch=compute_90,code=[sm_90,compute_90]"]);
    let entry = |db: &Path| -> Value {
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(db).unwrap()).unwrap();
        doc["kernels"].as_object().unwrap().values().next().unwrap().clone()
    };
    let (from_batch, from_tune) = (entry(&batch_db), entry(&tune_db));
    assert_eq!((from_batch["arch"].as_str(), from_batch["before"]["vgpr"].as_u64()), (Some("sm_90"), Some(80)));
    assert_eq!(from_batch["input_hash"], from_tune["input_hash"]);
}

/// CMake with nvcc as its CUDA compiler and `regtune;cc` as the launcher:
/// `batch` reads its compile_commands.json, the build applies the decision
/// (and nvcc's dependency file is still written), and the build is nvcc's.
#[test]
fn cmake_with_nvcc_builds_through_the_launcher() {
    let (dir, _) = lbm_copy();
    std::fs::rename(dir.path().join("lbm_d3q19.hip"), dir.path().join("lbm.cu")).unwrap();
    std::fs::write(
        dir.path().join("CMakeLists.txt"),
        "cmake_minimum_required(VERSION 3.24)\nproject(lbm LANGUAGES CXX CUDA)\nadd_executable(lbm lbm.cu)\n",
    )
    .unwrap();
    let regtune_bin = assert_cmd::cargo::cargo_bin("regtune");
    let configure = Process::new("cmake")
        .current_dir(dir.path())
        .args(["-S", ".", "-B", "build", "-DCMAKE_CUDA_ARCHITECTURES=90", "-DCMAKE_CUDA_FLAGS=-O3", "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON"])
        .arg(format!("-DCMAKE_CUDA_COMPILER={}", nvcc().display()))
        .arg(format!("-DCMAKE_CUDA_COMPILER_LAUNCHER={};cc", regtune_bin.display()))
        .output()
        .unwrap();
    assert!(configure.status.success(), "{}", String::from_utf8_lossy(&configure.stderr));
    let db = dir.path().join(".regtune/decisions.json");
    let batch = regtune().args(["batch", "-p"]).arg(dir.path().join("build")).arg("--db").arg(&db).output().unwrap();
    assert!(batch.status.success(), "{}", String::from_utf8_lossy(&batch.stderr));
    decide(&db, serde_json::json!({"warps_per_sm": 32}));
    let build = Process::new("cmake")
        .current_dir(dir.path())
        .args(["--build", "build"])
        .env("REGTUNE_DB", &db)
        .env("REGTUNE_VERBOSE", "1")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&build.stdout).into_owned() + &String::from_utf8_lossy(&build.stderr);
    assert!(build.status.success() && said.contains("lbm_d3q19_collide_stream on sm_90: warps-per-sm=32"), "{said}");
    assert!(!said.contains("warning"), "{said}");
    let deps = std::fs::read_to_string(dir.path().join("build/CMakeFiles/lbm.dir/lbm.cu.o.d")).unwrap();
    assert!(deps.contains("regtune_gpu.h"), "{deps}");
    assert!(dir.path().join("build/lbm").is_file());
}

/// Where both compilers build a file, tune keeps the other one's plain
/// build beside the candidates, and `regtune measure` plans it for the
/// kernel as a build of its own (`other:clang`, `other:nvcc`), never a
/// candidate: clang's code for nvcc's tune (91 registers; nvcc's has 80),
/// and for clang's tune nvcc's cubin byte for byte as nvcc builds it.
#[test]
fn each_compilers_code_is_planned_beside_the_others_candidates() {
    let (dir, file) = lbm_copy();
    // Tune into `db` (the compiler's flags after `--`); the entry and its code directory.
    let tune = |db: &Path, args: &[&str], flags: &[&str]| -> (Value, PathBuf) {
        let out = regtune()
            .args(["tune", "--offload-arch", "sm_90", "--candidates", "1", "--db"])
            .arg(db)
            .args(args)
            .arg(&file)
            .arg("--")
            .args(flags)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        // No note (progress lines of a slow machine aside).
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!stderr.lines().any(|l| l.contains("regtune: ") && !l.contains("still tuning")), "no note: {stderr}");
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(db).unwrap()).unwrap();
        let entry = doc["kernels"].as_object().unwrap().values().next().unwrap().clone();
        let code = db.with_file_name("decisions.code").join(entry["input_hash"].as_str().unwrap());
        (entry, code)
    };
    let registers = |cubin: &Path| {
        let kernels = regtune::gpu::nvptx::cubin::read(&std::fs::read(cubin).unwrap()).unwrap();
        kernels.into_iter().find(|k| k.name.starts_with("_Z24lbm_d3q19_collide_stream")).unwrap().registers
    };
    // The kernel's line of `measure --dry-run`.
    let planned = |db: &Path, symbol: &str| {
        let out = regtune().args(["measure", "--dry-run", "--db"]).arg(db).args(["--", "true"]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let said = String::from_utf8_lossy(&out.stderr).into_owned();
        let prefix = format!("would measure {symbol} on sm_90: plain, ");
        said.lines().find(|l| l.starts_with(&prefix)).unwrap_or_else(|| panic!("{prefix} in {said}")).to_string()
    };

    let nvcc_db = dir.path().join("nvcc/decisions.json");
    let (entry, code) = tune(&nvcc_db, &["--compiler", "nvcc"], &["-x", "cu", "-O3"]);
    let symbol = entry["symbol"].as_str().unwrap();
    assert_eq!((registers(&code.join("plain.cubin")), registers(&code.join("other-clang.cubin"))), (80, 91), "nvcc's, then clang's");
    assert!(planned(&nvcc_db, symbol).ends_with(", plain again, other:clang"), "{}", planned(&nvcc_db, symbol));
    assert!(!entry.to_string().contains("clang"), "the db holds none of it: {entry}");

    let clang_db = dir.path().join("clang/decisions.json");
    let (entry, code) = tune(&clang_db, &[], &["-O3"]);
    assert_eq!(entry["symbol"].as_str().unwrap(), symbol, "the same kernel");
    let other = code.join("other-nvcc.cubin");
    assert_eq!(std::fs::read(&other).unwrap(), nvcc_cubin(&file, &["-x", "cu", "-O3"]), "nvcc's cubin as its build makes it");
    assert_eq!((registers(&code.join("plain.cubin")), registers(&other)), (91, 80), "clang's, then nvcc's");
    assert!(planned(&clang_db, symbol).ends_with(", plain again, other:nvcc"), "{}", planned(&clang_db, symbol));

    // Asked not to: none built, and the earlier tune's goes.
    tune(&clang_db, &["--no-other-compiler"], &["-O3"]);
    assert!(!other.exists());
    assert!(planned(&clang_db, symbol).ends_with(", plain again"), "{}", planned(&clang_db, symbol));
}

/// clang's register caps on NVPTX are plain's PTX of the kernel with the
/// entry's `.maxnreg` edited, through ptxas (one ptxas run a step): each
/// is the kernel's code of the plugin's build of that cap, byte for byte,
/// and tune builds every occupancy step whatever `--candidates` says.
#[test]
fn clangs_caps_are_the_plugins_builds_and_every_step_is_built() {
    let dir = tempfile::tempdir().unwrap();
    let (file, doc, symbol, kept) = tuned_at_two_candidates(dir.path(), "lbm_d3q19.hip");
    let caps: Vec<(u64, std::path::PathBuf)> =
        kept.iter().filter_map(|(_, t, path)| t.cap_alone().map(|w| (u64::from(w), path.clone()))).collect();
    // LBM: 91 registers, 16 warps per SM; the steps above it are 20 to 64
    // warps (caps 96 down to 32): every one built, though --candidates is 2.
    let steps: Vec<u64> = caps.iter().map(|(w, _)| *w).collect();
    for w in [20, 24, 32, 40, 48, 64] {
        assert!(steps.contains(&w), "the step at {w} warps is built: {steps:?}");
    }
    for (warps, path) in &caps {
        // Spelled as older dbs did: NVIDIA's step as waves_per_eu reads the same.
        let cubin = plugins_build(dir.path(), &file, &doc, serde_json::json!({ "waves_per_eu": warps }));
        assert!(
            kernel_code(path, &symbol) == kernel_code(&cubin, &symbol),
            "warps-per-sm={warps}: the edited PTX's code is the plugin's build's"
        );
    }
}

/// An example tuned for sm_90 at `--candidates 2`, no class proven, its db
/// in `dir`: the file, the db, its kernel's symbol and kept candidates.
fn tuned_at_two_candidates(
    dir: &Path,
    example: &str,
) -> (std::path::PathBuf, Value, String, Vec<(String, regtune_decisions::Transforms, std::path::PathBuf)>) {
    let file = examples().into_iter().find(|f| f.ends_with(example)).unwrap();
    let db = dir.join("db/decisions.json");
    let tuned = regtune()
        .args(["tune", "--offload-arch", "sm_90", "--candidates", "2", "--evidence"])
        .arg(evidence_none())
        .arg("--db")
        .arg(&db)
        .arg(&file)
        .output()
        .unwrap();
    assert!(tuned.status.success(), "{}", String::from_utf8_lossy(&tuned.stderr));
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&db).unwrap()).unwrap();
    let entry = doc["kernels"].as_object().unwrap().values().next().unwrap().clone();
    let symbol = entry["symbol"].as_str().unwrap().to_string();
    let parsed: regtune_decisions::Entry = serde_json::from_value(entry).unwrap();
    let kept = regtune::measure::code::candidates(&dir.join("db/decisions.code"), &parsed);
    (file, doc, symbol, kept)
}

/// The example built by clang with the plugin, the db's one entry given
/// `transforms`: the cubin's path.
fn plugins_build(dir: &Path, file: &Path, doc: &Value, transforms: Value) -> std::path::PathBuf {
    let name = transforms.to_string().chars().filter(char::is_ascii_alphanumeric).collect::<String>();
    let one = dir.join(format!("{name}.json"));
    let mut d = doc.clone();
    d["kernels"].as_object_mut().unwrap().values_mut().next().unwrap()["transforms"] = transforms;
    std::fs::write(&one, serde_json::to_string(&d).unwrap()).unwrap();
    let cubin = dir.join(format!("{name}.cubin"));
    let out = cuda_compile(file, "sm_90")
        .env("REGTUNE_DECISIONS", &one)
        .arg(format!("-fpass-plugin={}", common::plugin().display()))
        .args(["-c", "-o"])
        .arg(&cubin)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    cubin
}

fn kernel_code(cubin: &Path, symbol: &str) -> Vec<u8> {
    regtune_runtime::code::kernel_code(&std::fs::read(cubin).unwrap(), symbol).unwrap()
}

/// A cap on rewrites is the rewrites' PTX with `.maxnreg` edited, one
/// ptxas run a step: the code of the plugin's build of both, byte for
/// byte; and every step of it is built whatever `--candidates` says.
#[test]
fn clangs_caps_on_a_rewrite_are_the_plugins_builds_and_every_step_is_built() {
    let dir = tempfile::tempdir().unwrap();
    let (file, doc, symbol, kept) = tuned_at_two_candidates(dir.path(), "long_lived.hip");
    let sunk: Vec<(u32, std::path::PathBuf)> = kept
        .iter()
        .filter(|(_, t, _)| t.sink && t.without_occupancy() == regtune_decisions::Transforms { sink: true, ..Default::default() })
        .filter_map(|(_, t, path)| Some((t.warps_per_sm?, path.clone())))
        .collect();
    // The MD kernel: 20 to 64 warps per SM above its own step, each with
    // sink, though --candidates is 2.
    let steps: Vec<u32> = sunk.iter().map(|(w, _)| *w).collect();
    for w in [20, 28, 32, 36, 40, 48, 64] {
        assert!(steps.contains(&w), "sink at {w} warps is built: {steps:?}");
    }
    for (warps, path) in &sunk {
        let cubin = plugins_build(dir.path(), &file, &doc, serde_json::json!({ "sink": true, "warps_per_sm": warps }));
        assert!(
            kernel_code(path, &symbol) == kernel_code(&cubin, &symbol),
            "sink + warps-per-sm={warps}: the edited PTX's code is the plugin's build's"
        );
    }
}
