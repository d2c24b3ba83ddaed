//! `regtune tune` on the examples, checked against the real backend: it
//! never makes a kernel worse, each transform decides at least one kernel,
//! the db round-trips, and a plain `clang -fpass-plugin` build with the db
//! produces exactly the usage the tuner promised.

// A test fails by panicking; `unwrap` says where.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::OnceLock;

use assert_cmd::Command;
use common::{evidence_all_proven, evidence_none, examples, hip_device_compile, parse_remarks, repo};
use serde_json::Value;

/// `--evidence` with the all-proven fixture: tune decides what the
/// default decided before it followed GPU evidence (sink, exact pow2,
/// occupancy targets, unroll caps that remove spills), for the tests of
/// how decisions are made and applied.
fn proven() -> String {
    evidence_all_proven().to_str().unwrap().to_string()
}

/// `--evidence` with nothing ever timed: the default applies nothing unasked.
fn unproven() -> String {
    evidence_none().to_str().unwrap().to_string()
}

/// `regtune tune` on `files`; `extra` are options, then after `--` clang's.
fn tune(files: &[&Path], arch: &str, db: &Path, extra: &[&str]) -> Vec<Value> {
    let split = extra.iter().position(|a| *a == "--").unwrap_or(extra.len());
    let out = Command::cargo_bin("regtune")
        .unwrap()
        .current_dir(repo())
        // Only what a test passes: no table from the environment.
        .env_remove("REGTUNE_EVIDENCE")
        .args(["tune", "--format", "json", "--offload-arch", arch, "--db"])
        .arg(db)
        .args(&extra[..split])
        .args(files)
        .args(&extra[split..])
        .output()
        .unwrap();
    assert!(out.status.success(), "tune failed: {}", String::from_utf8_lossy(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("tune prints JSON");
    doc["kernels"].as_array().unwrap().clone()
}

fn spills(u: &Value) -> u64 {
    u["vgpr_spills"].as_u64().unwrap() + u["sgpr_spills"].as_u64().unwrap()
}

fn all_examples() -> Vec<std::path::PathBuf> {
    examples()
}

/// Every example tuned on gfx90a under the all-proven table (what the
/// default decided before it followed the evidence), shared by the tests.
fn examples_on_gfx90a_all_proven() -> &'static Vec<Value> {
    static ROWS: OnceLock<Vec<Value>> = OnceLock::new();
    ROWS.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let files = all_examples();
        let refs: Vec<&Path> = files.iter().map(|p| p.as_path()).collect();
        tune(&refs, "gfx90a", &dir.path().join("db.json"), &["--evidence", &proven()])
    })
}

/// A row's labels in `list` ("applied", "suggested").
fn labels_of(k: &Value, list: &str) -> Vec<String> {
    k[list].as_array().unwrap().iter().map(|l| l.as_str().unwrap().to_string()).collect()
}

/// How a suggestion the evidence holds back for speed alone ends: the GPU decides.
const MEASURE_HINT: &str =
    "`regtune measure -- PROGRAM ARGS` times it inside your program and keeps it only if faster with the same results";
/// How one that also changes rounding or rests on the callers ends.
const CONFIRM_HINT: &str =
    "`regtune measure -- PROGRAM ARGS` times it inside your program; once you confirm it, the build uses it only if faster with the same results";

