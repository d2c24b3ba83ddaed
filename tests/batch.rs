//! `regtune batch` over a generated compile_commands.json (both entry forms,
//! launchers, relative paths, quoted defines, per-entry targets) covering
//! examples/ plus small generated units, and `regtune merge`: every unit is
//! tuned, a second run tunes nothing, shards merged equal one run, an
//! interrupted run resumes, the HTML page renders every kernel in Chromium,
//! and bad input is reported per entry while the rest goes on.

// A test fails by panicking; `unwrap` says where.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;

use assert_cmd::Command;
use common::{evidence_all_proven, examples, repo};
use serde_json::{json, Value};

fn regtune(dir: &Path) -> Command {
    let mut cmd = Command::cargo_bin("regtune").unwrap();
    cmd.current_dir(dir);
    // Only the evidence a test passes.
    cmd.env_remove("REGTUNE_EVIDENCE");
    cmd
}

/// `--evidence` with every class proven: the full run decides what the
/// default decided before it followed GPU evidence (the MD kernel's sink),
/// and every run over its db tunes under the same table.
fn proven() -> String {
    evidence_all_proven().to_str().unwrap().to_string()
}

/// Limits far above what the codebase needs: the runs that are compared
/// (the full run, its shards, a warm rerun) then search the same variants
/// however loaded the machine is (a budget scaled to a slowed compile can
/// stop one run's search early and not another's).
const LIMITS: [&str; 4] = ["--time-budget", "600", "--variant-timeout", "300"];

/// `regtune batch -p COMPILE_DB --format json --db DB EXTRA...`.
fn batch(dir: &Path, compile_db: &Path, db: &Path, extra: &[&str]) -> Output {
    regtune(dir).arg("batch").arg("-p").arg(compile_db).args(["--format", "json", "--db"]).arg(db).args(extra).output().unwrap()
}

/// The JSON report of a run that must succeed.
fn batch_ok(dir: &Path, compile_db: &Path, db: &Path, extra: &[&str]) -> Value {
    let out = batch(dir, compile_db, db, extra);
    assert!(out.status.success(), "batch failed ({}): {}", out.status, String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("batch prints JSON")
}

fn kernels(doc: &Value) -> &Vec<Value> {
    doc["kernels"].as_array().expect("kernels")
}

fn db_kernels(db: &Path) -> Value {
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(db).unwrap()).unwrap();
    doc["kernels"].clone()
}

/// A small HIP unit whose kernel name, scale and a quoted string come from
/// `-D` flags and an include found through a relative `-I`.
const AXPY: &str = r#"#include <hip/hip_runtime.h>
#include "scale.h"

static_assert(sizeof(GREETING) == 12, "the quoted define arrives whole");

__global__ void KNAME(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = SCALE(a) * x[i] + y[i];
}
"#;

