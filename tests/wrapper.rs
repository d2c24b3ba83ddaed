//! `regtune-hipcc` and `regtune cc` against the real compiler and backend:
//! builds in tune mode under `make -j` conditions share one db and lose
//! nothing; every example's object reads back exactly the usage the tuner
//! promised; CMake builds through both entry points; and every way regtune
//! can fail leaves the compiler's own exit code and output untouched, with
//! one warning line when the build still succeeded.

// A test fails by panicking; `unwrap` says where.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use common::{evidence_all_proven, examples, repo};
use serde_json::Value;

const ARCHS: [&str; 2] = ["gfx90a", "gfx1100"];

fn bin(name: &str) -> PathBuf {
    assert_cmd::cargo::cargo_bin(name)
}

fn plugin_is_built() {
    let plugin = bin("regtune").with_file_name("libregtune_passes.so");
    assert!(plugin.is_file(), "build the workspace first: {}", plugin.display());
}

/// `regtune-hipcc` (or `regtune`) in `dir`, with no regtune setting
/// inherited and a cache of its own.
fn wrapper(name: &str, dir: &Path) -> Command {
    plugin_is_built();
    let mut c = Command::new(bin(name));
    c.current_dir(dir);
    for v in [
        "REGTUNE_MODE",
        "REGTUNE_COMPILER",
        "REGTUNE_DB",
        "REGTUNE_VERBOSE",
        "REGTUNE_PLUGIN",
        "REGTUNE_WRAPPED",
        "REGTUNE_DECISIONS",
        "REGTUNE_INPUT_HASH",
        "REGTUNE_TUNE_ARGS",
        "REGTUNE_EVIDENCE",
    ] {
        c.env_remove(v);
    }
    c.env("REGTUNE_CACHE_DIR", dir.join("cache"));
    c
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn ok(out: &Output, what: &str) {
    assert!(out.status.success(), "{what}: {}\n{}{}", out.status, text(&out.stdout), text(&out.stderr));
}

/// Kernel symbol → usage, read back from a built object for `arch`.
fn read_back(object: &Path, arch: &str) -> BTreeMap<String, Value> {
    let out = Command::new(bin("regtune")).args(["report", "--format", "json", "--offload-arch", arch]).arg(object).output().unwrap();
    ok(&out, &format!("regtune report {}", object.display()));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    doc["kernels"].as_array().unwrap().iter().map(|k| (k["symbol"].as_str().unwrap().to_string(), k["usage"].clone())).collect()
}

fn db_entries(db: &Path) -> Vec<Value> {
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(db).unwrap()).expect("the db is valid JSON");
    doc["kernels"].as_object().unwrap().values().cloned().collect()
}

/// The db's one entry for a kernel on a target.
fn entry<'a>(entries: &'a [Value], symbol: &str, arch: &str) -> &'a Value {
    let found: Vec<&Value> = entries.iter().filter(|e| e["symbol"] == symbol && e["arch"] == arch).collect();
    assert_eq!(found.len(), 1, "{symbol} on {arch}: {found:?}");
    found[0]
}

/// Every kernel in `object` has exactly the usage its db entry promised.
fn assert_promised(object: &Path, entries: &[Value], archs: &[&str]) -> usize {
    let mut kernels = 0;
    for arch in archs {
        let built = read_back(object, arch);
        assert!(!built.is_empty(), "{} has no kernels for {arch}", object.display());
        for (symbol, usage) in &built {
            let promised = &entry(entries, symbol, arch)["after"];
            for field in ["vgpr", "agpr", "sgpr", "vgpr_spills", "sgpr_spills", "scratch_bytes", "lds_bytes", "occupancy", "code_bytes"] {
                assert_eq!(usage[field], promised[field], "{} {symbol} on {arch}: {field}", object.display());
            }
            kernels += 1;
        }
    }
    kernels
}

fn stem(p: &Path) -> String {
    p.file_stem().unwrap().to_string_lossy().into_owned()
}

/// Every example built at once in tune mode into one db, as `make -j`
/// would: each wrapper tunes its file and writes the shared db. The
/// evidence table where every class is proven reaches `regtune tune`
/// through the environment, so the MD kernel's sink is decided as the
/// default decided it before it followed GPU evidence.
struct Tuned {
    _dir: tempfile::TempDir,
    db: PathBuf,
    builds: Vec<(PathBuf, PathBuf, Output)>,
}

fn tuned() -> &'static Tuned {
    static TUNED: OnceLock<Tuned> = OnceLock::new();
    TUNED.get_or_init(|| {
        // A static is never dropped: keep it under target/tmp, not /tmp.
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let db = dir.path().join("db/decisions.json");
        let children: Vec<(PathBuf, PathBuf, std::process::Child)> = examples()
            .into_iter()
            .map(|example| {
                let object = dir.path().join(format!("{}.o", stem(&example)));
                let child = wrapper("regtune-hipcc", dir.path())
                    .env("REGTUNE_MODE", "tune")
                    .env("REGTUNE_DB", &db)
                    // The LBM's pow(x, 2) is inexact: applied only on opt-in.
                    .env("REGTUNE_TUNE_ARGS", "--pow2 apply")
                    .env("REGTUNE_EVIDENCE", evidence_all_proven())
                    .arg(format!("--offload-arch={}", ARCHS.join(",")))
                    .args(["-O3", "-c"])
                    .arg(&example)
                    .arg("-o")
                    .arg(&object)
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap();
                (example, object, child)
            })
            .collect();
        let builds = children.into_iter().map(|(e, o, c)| (e, o, c.wait_with_output().unwrap())).collect();
        Tuned { _dir: dir, db, builds }
    })
}

/// A copy of the tuned db in a fresh directory.
fn tuned_db_copy(dir: &Path) -> PathBuf {
    let db = dir.join("decisions.json");
    std::fs::copy(&tuned().db, &db).unwrap();
    db
}

