//! Relocatable device code (`-fgpu-rdc`, issue 23) on examples/rdc, whose
//! force kernel calls a device function the other file defines: `report`
//! and `tune` link the files they are given as the build's device link
//! does, and name a kernel whose callee is in no given file; builds
//! through `regtune-hipcc` (use and tune mode) and CMake keep working, and
//! the device link of a build with the decisions reports exactly the usage
//! `tune` promised. The oracle is the build's own device link: lld's
//! resource-usage remarks (`-Xoffload-linker
//! -plugin-opt=-pass-remarks-analysis=kernel-resource-usage`).

// A test fails by panicking; `unwrap` says where.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::repo;
use serde_json::Value;

const FORCE: &str = "_Z17md_rdc_force_kickPKdS0_S0_PdS1_S1_S1_S1_S1_S0_PKiS0_S3_S3_S0_S0_iS1_S1_idddd";
const DRIFT: &str = "_Z12md_rdc_driftPdS_S_PKdS1_S1_id";

fn bin(name: &str) -> PathBuf {
    assert_cmd::cargo::cargo_bin(name)
}

fn example(name: &str) -> PathBuf {
    repo().join("examples/rdc").join(name)
}

/// A regtune binary in `dir`, with no regtune setting inherited and a
/// wrapper cache of its own.
fn regtune(name: &str, dir: &Path) -> Command {
    let mut c = Command::new(bin(name));
    c.current_dir(dir);
    for v in
        ["REGTUNE_MODE", "REGTUNE_COMPILER", "REGTUNE_DB", "REGTUNE_VERBOSE", "REGTUNE_WRAPPED", "REGTUNE_DECISIONS", "REGTUNE_INPUT_HASH"]
    {
        c.env_remove(v);
    }
    c.env("REGTUNE_CACHE_DIR", dir.join("cache"));
    // These tests check how RDC units are linked and tuned, not the GPU
    // evidence: every class counts as proven, so sink is decided.
    c.env("REGTUNE_EVIDENCE", all_proven());
    c
}

fn all_proven() -> PathBuf {
    repo().join("tests/fixtures/evidence-all-proven.json")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn ok(out: &Output, what: &str) {
    assert!(out.status.success(), "{what}: {}\n{}{}", out.status, text(&out.stdout), text(&out.stderr));
}

fn kernels(out: &Output) -> Vec<Value> {
    let doc: Value = serde_json::from_slice(&out.stdout).expect("regtune prints JSON");
    doc["kernels"].as_array().unwrap().clone()
}

fn row<'a>(rows: &'a [Value], symbol: &str) -> &'a Value {
    rows.iter().find(|r| r["symbol"] == symbol).unwrap_or_else(|| panic!("{symbol} in {rows:?}"))
}

/// Build examples/rdc in `dir` through regtune-hipcc (mode, db), as a
/// build does it: each file `-fgpu-rdc -c`, then the link, whose device
/// link prints its resource-usage remarks. Returns them per kernel.
fn build(dir: &Path, mode: &str, db: &Path) -> BTreeMap<String, BTreeMap<String, u64>> {
    let hipcc = |args: &[&str]| {
        let out = regtune("regtune-hipcc", dir).env("REGTUNE_MODE", mode).env("REGTUNE_DB", db).args(args).output().unwrap();
        ok(&out, &format!("regtune-hipcc {args:?} ({mode})"));
        assert_eq!(text(&out.stderr).lines().filter(|l| l.starts_with("regtune:")).count(), 0, "{mode}: {}", text(&out.stderr));
        out
    };
    for (source, object) in [("md_step.hip", "md_step.o"), ("thermostat.hip", "thermostat.o")] {
        let source = example(source);
        hipcc(&["--offload-arch=gfx90a", "-O3", "-fgpu-rdc", "-c", source.to_str().unwrap(), "-o", object]);
    }
    let linked = hipcc(&[
        "--offload-arch=gfx90a",
        "-fgpu-rdc",
        "md_step.o",
        "thermostat.o",
        "-o",
        "md_rdc",
        "-Xoffload-linker",
        "-plugin-opt=-pass-remarks-analysis=kernel-resource-usage",
        // clang asks lld for 8 LTO partitions, whose code generators print
        // their remarks at once: one partition keeps each kernel's lines
        // together (a loaded CI machine once split them).
        "-Xoffload-linker",
        "--lto-partitions=1",
    ]);
    link_remarks(&text(&linked.stdout))
}

