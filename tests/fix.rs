//! `regtune fix` against the real compiler: every example's patch, applied
//! with `git apply` and compiled by clang-22 with no plugin (a command built
//! here, not by regtune), reaches exactly the numbers the tuner promised, on
//! gfx90a and sm_90, for every transform; templates, macros, helpers and
//! declarations that may not move are handled or named; `--apply` writes
//! all files or none; bad input is one line.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;

use assert_cmd::Command;
use common::{evidence_all_proven, hip_device_compile, parse_remarks, remarks_for, repo};
use serde_json::Value;

fn regtune(dir: &Path) -> Command {
    let mut c = Command::cargo_bin("regtune").unwrap();
    c.current_dir(dir);
    for v in ["REGTUNE_DECISIONS", "REGTUNE_INPUT_HASH", "REGTUNE_PLUGIN", "REGTUNE_EVIDENCE"] {
        c.env_remove(v);
    }
    c
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn ok(out: &Output, what: &str) {
    assert!(out.status.success(), "{what}: {}\n{}{}", out.status, text(&out.stdout), text(&out.stderr));
}

/// Accept every suggestion in `db` that assumes nothing about the caller
/// (no noalias), as a user who timed them would: the next `tune` applies
/// them (the default rule only suggests unroll caps, and these tests need
/// decisions of every kind); noalias stays a suggestion.
fn confirm_all(db: &Path) {
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(db).unwrap()).unwrap();
    for e in doc["kernels"].as_object_mut().unwrap().values_mut() {
        for s in e.get_mut("suggested").and_then(Value::as_array_mut).into_iter().flatten() {
            let assumes = s["transforms"]["noalias"].as_array().is_some_and(|n| !n.is_empty());
            s["confirmed"] = Value::Bool(!assumes);
        }
    }
    std::fs::write(db, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
}

/// `regtune tune ARGS --db DB`, its suggestions confirmed, then `regtune
/// tune ARGS --db DB --patch PATCH`, which applies them.
fn tune_confirmed(args: &[&str], db: &Path, patch: &Path, files: &[&str]) -> Output {
    let first = regtune(&repo()).args(args).arg("--db").arg(db).args(files).output().unwrap();
    ok(&first, "regtune tune (to confirm its suggestions)");
    confirm_all(db);
    regtune(&repo()).args(args).arg("--db").arg(db).arg("--patch").arg(patch).args(files).output().unwrap()
}

fn db_entries(db: &Path) -> Vec<Value> {
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(db).unwrap()).unwrap();
    doc["kernels"].as_object().unwrap().values().cloned().collect()
}

const EXAMPLES: [&str; 5] =
    ["examples/laplacian3d.hip", "examples/launch_bounds_spill.hip", "examples/lbm_d3q19.hip", "examples/long_lived.hip", "examples/private_array.hip"];

/// The examples tuned for gfx90a (from the repository root, by relative
/// path, as a user would), with `--patch`, under the evidence table where
/// every class is proven: the MD kernel's sink is decided, as the default
/// did before it followed GPU evidence, so the patch has every kind of edit.
struct Tuned {
    _dir: tempfile::TempDir,
    db: PathBuf,
    patch: String,
}

fn tuned() -> &'static Tuned {
    static TUNED: OnceLock<Tuned> = OnceLock::new();
    TUNED.get_or_init(|| {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let db = dir.path().join("decisions.json");
        let patch = dir.path().join("tune.patch");
        let evidence = evidence_all_proven();
        let args = ["tune", "--offload-arch", "gfx90a", "--pow2", "apply", "--evidence", evidence.to_str().unwrap()];
        let out = tune_confirmed(&args, &db, &patch, &EXAMPLES);
        ok(&out, "regtune tune --patch");
        Tuned { db, patch: std::fs::read_to_string(&patch).unwrap(), _dir: dir }
    })
}

/// A copy of the repository's examples with `patch` applied by `git apply`.
fn patched_examples(patch: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("examples")).unwrap();
    for e in std::fs::read_dir(repo().join("examples")).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            std::fs::copy(&p, dir.path().join("examples").join(p.file_name().unwrap())).unwrap();
        }
    }
    let file = dir.path().join("fix.patch");
    std::fs::write(&file, patch).unwrap();
    let out = std::process::Command::new("git").current_dir(dir.path()).args(["apply", "fix.patch"]).output().unwrap();
    ok(&out, "git apply");
    dir
}