fn example(name: &str) -> PathBuf {
    repo().join("examples").join(name)
}

#[test]
fn tune_mode_builds_running_at_once_share_one_db_and_lose_no_decision() {
    let t = tuned();
    for (example, object, out) in &t.builds {
        ok(out, &format!("tune-mode build of {}", example.display()));
        assert_eq!(text(&out.stdout), "", "{}", example.display());
        assert_eq!(text(&out.stderr), "", "{}: a clean build prints nothing", example.display());
        assert!(object.is_file());
    }
    let entries = db_entries(&t.db);
    for (example, object, _) in &t.builds {
        for arch in ARCHS {
            for symbol in read_back(object, arch).keys() {
                let e = entry(&entries, symbol, arch);
                assert_eq!(e["input_hash"].as_str().unwrap().len(), 64);
                let name = example.file_name().unwrap().to_string_lossy();
                assert!(e["file"].as_str().unwrap().ends_with(name.as_ref()), "{e}");
            }
        }
    }
    let mut left: Vec<String> =
        std::fs::read_dir(t.db.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    left.sort();
    // decisions.code: the candidates `regtune measure` runs, kept by tune.
    assert_eq!(left, ["decisions.code", "decisions.json", "decisions.json.lock"], "no temporary file is left behind");
    let code = t.db.parent().unwrap().join("decisions.code");
    for unit in std::fs::read_dir(&code).unwrap() {
        for f in std::fs::read_dir(unit.unwrap().path()).unwrap() {
            let name = f.unwrap().file_name().to_string_lossy().into_owned();
            assert!(name.ends_with(".hsaco") || name.ends_with(".cubin"), "no temporary file in decisions.code: {name}");
        }
    }
}

#[test]
fn every_example_builds_with_exactly_the_usage_the_tuner_promised() {
    let t = tuned();
    let entries = db_entries(&t.db);
    let changed: Vec<&Value> = entries.iter().filter(|e| e["transforms"].as_object().is_some_and(|m| !m.is_empty())).collect();
    // The MD kernel's sink, and the LBM's pow2 (opted in above); the
    // Laplacian's unroll cap trades ILP and is only suggested by default.
    assert!(changed.len() >= 2, "the examples exercise real decisions: {changed:?}");
    assert!(changed.iter().all(|e| e["after"]["occupancy"].as_u64() > e["before"]["occupancy"].as_u64()));

    let mut kernels = 0;
    for (example, object, out) in &t.builds {
        ok(out, &example.display().to_string());
        kernels += assert_promised(object, &entries, &ARCHS);
    }
    assert_eq!(kernels, 2 * examples().len());

    // Use mode (the default) with the same db: the same promise, applied by the plugin.
    let dir = tempfile::tempdir().unwrap();
    let db = tuned_db_copy(dir.path());
    for example in examples() {
        let object = dir.path().join(format!("{}.o", stem(&example)));
        let out = wrapper("regtune-hipcc", dir.path())
            .env("REGTUNE_DB", &db)
            .env("REGTUNE_VERBOSE", "1")
            .arg(format!("--offload-arch={}", ARCHS.join(",")))
            .args(["-O3", "-c"])
            .arg(&example)
            .arg("-o")
            .arg(&object)
            .output()
            .unwrap();
        ok(&out, &example.display().to_string());
        let kernels = read_back(&object, ARCHS[0]);
        let decided = changed.iter().any(|e| kernels.contains_key(e["symbol"].as_str().unwrap()));
        assert_eq!(text(&out.stderr).contains("regtune: note: building with"), decided, "{}: {}", example.display(), text(&out.stderr));
        assert_eq!(text(&out.stderr).contains(" changed "), decided, "the plugin says what it changed");
        assert_promised(&object, &entries, &ARCHS);
    }
    assert_eq!(std::fs::read(&db).unwrap(), std::fs::read(&t.db).unwrap(), "use mode never writes the db");
}

/// A hipcc regtune cannot load its plugin into (as far as regtune can
/// tell, it is not the compiler it tunes with): it logs each command, then
/// builds with Debian's clang through regtune-hipcc's plain path.
fn foreign_hipcc(dir: &Path) -> PathBuf {
    let path = dir.join("bin/hipcc");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$*\" >> \"{}\"\nexec env -u REGTUNE_COMPILER \"{}\" \"$@\"\n",
            dir.join("hipcc.log").display(),
            bin("regtune-hipcc").display()
        ),
    )
    .unwrap();
    let mut perms = std::fs::metadata(&path).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&path, perms).unwrap();
    path
}

#[test]
fn patch_mode_builds_the_decisions_with_a_compiler_that_cannot_load_the_plugin() {
    let dir = tempfile::tempdir().unwrap();
    let db = tuned_db_copy(dir.path());
    let entries = db_entries(&db);
    let hipcc = foreign_hipcc(dir.path());
    for name in ["lbm_d3q19.hip", "long_lived.hip"] {
        let object = dir.path().join(name.replace(".hip", ".o"));
        let build = |mode: &str| {
            wrapper("regtune-hipcc", dir.path())
                .env("REGTUNE_MODE", mode)
                .env("REGTUNE_DB", &db)
                .env("REGTUNE_COMPILER", &hipcc)
                .args(["--offload-arch=gfx90a", "-O3", "-c", "-MD"])
                .arg(example(name))
                .arg("-o")
                .arg(&object)
                .output()
                .unwrap()
        };
        // Use mode cannot: the plugin is not for this compiler. One line, plain numbers.
        let out = build("use");
        ok(&out, name);
        assert!(text(&out.stderr).contains("is not the compiler regtune tunes with"), "{}", text(&out.stderr));
        let plain = read_back(&object, "gfx90a");
        // Patch mode can: the decided kernels get exactly the usage promised
        // (code size aside: the source moves code the plugin moves in IR).
        let out = build("patch");
        ok(&out, name);
        assert_eq!(text(&out.stderr), "", "patch mode builds silently");
        let built = read_back(&object, "gfx90a");
        for (symbol, usage) in &built {
            let promised = &entry(&entries, symbol, "gfx90a")["after"];
            for field in ["vgpr", "agpr", "sgpr", "vgpr_spills", "sgpr_spills", "scratch_bytes", "lds_bytes", "occupancy"] {
                assert_eq!(usage[field], promised[field], "{name} {symbol}: {field}");
            }
            assert_ne!(usage["vgpr"], plain[symbol]["vgpr"], "{name}: the decisions changed something");
        }
        let deps = std::fs::read_to_string(object.with_extension("d")).unwrap();
        assert!(deps.contains(&example(name).display().to_string()) && !deps.contains("regtune-fix"), "{deps}");
    }
    let log = std::fs::read_to_string(dir.path().join("hipcc.log")).unwrap();
    assert_eq!(log.lines().filter(|l| l.contains("/regtune-fix")).count(), 2, "each patched copy was compiled:\n{log}");
    assert!(log.lines().all(|l| !l.contains("-fpass-plugin")), "no plugin reached the compiler:\n{log}");
}

