//! `regtune fix` against the real compiler: every example's patch, applied
//! with `git apply` and compiled by clang-22 with no plugin (a command built
//! here, not by regtune), reaches exactly the numbers the tuner promised, on
//! gfx90a and sm_90, for every transform; a program whose kernels live in an
//! included `.cu` and in headers is patched where they live, a vendor's
//! header never; a template's instantiations take one decision or are
//! named; macros, helpers and declarations that may not move are handled
//! or named; `--apply` writes all files or none; the exit status says which
//! (0 all or nothing to do, 1 some not expressed, 2 an error); bad input is
//! one line.

// A test fails by panicking; `unwrap` says where.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;

use common::{evidence_all_proven, hip_device_compile, ok, parse_remarks, regtune_in as regtune, remarks_for, remarks_with, repo, text};
use serde_json::Value;

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

const EXAMPLES: [&str; 5] = [
    "examples/laplacian3d.hip",
    "examples/launch_bounds_spill.hip",
    "examples/lbm_d3q19.hip",
    "examples/long_lived.hip",
    "examples/private_array.hip",
];

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
    assert_eq!(summary.matches("; verified by a plain build: ").count(), 3, "{summary}");
    assert!(summary.ends_with("regtune fix: all 3 decision(s) in the patch, 3 file(s), verified by a plain build\n"), "{summary}");

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
    for expected in
        ["+    double* __restrict__ f0,", "+    const double* __restrict__ omega_cell,", "+__attribute__((amdgpu_waves_per_eu(6)))"]
    {
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
    let out =
        regtune(&repo()).args(["tune", "--block-size", "256", "--objective", "no-spill", "--db"]).arg(&db).arg(file).output().unwrap();
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

/// A fixture (a file, or a directory of files) copied into a directory of
/// its own, `main` tuned there with clang flags `flags`, the decisions
/// `decide` names written into the db and their promise measured as the
/// tuner would: a build with the plugin applying them.
fn decided(fixture: &str, main: &str, flags: &[&str], decide: &[(&str, Value)]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&repo().join(fixture), &dir.path().join(Path::new(fixture).file_name().unwrap()));
    let db = dir.path().join("db.json");
    // From the program's directory, as its build runs.
    let (at, file) = (dir.path().join(main).parent().unwrap().to_path_buf(), Path::new(main).file_name().unwrap().to_owned());
    let out = regtune(&at).args(["tune", "--db"]).arg(&db).arg(&file).arg("--").args(flags).output().unwrap();
    ok(&out, "regtune tune");
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(&db).unwrap()).unwrap();
    for e in doc["kernels"].as_object_mut().unwrap().values_mut() {
        if let Some((_, t)) = decide.iter().find(|(name, _)| e["name"].as_str().unwrap().starts_with(name)) {
            e["transforms"] = t.clone();
        }
    }
    std::fs::write(&db, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    let plugin = assert_cmd::cargo::cargo_bin("regtune").with_file_name("libregtune_passes.so");
    let obj = dir.path().join("with-plugin.o");
    let out = hip_device_compile(Path::new(&file), "gfx90a")
        .current_dir(&at)
        .args(flags)
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

fn copy_tree(from: &Path, to: &Path) {
    if from.is_file() {
        std::fs::copy(from, to).unwrap();
        return;
    }
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        copy_tree(&p, &to.join(p.file_name().unwrap()));
    }
}

/// tests/fix/cases.hip, tuned and decided (see [`decided`]).
fn cases(decide: &[(&str, Value)]) -> (tempfile::TempDir, PathBuf) {
    decided("tests/fix/cases.hip", "cases.hip", &[], decide)
}

/// `git apply` of `patch` in a copy of `dir`'s files (the originals); the copy.
fn applied_copy(original: &Path, patch: &str) -> tempfile::TempDir {
    let check = tempfile::tempdir().unwrap();
    copy_tree(original, check.path());
    std::fs::write(check.path().join("p.patch"), patch).unwrap();
    ok(&std::process::Command::new("git").current_dir(check.path()).args(["apply", "p.patch"]).output().unwrap(), "git apply");
    std::fs::remove_file(check.path().join("p.patch")).unwrap();
    check
}