/// `root/src/NAME.hip`, `root/inc/scale.h`, `root/build/`; the entry
/// compiles `../src/NAME.hip` from `root/build` as the kernel `NAME`.
fn small_unit(root: &Path, name: &str, archs: &[&str]) -> Value {
    for d in ["src", "inc", "build"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    std::fs::write(root.join("inc/scale.h"), "#define SCALE(a) ((a) * 2.0f)\n").unwrap();
    std::fs::write(root.join(format!("src/{name}.hip")), AXPY).unwrap();
    let arch_flags: String = archs.iter().map(|a| format!(" --offload-arch={a}")).collect();
    json!({
        "directory": root.join("build"),
        "file": format!("../src/{name}.hip"),
        "command": format!(
            r#"regtune cc /usr/bin/clang++ -I../inc "-DKNAME={name}" '-DGREETING="hello world"'{arch_flags} -MD -MF {name}.o.d -o {name}.o -c ../src/{name}.hip"#
        ),
    })
}

fn write_compile_db(root: &Path, entries: &[Value]) -> PathBuf {
    let path = root.join("build/compile_commands.json");
    std::fs::create_dir_all(root.join("build")).unwrap();
    std::fs::write(&path, serde_json::to_string_pretty(&Value::from(entries.to_vec())).unwrap()).unwrap();
    path
}

/// Every example (alternately in the `arguments` and the `command` form,
/// behind launchers, one without a target of its own), the small unit for
/// two targets, and a C++ file that is not HIP.
fn codebase(root: &Path) -> PathBuf {
    let build = root.join("build");
    std::fs::create_dir_all(&build).unwrap();
    let mut entries = Vec::new();
    for (i, file) in examples().iter().enumerate() {
        let obj = format!("ex{i}.o");
        let arch: &[&str] = if i == 4 { &[] } else { &["--offload-arch=gfx90a"] };
        entries.push(if i % 2 == 0 {
            let mut args: Vec<String> = vec!["/usr/bin/clang++".into(), "-x".into(), "hip".into()];
            args.extend(arch.iter().map(|a| a.to_string()));
            args.extend(["-O3", "-MD", "-MT", &obj, "-MF", &format!("{obj}.d"), "-o", &obj, "-c"].map(String::from));
            args.push(file.display().to_string());
            json!({ "directory": build, "file": file, "arguments": args })
        } else {
            json!({
                "directory": build,
                "file": file,
                "command": format!("ccache /usr/bin/clang++ -DNDEBUG {} -O3 -o {obj} -c '{}'", arch.join(" "), file.display()),
            })
        });
    }
    entries.push(small_unit(root, "axpy_named", &["gfx90a", "gfx1100"]));
    std::fs::write(root.join("src/host.cpp"), "int main() { return 0; }\n").unwrap();
    entries.push(json!({ "directory": build, "file": "../src/host.cpp", "command": "c++ -O2 -o host.o -c ../src/host.cpp" }));
    write_compile_db(root, &entries)
}

/// The compile_commands entries: every example, the small unit and the C++ file.
fn entries() -> u64 {
    examples().len() as u64 + 2
}

/// The HIP units: every example and the small unit.
fn units() -> u64 {
    examples().len() as u64 + 1
}

/// The targets tuned: the small unit twice.
fn targets() -> u64 {
    examples().len() as u64 + 2
}

/// One full run over the codebase, shared by the tests that read it.
struct Full {
    root: PathBuf,
    compile_db: PathBuf,
    db: PathBuf,
    html: PathBuf,
    variants: PathBuf,
    report: Value,
}

fn full() -> &'static Full {
    static FULL: OnceLock<Full> = OnceLock::new();
    FULL.get_or_init(|| {
        let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("batch-full");
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        let compile_db = codebase(&root);
        let (db, html, variants) = (root.join("db/decisions.json"), root.join("report.html"), root.join("variants.jsonl"));
        let report = batch_ok(
            &root,
            &compile_db,
            &db,
            &[&LIMITS[..], &["--evidence", &proven(), "--html", html.to_str().unwrap(), "--record-all", variants.to_str().unwrap()]]
                .concat(),
        );
        Full { root, compile_db, db, html, variants, report }
    })
}