#[test]
fn patch_mode_builds_the_headers_the_patch_edits_under_their_own_names() {
    // tests/fix/project: dslash lives in inc/dslash.h and inlines inc/su3.h;
    // its suggestion (an unroll cap and `__restrict__`), once confirmed, is
    // written in the headers alone, which reach the compiler through an overlay.
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    copy_tree(&repo().join("tests/fix/project"), &project);
    let (db, object) = (dir.path().join("decisions.json"), dir.path().join("main.o"));
    let hipcc = foreign_hipcc(dir.path());
    let build = |mode: &str| {
        let mut c = wrapper("regtune-hipcc", &project);
        if mode == "patch" {
            c.env("REGTUNE_COMPILER", &hipcc);
        }
        c.env("REGTUNE_MODE", mode)
            .env("REGTUNE_DB", &db)
            .args(["--offload-arch=gfx90a", "-O3", "-c", "main.hip", "-isystem", "sys", "-o"])
            .arg(&object)
            .output()
            .unwrap()
    };
    ok(&build("tune"), "tune-mode build");
    let plain = read_back(&object, "gfx90a");
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(&db).unwrap()).unwrap();
    let dslash = doc["kernels"].as_object_mut().unwrap().values_mut().find(|e| e["name"].as_str().unwrap().starts_with("dslash")).unwrap();
    let symbol = dslash["symbol"].as_str().unwrap().to_string();
    let suggestion = &mut dslash["suggested"][0];
    assert!(suggestion["transforms"]["unroll_cap"].is_u64(), "{suggestion}");
    suggestion["confirmed"] = Value::Bool(true);
    let promised = suggestion["usage"].clone();
    std::fs::write(&db, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    let before: Vec<String> =
        ["main.hip", "inc/dslash.h", "inc/su3.h"].iter().map(|f| std::fs::read_to_string(project.join(f)).unwrap()).collect();

    let out = build("patch");
    ok(&out, "patch-mode build");
    assert_eq!(text(&out.stderr), "", "patch mode builds silently");
    let built = read_back(&object, "gfx90a");
    for field in ["vgpr", "agpr", "sgpr", "vgpr_spills", "sgpr_spills", "scratch_bytes", "lds_bytes", "occupancy"] {
        assert_eq!(built[&symbol][field], promised[field], "dslash: {field}");
    }
    assert_ne!(built[&symbol]["vgpr"], plain[&symbol]["vgpr"], "the decision changed something");
    let after: Vec<String> =
        ["main.hip", "inc/dslash.h", "inc/su3.h"].iter().map(|f| std::fs::read_to_string(project.join(f)).unwrap()).collect();
    assert_eq!(before, after, "the sources on disk stay as they are");
    let log = std::fs::read_to_string(dir.path().join("hipcc.log")).unwrap();
    let patched = log.lines().last().unwrap();
    assert!(patched.contains("-ivfsoverlay") && !patched.contains("-fpass-plugin"), "{log}");
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

#[test]
fn several_sources_from_a_response_file_with_the_separate_offload_arch_form() {
    let dir = tempfile::tempdir().unwrap();
    let db = tuned_db_copy(dir.path());
    let (lbm, long_lived) = (example("lbm_d3q19.hip"), example("long_lived.hip"));
    let rsp = dir.path().join("args.rsp");
    std::fs::write(&rsp, format!("--offload-arch gfx90a\n-O3 -c \"{}\" '{}'\n", lbm.display(), long_lived.display())).unwrap();
    let out = wrapper("regtune-hipcc", dir.path())
        .env("REGTUNE_DB", &db)
        .env("REGTUNE_VERBOSE", "1")
        .arg(format!("@{}", rsp.display()))
        .output()
        .unwrap();
    ok(&out, "regtune-hipcc @args.rsp");
    assert!(text(&out.stderr).contains("regtune: note: building with 2 decisions"), "{}", text(&out.stderr));
    let entries = db_entries(&db);
    assert_promised(&dir.path().join("lbm_d3q19.o"), &entries, &["gfx90a"]);
    assert_promised(&dir.path().join("long_lived.o"), &entries, &["gfx90a"]);
}

#[test]
fn compile_and_link_builds_a_program_on_debians_hip_runtime_with_the_decisions() {
    let dir = tempfile::tempdir().unwrap();
    let db = tuned_db_copy(dir.path());
    let app = dir.path().join("lbm");
    let out = wrapper("regtune-hipcc", dir.path())
        .env("REGTUNE_DB", &db)
        .args(["--offload-arch=gfx90a", "-O3"])
        .arg(example("lbm_d3q19.hip"))
        .arg("-o")
        .arg(&app)
        .output()
        .unwrap();
    ok(&out, "compile and link");
    let binary = std::fs::read(&app).unwrap();
    assert!(binary.windows(16).any(|w| w == b"libamdhip64.so.5"), "linked against Debian's libamdhip64");
    assert_promised(&app, &db_entries(&db), &["gfx90a"]);
}

#[test]
fn cu_sources_are_hip_to_regtune_hipcc() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("decisions.json");
    std::fs::copy(example("long_lived.hip"), dir.path().join("long_lived.cu")).unwrap();
    let out = wrapper("regtune-hipcc", dir.path())
        .env("REGTUNE_DB", &db)
        .env("REGTUNE_MODE", "tune")
        .args(["--offload-arch", "gfx90a", "-O3", "-I"])
        .arg(repo().join("examples"))
        .args(["-c", "long_lived.cu", "-o", "ll.o"])
        .output()
        .unwrap();
    ok(&out, "regtune-hipcc -c long_lived.cu");
    assert_eq!(text(&out.stderr), "");
    let entries = db_entries(&db);
    assert_eq!(entries.len(), 1);
    assert!(entries[0]["file"].as_str().unwrap().ends_with("long_lived.cu"), "{}", entries[0]);
    assert_promised(&dir.path().join("ll.o"), &entries, &["gfx90a"]);
}