/// Compare clang's remarks for a kernel with a promised usage.
fn assert_reaches(remarks: &BTreeMap<String, u64>, promised: &Value, what: &str) {
    assert_eq!(Some(remarks["VGPRs"]), promised["vgpr"].as_u64(), "{what}: VGPRs");
    // gfx1100 has no AGPRs, and no remark for them.
    assert_eq!(Some(remarks.get("AGPRs").copied().unwrap_or(0)), promised["agpr"].as_u64(), "{what}: AGPRs");
    assert_eq!(Some(remarks["TotalSGPRs"]), promised["sgpr"].as_u64(), "{what}: SGPRs");
    assert_eq!(Some(remarks["VGPRs Spill"]), promised["vgpr_spills"].as_u64(), "{what}: VGPR spills");
    assert_eq!(Some(remarks["SGPRs Spill"]), promised["sgpr_spills"].as_u64(), "{what}: SGPR spills");
    assert_eq!(Some(remarks["ScratchSize [bytes/lane]"]), promised["scratch_bytes"].as_u64(), "{what}: scratch");
    assert_eq!(Some(remarks["Occupancy [waves/SIMD]"]), promised["occupancy"].as_u64(), "{what}: occupancy");
}

#[test]
fn every_example_patched_reaches_the_tuned_numbers_with_no_plugin() {
    let t = tuned();
    let fix_patch = tempfile::NamedTempFile::new().unwrap();
    let out = regtune(&repo()).args(["fix", "--db"]).arg(&t.db).arg("-o").arg(fix_patch.path()).args(EXAMPLES).output().unwrap();
    ok(&out, "regtune fix");
    let fixed = std::fs::read_to_string(fix_patch.path()).unwrap();
    assert_eq!(fixed, t.patch, "`tune --patch` and `fix` write the same patch");
    let summary = text(&out.stderr);
    assert_eq!(summary.matches("verified by a plain build").count(), 3, "{summary}");

    // One edit per transform, as a person would write it.
    for expected in [
        "-#pragma unroll\n+#pragma nounroll\n",
        "+__attribute__((amdgpu_waves_per_eu(6)))\n __global__ void laplacian3d_o8_ztile(",
        "-    even = WS * rho * (1.0 + 4.5 * pow(cu, 2.0) - usq);\n",
        "+    even = WS * rho * (1.0 + 4.5 * (cu * cu) - usq);\n",
        "+    double usq = 1.5 * (ux * ux + uy * uy + uz * uz);\n",
        "-    const double lambda = lambda_thermo[i];\n",
        "+    const double mass = 1.0 / rmass;\n     kinetic[i] =",
    ] {
        assert!(fixed.contains(expected), "the patch lacks {expected:?}:\n{fixed}");
    }
    assert!(!fixed.contains("__restrict__ f0"), "noalias is only suggested: no __restrict__ without --with-suggestions");
    assert!(!fixed.contains("launch_bounds_spill.hip\n+++"), "nothing decided there, nothing patched");

    // The patched sources, compiled plainly, reach every promise.
    let dir = patched_examples(&fixed);
    let entries = db_entries(&t.db);
    let mut checked = 0;
    for example in EXAMPLES {
        let remarks = remarks_for(&dir.path().join(example), "gfx90a");
        for e in entries.iter().filter(|e| e["file"] == example) {
            let symbol = e["symbol"].as_str().unwrap();
            assert_reaches(&remarks[symbol], &e["after"], &format!("{example} {symbol}"));
            checked += 1;
        }
    }
    assert_eq!(checked, 5);
}