#[test]
fn every_hip_unit_is_tuned_with_its_own_flags_and_targets() {
    let f = full();
    let s = &f.report["summary"];
    assert_eq!(s["entries"], entries(), "{s}");
    assert_eq!(s["not_hip"], 1, "{s}");
    assert_eq!(s["units"], units(), "{s}");
    assert_eq!(s["targets"], json!({ "tuned": targets(), "cached": 0, "failed": 0 }), "{s}");
    assert_eq!(s["failed_units"], 0);

    let ks = kernels(&f.report);
    // One kernel per example on gfx90a (the entry without a target gets the default).
    for file in examples() {
        let unit = file.display().to_string();
        let of_unit: Vec<&Value> = ks.iter().filter(|k| k["unit"] == unit.as_str()).collect();
        assert_eq!(of_unit.len(), 1, "{unit}");
        assert_eq!(of_unit[0]["arch"], "gfx90a");
        let name = file.file_name().unwrap().to_str().unwrap();
        assert!(of_unit[0]["file"].as_str().unwrap().ends_with(name), "the kernel's own file: {}", of_unit[0]["file"]);
    }
    // The small unit: its -D name, relative include, quoted define and both targets.
    let small: BTreeSet<&str> =
        ks.iter().filter(|k| k["name"].as_str().unwrap().starts_with("axpy_named(")).map(|k| k["arch"].as_str().unwrap()).collect();
    assert_eq!(small, BTreeSet::from(["gfx90a", "gfx1100"]));
    assert_eq!(s["kernels"], ks.len());

    // `tune`'s keys, plus the unit's.
    for key in
        ["name", "symbol", "file", "line", "arch", "usage", "limiter", "before", "after", "applied", "suggested", "why", "unit", "cached"]
    {
        assert!(ks.iter().all(|k| !k[key].is_null()), "every row has `{key}`");
    }
    // The codebase picture adds up.
    let sum = |h: &Value| h.as_object().unwrap().values().map(|v| v.as_u64().unwrap()).sum::<u64>();
    assert_eq!(sum(&s["occupancy"]["before"]), ks.len() as u64);
    assert_eq!(sum(&s["occupancy"]["after"]), ks.len() as u64);
    let improved = ks.iter().filter(|k| k["after"]["occupancy"].as_u64() > k["before"]["occupancy"].as_u64()).count();
    assert_eq!(s["improved"], improved);
    assert!(improved >= 1, "md (sink) rises on gfx90a: {s}");
    assert!(s["register_limited"]["before"].as_u64() >= Some(2), "{s}");
    let suggesting = ks.iter().filter(|k| !k["suggested"].as_array().unwrap().is_empty()).count();
    assert_eq!(s["suggestions"]["kernels"], suggesting, "{s}");
    // Held by default: the Laplacian's cap, LBM's inexact pow2.
    assert!(s["suggestions"]["unroll_cap"].as_u64() >= Some(1) && s["suggestions"]["pow2"].as_u64() >= Some(1), "{s}");

    // The db holds an entry for every kernel row.
    let db = db_kernels(&f.db);
    assert_eq!(db.as_object().unwrap().len(), ks.len());
    for k in ks {
        let arch = k["arch"].as_str().unwrap();
        assert!(db.as_object().unwrap().values().any(|e| e["symbol"] == k["symbol"] && e["arch"] == arch), "{}", k["name"]);
    }
}

#[test]
fn a_second_run_tunes_nothing() {
    let f = full();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("decisions.json");
    std::fs::copy(&f.db, &db).unwrap();
    std::fs::copy(f.db.with_file_name("decisions.batch.json"), dir.path().join("decisions.batch.json")).unwrap();
    let before = std::fs::read(&db).unwrap();

    let again = batch_ok(&f.root, &f.compile_db, &db, &[&LIMITS[..], &["--evidence", &proven()]].concat());
    let s = &again["summary"];
    assert_eq!(s["targets"], json!({ "tuned": 0, "cached": targets(), "failed": 0 }), "{s}");
    assert_eq!(s["variants"], 0, "nothing compiled but preprocessing: {s}");
    assert!(again["units"].as_array().unwrap().iter().all(|u| u["status"] == "cached" && u["variants"] == 0));
    // The same rows, marked as taken from the records.
    let mut first = kernels(&f.report).clone();
    for k in &mut first {
        k["cached"] = json!(true);
    }
    assert_eq!(kernels(&again), &first);
    assert_eq!(std::fs::read(&db).unwrap(), before, "an all-cached run writes nothing");
}