/// The same compile through clang itself, with the device libraries it
/// needs to get as far as the frontend.
fn clang_itself(dir: &Path, source: &str) -> Output {
    Command::new("clang++-22")
        .current_dir(dir)
        .args(["-x", "hip", "--offload-arch=gfx90a", "-O3", "--rocm-path=/usr", "-mcode-object-version=5"])
        .arg("--rocm-device-lib-path=/usr/lib/x86_64-linux-gnu/amdgcn/bitcode")
        .args(["-c", source, "-o", "clang.o"])
        .output()
        .unwrap()
}

#[test]
fn a_compile_error_is_the_compilers_own_output_and_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bad.hip"), "__global__ void k(float* x) {\n  x[0] = undefined_thing;\n}\n").unwrap();
    let expected = clang_itself(dir.path(), "bad.hip");
    assert_eq!(expected.status.code(), Some(1));
    assert!(text(&expected.stderr).contains("error: use of undeclared identifier 'undefined_thing'"));
    let db = tuned_db_copy(dir.path());
    for mode in ["use", "tune", "off"] {
        let out = wrapper("regtune-hipcc", dir.path())
            .env("REGTUNE_DB", &db)
            .env("REGTUNE_MODE", mode)
            .args(["--offload-arch=gfx90a", "-O3", "-c", "bad.hip", "-o", "bad.o"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), expected.status.code(), "{mode}");
        assert_eq!(text(&out.stdout), text(&expected.stdout), "{mode}");
        assert_eq!(text(&out.stderr), text(&expected.stderr), "{mode}: verbatim, no regtune line");
        assert!(!dir.path().join("bad.o").exists());
    }
    assert_eq!(std::fs::read(&db).unwrap(), std::fs::read(&tuned().db).unwrap(), "a failed tune writes nothing");
}

#[test]
fn a_missing_compiler_is_one_error_line_and_exit_127() {
    let dir = tempfile::tempdir().unwrap();
    let out = wrapper("regtune-hipcc", dir.path())
        .env("REGTUNE_COMPILER", "/no/such/hipcc")
        .args(["--offload-arch=gfx90a", "-c", "k.hip"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(127));
    assert_eq!(text(&out.stdout), "");
    assert_eq!(text(&out.stderr), "regtune: error: compiler `/no/such/hipcc` not found (REGTUNE_COMPILER)\n");
    let out = wrapper("regtune", dir.path()).args(["cc", "--compiler", "no-such-clang-xyz", "--", "-c", "k.hip"]).output().unwrap();
    assert_eq!(out.status.code(), Some(127));
    assert_eq!(text(&out.stderr), "regtune: error: compiler `no-such-clang-xyz` not found (--compiler)\n");
    let out = wrapper("regtune", dir.path()).args(["cc", "no-such-clang-xyz", "-c", "k.hip"]).output().unwrap();
    assert_eq!(out.status.code(), Some(127));
    assert_eq!(text(&out.stderr), "regtune: error: compiler `no-such-clang-xyz` not found (the command line)\n");
    // Itself as its compiler would run forever: refused.
    let itself = bin("regtune-hipcc");
    let out = wrapper("regtune-hipcc", dir.path()).env("REGTUNE_COMPILER", &itself).args(["-c", "k.hip"]).output().unwrap();
    assert_eq!(out.status.code(), Some(127));
    assert_eq!(text(&out.stderr), format!("regtune: error: compiler `{}` is this wrapper itself (REGTUNE_COMPILER)\n", itself.display()));
}

#[test]
fn a_corrupted_db_builds_plainly_with_one_warning_line_and_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("decisions.json");
    std::fs::write(&db, "{ this is not json").unwrap();
    let lbm = example("lbm_d3q19.hip");
    let plain = dir.path().join("plain.o");
    ok(
        &wrapper("regtune-hipcc", dir.path())
            .env("REGTUNE_MODE", "off")
            .args(["--offload-arch=gfx90a", "-O3", "-c"])
            .arg(&lbm)
            .arg("-o")
            .arg(&plain)
            .output()
            .unwrap(),
        "off-mode build",
    );
    for mode in ["use", "tune"] {
        let object = dir.path().join(format!("{mode}.o"));
        let out = wrapper("regtune-hipcc", dir.path())
            .env("REGTUNE_DB", &db)
            .env("REGTUNE_MODE", mode)
            .args(["--offload-arch=gfx90a", "-O3", "-c"])
            .arg(&lbm)
            .arg("-o")
            .arg(&object)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{mode}");
        assert_eq!(text(&out.stdout), "");
        assert_eq!(
            text(&out.stderr),
            format!(
                "regtune: warning: decisions db {} is not valid JSON: key must be a string at line 1 column 3; compiling without regtune\n",
                db.display()
            ),
            "{mode}"
        );
        assert_eq!(read_back(&object, "gfx90a"), read_back(&plain, "gfx90a"), "{mode}: built unmodified");
    }
    assert_eq!(std::fs::read_to_string(&db).unwrap(), "{ this is not json", "the user's file is theirs to fix");
}