#[test]
fn without_evidence_nothing_is_applied_unasked_and_the_former_decisions_are_suggested() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.json");
    let files = all_examples();
    let refs: Vec<&Path> = files.iter().map(|p| p.as_path()).collect();
    let none = tune(&refs, "gfx90a", &db, &["--evidence", &unproven()]);
    assert_eq!(none.len(), files.len(), "one kernel per example");
    // Nothing applied, nothing changed, nothing decided in the db.
    for k in &none {
        assert!(labels_of(k, "applied").is_empty(), "{k}");
        assert_eq!(k["after"], k["before"], "{k}");
        let e = db_entry(&db, k);
        assert!(e.get("transforms").is_none_or(|t| t.as_object().unwrap().is_empty()), "nothing decided: {e}");
        // A suggestion held for speed says how to time it: held for speed
        // alone, measure keeps it; with a rounding change or a caller
        // assumption too, only once confirmed; held only for those, it
        // names no measurement.
        let reasons = k["suggestion_reasons"].as_array().unwrap();
        let speed = |r: &Value| r == "unproven" || r == "trades-ilp";
        let timed = reasons.iter().any(speed);
        let speed_alone = timed && reasons.iter().all(speed);
        for m in k["suggestions"].as_array().unwrap() {
            let m = m.as_str().unwrap();
            assert_eq!(m.ends_with(MEASURE_HINT), speed_alone, "{k}");
            assert_eq!(m.ends_with(CONFIRM_HINT), timed && !speed_alone, "{k}");
            assert_eq!(m.contains("regtune measure"), timed, "{k}");
        }
        if !reasons.is_empty() {
            assert_eq!(k["reason"], reasons[0], "the first reason it waits for: {k}");
        }
    }
    // What the all-proven table decides is what the default now suggests,
    // for the reason each class waits for, reaching at least as far.
    let proven_rows = examples_on_gfx90a_all_proven();
    let mut former = 0;
    for p in proven_rows.iter().filter(|p| !labels_of(p, "applied").is_empty()) {
        former += 1;
        let k = none.iter().find(|k| k["symbol"] == p["symbol"]).expect("the same kernels");
        let suggested = labels_of(k, "suggested");
        for label in labels_of(p, "applied") {
            assert!(suggested.contains(&label), "{label}, decided with every class proven, is suggested without evidence: {k}");
            let reason = match label.split('=').next().unwrap() {
                "sink" | "pow2" => "unproven",
                "unroll-cap" | "waves-per-eu" => "trades-ilp",
                other => panic!("{other} is applied only when asked: {p}"),
            };
            assert!(k["suggestion_reasons"].as_array().unwrap().contains(&Value::from(reason)), "{label}: {k}");
        }
        let e = db_entry(&db, k);
        assert_eq!(e["suggested"][0]["confirmed"], false, "{e}");
        assert!(e["suggested"][0]["usage"]["occupancy"].as_u64() >= p["after"]["occupancy"].as_u64(), "{e}\n{p}");
    }
    assert!(former >= 1, "the all-proven table decides something: {proven_rows:?}");
    // The MD kernel: sink decided with the all-proven table, suggested without.
    let md = |rows: &[Value]| rows.iter().find(|k| k["name"].as_str().unwrap().starts_with("md_lj_force_kick(")).unwrap().clone();
    let p = md(proven_rows);
    assert_eq!((p["applied"].clone(), p["reason"].clone()), (serde_json::json!(["sink"]), Value::from("raises-occupancy")), "{p}");
    assert_eq!(p["after"]["occupancy"], 8, "{p}");
    let k = md(&none);
    assert_eq!(k["reason"], "unproven", "{k}");
    assert_eq!(k["suggested"], serde_json::json!(["sink", "noalias=pos_x", "noalias=pos_y"]), "{k}");
    assert_eq!(k["suggestion_reasons"], serde_json::json!(["unproven", "assumes-caller"]), "{k}");
    let message = k["suggestions"][0].as_str().unwrap();
    assert!(message.starts_with("moving definitions next to their first use (sink) and `__restrict__` on `pos_x`, `pos_y` would reach occupancy 8 (72 → 48 VGPRs)"), "{message}");
    assert!(
        message.contains(
            "it computes the same values, but no GPU has timed it on real kernels yet (sink); confirm it after timing the kernel"
        ),
        "{message}"
    );
    assert!(message.ends_with(CONFIRM_HINT), "{message}");
    assert!(k["why"].as_str().unwrap().starts_with("suggested, not applied (unproven, assumes-caller): sink"), "{k}");
}