#[test]
fn an_edited_unit_or_changed_flags_are_tuned_again_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let (a, b) = (small_unit(root, "kern_a", &["gfx90a"]), small_unit(root, "kern_b", &["gfx90a"]));
    let compile_db = write_compile_db(root, &[a.clone(), b.clone()]);
    let db = root.join("db.json");
    let status = |doc: &Value| -> Vec<String> {
        doc["units"].as_array().unwrap().iter().map(|u| u["status"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(status(&batch_ok(root, &compile_db, &db, &[])), ["tuned", "tuned"]);
    assert_eq!(status(&batch_ok(root, &compile_db, &db, &[])), ["cached", "cached"]);

    // An edit to a's source (through its header would do too).
    let src = root.join("src/kern_a.hip");
    std::fs::write(&src, std::fs::read_to_string(&src).unwrap().replace("+ y[i]", "- y[i]")).unwrap();
    assert_eq!(status(&batch_ok(root, &compile_db, &db, &[])), ["tuned", "cached"]);

    // A flag of b's entry.
    let mut b2 = b.clone();
    b2["command"] = Value::from(b["command"].as_str().unwrap().replace("-MD", "-DEXTRA=1 -MD"));
    let compile_db = write_compile_db(root, &[a, b2]);
    assert_eq!(status(&batch_ok(root, &compile_db, &db, &[])), ["cached", "tuned"]);

    // Other tuning options are another result.
    assert_eq!(status(&batch_ok(root, &compile_db, &db, &["--objective", "no-spill"])), ["tuned", "tuned"]);
    // So are other evidence (what the default may apply) and another
    // number of candidates for `regtune measure`.
    let evidence = ["--objective", "no-spill", "--evidence", &proven()];
    assert_eq!(status(&batch_ok(root, &compile_db, &db, &evidence)), ["tuned", "tuned"]);
    assert_eq!(status(&batch_ok(root, &compile_db, &db, &evidence)), ["cached", "cached"]);
    assert_eq!(status(&batch_ok(root, &compile_db, &db, &[&evidence[..], &["--candidates", "3"]].concat())), ["tuned", "tuned"]);
}

#[test]
fn two_shards_merged_equal_one_full_run() {
    let f = full();
    let dir = tempfile::tempdir().unwrap();
    let shard = |i: usize| {
        let db = dir.path().join(format!("shard{i}/decisions.json"));
        let doc = batch_ok(&f.root, &f.compile_db, &db, &[&LIMITS[..], &["--evidence", &proven(), "--shard", &format!("{i}/2")]].concat());
        (db, doc)
    };
    let (db1, doc1) = shard(1);
    let (db2, doc2) = shard(2);
    let files = |doc: &Value| -> BTreeSet<String> {
        doc["units"].as_array().unwrap().iter().map(|u| u["file"].as_str().unwrap().to_string()).collect()
    };
    let (f1, f2) = (files(&doc1), files(&doc2));
    assert!(!f1.is_empty() && !f2.is_empty(), "both shards have work: {f1:?} {f2:?}");
    assert!(f1.is_disjoint(&f2), "no unit in both shards");
    assert_eq!(f1.len() + f2.len(), units() as usize);
    assert_eq!(doc1["summary"]["in_other_shards"].as_u64().unwrap() as usize, f2.len());

    let merged = dir.path().join("merged/decisions.json");
    let out = regtune(&f.root).arg("merge").arg(&db1).arg(&db2).arg("-o").arg(&merged).args(["--format", "json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(db_kernels(&merged), db_kernels(&f.db), "the same db entries as one full run");
    // The merged report covers every kernel of the full run.
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["summary"]["kernels"], f.report["summary"]["kernels"]);
    assert_eq!(report["summary"]["occupancy"], f.report["summary"]["occupancy"]);
    // And a batch on the merged db finds everything already tuned.
    let again = batch_ok(&f.root, &f.compile_db, &merged, &[&LIMITS[..], &["--evidence", &proven()]].concat());
    assert_eq!(again["summary"]["targets"]["cached"], targets());
}

#[test]
fn an_interrupted_run_resumes_where_it_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let names = ["resume_a", "resume_b", "resume_c", "resume_d"];
    let entries: Vec<Value> = names.iter().map(|n| small_unit(root, n, &["gfx90a"])).collect();
    let compile_db = write_compile_db(root, &entries);
    let db = root.join("db.json");
    let records = root.join("db.batch.json");
    let recorded = || -> usize {
        std::fs::read_to_string(&records)
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .map_or(0, |v| v["units"].as_object().map_or(0, |u| u.len()))
    };
    let bin = assert_cmd::cargo::cargo_bin("regtune");
    let mut child = std::process::Command::new(bin)
        .current_dir(root)
        .args(["batch", "-j", "1", "--format", "json", "-p"])
        .arg(&compile_db)
        .arg("--db")
        .arg(&db)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    while recorded() == 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let done = recorded();
    assert!((1..names.len()).contains(&done), "stopped after {done} of {} units", names.len());
    assert!(!db_kernels(&db).as_object().unwrap().is_empty(), "what finished is in the db");

    let resumed = batch_ok(root, &compile_db, &db, &[]);
    let t = &resumed["summary"]["targets"];
    assert_eq!(t["cached"].as_u64().unwrap() as usize, done, "{t}");
    assert_eq!(t["tuned"].as_u64().unwrap() as usize, names.len() - done, "{t}");
    assert_eq!(db_kernels(&db).as_object().unwrap().len(), names.len());
}

#[test]
fn record_all_writes_every_variant_measured() {
    let f = full();
    let text = std::fs::read_to_string(&f.variants).unwrap();
    let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect();
    let variants: u64 = kernels(&f.report).iter().map(|k| k["variants"].as_u64().unwrap()).sum();
    assert!(lines.len() as u64 >= variants && variants > 0, "{} lines for {variants} variants", lines.len());
    for l in &lines {
        for key in ["unit", "kernel", "name", "target", "transforms", "spec", "baseline", "input_hash"] {
            assert!(!l[key].is_null(), "`{key}` in {l}");
        }
        assert!(l["compile_seconds"].as_f64().unwrap() > 0.0, "{l}");
        assert_eq!(l["status"] == "ok", !l["usage"].is_null(), "a usage exactly when it built: {l}");
        assert!(!l["transforms"].as_array().unwrap().is_empty(), "the plain compile is the baseline, not a variant: {l}");
    }
    // Every kernel that was searched shows up, on its target.
    for k in kernels(&f.report).iter().filter(|k| k["variants"].as_u64() > Some(0)) {
        assert!(lines.iter().any(|l| l["kernel"] == k["symbol"] && l["target"] == k["arch"]), "{}", k["name"]);
    }
}

#[test]
fn record_all_marks_variants_stopped_at_the_time_limit() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let compile_db = write_compile_db(root, &[small_unit(root, "axpy", &["gfx90a"]), example_unit(root, "long_lived.hip")]);
    let variants = root.join("variants.jsonl");
    let doc =
        batch_ok(root, &compile_db, &root.join("db.json"), &["--variant-timeout", "0.01", "--record-all", variants.to_str().unwrap()]);
    let lines: Vec<Value> = std::fs::read_to_string(&variants).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(!lines.is_empty());
    for l in &lines {
        assert_eq!(l["status"], "timed out", "{l}");
        assert!(l["usage"].is_null(), "{l}");
        assert!(l["compile_seconds"].as_f64().unwrap() < 5.0, "stopped near its 0.01 s limit: {l}");
    }
    let md = kernels(&doc).iter().find(|k| k["name"].as_str().unwrap().starts_with("md_lj_force_kick")).unwrap();
    assert!(md["applied"].as_array().unwrap().is_empty(), "{md}");
    assert_eq!(md["timed_out"].as_array().unwrap().len() as u64, md["variants"].as_u64().unwrap(), "{md}");
}

/// A compile_commands entry for an example, compiled from `root/build`.
fn example_unit(root: &Path, name: &str) -> Value {
    let file = repo().join("examples").join(name);
    json!({
        "directory": root.join("build"),
        "arguments": ["/usr/bin/clang++", "-x", "hip", "--offload-arch=gfx90a", "-O3", "-c", file.display().to_string()],
        "file": file,
    })
}

fn chromium() -> PathBuf {
    let found = ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| std::env::var_os("PATH").and_then(|p| std::env::split_paths(&p).map(|d| d.join(name)).find(|c| c.is_file())));
    found.unwrap_or_else(|| {
        panic!("chromium is not installed, so the HTML report cannot be checked: apt-get install -y chromium (ci/bootstrap.sh installs it)")
    })
}

