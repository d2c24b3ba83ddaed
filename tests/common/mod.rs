//! Shared by the integration tests: where things are, and an independent
//! oracle — clang's own resource-usage remarks, from a command line built
//! here rather than by regtune.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("repo root").to_path_buf()
}

/// Every example kernel file.
pub fn examples() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(repo().join("examples"))
        .expect("examples/")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "hip"))
        .collect();
    v.sort();
    assert!(!v.is_empty(), "no examples");
    v
}

const BITCODE: &str = "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode";

/// Debian's device libraries plus the isa-version files they lack, built
/// the way a person would by hand (see examples/README.md).
fn device_libs() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        for e in std::fs::read_dir(BITCODE).unwrap() {
            let e = e.unwrap();
            std::os::unix::fs::symlink(e.path(), dir.path().join(e.file_name())).unwrap();
        }
        // gfx940's file (data layout included) with the newer version number.
        let template = Command::new("llvm-dis-22").arg(format!("{BITCODE}/oclc_isa_version_940.bc")).args(["-o", "-"]).output().unwrap();
        let template = String::from_utf8(template.stdout).unwrap();
        assert!(template.contains("constant i32 9400"), "{template}");
        for (suffix, version) in [("942", 9402), ("950", 9500), ("1100", 11000)] {
            let ll = dir.path().join(format!("isa{suffix}.ll"));
            std::fs::write(&ll, template.replace("constant i32 9400", &format!("constant i32 {version}"))).unwrap();
            let bc = dir.path().join(format!("oclc_isa_version_{suffix}.bc"));
            assert!(Command::new("llvm-as-22").arg(&ll).arg("-o").arg(&bc).status().unwrap().success());
        }
        for wave in [32, 64] {
            std::fs::write(
                dir.path().join(format!("prelude{wave}.h")),
                format!("#define __AMDGCN_WAVEFRONT_SIZE {wave}\nextern \"C\" __device__ _Float16 __llvm_amdgcn_rcp_f16(_Float16);\ntypedef _Float16 h2_t __attribute__((ext_vector_type(2)));\nextern \"C\" __device__ h2_t __llvm_amdgcn_rcp_2f16(h2_t);\n"),
            )
            .unwrap();
        }
        dir
    })
    .path()
}

/// The pass plugin for LLVM 22, beside the regtune binary the tests run
/// (cargo's target dir, wherever `CARGO_TARGET_DIR` puts it).
pub fn plugin() -> PathBuf {
    let p = assert_cmd::cargo::cargo_bin("regtune").with_file_name("libregtune_passes.so");
    assert!(p.is_file(), "build the workspace first: {}", p.display());
    p
}

/// The pass plugin built for LLVM 19 (ci/test.sh builds it before the
/// tests: `cargo build -p regtune-passes --no-default-features --features
/// llvm19 --target-dir target/llvm19`). Elsewhere a test without it says
/// so and skips; in CI (`$CI` set) it fails.
pub fn llvm19_plugin() -> Option<PathBuf> {
    let plugin = repo().join("target/llvm19/debug/libregtune_passes.so");
    if plugin.is_file() {
        return Some(plugin);
    }
    let why = format!("the LLVM-19 plugin is not built ({}); ci/test.sh builds it", plugin.display());
    assert!(std::env::var_os("CI").is_none(), "{why}");
    eprintln!("skipped: {why}");
    None
}

/// A plain device-only compile of `file` for `arch` with Debian's packages.
pub fn hip_device_compile(file: &Path, arch: &str) -> Command {
    hip_device_compile_with("clang-22", file, arch)
}

/// The same with another clang (`clang-19`).
pub fn hip_device_compile_with(clang: &str, file: &Path, arch: &str) -> Command {
    let libs = device_libs();
    let wave = if arch.starts_with("gfx1") { 32 } else { 64 };
    let mut cmd = Command::new(clang);
    cmd.args(["-x", "hip", "--cuda-device-only", "--no-gpu-bundle-output", "-O3", "--rocm-path=/usr"])
        .arg(format!("--offload-arch={arch}"))
        .arg(format!("--rocm-device-lib-path={}", libs.display()))
        .arg("-mcode-object-version=5");
    for bc in ["hip.bc", "oclc_daz_opt_off.bc"] {
        cmd.args(["-Xclang", "-mlink-builtin-bitcode", "-Xclang"]).arg(libs.join(bc));
    }
    cmd.arg("-include").arg(libs.join(format!("prelude{wave}.h"))).arg(file);
    cmd
}

/// Per kernel symbol: every numeric line of clang's resource-usage remark.
pub fn remarks_for(file: &Path, arch: &str) -> BTreeMap<String, BTreeMap<String, u64>> {
    remarks_with(file, arch, &[])
}

/// The same, with more flags for clang (`-isystem DIR`).
pub fn remarks_with(file: &Path, arch: &str, args: &[&str]) -> BTreeMap<String, BTreeMap<String, u64>> {
    let obj = tempfile::NamedTempFile::new().unwrap();
    let out = hip_device_compile(file, arch)
        .args(args)
        .args(["-c", "-Rpass-analysis=kernel-resource-usage", "-o"])
        .arg(obj.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    parse_remarks(&String::from_utf8_lossy(&out.stderr))
}

pub fn parse_remarks(stderr: &str) -> BTreeMap<String, BTreeMap<String, u64>> {
    let mut all: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    let mut current = None;
    for line in stderr.lines() {
        let Some(body) = line.split_once(": remark: ").and_then(|(_, r)| r.strip_suffix(" [-Rpass-analysis=kernel-resource-usage]")) else {
            continue;
        };
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

/// The evidence table under which every class the default may apply
/// unasked counts as proven (sink, exact pow2, occupancy targets, unroll
/// caps that remove spills): tune decides as it did before the default
/// followed GPU evidence. For tests of how decisions are applied; pass it
/// as `--evidence` or `REGTUNE_EVIDENCE` (absolute: commands run elsewhere).
pub fn evidence_all_proven() -> PathBuf {
    let path = repo().join("tests/fixtures/evidence-all-proven.json");
    assert!(path.is_file(), "{}", path.display());
    path
}

/// The evidence table where nothing was ever timed: the default applies
/// nothing unasked. Tests of the default use it rather than the shipped
/// table, whose contents change with GPU runs.
pub fn evidence_none() -> PathBuf {
    let path = repo().join("tests/fixtures/evidence-none.json");
    assert!(path.is_file(), "{}", path.display());
    path
}

/// `regtune` run in `dir`, without the environment a developer's shell may set.
pub fn regtune_in(dir: &Path) -> assert_cmd::Command {
    let mut c = assert_cmd::Command::cargo_bin("regtune").unwrap();
    c.current_dir(dir);
    for v in ["REGTUNE_DECISIONS", "REGTUNE_INPUT_HASH", "REGTUNE_PLUGIN", "REGTUNE_EVIDENCE"] {
        c.env_remove(v);
    }
    c
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `out` must have succeeded; else its status and output, named `what`.
pub fn ok(out: &std::process::Output, what: &str) {
    assert!(out.status.success(), "{what}: {}\n{}{}", out.status, text(&out.stdout), text(&out.stderr));
}