/// A confirmed suggestion becomes the decision on the next tune and stays
/// confirmed in the db, so every later tune of the same input applies it
/// (before, the tune after next forgot the user's word).
#[test]
fn a_confirmed_suggestion_stays_applied_on_every_later_tune() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("decisions.json");
    let file = repo().join("examples/laplacian3d.hip");
    let entry = || -> Value {
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&db).unwrap()).unwrap();
        doc["kernels"].as_object().unwrap().values().next().unwrap().clone()
    };
    tune(&[&file], "sm_90", &db, &["--evidence", &unproven()]);
    let first = entry();
    assert_eq!(first["transforms"], serde_json::json!({}), "nothing applied unasked: {first}");
    let held = first["suggested"][0]["transforms"].clone();
    assert!(held["unroll_cap"].is_u64(), "{first}");
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(&db).unwrap()).unwrap();
    let e = doc["kernels"].as_object_mut().unwrap().values_mut().next().unwrap();
    e["suggested"][0]["confirmed"] = Value::Bool(true);
    std::fs::write(&db, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    for turn in 2..=3 {
        tune(&[&file], "sm_90", &db, &["--evidence", &unproven()]);
        let e = entry();
        assert_eq!(e["transforms"], held, "tune {turn} applies the confirmed build: {e}");
        let kept: Vec<&Value> = e["suggested"].as_array().unwrap().iter().filter(|s| s["confirmed"] == true).collect();
        assert_eq!(kept.len(), 1, "tune {turn} keeps the user's word: {e}");
        assert_eq!(kept[0]["transforms"], held);
    }
}

#[test]
fn a_bad_evidence_file_is_one_line_naming_it_and_nothing_is_tuned() {
    let dir = tempfile::tempdir().unwrap();
    let gone = dir.path().join("no-such-evidence.json");
    let malformed = dir.path().join("malformed.json");
    std::fs::write(&malformed, "{\"records\": [").unwrap();
    let unknown = dir.path().join("unknown.json");
    std::fs::write(&unknown, r#"{"records":[{"class":"magic","kernels":9,"min":1.0,"median":1.0,"max":1.0}]}"#).unwrap();
    let cases = [
        (&gone, format!("error: cannot read evidence {}: No such file or directory (os error 2)", gone.display())),
        (&malformed, format!("error: evidence {} is not valid: EOF while parsing a list at line 1 column 13", malformed.display())),
        (&unknown, format!("error: evidence {}: unknown class `magic`", unknown.display())),
    ];
    for (path, line) in &cases {
        // As an option, and from the environment (as the wrapper's tune mode passes it).
        for from_env in [false, true] {
            let db = dir.path().join("db.json");
            let mut cmd = Command::cargo_bin("regtune").unwrap();
            cmd.current_dir(repo())
                .env_remove("REGTUNE_EVIDENCE")
                .args(["tune", "--format", "json", "--offload-arch", "gfx90a", "--db"])
                .arg(&db);
            if from_env {
                cmd.env("REGTUNE_EVIDENCE", path);
            } else {
                cmd.arg("--evidence").arg(path);
            }
            let out = cmd.arg("examples/long_lived.hip").output().unwrap();
            let ctx = format!("{} (env: {from_env})", path.display());
            assert_eq!(out.status.code(), Some(1), "{ctx}: {}", String::from_utf8_lossy(&out.stderr));
            assert_eq!(String::from_utf8_lossy(&out.stderr), format!("{line}\n"), "{ctx}");
            assert!(out.stdout.is_empty(), "{ctx}: nothing tuned, nothing printed");
            assert!(!db.exists(), "{ctx}: no db written");
        }
    }
}

#[test]
fn never_lowers_occupancy_or_adds_spills_on_any_example() {
    let files = all_examples();
    let refs: Vec<&Path> = files.iter().map(|p| p.as_path()).collect();
    let ev = proven();
    for arch in ["gfx90a", "gfx1100"] {
        let dir = tempfile::tempdir().unwrap();
        let kernels = if arch == "gfx90a" {
            examples_on_gfx90a_all_proven().clone()
        } else {
            tune(&refs, arch, &dir.path().join("db.json"), &["--evidence", &ev])
        };
        for k in kernels {
            let (b, a) = (&k["before"], &k["after"]);
            let name = k["name"].as_str().unwrap();
            assert!(a["occupancy"].as_u64() >= b["occupancy"].as_u64(), "{name} on {arch}: occupancy went down");
            assert!(spills(a) <= spills(b), "{name} on {arch}: spills went up");
            assert!(a["scratch_bytes"].as_u64() <= b["scratch_bytes"].as_u64(), "{name} on {arch}: scratch went up");
            assert_eq!(k["usage"], k["after"], "{name}: usage is the tuned usage");
            if k["applied"].as_array().unwrap().is_empty() {
                assert_eq!(a, b, "{name} on {arch}: nothing applied, so nothing changed");
            } else {
                assert!(a["occupancy"].as_u64() > b["occupancy"].as_u64(), "{name} on {arch}: applied without a gain");
            }
            assert!(!k["why"].as_str().unwrap().is_empty());
        }
    }
}

#[test]
fn pow2_of_ocml_pow_is_suggested_unless_the_build_allows_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = repo().join("examples/lbm_d3q19.hip");
    // A db each: an earlier decision in the db would be kept.
    // With every class proven: exact pow2 is applied unasked, inexact never.
    let ev = proven();
    let lbm = |extra: &[&str]| {
        let db = dir.path().join(format!("{}.json", extra.join("")));
        let mut args = vec!["--evidence", ev.as_str()];
        args.extend_from_slice(extra);
        tune(&[&file], "gfx90a", &db, &args)[0].clone()
    };
    let labels =
        |k: &Value, list: &str| -> Vec<String> { k[list].as_array().unwrap().iter().map(|l| l.as_str().unwrap().to_string()).collect() };
    // By default ocml's pow stays (x * x would change the last bit): the
    // kernel keeps its plain build, and the rewrite is suggested with what
    // it would reach.
    let k = lbm(&["--noalias", "off"]);
    assert!(labels(&k, "applied").is_empty(), "{k}");
    assert_eq!(k["after"], k["before"], "{k}");
    assert_eq!(labels(&k, "suggested"), ["pow2=inexact"], "{k}");
    assert_eq!(k["reason"], "changes-rounding", "{k}");
    assert_eq!(k["suggestion_reasons"], serde_json::json!(["changes-rounding"]), "{k}");
    let message = k["suggestions"][0].as_str().unwrap();
    assert!(message.starts_with("`pow(x, 2.0)` → `x * x` would reach occupancy 5 (99 → 82 VGPRs"), "{message}");
    assert!(message.contains("not correctly rounded"), "{message}");
    // --pow2 apply: the user's word; -ffast-math: the build allows it (afn).
    for (extra, label) in
        [(&["--noalias", "off", "--pow2", "apply"][..], "pow2=inexact"), (&["--noalias", "off", "--", "-ffast-math"][..], "pow2")]
    {
        let k = lbm(extra);
        assert!(labels(&k, "applied").contains(&label.to_string()), "{extra:?}: {k}");
        assert!(k["after"]["occupancy"].as_u64() > k["before"]["occupancy"].as_u64(), "{extra:?}: {k}");
        assert_eq!(spills(&k["after"]), 0, "{extra:?}: {k}");
        assert_eq!(k["reason"], "raises-occupancy", "{extra:?}: {k}");
        assert!(labels(&k, "suggested").is_empty(), "{extra:?}: {k}");
    }
    // --pow2 off: not even tried.
    let k = lbm(&["--noalias", "off", "--pow2", "off"]);
    assert!(labels(&k, "suggested").is_empty() && labels(&k, "applied").is_empty(), "{k}");
}