#[test]
fn html_report_renders_every_kernel_row_in_chromium() {
    let f = full();
    let browser = chromium();
    let page = std::fs::read_to_string(&f.html).unwrap();
    assert!(!page.contains("src=\"http") && !page.contains("href=\"http") && !page.contains("url(http"), "nothing fetched");
    let profile = tempfile::tempdir().unwrap();
    let out = std::process::Command::new("timeout")
        .arg("120")
        .arg(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"])
        .args(["--disable-sync", "--no-first-run"])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", f.html.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "chromium failed: {}", String::from_utf8_lossy(&out.stderr));
    let dom = String::from_utf8_lossy(&out.stdout);
    let ks = kernels(&f.report);
    assert_eq!(dom.matches("<tr data-kernel=").count(), ks.len(), "one row per kernel in the rendered page");
    for k in ks {
        assert!(dom.contains(&format!(
            "<tr data-kernel=\"{}\" data-arch=\"{}\"",
            k["symbol"].as_str().unwrap(),
            k["arch"].as_str().unwrap()
        )));
    }
    assert_eq!(dom.matches("<svg").count(), 2, "both charts");
}

#[test]
fn table_and_csv_show_the_summary_and_every_kernel() {
    let f = full();
    let db = tempfile::tempdir().unwrap();
    let copy = db.path().join("decisions.json");
    std::fs::copy(&f.db, &copy).unwrap();
    std::fs::copy(f.db.with_file_name("decisions.batch.json"), db.path().join("decisions.batch.json")).unwrap();
    let run = |format: &str| {
        let out = regtune(&f.root)
            .arg("batch")
            .arg("-p")
            .arg(f.root.join("build"))
            .args(LIMITS)
            .args(["--evidence", &proven(), "--format", format, "--db"])
            .arg(&copy)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let table = run("table");
    assert!(
        table.starts_with(&format!(
            "{} HIP units from {} entries, 1 not HIP; targets: 0 tuned, {} cached, 0 failed",
            units(),
            entries(),
            targets()
        )),
        "{table}"
    );
    assert!(table.contains("occupancy (waves/SIMD)") && table.contains("lbm_d3q19_collide_stream"), "{table}");
    let csv = run("csv");
    assert_eq!(csv.lines().count(), 1 + kernels(&f.report).len(), "{csv}");
    assert!(csv.starts_with("unit,file,line,kernel,symbol,arch,status,vgpr_before,vgpr_after"), "{csv}");
}

#[test]
fn filter_keeps_only_the_units_whose_path_matches() {
    let f = full();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("decisions.json");
    std::fs::copy(&f.db, &db).unwrap();
    std::fs::copy(f.db.with_file_name("decisions.batch.json"), dir.path().join("decisions.batch.json")).unwrap();
    // Relative to the current directory (the fixture's root), or absolute.
    let doc = batch_ok(
        &f.root,
        &f.compile_db,
        &db,
        &[&LIMITS[..], &["--evidence", &proven(), "--filter", "src/*.hip", "--filter", "*/long_lived.hip"]].concat(),
    );
    let s = &doc["summary"];
    assert_eq!((s["units"].as_u64(), s["filtered_out"].as_u64()), (Some(2), Some(units() - 2)), "{s}");
    assert_eq!(s["targets"], json!({ "tuned": 0, "cached": 3, "failed": 0 }), "long_lived on gfx90a, the small unit twice: {s}");
    let units: BTreeSet<&str> = doc["units"].as_array().unwrap().iter().map(|u| u["file"].as_str().unwrap()).collect();
    assert!(units.iter().all(|u| u.ends_with("long_lived.hip") || u.ends_with("axpy_named.hip")), "{units:?}");
}

// ---- bad input ----------------------------------------------------------

fn stderr_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_missing_compile_db_is_one_line_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.json");
    let gone = dir.path().join("nowhere/compile_commands.json");
    let out = batch(dir.path(), &gone, &db, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr_of(&out),
        format!("error: cannot read compilation database {}: No such file or directory (os error 2)\n", gone.display())
    );
    // A build directory without one names the file it looked for.
    let out = batch(dir.path(), dir.path(), &db, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr_of(&out).contains(&format!("{}: No such file", dir.path().join("compile_commands.json").display())));
    assert!(!db.exists(), "nothing written");
}

/// Issue 23: `batch -p /nonexistent` exited 101, which scripts read as a panic.
#[test]
fn a_nonexistent_build_dir_is_a_usage_error_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let out = regtune(dir.path()).args(["batch", "-p", "/nonexistent"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stderr_of(&out), "error: cannot read compilation database /nonexistent: No such file or directory (os error 2)\n");
    assert!(out.stdout.is_empty());
}

/// Issue 23: the db is checked (readable, valid, writable directory) before any unit is tuned.
#[test]
fn a_db_that_cannot_be_saved_stops_batch_before_tuning() {
    let dir = tempfile::tempdir().unwrap();
    let compile_db = write_compile_db(dir.path(), &[small_unit(dir.path(), "axpy", &["gfx90a"])]);
    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, "[").unwrap();
    for (db, message) in [
        (broken.clone(), format!("decisions db {} is not valid JSON: EOF while parsing a list at line 1 column 1", broken.display())),
        (
            "/proc/regtune-db.json".into(),
            "cannot write decisions db /proc/regtune-db.json: No such file or directory (os error 2)".to_string(),
        ),
    ] {
        let out = batch(dir.path(), &compile_db, &db, &[]);
        assert_eq!(out.status.code(), Some(2));
        assert_eq!(stderr_of(&out), format!("error: {message}\n"));
        assert!(out.stdout.is_empty(), "nothing was tuned");
    }
}

