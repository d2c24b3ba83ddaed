//! Every external program regtune, its tests and its scripts spawn, and the
//! Debian package that ships it.
//!
//! One list for three readers: `regtune doctor` checks it, the wrapper names
//! the package when a compile fails because clang could not spawn one of its
//! jobs (a missing `clang-offload-bundler` looks like any other failed
//! compile otherwise), and a test holds `ci/bootstrap.sh` to it, so a tool
//! added here without its package fails CI even on a machine where someone
//! installed the package by hand.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Debian's LLVM 22, where clang looks for its own tools first.
pub(crate) const DEBIAN_LLVM_BIN: &str = "/usr/lib/llvm-22/bin";

/// One program or file regtune needs, where Debian puts it, and why.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tool {
    /// What `regtune doctor` calls it.
    pub what: &'static str,
    /// Absolute path on Debian 12 (for programs in `DEBIAN_LLVM_BIN`, the
    /// file name alone: [`Tool::path`] resolves it).
    pub file: &'static str,
    pub package: &'static str,
    /// Needed by regtune itself (`true`), or only by its tests and scripts.
    pub runtime: bool,
}

impl Tool {
    pub(crate) fn path(&self) -> PathBuf {
        if self.file.starts_with('/') {
            PathBuf::from(self.file)
        } else {
            Path::new(DEBIAN_LLVM_BIN).join(self.file)
        }
    }

    pub(crate) fn present(&self) -> bool {
        self.path().exists()
    }
}

const fn tool(what: &'static str, file: &'static str, package: &'static str, runtime: bool) -> Tool {
    Tool { what, file, package, runtime }
}

/// Everything on a Debian 12 machine without ROCm. The CUDA part for NVPTX
/// comes from NVIDIA's PyPI wheels (ci/bootstrap.sh), not from Debian.
pub(crate) const DEBIAN: &[Tool] = &[
    tool("clang 22", "clang", "clang-22", true),
    tool("clang-offload-bundler (HIP host+device builds)", "clang-offload-bundler", "clang-tools-22", true),
    tool("lld 22 (device code objects)", "ld.lld", "lld-22", true),
    tool("opt 22", "opt", "llvm-22", true),
    tool("llvm-link 22", "llvm-link", "llvm-22", true),
    tool("LLVM 22 headers (building the pass plugin)", "/usr/lib/llvm-22/include/llvm-c/Core.h", "llvm-22-dev", true),
    tool("HIP headers", "/usr/include/hip/hip_runtime.h", "libamdhip64-dev", true),
    tool("ROCm device libraries", "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode/ocml.bc", "rocm-device-libs", true),
    tool("FileCheck and lit (tests)", "FileCheck", "llvm-22-tools", false),
    tool("cmake (examples/cmake, tests)", "/usr/bin/cmake", "cmake", false),
    tool("make (cmake's generator, tests)", "/usr/bin/make", "make", false),
    tool("git (tests apply regtune fix's patches)", "/usr/bin/git", "git", false),
    tool("chromium (HTML report tests)", "/usr/bin/chromium", "chromium", false),
    tool("pip (fetches CUDA's wheels)", "/usr/lib/python3/dist-packages/pip/__init__.py", "python3-pip", false),
    tool("clang 19 (the LLVM-19 plugin's tests)", "/usr/lib/llvm-19/bin/clang", "clang-19", false),
    tool("LLVM 19 headers (the LLVM-19 plugin)", "/usr/lib/llvm-19/include/llvm-c/Core.h", "llvm-19-dev", false),
    tool("FileCheck and lit 19 (tests)", "/usr/lib/llvm-19/bin/FileCheck", "llvm-19-tools", false),
    tool("strace (ci/check-spawned.sh)", "/usr/bin/strace", "strace", false),
];