#[test]
fn unroll_caps_are_applied_only_where_they_remove_spills() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.json");
    let lap = repo().join("examples/laplacian3d.hip");
    // Unroll caps (and sink) proven on the GPU: still applied only where
    // they remove spills.
    let ev = proven();
    let ev = ["--evidence", ev.as_str()];
    // Fully unrolled, no spills: a cap of 1 reaches occupancy 8 by giving up
    // unrolling, which is suggested, never applied.
    let k = &tune(&[&lap], "gfx90a", &db, &ev)[0];
    // waves-per-eu=6 alone would reach 7, but the cost model sees its
    // schedule serialize the loads: held too, so nothing is applied.
    assert!(k["applied"].as_array().unwrap().is_empty(), "{k}");
    assert_eq!(k["reason"], "trades-ilp", "{k}");
    let no_cap = |k: &Value, list: &str| !k[list].as_array().unwrap().iter().any(|l| l.as_str().unwrap().starts_with("unroll-cap"));
    assert!(no_cap(k, "applied"), "{k}");
    assert!(!no_cap(k, "suggested"), "{k}");
    assert!(k["suggestion_reasons"].as_array().unwrap().contains(&Value::from("trades-ilp")), "{k}");
    assert!(k["suggestions"][0].as_str().unwrap().contains("would reach occupancy 8"), "{k}");
    let entry = db_entry(&db, k);
    assert_eq!(entry["suggested"][0]["reasons"], serde_json::json!(["trades-ilp"]), "{entry}");
    assert!(entry["transforms"].get("unroll_cap").is_none(), "a suggestion stays out of what builds apply: {entry}");
    // `#pragma unroll 8` spills (22 VGPRs, 76 B of scratch on gfx90a): a cap
    // removes the spills and is applied.
    let k = &tune(&[&lap], "gfx90a", &db, &[ev[0], ev[1], "--", "-DTILE_UNROLL=8"])[0];
    assert!(spills(&k["before"]) > 0 && k["before"]["scratch_bytes"].as_u64() > Some(0), "{k}");
    assert!(!no_cap(k, "applied"), "{k}");
    assert_eq!(k["reason"], "removes-spills", "{k}");
    assert_eq!((spills(&k["after"]), k["after"]["scratch_bytes"].as_u64()), (0, Some(0)), "{k}");
    // Sinking removes work, not parallelism: still applied on the MD kernel.
    let md = repo().join("examples/long_lived.hip");
    let k = &tune(&[&md], "gfx90a", &db, &ev)[0];
    assert_eq!(k["applied"], serde_json::json!(["sink"]), "{k}");
    assert_eq!(k["reason"], "raises-occupancy", "{k}");
}