#[test]
fn a_plugin_that_cannot_load_builds_plainly_with_one_warning_line() {
    let dir = tempfile::tempdir().unwrap();
    let db = tuned_db_copy(dir.path());
    let lbm = example("lbm_d3q19.hip");
    let build = |plugin: &str, object: &str| {
        wrapper("regtune-hipcc", dir.path())
            .env("REGTUNE_DB", &db)
            .env("REGTUNE_PLUGIN", plugin)
            .args(["--offload-arch=gfx90a", "-O3", "-c"])
            .arg(&lbm)
            .args(["-o", object])
            .output()
            .unwrap()
    };
    let entries = db_entries(&db);
    let symbol = read_back(&tuned().builds.iter().find(|b| b.0 == lbm).unwrap().1, "gfx90a").into_keys().next().unwrap();
    let before = &entry(&entries, &symbol, "gfx90a")["before"];
    assert_ne!(before, &entry(&entries, &symbol, "gfx90a")["after"], "the db has a decision for lbm");

    let out = build("/no/such/libregtune_passes.so", "missing.o");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        text(&out.stderr),
        "regtune: warning: pass plugin libregtune_passes.so not found (looked in /no/such/libregtune_passes.so); build it with \
         `cargo build --release --workspace` or set REGTUNE_PLUGIN; compiling without regtune\n"
    );
    assert_eq!(read_back(&dir.path().join("missing.o"), "gfx90a")[&symbol]["vgpr"], before["vgpr"]);

    // A pass plugin of another LLVM that does not say which (Debian's
    // Polly for LLVM 19, in llvm-19-linker-tools, which clang-19 from
    // ci/bootstrap.sh brings) cannot load into clang 22.
    let polly = "/usr/lib/llvm-19/lib/LLVMPolly.so";
    assert!(Path::new(polly).is_file(), "{polly} is missing: run ci/bootstrap.sh");
    let out = build(polly, "other-llvm.o");
    assert_eq!(out.status.code(), Some(0));
    let stderr = text(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with(&format!("regtune: warning: pass plugin {polly} does not load into ")), "{stderr}");
    assert!(stderr.contains("undefined symbol"), "{stderr}");
    assert!(stderr.ends_with("; compiling without regtune\n"), "{stderr}");
    let built = read_back(&dir.path().join("other-llvm.o"), "gfx90a");
    for field in ["vgpr", "sgpr", "sgpr_spills", "occupancy"] {
        assert_eq!(built[&symbol][field], before[field], "{field}: built unmodified");
    }
}

/// regtune's own plugin built for LLVM 19 would crash clang 22 if loaded:
/// the wrapper reads which LLVM it is for, compiles plainly and names the
/// command that builds the plugin for clang 22, in one line.
#[test]
fn a_plugin_for_another_llvm_builds_plainly_naming_the_fix() {
    let Some(plugin) = common::llvm19_plugin() else { return };
    let dir = tempfile::tempdir().unwrap();
    let db = tuned_db_copy(dir.path());
    let lbm = example("lbm_d3q19.hip");
    let out = wrapper("regtune-hipcc", dir.path())
        .env("REGTUNE_DB", &db)
        .env("REGTUNE_PLUGIN", &plugin)
        .args(["--offload-arch=gfx90a", "-O3", "-c"])
        .arg(&lbm)
        .args(["-o", "llvm19.o"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with(&format!("regtune: warning: pass plugin {} is built for LLVM 19.", plugin.display())), "{stderr}");
    assert!(stderr.contains(" is LLVM 22; build it for LLVM 22: "), "{stderr}");
    assert!(stderr.ends_with("cargo build --release -p regtune-passes; compiling without regtune\n"), "{stderr}");
    let entries = db_entries(&db);
    let symbol = read_back(&tuned().builds.iter().find(|b| b.0 == lbm).unwrap().1, "gfx90a").into_keys().next().unwrap();
    let before = &entry(&entries, &symbol, "gfx90a")["before"];
    assert_ne!(before, &entry(&entries, &symbol, "gfx90a")["after"], "the db has a decision for lbm");
    let built = read_back(&dir.path().join("llvm19.o"), "gfx90a");
    for field in ["vgpr", "sgpr", "sgpr_spills", "occupancy"] {
        assert_eq!(built[&symbol][field], before[field], "{field}: built unmodified");
    }
}

/// A stand-in compiler: records its arguments in $FAKE_LOG, prints one
/// line to each stream, exits with $FAKE_RC (7).
fn fake_compiler(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(
        &path,
        "#!/bin/sh\ncase \"$1\" in --version|-###) echo 'fake clang version 0'; exit 0;; esac\n\
         printf '%s\\n' \"$@\" > \"$FAKE_LOG\"\nprintf 'fake stdout\\n'\nprintf 'fake stderr\\n' >&2\nexit \"${FAKE_RC:-7}\"\n",
    )
    .unwrap();
    let mut perms = std::fs::metadata(&path).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&path, perms).unwrap();
    path
}