/// lld's remarks, on its stdout: `<unknown>:0:0: Function Name: S`, then
/// `<unknown>:0:0:     VGPRs: 72`.
fn link_remarks(stderr: &str) -> BTreeMap<String, BTreeMap<String, u64>> {
    let mut all: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    let mut current = None;
    for line in stderr.lines() {
        let Some(body) = line.strip_prefix("<unknown>:0:0: ") else { continue };
        let Some((key, value)) = body.trim().split_once(": ") else { continue };
        if key == "Function Name" {
            current = Some(value.to_string());
            all.entry(value.to_string()).or_default();
        } else if let (Some(k), Ok(v)) = (&current, value.parse::<u64>()) {
            all.get_mut(k).unwrap().insert(key.to_string(), v);
        }
    }
    all
}

fn assert_usage(remarks: &BTreeMap<String, u64>, usage: &Value, what: &str) {
    for (remark, key) in
        [("VGPRs", "vgpr"), ("TotalSGPRs", "sgpr"), ("Occupancy [waves/SIMD]", "occupancy"), ("VGPRs Spill", "vgpr_spills")]
    {
        assert_eq!(remarks.get(remark).copied(), usage[key].as_u64(), "{what}: {remark}");
    }
}

/// `regtune tune` of both files (the build's flags), into `db`.
fn tune_both(dir: &Path, db: &Path) -> Vec<Value> {
    let out = regtune("regtune", dir)
        .args(["tune", "--format", "json", "--offload-arch", "gfx90a", "--db"])
        .arg(db)
        .arg(example("md_step.hip"))
        .arg(example("thermostat.hip"))
        .args(["--", "-O3", "-fgpu-rdc"])
        .output()
        .unwrap();
    ok(&out, "regtune tune md_step.hip thermostat.hip -- -O3 -fgpu-rdc");
    kernels(&out)
}

#[test]
fn tune_links_the_other_file_and_the_build_gets_exactly_the_tuned_usage() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.json");
    let plain = build(dir.path(), "off", &db);
    let rows = tune_both(dir.path(), &db);
    assert_eq!(rows.len(), 2, "both kernels of md_step.hip; thermostat.hip has none, and that is no error: {rows:?}");
    let force = row(&rows, FORCE);
    // The kernel's plain usage is the linked one: the build's own device link says so.
    assert_usage(&plain[FORCE], &force["before"], "tune's before, against the plain build's device link");
    assert_eq!(force["applied"], serde_json::json!(["sink"]), "{force}");
    assert!(force["after"]["occupancy"].as_u64() > force["before"]["occupancy"].as_u64(), "{force}");
    let tuned = build(dir.path(), "use", &db);
    assert_usage(&tuned[FORCE], &force["after"], "the use-mode build's device link");
    assert_usage(&tuned[DRIFT], &row(&rows, DRIFT)["after"], "the other kernel");
    // report of the built program reads the same code object.
    let out = regtune("regtune", dir.path()).args(["report", "--format", "json", "md_rdc"]).output().unwrap();
    ok(&out, "regtune report md_rdc");
    assert_eq!(row(&kernels(&out), FORCE)["usage"]["vgpr"], force["after"]["vgpr"]);
}