/// The db entry tune wrote for a kernel row.
fn db_entry(db: &Path, k: &Value) -> Value {
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(db).unwrap()).unwrap();
    doc["kernels"].as_object().unwrap().values().find(|e| e["symbol"] == k["symbol"]).expect("entry").clone()
}

/// The kind of a label: "unroll-cap=4" → "unroll-cap".
fn kinds(kernels: &[Value], list: &str) -> BTreeSet<String> {
    kernels
        .iter()
        .flat_map(|k| k[list].as_array().unwrap().clone())
        .map(|l| l.as_str().unwrap().split('=').next().unwrap().to_string())
        .collect()
}

#[test]
fn each_transform_decides_at_least_one_kernel() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.json");
    let files = all_examples();
    let refs: Vec<&Path> = files.iter().map(|p| p.as_path()).collect();
    // Every class the evidence can prove, proven: what remains is the rule.
    let ev = proven();
    let ev = ev.as_str();
    let mut seen = kinds(&tune(&refs, "gfx90a", &db, &["--evidence", ev, "--noalias", "apply", "--pow2", "apply"]), "applied");
    // A cap is applied where it removes spills: the Laplacian unrolled 8 times.
    let lap = repo().join("examples/laplacian3d.hip");
    seen.extend(kinds(&tune(&[&lap], "gfx90a", &db, &["--evidence", ev, "--", "-DTILE_UNROLL=8"]), "applied"));
    // The spilling kernel, where the no-spill objective decides: noalias
    // (applied on request) lowers its spills, and so does a block size,
    // a fact about the caller that is only applied when given.
    let spill = repo().join("examples/launch_bounds_spill.hip");
    let no_spill = ["--evidence", ev, "--objective", "no-spill", "--noalias", "apply"];
    seen.extend(kinds(&tune(&[&spill], "gfx90a", &db, &no_spill), "applied"));
    seen.extend(kinds(&tune(&[&spill], "gfx90a", &db, &["--evidence", ev, "--block-size", "256", "--objective", "no-spill"]), "applied"));
    for t in ["pow2", "sink", "unroll-cap", "noalias", "waves-per-eu", "launch-bounds"] {
        assert!(seen.contains(t), "{t} decided no kernel; applied kinds: {seen:?}");
    }
}