#[test]
fn commands_regtune_has_no_part_in_reach_the_compiler_exactly_as_given() {
    let dir = tempfile::tempdir().unwrap();
    let fake = fake_compiler(dir.path(), "fake-clang");
    let log = dir.path().join("args.log");
    let db = tuned_db_copy(dir.path());
    std::fs::write(dir.path().join("more.rsp"), "-DX=1 -c k.hip").unwrap();
    let commands: &[&[&str]] = &[
        &["--offload-arch=gfx90a", "--cuda-host-only", "-O3", "-c", "k.hip", "-o", "k.o"],
        &["a.o", "b.o", "-o", "app", "-lm"],
        &["-O2", "-c", "main.cpp", "-o", "main.o"],
        &["-c", "util.c"],
        &["--offload-arch=gfx90a", "-E", "k.hip"],
        &["--version"],
        &["--offload-arch=gfx90a", "@more.rsp"],
    ];
    for args in commands {
        for mode in ["use", "tune"] {
            let out = wrapper("regtune-hipcc", dir.path())
                .env("REGTUNE_COMPILER", &fake)
                .env("REGTUNE_DB", &db)
                .env("REGTUNE_MODE", mode)
                .env("FAKE_LOG", &log)
                .args(*args)
                .output()
                .unwrap();
            let ctx = format!("{mode}: {args:?}");
            assert_eq!(out.status.code(), Some(if args == &["--version"] { 0 } else { 7 }), "{ctx}");
            if args != &["--version"] {
                assert_eq!(text(&out.stdout), "fake stdout\n", "{ctx}");
                assert_eq!(text(&out.stderr), "fake stderr\n", "{ctx}");
                let seen = std::fs::read_to_string(&log).unwrap();
                assert_eq!(seen.lines().collect::<Vec<_>>(), *args, "{ctx}: the original arguments, response file unexpanded");
            }
        }
    }
    // `regtune cc` as a launcher (the compiler first, no `--`) and with --mode off.
    for cc in [vec!["cc", fake.to_str().unwrap()], vec!["cc", "--mode", "off", "--compiler", fake.to_str().unwrap(), "--"]] {
        let out = wrapper("regtune", dir.path())
            .env("REGTUNE_DB", &db)
            .env("FAKE_LOG", &log)
            .args(&cc)
            .args(["--offload-arch=gfx90a", "-O3", "-c", "k.hip"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(7), "{cc:?}");
        assert_eq!((text(&out.stdout), text(&out.stderr)), ("fake stdout\n".into(), "fake stderr\n".into()), "{cc:?}");
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "--offload-arch=gfx90a\n-O3\n-c\nk.hip\n", "{cc:?}");
    }
}

#[test]
fn a_failure_of_regtunes_own_adds_one_line_only_when_the_build_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    // Named like hipcc, but not the one regtune tunes with (there is no ROCm here).
    let fake = fake_compiler(dir.path(), "hipcc");
    let log = dir.path().join("args.log");
    let db = tuned_db_copy(dir.path());
    let run = |rc: &str, mode: &str| {
        wrapper("regtune-hipcc", dir.path())
            .env("REGTUNE_COMPILER", &fake)
            .env("REGTUNE_DB", &db)
            .env("REGTUNE_MODE", mode)
            .env("FAKE_LOG", &log)
            .env("FAKE_RC", rc)
            .args(["--offload-arch=gfx90a", "-O3", "-c", "k.hip"])
            .output()
            .unwrap()
    };
    let failed = run("7", "use");
    assert_eq!(failed.status.code(), Some(7));
    assert_eq!((text(&failed.stdout), text(&failed.stderr)), ("fake stdout\n".into(), "fake stderr\n".into()));
    let built = run("0", "use");
    assert_eq!(built.status.code(), Some(0));
    assert_eq!(text(&built.stdout), "fake stdout\n");
    assert_eq!(
        text(&built.stderr),
        format!("regtune: warning: {} is not the compiler regtune tunes with (/usr/lib/llvm-22/bin/clang); compiling without regtune\nfake stderr\n", fake.display())
    );
    let bad_mode = run("0", "fast");
    assert_eq!(
        text(&bad_mode.stderr),
        "regtune: warning: mode `fast` is not use, tune, patch or off; compiling without regtune\nfake stderr\n"
    );
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "--offload-arch=gfx90a\n-O3\n-c\nk.hip\n");
}

fn cmake(args: &[&std::ffi::OsStr], dir: &Path, env: &[(&str, &std::ffi::OsStr)]) -> Output {
    let mut c = Command::new("cmake");
    c.current_dir(dir).args(args);
    if args.first().is_some_and(|a| *a == "-S") {
        // CMake takes an unversioned `llvm-ar` for a clang it cannot tell
        // the version of (regtune-hipcc), whichever LLVM that comes from;
        // binutils' archiver comes with the C toolchain on every machine.
        c.args(["-DCMAKE_AR=/usr/bin/ar", "-DCMAKE_RANLIB=/usr/bin/ranlib"]);
    }
    for v in ["REGTUNE_MODE", "REGTUNE_COMPILER", "REGTUNE_DB", "REGTUNE_VERBOSE", "REGTUNE_PLUGIN", "REGTUNE_EVIDENCE", "CXX", "CXXFLAGS"]
    {
        c.env_remove(v);
    }
    c.env("REGTUNE_CACHE_DIR", dir.join("cache"));
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

/// The objects a CMake build made, by example name, from compile_commands.json.
fn cmake_objects(build: &Path) -> BTreeMap<String, PathBuf> {
    let commands: Value = serde_json::from_str(&std::fs::read_to_string(build.join("compile_commands.json")).unwrap()).unwrap();
    commands
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let command = c["command"].as_str().unwrap();
            let object = command.split_whitespace().skip_while(|w| *w != "-o").nth(1).unwrap();
            (stem(Path::new(c["file"].as_str().unwrap())), build.join(object))
        })
        .collect()
}