#[test]
fn a_bad_evidence_file_is_one_line_naming_it_and_nothing_runs() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let compile_db = write_compile_db(root, &[small_unit(root, "axpy", &["gfx90a"])]);
    let db = root.join("db.json");
    let gone = root.join("no-such-evidence.json");
    // Nothing could run: a usage error's status, as for a bad compile db.
    let out = batch(root, &compile_db, &db, &["--evidence", gone.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    assert_eq!(stderr_of(&out), format!("error: cannot read evidence {}: No such file or directory (os error 2)\n", gone.display()));
    // From the environment too.
    let out = regtune(root).env("REGTUNE_EVIDENCE", &gone).arg("batch").arg("-p").arg(&compile_db).arg("--db").arg(&db).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    assert_eq!(stderr_of(&out), format!("error: cannot read evidence {}: No such file or directory (os error 2)\n", gone.display()));
    assert!(out.stdout.is_empty());
    assert!(!db.exists(), "nothing tuned, nothing written");
}

#[test]
fn a_malformed_compile_db_is_one_line_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("compile_commands.json");
    let db = dir.path().join("db.json");
    for (text, cause) in [
        ("[{\"directory\": ", "is not valid JSON: EOF while parsing a value at line 1 column 15"),
        ("{\"directory\": \"/x\"}", "is not a JSON array of entries (found an object)"),
    ] {
        std::fs::write(&path, text).unwrap();
        let out = batch(dir.path(), &path, &db, &[]);
        assert_eq!(out.status.code(), Some(2));
        assert_eq!(stderr_of(&out), format!("error: compilation database {} {cause}\n", path.display()));
    }
}