#[test]
fn suggestions_become_restrict_only_when_asked() {
    let t = tuned();
    let out = regtune(&repo()).args(["fix", "--with-suggestions", "--db"]).arg(&t.db).arg("examples/lbm_d3q19.hip").output().unwrap();
    ok(&out, "regtune fix --with-suggestions");
    let patch = text(&out.stdout);
    for expected in ["+    double* __restrict__ f0,", "+    const double* __restrict__ omega_cell,", "+__attribute__((amdgpu_waves_per_eu(6)))"] {
        assert!(patch.contains(expected), "the patch lacks {expected:?}:\n{patch}");
    }
    let dir = patched_examples(&patch);
    let remarks = remarks_for(&dir.path().join("examples/lbm_d3q19.hip"), "gfx90a");
    let entries = db_entries(&t.db);
    let lbm = entries.iter().find(|e| e["file"] == "examples/lbm_d3q19.hip").unwrap();
    let suggestion = &lbm["suggested"][0];
    assert_eq!(suggestion["confirmed"], false);
    assert_reaches(&remarks[lbm["symbol"].as_str().unwrap()], &suggestion["usage"], "lbm with its suggestion");
}

#[test]
fn a_stated_block_size_becomes_launch_bounds() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.json");
    let file = "examples/launch_bounds_spill.hip";
    let out = regtune(&repo())
        .args(["tune", "--block-size", "256", "--objective", "no-spill", "--db"])
        .arg(&db)
        .arg(file)
        .output()
        .unwrap();
    ok(&out, "regtune tune --block-size 256");
    let entries = db_entries(&db);
    assert_eq!(entries[0]["transforms"]["launch_bounds"], 256, "{entries:?}");
    let out = regtune(&repo()).args(["fix", "--db"]).arg(&db).arg(file).output().unwrap();
    ok(&out, "regtune fix");
    let patch = text(&out.stdout);
    assert!(patch.contains("+__launch_bounds__(256)\n __global__ void block_jacobi_solve("), "{patch}");
    let copy = patched_examples(&patch);
    let remarks = remarks_for(&copy.path().join(file), "gfx90a");
    assert_reaches(&remarks[entries[0]["symbol"].as_str().unwrap()], &entries[0]["after"], "block_jacobi_solve");
}

#[test]
fn nvptx_patches_reach_the_tuned_numbers_with_no_plugin() {
    let dir = tempfile::tempdir().unwrap();
    let (db, patch) = (dir.path().join("db.json"), dir.path().join("fix.patch"));
    let files = ["examples/laplacian3d.hip", "examples/long_lived.hip"];
    let out = tune_confirmed(&["tune", "--offload-arch", "sm_90"], &db, &patch, &files);
    ok(&out, "regtune tune sm_90 --patch");
    let patch = std::fs::read_to_string(&patch).unwrap();
    assert!(patch.contains("+#pragma nounroll\n"), "{patch}");
    assert!(patch.contains("+    const double mass = 1.0 / rmass;\n"), "{patch}");
    let copy = patched_examples(&patch);
    let entries = db_entries(&db);
    // ptxas's numbers for the plain build of the patched files (regtune
    // report compiles with clang-22 and ptxas, no plugin; tests/nvptx.rs
    // checks it against `ptxas -v`).
    let out = regtune(copy.path()).args(["report", "--format", "json", "--offload-arch", "sm_90"]).args(files).output().unwrap();
    ok(&out, "regtune report sm_90");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut decided = 0;
    for k in report["kernels"].as_array().unwrap() {
        let e = entries.iter().find(|e| e["symbol"] == k["symbol"]).unwrap();
        decided += usize::from(e["transforms"].as_object().is_some_and(|t| !t.is_empty()));
        for field in ["vgpr", "scratch_bytes", "vgpr_spills", "sgpr_spills", "lds_bytes", "occupancy"] {
            assert_eq!(k["usage"][field], e["after"][field], "{} on sm_90: {field}", k["name"]);
        }
    }
    assert_eq!(decided, 2, "{entries:?}");
}