#[test]
fn report_links_the_files_given_and_equals_the_builds_device_link() {
    let dir = tempfile::tempdir().unwrap();
    let plain = build(dir.path(), "off", &dir.path().join("db.json"));
    let out = regtune("regtune", dir.path())
        .args(["report", "--format", "json"])
        .arg(example("md_step.hip"))
        .arg(example("thermostat.hip"))
        .args(["--", "-O3", "-fgpu-rdc"])
        .output()
        .unwrap();
    ok(&out, "report of both files");
    let rows = kernels(&out);
    for symbol in [FORCE, DRIFT] {
        assert_usage(&plain[symbol], &row(&rows, symbol)["usage"], symbol);
    }
    assert_eq!(row(&rows, FORCE)["line"], 17, "where the kernel is defined");
}

#[test]
fn a_kernel_whose_callee_is_in_no_given_file_is_named_and_the_rest_reported() {
    let md_step = example("md_step.hip");
    let out = regtune("regtune", &repo()).args(["report", "--format", "json"]).arg(&md_step).args(["--", "-fgpu-rdc"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        format!(
            "error: {0} for gfx90a: kernel md_rdc_force_kick calls `thermostat_scale(double, double, double, double)`, defined in none of \
             the files given; give the files that define it too, as the build links them (regtune report {0} FILE... -- -fgpu-rdc); \
             not reported\n",
            md_step.display()
        )
    );
    let rows = kernels(&out);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["symbol"], DRIFT);
    // tune: the same kernel is not tuned, the other one is.
    let dir = tempfile::tempdir().unwrap();
    let out = regtune("regtune", &repo())
        .args(["tune", "--format", "json", "--db"])
        .arg(dir.path().join("db.json"))
        .arg(&md_step)
        .args(["--", "-fgpu-rdc"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        format!(
            "error: {0} for gfx90a: kernel md_rdc_force_kick calls `thermostat_scale(double, double, double, double)`, defined in none of \
             the files given; give the files that define it too, as the build links them (regtune tune {0} FILE... -- -fgpu-rdc); \
             not tuned\n",
            md_step.display()
        )
    );
    let rows = kernels(&out);
    assert_eq!((rows.len(), rows[0]["symbol"].as_str()), (1, Some(DRIFT)));
}

#[test]
fn without_rdc_an_undefined_device_function_is_one_line_suggesting_it() {
    let md_step = example("md_step.hip");
    let out = regtune("regtune", &repo()).arg("report").arg(&md_step).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        format!(
            "error: {0} for gfx90a: its device code calls `thermostat_scale(double, double, double, double)`, which it does not define; \
             if another file defines it (relocatable device code), give -fgpu-rdc and that file too: \
             regtune tune {0} OTHER.hip -- -fgpu-rdc\n",
            md_step.display()
        )
    );
    // NVPTX does not link relocatable units: one line, no internal path.
    let out = regtune("regtune", &repo())
        .args(["report", "--offload-arch", "sm_90"])
        .arg(&md_step)
        .arg(example("thermostat.hip"))
        .args(["--", "-fgpu-rdc"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert_eq!(stderr.lines().count(), 2, "{stderr}");
    assert!(
        stderr.lines().all(|l| l.ends_with(": -fgpu-rdc for sm_90: regtune links relocatable device code for AMDGPU only, so far")),
        "{stderr}"
    );
}

#[test]
fn the_wrapper_builds_rdc_in_tune_mode_and_tunes_what_one_file_can_tell() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.json");
    // Each compile sees one file: the drift kernel is tuned, the force
    // kernel (its callee is in the other file) is left for a tune that sees both.
    let remarks = build(dir.path(), "tune", &db);
    assert_eq!(remarks.len(), 2, "{remarks:?}");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&db).unwrap()).unwrap();
    let symbols: Vec<&str> = doc["kernels"].as_object().unwrap().values().map(|e| e["symbol"].as_str().unwrap()).collect();
    assert_eq!(symbols, [DRIFT]);
    assert!(dir.path().join("md_rdc").is_file());
    // A -fgpu-rdc object holds bitcode, not a code object: said so, not "not an ELF file".
    let out = regtune("regtune", dir.path()).args(["report", "md_step.o"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        "error: md_step.o: its device code is relocatable (-fgpu-rdc) bitcode, which only the device link turns into a code object: \
         report the linked program, or the sources with `-- -fgpu-rdc`\n"
    );
}