#[test]
fn bad_entries_are_reported_each_with_its_cause_and_the_rest_is_tuned() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let good = small_unit(root, "good_kernel", &["gfx90a"]);
    let db = root.join("db.json");
    // A first run records the good unit; the bad ones must not lose it.
    batch_ok(root, &write_compile_db(root, std::slice::from_ref(&good)), &db, &[]);
    let kept = db_kernels(&db);

    std::fs::write(root.join("src/broken.hip"), "__global__ void broken(float* p) { p[0] = undeclared; }\n").unwrap();
    let build = root.join("build");
    let entries = vec![
        good,
        json!({ "directory": root.join("gone"), "file": "../src/good_kernel.hip", "arguments": ["clang++", "-c", "../src/good_kernel.hip"] }),
        json!({ "directory": build, "file": "../src/deleted.hip", "arguments": ["clang++", "-c", "../src/deleted.hip"] }),
        json!({ "directory": build, "file": "../src/broken.hip", "arguments": ["clang++", "-c", "../src/broken.hip"] }),
        json!({ "directory": build, "arguments": ["clang++", "-c", "x.hip"] }),
        json!({ "directory": build, "file": "q.hip", "command": "clang++ -DX='unterminated -c q.hip" }),
        json!({ "directory": build, "file": "../src/good_kernel.hip", "command": "clang++ --offload-arch=gfx9999 -DOTHER -I../inc -DKNAME=k -c ../src/good_kernel.hip" }),
    ];
    let out = batch(root, &write_compile_db(root, &entries), &db, &[]);
    let stderr = stderr_of(&out);
    assert_eq!(out.status.code(), Some(6), "six entries failed: {stderr}");
    let doc: Value = serde_json::from_slice(&out.stdout).expect("the report still comes");
    let units = doc["units"].as_array().unwrap();
    let cause = |entry: u64| -> String {
        let u = units.iter().find(|u| u["entry"] == entry).unwrap_or_else(|| panic!("entry {entry} in {units:?}"));
        u["error"].as_str().unwrap_or_default().to_string()
    };
    assert_eq!(units.iter().find(|u| u["entry"] == 1).unwrap()["status"], "cached");
    assert!(cause(2).starts_with("its directory ") && cause(2).ends_with("/gone is gone"), "{}", cause(2));
    assert!(cause(3).ends_with("src/deleted.hip is gone"), "{}", cause(3));
    assert!(cause(4).starts_with("clang failed to compile ") && cause(4).contains("broken.hip for gfx90a"), "{}", cause(4));
    assert_eq!(cause(5), "has no `file`");
    assert!(cause(6).contains("unbalanced quote"), "{}", cause(6));
    assert!(cause(7).starts_with("unknown target `gfx9999`"), "{}", cause(7));
    for entry in 2..=7 {
        assert!(stderr.contains(&format!("error: compile_commands.json entry {entry} (")), "entry {entry}: {stderr}");
    }
    assert!(stderr.contains("use of undeclared identifier 'undeclared'"), "clang's own diagnostic: {stderr}");
    assert_eq!(doc["summary"]["failed_units"], 6);
    assert_eq!(db_kernels(&db), kept, "nothing already tuned is lost");
}