#[test]
fn assumptions_are_suggested_not_applied_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let spill = repo().join("examples/launch_bounds_spill.hip");
    let assumed = |l: &Value| {
        let l = l.as_str().unwrap();
        l.starts_with("launch-bounds") || l.starts_with("noalias")
    };
    // The block size alone (noalias off): suggested, never applied.
    // Every class of speed-only transform proven: what stays suggested is
    // what rests on the caller.
    let ev = proven();
    let ev = ev.as_str();
    let only_block = ["--evidence", ev, "--block-size", "auto", "--objective", "no-spill", "--noalias", "off"];
    let k = &tune(&[&spill], "gfx90a", &dir.path().join("a.json"), &only_block)[0];
    assert!(!k["applied"].as_array().unwrap().iter().any(assumed), "{k}");
    assert_eq!(k["suggested"], serde_json::json!(["launch-bounds=256"]), "{k}");
    assert!(k["suggestions"][0].as_str().unwrap().contains("__launch_bounds__(256)"), "{k}");
    // noalias by default: suggested with what to verify, never applied
    // (on LBM it is what reaches the step after the one pow2 reaches).
    let lbm = repo().join("examples/lbm_d3q19.hip");
    let k = &tune(&[&lbm], "gfx90a", &dir.path().join("b.json"), &["--evidence", ev, "--pow2", "apply"])[0];
    assert_eq!(k["suggestion_reasons"], serde_json::json!(["assumes-caller"]), "{k}");
    assert!(!k["applied"].as_array().unwrap().iter().any(assumed), "{k}");
    let suggested = k["suggested"].as_array().unwrap();
    assert!(!suggested.is_empty() && suggested.iter().all(|l| l.as_str().unwrap().starts_with("noalias=")), "{k}");
    assert!(k["suggestions"][0].as_str().unwrap().contains("never overlap"), "{k}");
}

#[test]
fn decisions_db_round_trips_what_tune_printed() {
    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("nested/decisions.json");
    let file = repo().join("examples/lbm_d3q19.hip");
    let printed = tune(&[&file], "gfx90a", &db_path, &[]);
    let db: Value = serde_json::from_str(&std::fs::read_to_string(&db_path).unwrap()).unwrap();
    let entries: Vec<&Value> = db["kernels"].as_object().unwrap().values().collect();
    assert_eq!(entries.len(), printed.len());
    for k in &printed {
        let e = entries.iter().find(|e| e["symbol"] == k["symbol"]).expect("entry per kernel");
        assert_eq!(e["after"], k["after"]);
        assert_eq!(e["before"], k["before"]);
        assert_eq!(e["arch"], "gfx90a");
        assert_eq!(e["input_hash"].as_str().unwrap().len(), 64);
    }
    // Tuning again replaces, never duplicates.
    tune(&[&file], "gfx90a", &db_path, &[]);
    let again: Value = serde_json::from_str(&std::fs::read_to_string(&db_path).unwrap()).unwrap();
    assert_eq!(again["kernels"].as_object().unwrap().len(), printed.len());
}

#[test]
fn a_plugin_build_with_the_db_gives_exactly_the_promised_usage() {
    let plugin = common::plugin();
    for arch in ["gfx90a", "gfx1100"] {
        for file in all_examples() {
            let dir = tempfile::tempdir().unwrap();
            let db = dir.path().join("db.json");
            let kernels = tune(&[&file], arch, &db, &["--evidence", &proven(), "--noalias", "apply", "--pow2", "apply"]);
            let out = hip_device_compile(&file, arch)
                .arg(format!("-fpass-plugin={}", plugin.display()))
                .env("REGTUNE_DECISIONS", &db)
                .args(["-c", "-Rpass-analysis=kernel-resource-usage", "-o"])
                .arg(dir.path().join("built.o"))
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{stderr}");
            assert!(!stderr.contains("regtune: warning"), "{stderr}");
            let remarks = parse_remarks(&stderr);
            for k in &kernels {
                let r = &remarks[k["symbol"].as_str().unwrap()];
                let a = &k["after"];
                let ctx = format!("{} {} on {arch} ({})", file.display(), k["name"], k["applied"]);
                assert_eq!(a["vgpr"].as_u64(), Some(r["VGPRs"]), "{ctx}: VGPRs");
                assert_eq!(a["sgpr"].as_u64(), Some(r["TotalSGPRs"]), "{ctx}: SGPRs");
                assert_eq!(spills(a), r["VGPRs Spill"] + r["SGPRs Spill"], "{ctx}: spills");
                assert_eq!(a["scratch_bytes"].as_u64(), Some(r["ScratchSize [bytes/lane]"]), "{ctx}: scratch");
                assert_eq!(a["occupancy"].as_u64(), Some(r["Occupancy [waves/SIMD]"]), "{ctx}: occupancy");
            }
        }
    }
}