#[test]
fn cmake_builds_the_examples_with_regtune_hipcc_as_cxx_and_with_regtune_cc_as_launcher() {
    plugin_is_built();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("decisions.json");
    let project = repo().join("examples/cmake");
    let os = |s: &str| std::ffi::OsString::from(s);

    // CXX=regtune-hipcc, tuning each file as it builds (two at a time, one
    // shared db), every class proven (through the environment) so that the
    // MD kernel's sink is decided.
    let hipcc_build = dir.path().join("hipcc");
    let configure = cmake(
        &[&os("-S"), project.as_os_str(), &os("-B"), hipcc_build.as_os_str(), &os("-DCMAKE_EXPORT_COMPILE_COMMANDS=ON")],
        dir.path(),
        &[("CXX", bin("regtune-hipcc").as_os_str())],
    );
    ok(&configure, "cmake configure with CXX=regtune-hipcc");
    let build = cmake(
        &[&os("--build"), hipcc_build.as_os_str(), &os("-j2")],
        dir.path(),
        &[("REGTUNE_MODE", &os("tune")), ("REGTUNE_DB", db.as_os_str()), ("REGTUNE_EVIDENCE", evidence_all_proven().as_os_str())],
    );
    ok(&build, "cmake --build (tune mode)");
    assert!(!text(&build.stdout).contains("regtune: warning") && !text(&build.stderr).contains("regtune: warning"));
    let objects = cmake_objects(&hipcc_build);
    assert_eq!(objects.keys().cloned().collect::<Vec<_>>(), examples().iter().map(|e| stem(e)).collect::<Vec<_>>());
    let entries = db_entries(&db);
    for object in objects.values() {
        assert_promised(object, &entries, &["gfx90a"]);
    }
    assert!(hipcc_build.join("libregtune_examples.a").is_file());

    // clang++-22 with `regtune;cc` as the launcher, in use mode: the same
    // flags, so the decisions tuned above apply as they are.
    let launcher_build = dir.path().join("launcher");
    let launcher = format!("{};cc", bin("regtune").display());
    let configure = cmake(
        &[
            &os("-S"),
            project.as_os_str(),
            &os("-B"),
            launcher_build.as_os_str(),
            &os("-DCMAKE_EXPORT_COMPILE_COMMANDS=ON"),
            &os("-DCMAKE_CXX_COMPILER=clang++-22"),
            &os(&format!("-DCMAKE_CXX_COMPILER_LAUNCHER={launcher}")),
        ],
        dir.path(),
        &[],
    );
    ok(&configure, "cmake configure with the launcher");
    let db_before = std::fs::read(&db).unwrap();
    let build = cmake(
        &[&os("--build"), launcher_build.as_os_str(), &os("-j2")],
        dir.path(),
        &[("REGTUNE_DB", db.as_os_str()), ("REGTUNE_VERBOSE", &os("1"))],
    );
    ok(&build, "cmake --build (launcher, use mode)");
    let log = text(&build.stdout) + &text(&build.stderr);
    let decided = entries.iter().filter(|e| e["transforms"].as_object().is_some_and(|t| !t.is_empty())).count();
    assert!(decided > 0);
    assert_eq!(log.matches("regtune: note: building with").count(), decided, "{log}");
    assert!(!log.contains("regtune: warning"), "{log}");
    for object in cmake_objects(&launcher_build).values() {
        assert_promised(object, &entries, &["gfx90a"]);
    }
    assert_eq!(std::fs::read(&db).unwrap(), db_before, "nothing was tuned again");
}

#[test]
fn a_db_regtune_batch_made_from_the_compile_commands_is_applied_by_the_build() {
    plugin_is_built();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("decisions.json");
    let build = dir.path().join("build");
    let os = |s: &str| std::ffi::OsString::from(s);
    let project = repo().join("examples/cmake");
    ok(
        &cmake(
            &[&os("-S"), project.as_os_str(), &os("-B"), build.as_os_str(), &os("-DCMAKE_EXPORT_COMPILE_COMMANDS=ON")],
            dir.path(),
            &[("CXX", bin("regtune-hipcc").as_os_str())],
        ),
        "cmake configure",
    );
    // Every class proven: the MD kernel's sink is decided.
    ok(
        &wrapper("regtune", dir.path())
            .arg("batch")
            .arg("-p")
            .arg(&build)
            .arg("--evidence")
            .arg(evidence_all_proven())
            .arg("--db")
            .arg(&db)
            .output()
            .unwrap(),
        "regtune batch",
    );
    let entries = db_entries(&db);
    let decided = entries.iter().filter(|e| e["transforms"].as_object().is_some_and(|t| !t.is_empty())).count();
    assert!(decided > 0);
    let db_before = std::fs::read(&db).unwrap();
    let out = cmake(
        &[&os("--build"), build.as_os_str(), &os("-j2")],
        dir.path(),
        &[("REGTUNE_DB", db.as_os_str()), ("REGTUNE_VERBOSE", &os("1"))],
    );
    ok(&out, "cmake --build (use mode)");
    let log = text(&out.stdout) + &text(&out.stderr);
    assert_eq!(log.matches("regtune: note: building with").count(), decided, "{log}");
    assert!(!log.contains("regtune: warning"), "{log}");
    for object in cmake_objects(&build).values() {
        assert_promised(object, &entries, &["gfx90a"]);
    }
    assert_eq!(std::fs::read(&db).unwrap(), db_before);
}