/// The db entry of the kernel whose name starts with `name`.
fn entry(db: &Path, name: &str) -> Value {
    db_entries(db).into_iter().find(|e| e["name"].as_str().unwrap().starts_with(name)).unwrap_or_else(|| panic!("no {name} in the db"))
}

/// "VGPRs 116 → 28, occupancy 4 → 8", as the summary words a change.
fn change(before: &Value, after: &Value) -> String {
    let one = |k: &str| match (before[k].as_u64().unwrap(), after[k].as_u64().unwrap()) {
        (b, a) if b == a => a.to_string(),
        (b, a) => format!("{b} → {a}"),
    };
    format!("VGPRs {}, occupancy {}", one("vgpr"), one("occupancy"))
}

#[test]
fn templates_helpers_macros_and_declarations_that_may_not_move() {
    let (dir, db) = cases(&[
        ("void scale_sq", serde_json::json!({"pow2": true, "pow2_inexact": true})),
        ("from_macro", serde_json::json!({"pow2": true, "pow2_inexact": true})),
        ("sync_loop", serde_json::json!({"sink": true})),
        ("rows", serde_json::json!({"unroll_cap": 2})),
        ("windows", serde_json::json!({"unroll_cap": 1})),
    ]);
    let out = regtune(dir.path()).args(["fix", "--db"]).arg(&db).arg("cases.hip").output().unwrap();
    assert_eq!(out.status.code(), Some(1), "a decision cannot be expressed: {}", text(&out.stderr));
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
    // A macro's kernel: the square in the macro, the helper above its #define
    // (once for the file, above the template, its first user).
    assert!(
        patch.contains("-    __global__ void name(double* p) { p[threadIdx.x] = pow(p[threadIdx.x], 2.0); }\n+    __global__ void name(double* p) { p[threadIdx.x] = regtune_square(p[threadIdx.x]); }\n"),
        "{patch}"
    );
    assert!(summary.contains("from_macro (gfx90a): pow2=inexact; verified by a plain build"), "{summary}");
    // Named, not patched.
    assert!(
        summary.contains(
            "cases.hip:26: note: sync_loop: sink: `keep` stays: moving it down past the loop at lines 28-31, which calls `__syncthreads`"
        ),
        "{summary}"
    );
    assert!(
        summary.contains("sync_loop (gfx90a): sink: not in the patch: nothing of it could be written in the source (see the notes)\n"),
        "{summary}"
    );
    // A class template's member function holds the loop a cap of 1 keeps rolled.
    assert!(patch.contains("+        #pragma nounroll\n         for (int k = 0; k < N; ++k)\n"), "{patch}");
    assert!(summary.contains("windows (gfx90a): unroll-cap=1; verified by a plain build"), "{summary}");
    assert!(
        summary.ends_with(
            "regtune fix: 1 of 6 decision(s) could not be expressed (see above); 5 in the patch, 1 file(s), verified by a plain build\n"
        ),
        "{summary}"
    );
    assert!(patch.starts_with("cases.hip: "), "the patch opens with what it does and leaves out:\n{patch}");

    // In place: the same text, and the patched file keeps its promises.
    let before = std::fs::read_to_string(dir.path().join("cases.hip")).unwrap();
    let out = regtune(dir.path()).args(["fix", "--apply", "--db"]).arg(&db).arg("cases.hip").output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let after = std::fs::read_to_string(dir.path().join("cases.hip")).unwrap();
    assert_ne!(before, after);
    let check = tempfile::tempdir().unwrap();
    std::fs::write(check.path().join("cases.hip"), &before).unwrap();
    std::fs::write(check.path().join("p.patch"), &patch).unwrap();
    ok(&std::process::Command::new("git").current_dir(check.path()).args(["apply", "p.patch"]).output().unwrap(), "git apply");
    assert_eq!(std::fs::read_to_string(check.path().join("cases.hip")).unwrap(), after, "--apply writes what the patch says");
    let remarks = remarks_for(&dir.path().join("cases.hip"), "gfx90a");
    for e in db_entries(&db)
        .iter()
        .filter(|e| ["void scale_sq", "rows", "from_macro", "windows"].iter().any(|n| e["name"].as_str().unwrap().starts_with(n)))
    {
        assert_reaches(&remarks[e["symbol"].as_str().unwrap()], &e["after"], e["name"].as_str().unwrap());
    }
}