#[test]
fn diff_shows_the_tuned_kernels_ir_and_assembly() {
    let dir = tempfile::tempdir().unwrap();
    let file = repo().join("examples/lbm_d3q19.hip");
    let out = Command::cargo_bin("regtune")
        .unwrap()
        .current_dir(repo())
        .args(["tune", "--diff", "--pow2", "apply", "--db"])
        .arg(dir.path().join("db.json"))
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("(IR, plain)") && text.contains("(asm, tuned)"), "{text}");
    // pow(x, 2.0) → x*x: the inlined pow (log, exp, fix-ups) leaves the IR.
    let ir = &text[text.find("(IR, plain)").unwrap()..text.find("(asm, plain)").unwrap()];
    let removed = ir.lines().filter(|l| l.starts_with('-') && !l.starts_with("---")).count();
    let added = ir.lines().filter(|l| l.starts_with('+') && !l.starts_with("+++")).count();
    assert!(removed > added + 50, "expected a much shorter kernel: -{removed} +{added}");
}

/// Issue 23: a bad db was found only after every variant had compiled.
/// Now it stops the run before the first compile: one line, no table.
#[test]
fn a_bad_db_stops_tune_before_anything_compiles() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.json");
    std::fs::write(&db, "{ this is not json").unwrap();
    let not_a_dir = dir.path().join("file");
    std::fs::write(&not_a_dir, "").unwrap();
    for (db, message) in [
        (db.clone(), format!("decisions db {} is not valid JSON: key must be a string at line 1 column 3", db.display())),
        (not_a_dir.join("db.json"), format!("cannot read decisions db {}/db.json: Not a directory (os error 20)", not_a_dir.display())),
        // A directory nobody may write to, root included.
        ("/proc/regtune-db.json".into(), "cannot write decisions db /proc/regtune-db.json: No such file or directory (os error 2)".into()),
    ] {
        let out = Command::cargo_bin("regtune")
            .unwrap()
            .current_dir(repo())
            .args(["tune", "--format", "json", "--db"])
            .arg(&db)
            .arg("examples/lbm_d3q19.hip")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        assert_eq!(String::from_utf8(out.stderr).unwrap(), format!("error: {message}\n"));
        assert!(out.stdout.is_empty(), "nothing was tuned, so no table");
    }
    assert_eq!(std::fs::read_to_string(&db).unwrap(), "{ this is not json", "a bad db is left for the user to fix");
}

fn tune_output(file: &Path, extra: &[&str]) -> (std::process::Output, Vec<Value>) {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::cargo_bin("regtune")
        .unwrap()
        .current_dir(repo())
        .env_remove("REGTUNE_EVIDENCE")
        .args(["tune", "--format", "json", "--db"])
        .arg(dir.path().join("db.json"))
        .args(extra)
        .arg(file)
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).expect("tune prints JSON");
    let kernels = doc["kernels"].as_array().unwrap().clone();
    (out, kernels)
}