#[test]
fn cmake_builds_the_rdc_example_and_batch_tunes_it_across_files() {
    assert!(Command::new("cmake").arg("--version").output().is_ok(), "cmake is missing: ci/bootstrap.sh installs it");
    let dir = tempfile::tempdir().unwrap();
    let build_dir = dir.path().join("build");
    let db = dir.path().join("db.json");
    let path = format!("{}:{}", bin("regtune").parent().unwrap().display(), std::env::var("PATH").unwrap_or_default());
    let cmake = |args: &[&str], mode: &str| {
        let mut c = Command::new("cmake");
        c.current_dir(dir.path()).env("PATH", &path).env("CXX", "regtune-hipcc").env("REGTUNE_MODE", mode).env("REGTUNE_DB", &db);
        c.env("REGTUNE_CACHE_DIR", dir.path().join("cache")).env("REGTUNE_EVIDENCE", all_proven());
        let out = c.args(args).output().unwrap();
        ok(&out, &format!("cmake {args:?} ({mode})"));
        out
    };
    let source = repo().join("examples/rdc");
    cmake(&["-S", source.to_str().unwrap(), "-B", build_dir.to_str().unwrap(), "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON"], "use");
    cmake(&["--build", build_dir.to_str().unwrap()], "tune");
    let out =
        regtune("regtune", dir.path()).args(["batch", "--format", "json", "-p"]).arg(&build_dir).arg("--db").arg(&db).output().unwrap();
    ok(&out, "regtune batch");
    let rows = kernels(&out);
    let force = row(&rows, FORCE);
    assert_eq!(force["applied"], serde_json::json!(["sink"]), "batch links both units: {force}");
    // The next build applies it: its program holds the tuned kernel.
    cmake(&["--build", build_dir.to_str().unwrap(), "--clean-first"], "use");
    let out = regtune("regtune", dir.path()).args(["report", "--format", "json"]).arg(build_dir.join("md_rdc")).output().unwrap();
    ok(&out, "regtune report md_rdc");
    let built = row(&kernels(&out), FORCE)["usage"].clone();
    for key in ["vgpr", "sgpr", "occupancy", "vgpr_spills"] {
        assert_eq!(built[key], force["after"][key], "{key}");
    }
}

#[test]
fn batch_names_a_kernel_whose_callee_no_unit_defines_every_run() {
    let dir = tempfile::tempdir().unwrap();
    let md_step = example("md_step.hip");
    let entry = serde_json::json!([{
        "directory": dir.path(),
        "file": md_step,
        "arguments": ["clang++-22", "-O3", "-x", "hip", "--offload-arch=gfx90a", "-fgpu-rdc", "-c", md_step, "-o", "md_step.o"],
    }]);
    std::fs::write(dir.path().join("compile_commands.json"), entry.to_string()).unwrap();
    let db = dir.path().join("db.json");
    for run in ["first", "second"] {
        let out = regtune("regtune", dir.path()).args(["batch", "--format", "json", "-p", "."]).arg("--db").arg(&db).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{run}: one unit failed");
        assert_eq!(
            text(&out.stderr),
            format!(
                "error: compile_commands.json entry 1 ({} for gfx90a): kernel md_rdc_force_kick calls \
                 `thermostat_scale(double, double, double, double)`, defined in no -fgpu-rdc unit of the compilation database; \
                 not tuned\n",
                md_step.display()
            ),
            "{run}"
        );
        let rows = kernels(&out);
        assert_eq!((rows.len(), rows[0]["symbol"].as_str()), (1, Some(DRIFT)), "{run}: the other kernel is tuned");
    }
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&db).unwrap()).unwrap();
    assert_eq!(doc["kernels"].as_object().unwrap().len(), 1, "the drift kernel's entry is kept");
}