#[test]
fn the_exit_status_counts_failed_units_up_to_100() {
    let dir = tempfile::tempdir().unwrap();
    let entries: Vec<Value> = (0..105)
        .map(|i| json!({ "directory": dir.path().join(format!("gone{i}")), "file": "k.hip", "arguments": ["clang++", "-c", "k.hip"] }))
        .collect();
    let out = batch(dir.path(), &write_compile_db(dir.path(), &entries), &dir.path().join("db.json"), &[]);
    assert_eq!(out.status.code(), Some(100));
    assert_eq!(stderr_of(&out).lines().count(), 105, "one line per entry");
}

#[test]
fn merge_names_a_missing_db() {
    let dir = tempfile::tempdir().unwrap();
    let gone = dir.path().join("shard9.json");
    let out = regtune(dir.path()).arg("merge").arg(&gone).arg("-o").arg(dir.path().join("out.json")).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr_of(&out), format!("error: cannot read decisions db {}: no such file\n", gone.display()));
}

#[test]
fn cmake_project_is_tuned_from_its_build_directory() {
    let project = repo().join("examples/cmake");
    assert!(project.join("CMakeLists.txt").is_file(), "examples/cmake/CMakeLists.txt is missing");
    assert!(std::process::Command::new("cmake").arg("--version").output().is_ok(), "cmake is not installed: run ci/bootstrap.sh");
    let dir = tempfile::tempdir().unwrap();
    let build = dir.path().join("build");
    let out = std::process::Command::new("cmake")
        .arg("-S")
        .arg(&project)
        .arg("-B")
        .arg(&build)
        .arg("-DCMAKE_EXPORT_COMPILE_COMMANDS=ON")
        // The compiler CMake checks; batch compiles with regtune's own clang.
        .arg("-DCMAKE_CXX_COMPILER=clang++-22")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cmake configure failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let entries: Value = serde_json::from_str(&std::fs::read_to_string(build.join("compile_commands.json")).unwrap()).unwrap();
    let doc = batch_ok(dir.path(), &build, &dir.path().join("db.json"), &[]);
    let s = &doc["summary"];
    assert!(s["units"].as_u64() > Some(0), "the project has HIP units: {s}");
    assert_eq!(s["entries"].as_u64(), Some(entries.as_array().unwrap().len() as u64));
    assert_eq!(s["targets"]["failed"], 0, "{s}");
    assert!(!kernels(&doc).is_empty(), "{s}");
    let again = batch_ok(dir.path(), &build, &dir.path().join("db.json"), &[]);
    assert_eq!(again["summary"]["targets"]["tuned"], 0, "a second run tunes nothing");
}