#[test]
fn variants_past_the_time_limit_are_stopped_and_the_search_goes_on() {
    // The search's own variants (the measured search's candidates are a
    // later phase, with a budget of their own).
    let (out, kernels) = tune_output(&repo().join("examples/long_lived.hip"), &["--variant-timeout", "0.01", "--candidates", "0"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let k = &kernels[0];
    let stopped = k["timed_out"].as_array().unwrap();
    // Every variant the search would have compiled was tried, and stopped.
    assert!(stopped.len() >= 5, "{k}");
    assert_eq!(stopped.len() as u64, k["variants"].as_u64().unwrap(), "{k}");
    assert!(stopped.contains(&Value::from("sink")), "{k}");
    assert!(k["applied"].as_array().unwrap().is_empty(), "{k}");
    assert_eq!(k["after"], k["before"], "{k}");
    assert!(k["why"].as_str().unwrap().contains("time limit"), "{k}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.matches("ran past the 0.01 s limit").count(), 1, "{stderr}");
}

#[test]
fn the_time_budget_ends_the_search_with_the_best_result_so_far() {
    let ev = proven();
    // No measured-search candidates: they get a quarter of a spent budget
    // more (below), which would start a build.
    let (out, kernels) =
        tune_output(&repo().join("examples/long_lived.hip"), &["--evidence", &ev, "--time-budget", "0.05", "--candidates", "0"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let k = &kernels[0];
    assert_eq!(k["budget_reached"], true, "{k}");
    assert_eq!(k["variants"], 0, "the plain build alone spends 0.05 s: {k}");
    assert!(k["why"].as_str().unwrap().contains("time budget ended the search early"), "{k}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.matches("time budget of 0.05 s is spent").count(), 1, "{stderr}");
    // The same file with room to search finds what the budget cut off
    // (sink, proven by the evidence given).
    let (_, full) = tune_output(&repo().join("examples/long_lived.hip"), &["--evidence", &ev]);
    assert_eq!(full[0]["budget_reached"], false);
    assert_eq!(full[0]["applied"], serde_json::json!(["sink"]), "{}", full[0]);
    // With candidates, a budget the search spent leaves them a quarter of
    // it: too little here, so they are listed as left out, none lost.
    let (out, kernels) = tune_output(&repo().join("examples/long_lived.hip"), &["--evidence", &ev, "--time-budget", "0.05"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(kernels[0]["left_out"].as_array().is_some_and(|l| l.len() >= 8), "{}", kernels[0]);
}

/// NVIDIA's register caps alone (a ptxas run each) are built until they
/// have taken the file's time budget; those left out are said on stderr,
/// since `regtune measure` cannot time them.
#[test]
fn nvidia_caps_past_the_budget_are_left_out_and_said() {
    let (out, kernels) = tune_output(&repo().join("examples/long_lived.hip"), &["--offload-arch", "sm_90", "--time-budget", "0.05"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let caps: Vec<&str> = kernels[0]["left_out"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .filter(|l| l.starts_with("warps-per-sm=") && !l.contains('+'))
        .collect();
    // 87 registers, 20 warps per SM: the caps of 8 to 64 warps.
    assert!(caps.len() >= 8, "{}", kernels[0]);
    let said =
        stderr.lines().find(|l| l.contains("not built: the kernel's caps took the time budget")).unwrap_or_else(|| panic!("{stderr}"));
    assert!(caps.iter().all(|c| said.contains(&format!(" {c}"))), "{said}: {caps:?}");
}

/// A kernel's variant compiles that kernel alone (the plugin drops the
/// other kernels once it has placed the decisions); its numbers must be the
/// ones a whole-file build with the same decisions gives it.
#[test]
fn one_kernel_variants_measure_as_the_whole_file_does() {
    use regtune::gpu::Arch;
    use regtune::session::Session;
    use regtune_decisions::Transforms;

    let plugin = regtune::plugin::find().expect("build the workspace first");
    let mut files = all_examples();
    files.push(repo().join("tests/fixtures/several_kernels.hip"));
    let mut compared = 0;
    for name in ["gfx90a", "sm_90"] {
        let arch = Arch::parse(name).unwrap();
        let toolchain = regtune::gpu::toolchain_for(std::slice::from_ref(&arch)).unwrap();
        for file in &files {
            let (session, baseline, _) = Session::start(&toolchain, &arch, &plugin, file, &[]).unwrap();
            for base in &baseline {
                let rewrites = Transforms { pow2: true, sink: true, unroll_cap: Some(2), ..Default::default() };
                let mut variants = vec![Transforms::default(), rewrites];
                // The next occupancy step, if any: a wave per SIMD, or a 256-thread block of warps.
                let (step, top) = if arch.is_nvptx() { (8, 64) } else { (1, 8) };
                if base.usage.occupancy < top {
                    let unit = regtune_decisions::Occupancy::of_arch(name);
                    variants.push(Transforms::occupancy_step(unit, base.usage.occupancy + step));
                }
                for t in variants {
                    let one = session.measure_kernel(&base.symbol, &t, None).unwrap();
                    let whole = session.measure(&[(base.symbol.clone(), t.clone())], None).unwrap();
                    let whole = whole.into_iter().find(|m| m.symbol == base.symbol).unwrap();
                    let ctx = format!("{} {} on {name} with {:?}", file.display(), base.symbol, t.labels());
                    assert_eq!(one.usage, whole.usage, "{ctx}");
                    assert_eq!(one.nvidia, whole.nvidia, "{ctx}");
                    compared += 1;
                }
            }
        }
    }
    assert!(compared >= 2 * 2 * 9, "5 examples and 4 fixture kernels, on two targets: {compared}");
}