#[test]
fn apply_writes_every_file_or_none_and_bad_input_is_one_line() {
    let (dir, db) = cases(&[("rows", serde_json::json!({"unroll_cap": 2}))]);
    let before = std::fs::read_to_string(dir.path().join("cases.hip")).unwrap();
    // A second file that does not exist: an error, and cases.hip stays as it was.
    let out = regtune(dir.path()).args(["fix", "--apply", "--db"]).arg(&db).args(["cases.hip", "gone.hip"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "an error is 2, not the 1 of a decision left out");
    let stderr = text(&out.stderr);
    assert!(stderr.contains("error: cannot read gone.hip"), "{stderr}");
    assert!(stderr.trim_end().ends_with("error: nothing was written: 1 file(s) failed"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(std::fs::read_to_string(dir.path().join("cases.hip")).unwrap(), before);

    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{ not json").unwrap();
    let out = regtune(dir.path()).args(["fix", "--db"]).arg(&bad).arg("cases.hip").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(text(&out.stderr).lines().count(), 1, "{}", text(&out.stderr));
    assert!(text(&out.stderr).starts_with(&format!("error: decisions db {} is not valid JSON", bad.display())), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty(), "checked before anything compiled: no patch");

    // A build the db has no decisions for (other flags): said, an empty
    // patch, and 0: there was nothing to patch.
    let out = regtune(dir.path()).args(["fix", "--db"]).arg(&db).args(["cases.hip", "--", "-DOTHER"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("no decisions for gfx90a match this build"), "{stderr}");
    assert!(stderr.ends_with("regtune fix: nothing to patch: no decision of these builds asks for an edit\n"), "{stderr}");
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

/// What fix writes for tests/fix/project (see the test below).
const PROJECT_DIFF: &str = r#"--- a/inc/dslash.h
+++ b/inc/dslash.h
@@ -8,9 +8,11 @@
     if (s >= n)
         return;
     vec acc = {};
+    #pragma nounroll
     for (int d = 0; d < 8; ++d) {
         vec t;
         mult_su3_mat_vec(links[8 * s + d], src[nbr[8 * s + d]], t);
+        #pragma unroll 2
         for (int c = 0; c < 3; ++c) {
             acc.c[c][0] += t.c[c][0];
             acc.c[c][1] += t.c[c][1];
--- a/inc/macros.h
+++ b/inc/macros.h
@@ -5,5 +5,5 @@
     {                                                            \
         int i = blockIdx.x * blockDim.x + threadIdx.x;           \
         if (i < n)                                               \
-            y[i] += pow(x[i], 2.0);                              \
+            y[i] += x[i] * x[i];                                 \
     }
--- a/inc/su3.h
+++ b/inc/su3.h
@@ -5,8 +5,10 @@
 
 __device__ inline void mult_su3_mat_vec(const su3& a, const vec& b, vec& out)
 {
+    #pragma nounroll
     for (int i = 0; i < 3; ++i) {
         double re = 0.0, im = 0.0;
+        #pragma unroll 2
         for (int j = 0; j < 3; ++j) {
             re += a.e[i][j][0] * b.c[j][0] - a.e[i][j][1] * b.c[j][1];
             im += a.e[i][j][0] * b.c[j][1] + a.e[i][j][1] * b.c[j][0];
--- a/kernels.cu
+++ b/kernels.cu
@@ -3,5 +3,5 @@
 {
     int i = blockIdx.x * blockDim.x + threadIdx.x;
     if (i < n)
-        u[i] = 0.5 * pow(v[i], 2.0) + u[i];
+        u[i] = 0.5 * (v[i] * v[i]) + u[i];
 }
--- a/main.hip
+++ b/main.hip
@@ -9,6 +9,7 @@
 #include "inc/dslash.h"
 #include "inc/macros.h"
 
+__launch_bounds__(128) __global__ void square_add_a(double *, const double *, int);
 SQUARE_ADD(square_add_a, double)
 SQUARE_ADD(square_add_b, double)
 
"#;

#[test]
fn kernels_in_included_files_and_headers_are_patched_where_they_live() {
    // A kernel in an included .cu (pow2), one in a header that inlines a
    // device function of another header (the cap changes loops in both),
    // kernels a header's macro defines (the square in the macro; one
    // expansion's launch bounds on a declaration of its own), and a square
    // in a vendor's -isystem header, which fix never edits.
    let flags = ["-isystem", "sys"];
    let pow2 = serde_json::json!({"pow2": true, "pow2_inexact": true});
    let (dir, db) = decided(
        "tests/fix/project",
        "project/main.hip",
        &flags,
        &[
            ("advect", pow2.clone()),
            ("dslash", serde_json::json!({"unroll_cap": 2})),
            ("square_add_a", serde_json::json!({"pow2": true, "pow2_inexact": true, "launch_bounds": 128})),
            ("square_add_b", pow2.clone()),
            ("norms", pow2),
        ],
    );
    let project = dir.path().join("project");
    let out = regtune(&project).args(["fix", "--db"]).arg(&db).arg("main.hip").arg("--").args(flags).output().unwrap();
    let (patch, summary) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "the vendor header's square cannot be expressed: {summary}");
    let diff = &patch[patch.find("--- a/").expect("a diff")..];
    assert_eq!(diff, PROJECT_DIFF);

    // What it says, kernel by kernel, with the tuner's numbers.
    let line = |name: &str, what: &str| {
        let e = entry(&db, name);
        format!("main.hip: {name} (gfx90a): {what}; verified by a plain build: {}\n", change(&e["before"], &e["after"]))
    };
    for expected in [
        line("advect", "pow2=inexact, in kernels.cu"),
        line("dslash", "unroll-cap=2, in inc/dslash.h, inc/su3.h"),
        line("square_add_a", "pow2=inexact + launch-bounds=128, in inc/macros.h"),
        line("square_add_b", "pow2=inexact, in inc/macros.h"),
        "main.hip: norms (gfx90a): pow2=inexact: not in the patch: it needs an edit fix does not make (pow2 rewrote a call in norm2, a system or toolchain header (sys/vendor_math.h:7)); nothing of it could be written in the source (see the notes)\n".into(),
        "sys/vendor_math.h:7: note: pow2 rewrote a call in norm2, a system or toolchain header; not patched\n".into(),
    ] {
        assert!(summary.contains(&expected), "{expected:?} not in\n{summary}");
    }
    assert!(
        summary.ends_with(
            "regtune fix: 1 of 5 decision(s) could not be expressed (see above); 4 in the patch, 5 file(s), verified by a plain build\n"
        ),
        "{summary}"
    );

    // The patch applied by git, compiled by clang with no plugin: every
    // patched kernel at its promise, the vendor's kernel as it was.
    let copy = applied_copy(&project, &patch);
    let sys = copy.path().join("sys").display().to_string();
    let remarks = remarks_with(&copy.path().join("main.hip"), "gfx90a", &["-isystem", &sys]);
    for name in ["advect", "dslash", "square_add_a", "square_add_b"] {
        let e = entry(&db, name);
        assert_reaches(&remarks[e["symbol"].as_str().unwrap()], &e["after"], name);
    }
    let norms = entry(&db, "norms");
    assert_reaches(&remarks[norms["symbol"].as_str().unwrap()], &norms["before"], "norms, unpatched");

    // In place: every project file the patch names, and not the vendor's.
    let vendor = std::fs::read_to_string(project.join("sys/vendor_math.h")).unwrap();
    let out = regtune(&project).args(["fix", "--apply", "--db"]).arg(&db).arg("main.hip").arg("--").args(flags).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stderr).ends_with(
        "regtune fix: 1 of 5 decision(s) could not be expressed (see above); 4 patched in place, 5 file(s), verified by a plain build\n"
    ));
    for file in ["main.hip", "kernels.cu", "inc/dslash.h", "inc/su3.h", "inc/macros.h", "sys/vendor_math.h"] {
        assert_eq!(
            std::fs::read_to_string(project.join(file)).unwrap(),
            std::fs::read_to_string(copy.path().join(file)).unwrap(),
            "{file}"
        );
    }
    assert_eq!(std::fs::read_to_string(project.join("sys/vendor_math.h")).unwrap(), vendor);
}

#[test]
fn a_template_s_instantiations_take_one_decision_or_are_named() {
    // The double instantiation asks for waves-per-eu=5, the float one for a
    // cap of 1: the double's decision leaves the float one at occupancy 7
    // (its promise is 8), the float's gives the double more than its own.
    let (dir, db) = decided(
        "tests/fix/templates.hip",
        "templates.hip",
        &[],
        &[("void ztile<double>", serde_json::json!({"waves_per_eu": 5})), ("void ztile<float>", serde_json::json!({"unroll_cap": 1}))],
    );
    let out = regtune(dir.path()).args(["fix", "--db"]).arg(&db).arg("templates.hip").output().unwrap();
    let (patch, summary) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{summary}");
    let diff = &patch[patch.find("--- a/").expect("a diff")..];
    assert_eq!(
        diff,
        "--- a/templates.hip\n+++ b/templates.hip\n@@ -17,7 +17,7 @@\n     T zm1 = u[pos - sz], z0 = u[pos], zp1 = u[pos + sz];\n     T zp2 = u[pos + 2 * sz], zp3 = u[pos + 3 * sz];\n \n-#pragma unroll\n+#pragma nounroll\n     for (int t = 0; t < TILE; ++t) {\n         T zp4 = u[pos + 4 * sz];\n         T d2 = T(-205.0 / 24.0) * z0\n"
    );
    // Both instantiations, rebuilt from the patched file by clang alone.
    let copy = applied_copy(dir.path(), &patch);
    let remarks = remarks_for(&copy.path().join("templates.hip"), "gfx90a");
    let (double, float) = (entry(&db, "void ztile<double>"), entry(&db, "void ztile<float>"));
    assert_reaches(&remarks[float["symbol"].as_str().unwrap()], &float["after"], "float");
    let got = &remarks[double["symbol"].as_str().unwrap()];
    assert!(got["Occupancy [waves/SIMD]"] >= double["after"]["occupancy"].as_u64().unwrap(), "not worse than its own promise: {got:?}");
    assert_eq!(got["VGPRs Spill"], 0);
    let got_double = serde_json::json!({"vgpr": got["VGPRs"], "occupancy": got["Occupancy [waves/SIMD]"]});
    for expected in [
        format!("templates.hip: void ztile<float> (gfx90a): unroll-cap=1; verified by a plain build: {}\n", change(&float["before"], &float["after"])),
        format!(
            "templates.hip: void ztile<double> (gfx90a): unroll-cap=1 (its definition's choice, in place of its own waves-per-eu=5); verified by a plain build: {}\n",
            change(&double["before"], &got_double)
        ),
        "templates.hip: note: the template of void ztile<double>, void ztile<float> takes void ztile<float>'s unroll-cap=1 (tried before it: with void ztile<double>'s waves-per-eu=5, void ztile<float> on gfx90a gives occupancy 7 where it was 8)\n".into(),
    ] {
        assert!(summary.contains(&expected), "{expected:?} not in\n{summary}");
    }
    assert!(summary.ends_with("regtune fix: all 2 decision(s) in the patch, 1 file(s), verified by a plain build\n"), "{summary}");

    // Occupancy targets each instantiation needs and the other cannot take:
    // neither is patched, and both tries are named.
    let (dir, db) = decided(
        "tests/fix/templates.hip",
        "templates.hip",
        &[],
        &[("void ztile<double>", serde_json::json!({"waves_per_eu": 4})), ("void ztile<float>", serde_json::json!({"waves_per_eu": 8}))],
    );
    let out = regtune(dir.path()).args(["fix", "--db"]).arg(&db).arg("templates.hip").output().unwrap();
    let (patch, summary) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{summary}");
    assert!(!patch.contains("--- a/"), "{patch}");
    let why = "not in the patch: the template's instantiations decided differently (void ztile<double>: waves-per-eu=4; void ztile<float>: waves-per-eu=8) and no one edit of the text they share is right for all: with void ztile<double>'s waves-per-eu=4, void ztile<float> on gfx90a gives occupancy 7 where it was 8; with void ztile<float>'s waves-per-eu=8, void ztile<double> on gfx90a gives spills ";
    for name in ["void ztile<double> (gfx90a): waves-per-eu=4: ", "void ztile<float> (gfx90a): waves-per-eu=8: "] {
        assert!(summary.contains(&format!("templates.hip: {name}{why}")), "{name}{why}\nnot in\n{summary}");
    }
}

/// NVPTX: clang 22 has no `__maxnreg__`, so a warps-per-SM target needs a
/// block size; a kernel whose source already states one takes the target
/// as `__launch_bounds__`'s second argument (blocks per SM), a number for
/// a number and an expression of the block size for a macro or a template
/// parameter (one edit right for every instantiation), and a plain build
/// of the patched file reaches the tuned numbers.
#[test]
fn launch_bounds_in_the_source_take_the_occupancy_target() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(repo().join("tests/fix/launch_bounds.cu"), dir.path().join("k.cu")).unwrap();
    let db = dir.path().join("db.json");
    let evidence = evidence_all_proven();
    let out = regtune(dir.path())
        // Limits far above what it needs, so a loaded machine cannot stop the search.
        .args(["tune", "--offload-arch", "sm_90", "--time-budget", "600", "--variant-timeout", "300"])
        .args(["--candidates", "0", "--evidence", evidence.to_str().unwrap(), "--db"])
        .arg(&db)
        .arg("k.cu")
        .output()
        .unwrap();
    ok(&out, "regtune tune sm_90");
    let entries = db_entries(&db);
    assert_eq!(entries.len(), 5, "{entries:?}");
    for e in &entries {
        assert!(e["transforms"]["warps_per_sm"].is_u64() && e["transforms"]["launch_bounds"].is_null(), "{e}");
    }
    let out = regtune(dir.path()).args(["fix", "--offload-arch", "sm_90", "--db"]).arg(&db).arg("k.cu").output().unwrap();
    ok(&out, "regtune fix");
    let patch = text(&out.stdout);
    for line in [
        "+__global__ void __launch_bounds__(64, 32) literal(",
        "+__global__ void __launch_bounds__(NT, 64 / (((NT) + 31) / 32)) named(",
        "+__global__ void __launch_bounds__(64, 24) chosen(",
        "+__global__ void __launch_bounds__(N, 64 / (((N) + 31) / 32)) templ(",
    ] {
        assert!(patch.contains(line), "{line}\n{patch}");
    }
    assert!(text(&out.stderr).contains("all 5 decision(s) in the patch"), "{}", text(&out.stderr));
    // ptxas's numbers for a plain build of the patched file.
    let copy = applied_copy(dir.path(), &patch);
    let out = regtune(copy.path()).args(["report", "--format", "json", "--offload-arch", "sm_90", "k.cu"]).output().unwrap();
    ok(&out, "regtune report sm_90");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    for k in report["kernels"].as_array().unwrap() {
        let e = entries.iter().find(|e| e["symbol"] == k["symbol"]).unwrap();
        assert_eq!(k["usage"]["vgpr"], e["after"]["vgpr"], "{}", k["name"]);
        assert!(k["usage"]["vgpr"].as_u64() < e["before"]["vgpr"].as_u64(), "{}", k["name"]);
        assert_eq!(k["usage"]["occupancy"], e["after"]["occupancy"], "{}", k["name"]);
    }
}