/// The package that ships `program`, known by its file name: clang resolves
/// its jobs next to itself, so a missing one is named by path.
pub(crate) fn package_of(program: &Path) -> Option<&'static str> {
    let name = program.file_name()?.to_str()?;
    if let Some(t) = DEBIAN.iter().find(|t| Path::new(t.file).file_name().and_then(|n| n.to_str()) == Some(name)) {
        return Some(t.package);
    }
    // The rest of what clang-22 may spawn for an offload build.
    match name {
        "clang-offload-packager" | "clang-linker-wrapper" | "clang-nvlink-wrapper" | "amdgpu-arch" | "nvptx-arch" => Some("clang-tools-22"),
        "lld" => Some("lld-22"),
        "llc" | "llvm-as" | "llvm-dis" | "llvm-objcopy" | "llvm-extract" => Some("llvm-22"),
        _ => None,
    }
}

/// The jobs `compiler args` would run whose program is not there: the cause
/// of clang's `unable to execute command: posix_spawn failed`, which names
/// no program. Asks the compiler itself (`-###` prints its jobs, runs none).
pub(crate) fn unrunnable_jobs(compiler: &Path, args: &[OsString]) -> Vec<PathBuf> {
    let Ok(out) = Command::new(compiler).arg("-###").args(args).output() else {
        return vec![];
    };
    // clang prints the bare name of a program it could not find.
    let mut missing: Vec<PathBuf> =
        jobs(&String::from_utf8_lossy(&out.stderr)).into_iter().filter(|p| !p.is_absolute() || !p.exists()).collect();
    missing.dedup();
    missing
}

/// Program paths of the job lines in `-###` output: each job is one line
/// that starts with the quoted program.
fn jobs(listing: &str) -> Vec<PathBuf> {
    listing
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix('"'))
        .filter_map(|l| l.split_once('"').map(|(program, _)| PathBuf::from(program)))
        .collect()
}

/// One line for a compile clang could not finish because a program is
/// missing, or None when nothing clang needs is missing.
pub(crate) fn explain_missing(compiler: &Path, args: &[OsString], stderr: &str) -> Option<String> {
    if !stderr.contains("unable to execute command") && !stderr.contains("executable not found") {
        return None;
    }
    let missing = unrunnable_jobs(compiler, args);
    let first = missing.first()?;
    let install = match package_of(first) {
        Some(p) => format!("install it: sudo apt-get install -y {p}"),
        None => "install the package that ships it".to_string(),
    };
    Some(format!(
        "the toolchain is incomplete: `{}` is missing (clang runs it for this compile); {install}, or run `regtune doctor`",
        first.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_lines_give_their_programs() {
        let listing = "clang version 22.1.8\nTarget: x86_64-pc-linux-gnu\n \
            \"/usr/lib/llvm-22/bin/clang\" \"-cc1\" \"-triple\" \"amdgcn-amd-amdhsa\"\n \
            \"/usr/lib/llvm-22/bin/clang-offload-bundler\" \"-type=o\"\n";
        assert_eq!(
            jobs(listing),
            vec![PathBuf::from("/usr/lib/llvm-22/bin/clang"), PathBuf::from("/usr/lib/llvm-22/bin/clang-offload-bundler")]
        );
    }

    #[test]
    fn missing_tools_name_their_package() {
        assert_eq!(package_of(Path::new("/usr/lib/llvm-22/bin/clang-offload-bundler")), Some("clang-tools-22"));
        assert_eq!(package_of(Path::new("/opt/x/bin/ld.lld")), Some("lld-22"));
        assert_eq!(package_of(Path::new("/usr/bin/true")), None);
    }

    #[test]
    fn a_user_error_is_not_a_missing_tool() {
        let stderr = "x.hip:3:1: error: unknown type name 'foo'\n1 error generated.\n";
        assert_eq!(explain_missing(Path::new("/nonexistent/clang"), &[], stderr), None);
    }

    /// CI's machine may have packages installed by hand: hold the bootstrap
    /// script itself to this list.
    #[test]
    fn bootstrap_installs_every_package_listed_here() {
        let script = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../ci/bootstrap.sh")).expect("ci/bootstrap.sh");
        let line = script.lines().find(|l| l.starts_with("packages=(")).expect("a packages=(...) line in ci/bootstrap.sh");
        let named: Vec<&str> = line.trim_start_matches("packages=(").trim_end_matches(')').split_whitespace().collect();
        for t in DEBIAN {
            assert!(named.contains(&t.package), "ci/bootstrap.sh does not install {} ({})", t.package, t.what);
        }
    }
}