/// A clang-22 whose directory lacks `clang-offload-bundler`, as on a machine
/// without clang-tools-22: a copy of the binary (clang looks for its tools
/// next to itself), its libraries, and lld.
fn clang_without_the_bundler(dir: &Path) -> PathBuf {
    let bin = dir.join("llvm/bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::copy("/usr/lib/llvm-22/bin/clang", bin.join("clang++")).unwrap();
    std::os::unix::fs::symlink("/usr/lib/llvm-22/lib", dir.join("llvm/lib")).unwrap();
    std::os::unix::fs::symlink("/usr/lib/llvm-22/bin/lld", bin.join("lld")).unwrap();
    bin.join("clang++")
}

#[test]
fn a_missing_toolchain_program_is_named_with_its_package_and_the_exit_code_is_the_compilers() {
    let dir = tempfile::tempdir().unwrap();
    let clang = clang_without_the_bundler(dir.path());
    std::fs::write(dir.path().join("k.hip"), "__attribute__((global)) void k(float* x) { x[0] = 1.0f; }\n").unwrap();
    let args = ["-x", "hip", "--offload-arch=gfx90a", "-nogpulib", "-nogpuinc", "-O3", "-c", "k.hip", "-o", "k.o"];
    let path = "/usr/bin:/bin"; // no unversioned clang-offload-bundler there
    let expected = Command::new(&clang).current_dir(dir.path()).env("PATH", path).args(args).output().unwrap();
    assert_eq!(expected.status.code(), Some(1));
    assert!(text(&expected.stderr).contains("posix_spawn failed"), "{}", text(&expected.stderr));
    for mode in ["off", "use", "tune"] {
        let out = wrapper("regtune", dir.path())
            .env("PATH", path)
            .args(["cc", "--mode", mode, "--compiler"])
            .arg(&clang)
            .arg("--")
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), expected.status.code(), "{mode}");
        let stderr = text(&out.stderr);
        let (compiler_said, ours) = stderr.split_at(text(&expected.stderr).len());
        assert_eq!(compiler_said, text(&expected.stderr), "{mode}: the compiler's output first, verbatim");
        assert_eq!(
            ours,
            "regtune: error: the toolchain is incomplete: `clang-offload-bundler` is missing (clang runs it for this \
             compile); install it: sudo apt-get install -y clang-tools-22, or run `regtune doctor`\n",
            "{mode}"
        );
    }
}

/// The loop docs/guide/projects.md gives a project (issue 25): build in
/// tune mode (the default evidence: nothing decided unasked, every
/// candidate kept), run the project's program under `regtune measure`
/// (here what it writes into the db: this machine has no GPU), rebuild in
/// use mode: the build applies the candidate the GPU kept, one the static
/// rule never applies.
#[test]
fn cmake_measured_loop_builds_what_the_gpu_kept() {
    use regtune_decisions::measured::{Candidate, Timing};
    use regtune_decisions::{Db, Measured, Transforms};

    plugin_is_built();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("decisions.json");
    let build = dir.path().join("build");
    let project = repo().join("examples/cmake");
    let os = |s: &str| std::ffi::OsString::from(s);
    let none = repo().join("tests/fixtures/evidence-none.json");
    let configure = cmake(
        &[&os("-S"), project.as_os_str(), &os("-B"), build.as_os_str(), &os("-DCMAKE_EXPORT_COMPILE_COMMANDS=ON")],
        dir.path(),
        &[("CXX", bin("regtune-hipcc").as_os_str())],
    );
    ok(&configure, "cmake configure");
    let tune = [("REGTUNE_MODE", os("tune")), ("REGTUNE_DB", db.clone().into_os_string()), ("REGTUNE_EVIDENCE", none.into_os_string())];
    let tune: Vec<(&str, &std::ffi::OsStr)> = tune.iter().map(|(k, v)| (*k, v.as_os_str())).collect();
    ok(&cmake(&[&os("--build"), build.as_os_str(), &os("-j2")], dir.path(), &tune), "cmake --build (tune mode)");

    // Nothing decided unasked; MD's sink is a candidate, kept for measure.
    let md = |db: &Db| db.kernels.values().find(|e| e.symbol.starts_with("_Z16md_lj_force_kick") && e.arch == "gfx90a").cloned().unwrap();
    let entry = md(&Db::load(&db).unwrap());
    assert!(entry.transforms.is_empty(), "{:?}", entry.transforms);
    let sink = Transforms { sink: true, ..Default::default() };
    let candidate = entry.candidates.iter().find(|c| c.transforms == sink).expect("sink is a candidate").clone();
    assert!(candidate.usage.vgpr < entry.before.unwrap().vgpr);
    let dry = wrapper("regtune", dir.path()).args(["measure", "--dry-run", "--db"]).arg(&db).args(["--", "true"]).output().unwrap();
    assert!(
        text(&dry.stderr).lines().any(|l| l.starts_with(&format!("would measure {}", entry.symbol)) && l.contains("sink")),
        "{}",
        text(&dry.stderr)
    );

    // What `regtune measure -- ./md_program` writes when sink runs 1.38x
    // faster with the same bytes (its H100 figure, docs/results.md).
    let timing = |ms: f64| Some(Timing { median_ms: ms, spread_ms: 0.002 });
    let measured = Measured {
        device: "NVIDIA H100 80GB HBM3 (sm_90, driver 580.159.04)".into(),
        launches: 2,
        runs: 10,
        deterministic: true,
        program_identical: Some(true),
        block: None,
        candidates: vec![
            Candidate { transforms: Transforms::default(), time: timing(0.614), identical: true, error: None, code: None, paired: None },
            Candidate { transforms: sink.clone(), time: timing(0.444), identical: true, error: None, code: None, paired: None },
        ],
        control: None,
        earlier: vec![],
        program: None,
    };
    Db::update(&db, |d| d.kernels.get_mut(&entry.key()).unwrap().measured = Some(measured)).unwrap();
    assert_eq!(md(&Db::load(&db).unwrap()).effective(), sink);

    // Use mode: the rebuilt object holds the kept candidate's code.
    let rebuilt = cmake(
        &[&os("--build"), build.as_os_str(), &os("--clean-first")],
        dir.path(),
        &[("REGTUNE_MODE", os("use").as_os_str()), ("REGTUNE_DB", db.as_os_str())],
    );
    ok(&rebuilt, "cmake --build --clean-first (use mode)");
    let object = cmake_objects(&build)["long_lived"].clone();
    let built = read_back(&object, "gfx90a");
    let usage = built.get(&entry.symbol).expect("md_lj_force_kick built");
    assert_eq!(usage["vgpr"].as_u64(), Some(u64::from(candidate.usage.vgpr)), "the build applies the measured candidate");
    assert_eq!(usage["occupancy"].as_u64(), Some(u64::from(candidate.usage.occupancy)));
}