/// tests/fix/cases.hip in a directory of its own, tuned there, with the
/// decisions `decide` names written into the db and their promise measured
/// as the tuner would: a build with the plugin applying them.
fn cases(decide: &[(&str, Value)]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(repo().join("tests/fix/cases.hip"), dir.path().join("cases.hip")).unwrap();
    let db = dir.path().join("db.json");
    let out = regtune(dir.path()).args(["tune", "--db"]).arg(&db).arg("cases.hip").output().unwrap();
    ok(&out, "regtune tune cases.hip");
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(&db).unwrap()).unwrap();
    for e in doc["kernels"].as_object_mut().unwrap().values_mut() {
        if let Some((_, t)) = decide.iter().find(|(name, _)| e["name"].as_str().unwrap().starts_with(name)) {
            e["transforms"] = t.clone();
        }
    }
    std::fs::write(&db, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    let plugin = assert_cmd::cargo::cargo_bin("regtune").with_file_name("libregtune_passes.so");
    let obj = dir.path().join("with-plugin.o");
    let out = hip_device_compile(&dir.path().join("cases.hip"), "gfx90a")
        .arg(format!("-fpass-plugin={}", plugin.display()))
        .env("REGTUNE_DECISIONS", &db)
        .env_remove("REGTUNE_INPUT_HASH")
        .args(["-c", "-Rpass-analysis=kernel-resource-usage", "-o"])
        .arg(&obj)
        .output()
        .unwrap();
    ok(&out, "the build with the plugin");
    let remarks = parse_remarks(&text(&out.stderr));
    for e in doc["kernels"].as_object_mut().unwrap().values_mut() {
        let r = &remarks[e["symbol"].as_str().unwrap()];
        let after = serde_json::json!({
            "vgpr": r["VGPRs"], "agpr": r["AGPRs"], "sgpr": r["TotalSGPRs"], "scratch_bytes": r["ScratchSize [bytes/lane]"],
            "vgpr_spills": r["VGPRs Spill"], "sgpr_spills": r["SGPRs Spill"], "lds_bytes": r["LDS Size [bytes/block]"],
            "occupancy": r["Occupancy [waves/SIMD]"], "code_bytes": 0,
        });
        e["after"] = after;
    }
    std::fs::write(&db, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    (dir, db)
}

#[test]
fn templates_helpers_macros_and_declarations_that_may_not_move() {
    let (dir, db) = cases(&[
        ("void scale_sq", serde_json::json!({"pow2": true, "pow2_inexact": true})),
        ("from_macro", serde_json::json!({"pow2": true, "pow2_inexact": true})),
        ("sync_loop", serde_json::json!({"sink": true})),
        ("rows", serde_json::json!({"unroll_cap": 2})),
    ]);
    let out = regtune(dir.path()).args(["fix", "--db"]).arg(&db).arg("cases.hip").output().unwrap();
    assert_eq!(out.status.code(), Some(2), "some kernels cannot be patched: {}", text(&out.stderr));
    let (patch, summary) = (text(&out.stdout), text(&out.stderr));
    // Both instantiations of the template decided pow2: one edit serves both.
    assert!(summary.contains("void scale_sq<float> (gfx90a): pow2=inexact; verified"), "{summary}");
    assert!(summary.contains("void scale_sq<double> (gfx90a): pow2=inexact; verified"), "{summary}");
    assert!(patch.contains("+        x[i] = regtune_square(y[i] + T(1)) + x[i] * x[i];\n"), "{patch}");
    assert_eq!(patch.matches("+__host__ __device__ inline T regtune_square(T x) { return x * x; }").count(), 1, "{patch}");
    // Only the loop the cap changed gets a pragma, with what the capped
    // compile did: O3 unrolls the kernel's loop of 4 fully, a cap of 2 keeps
    // a loop that holds a loop whole or not at all (unroll_cap.cpp); the
    // helper's loop unrolls alike in both builds and gets nothing.
    assert_eq!(patch.matches("+    #pragma nounroll\n").count(), 1, "{patch}");
    assert!(!patch.contains("#pragma unroll 2"), "{patch}");
    assert!(summary.contains("rows (gfx90a): unroll-cap=2; verified"), "{summary}");
    // Named, not patched.
    assert!(summary.contains("from_macro (gfx90a): pow2=inexact: not in the patch: it is defined by a macro"), "{summary}");
    assert!(
        summary.contains("cases.hip:25: note: sync_loop: sink: `keep` stays: moving it down past the loop at lines 27-30, which calls `__syncthreads`"),
        "{summary}"
    );
    assert!(summary.contains("sync_loop (gfx90a): sink: not in the patch"), "{summary}");
    assert!(patch.starts_with("cases.hip: "), "the patch opens with what it does and leaves out:\n{patch}");

    // In place: the same text, and the patched file keeps its promises.
    let before = std::fs::read_to_string(dir.path().join("cases.hip")).unwrap();
    let out = regtune(dir.path()).args(["fix", "--apply", "--db"]).arg(&db).arg("cases.hip").output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let after = std::fs::read_to_string(dir.path().join("cases.hip")).unwrap();
    assert_ne!(before, after);
    let check = tempfile::tempdir().unwrap();
    std::fs::write(check.path().join("cases.hip"), &before).unwrap();
    std::fs::write(check.path().join("p.patch"), &patch).unwrap();
    ok(&std::process::Command::new("git").current_dir(check.path()).args(["apply", "p.patch"]).output().unwrap(), "git apply");
    assert_eq!(std::fs::read_to_string(check.path().join("cases.hip")).unwrap(), after, "--apply writes what the patch says");
    let remarks = remarks_for(&dir.path().join("cases.hip"), "gfx90a");
    for e in db_entries(&db).iter().filter(|e| ["void scale_sq", "rows"].iter().any(|n| e["name"].as_str().unwrap().starts_with(n))) {
        assert_reaches(&remarks[e["symbol"].as_str().unwrap()], &e["after"], e["name"].as_str().unwrap());
    }
}

#[test]
fn apply_writes_every_file_or_none_and_bad_input_is_one_line() {
    let (dir, db) = cases(&[("rows", serde_json::json!({"unroll_cap": 2}))]);
    let before = std::fs::read_to_string(dir.path().join("cases.hip")).unwrap();
    // A second file that does not exist: an error, and cases.hip stays as it was.
    let out = regtune(dir.path()).args(["fix", "--apply", "--db"]).arg(&db).args(["cases.hip", "gone.hip"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("error: cannot read gone.hip"), "{stderr}");
    assert!(stderr.trim_end().ends_with("error: nothing was written: 1 file(s) failed"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(std::fs::read_to_string(dir.path().join("cases.hip")).unwrap(), before);

    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{ not json").unwrap();
    let out = regtune(dir.path()).args(["fix", "--db"]).arg(&bad).arg("cases.hip").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stderr).lines().count(), 1, "{}", text(&out.stderr));
    assert!(text(&out.stderr).starts_with(&format!("error: decisions db {} is not valid JSON", bad.display())), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty(), "checked before anything compiled: no patch");

    // A build the db has no decisions for (other flags): said, and an empty patch.
    let out = regtune(dir.path()).args(["fix", "--db"]).arg(&db).args(["cases.hip", "--", "-DOTHER"]).output().unwrap();
    ok(&out, "regtune fix with other flags");
    assert!(text(&out.stderr).contains("no decisions for gfx90a match this build"), "{}", text(&out.stderr));
    assert!(!text(&out.stdout).contains("+++"));
}

#[test]
fn targets_that_decided_differently_get_their_own_pragma_and_attributes() {
    let dir = tempfile::tempdir().unwrap();
    let (db, patch) = (dir.path().join("db.json"), dir.path().join("fix.patch"));
    let file = "examples/laplacian3d.hip";
    let out = tune_confirmed(&["tune", "--offload-arch", "gfx90a,gfx1100"], &db, &patch, &[file]);
    ok(&out, "regtune tune gfx90a,gfx1100 --patch");
    let entries = db_entries(&db);
    let cap = |arch: &str| entries.iter().find(|e| e["arch"] == arch).unwrap()["transforms"]["unroll_cap"].clone();
    assert_ne!(cap("gfx90a"), cap("gfx1100"), "the two targets cap the tile loop differently: {entries:?}");
    let patch = std::fs::read_to_string(&patch).unwrap();
    assert!(patch.contains("+#if defined(__gfx90a__)\n+#pragma nounroll\n+#elif defined(__gfx1100__)\n+#pragma unroll "), "{patch}");
    let copy = patched_examples(&patch);
    // The user's own `#pragma unroll` stays for every other target.
    let patched = std::fs::read_to_string(copy.path().join(file)).unwrap();
    assert!(patched.contains("#pragma unroll 4\n#else\n#pragma unroll\n#endif\n#endif\n    for (int t = 0;"), "{patched}");
    for arch in ["gfx90a", "gfx1100"] {
        let remarks = remarks_for(&copy.path().join(file), arch);
        let e = entries.iter().find(|e| e["arch"] == arch).unwrap();
        assert_reaches(&remarks[e["symbol"].as_str().unwrap()], &e["after"], arch);
    }
}
