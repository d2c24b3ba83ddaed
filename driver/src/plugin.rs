//! Locate the regtune pass plugin (libregtune_passes.so), and tell whether a
//! compiler can load it: a plugin runs only inside an LLVM of the major
//! version it was built for (passes/Cargo.toml's `llvm22` or `llvm19`),
//! and says which one in its `.regtune_llvm` section.

use std::env;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;

use object::{Object, ObjectSection, ReadCache};

pub(crate) const FILE_NAME: &str = "libregtune_passes.so";

/// Where the plugin keeps the LLVM version it was built for
/// (passes/src/ffi/mod.rs).
const VERSION_SECTION: &str = ".regtune_llvm";

#[derive(Debug, thiserror::Error)]
#[error("pass plugin {FILE_NAME} not found (looked in {looked}); build it with `cargo build --release --workspace` or set REGTUNE_PLUGIN")]
pub struct NotFound {
    looked: String,
}

/// Why a compiler cannot load the plugin.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("pass plugin {plugin} is built for LLVM {built}, but {clang} is LLVM {major}; build it for LLVM {major}: {fix}")]
    OtherLlvm { plugin: String, built: String, clang: String, major: u32, fix: String },
    #[error("pass plugin {plugin} does not load into {clang}: {detail}")]
    Probe { plugin: String, clang: String, detail: String },
}

/// `$REGTUNE_PLUGIN`, else next to the regtune binary (cargo puts both in
/// target/<profile>/), else its parent (for test binaries in deps/).
pub fn find() -> Result<PathBuf, NotFound> {
    if let Some(p) = env::var_os("REGTUNE_PLUGIN") {
        let p = PathBuf::from(p);
        return if p.is_file() { Ok(p) } else { Err(NotFound { looked: p.display().to_string() }) };
    }
    let exe_dir = env::current_exe().ok().and_then(|e| e.parent().map(PathBuf::from));
    let candidates: Vec<PathBuf> =
        exe_dir.iter().flat_map(|d| [d.join(FILE_NAME), d.join("..").join(FILE_NAME), d.join("../lib").join(FILE_NAME)]).collect();
    candidates
        .iter()
        .find(|p| p.is_file())
        .cloned()
        .ok_or_else(|| NotFound { looked: candidates.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ") })
}

/// The LLVM version `plugin` was built for (`22.1.8`); `None` for a file
/// that does not say (another LLVM plugin, an older regtune's).
pub(crate) fn llvm_version(plugin: &Path) -> Option<String> {
    // Reads the headers and one section, not the whole (large) library.
    let cache = ReadCache::new(File::open(plugin).ok()?);
    let file = object::File::parse(&cache).ok()?;
    let bytes = file.section_by_name(VERSION_SECTION)?.data().ok()?;
    let text = std::str::from_utf8(bytes).ok()?.trim_end_matches('\0');
    (!text.is_empty()).then(|| text.to_string())
}

/// The LLVM major version of the first line of `clang --version`
/// ("Debian clang version 22.1.8 (...)", "AMD clang version 19.0.0git ...").
pub(crate) fn llvm_major(clang_version: &str) -> Option<u32> {
    major(&clang_version[clang_version.find("clang version ")? + "clang version ".len()..])
}

/// `19` of `19.1.7` or `19.0.0git`.
fn major(version: &str) -> Option<u32> {
    version.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

/// How to build the plugin for the LLVM of `clang` (major `major`).
pub(crate) fn build_command(major: u32, clang: &Path) -> String {
    // llvm-sys and passes/build.rs look for llvm-config under this prefix:
    // the LLVM `clang` belongs to (/usr/lib/llvm-19, /opt/rocm/llvm).
    let prefix = std::fs::canonicalize(clang)
        .ok()
        .and_then(|c| c.parent()?.parent().map(Path::to_path_buf))
        .filter(|p| p.join("bin/llvm-config").is_file());
    let prefix = |sys: u32| prefix.as_ref().map(|p| format!("LLVM_SYS_{sys}_PREFIX={} ", p.display())).unwrap_or_default();
    match major {
        22 => format!("{}cargo build --release -p regtune-passes", prefix(221)),
        19 => format!(
            "{}cargo build --release -p regtune-passes --no-default-features --features llvm19 --target-dir target/llvm19 \
             and set REGTUNE_PLUGIN=target/llvm19/release/{FILE_NAME}",
            prefix(191)
        ),
        _ => "regtune's plugin builds for LLVM 19 and LLVM 22 (passes/Cargo.toml's features)".into(),
    }
}

/// Whether `clang`, whose `clang --version` first line is `clang_version`,
/// is the LLVM `plugin` was built for, as far as both say.
pub fn check_version(plugin: &Path, clang: &Path, clang_version: &str) -> Result<(), LoadError> {
    let (Some(built), Some(clang_major)) = (llvm_version(plugin), llvm_major(clang_version)) else {
        return Ok(());
    };
    if major(&built) == Some(clang_major) {
        return Ok(());
    }
    Err(LoadError::OtherLlvm {
        plugin: plugin.display().to_string(),
        built,
        clang: clang.display().to_string(),
        major: clang_major,
        fix: build_command(clang_major, clang),
    })
}

/// Whether `clang` loads `plugin`: the versions first (a plugin of another
/// LLVM may crash the compiler rather than fail to load), then a compile of
/// an empty C file with the plugin, which loads it and runs its
/// registration. Returns clang's version line.
pub(crate) fn check_loads(plugin: &Path, clang: &Path) -> Result<String, LoadError> {
    let probe_error =
        |detail: String| LoadError::Probe { plugin: plugin.display().to_string(), clang: clang.display().to_string(), detail };
    let version = Command::new(clang).arg("--version").output().map_err(|e| probe_error(format!("cannot run it: {e}")))?;
    let version = String::from_utf8_lossy(&version.stdout).lines().next().unwrap_or_default().trim().to_string();
    check_version(plugin, clang, &version)?;
    let out = Command::new(clang)
        .arg(format!("-fpass-plugin={}", plugin.display()))
        .args(["-x", "c", "-c", "/dev/null", "-o", "/dev/null"])
        .output()
        .map_err(|e| probe_error(format!("cannot run it: {e}")))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let first = stderr.lines().find(|l| l.contains("error")).unwrap_or("failed").trim();
        return Err(probe_error(first.to_string()));
    }
    Ok(version)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn llvm_major_of_clang_version_lines() {
        assert_eq!(llvm_major("Debian clang version 22.1.8 (1~deb12u1)"), Some(22));
        assert_eq!(llvm_major("AMD clang version 19.0.0git (https://github.com/RadeonOpenCompute/llvm-project roc-6.4.0)"), Some(19));
        assert_eq!(llvm_major("clang version 19.1.7"), Some(19));
        assert_eq!(llvm_major("fake clang version 0"), Some(0));
        assert_eq!(llvm_major("gcc (Debian 12.2.0-14) 12.2.0"), None);
    }

    #[test]
    fn build_commands_name_the_feature() {
        let none = Path::new("/no/such/clang");
        assert_eq!(build_command(22, none), "cargo build --release -p regtune-passes");
        assert!(build_command(19, none).contains("--features llvm19 --target-dir target/llvm19"));
        assert!(build_command(17, none).contains("LLVM 19 and LLVM 22"));
    }

    #[test]
    fn a_file_that_is_not_a_regtune_plugin_has_no_version() {
        assert_eq!(llvm_version(Path::new("/no/such/plugin.so")), None);
        assert_eq!(llvm_version(Path::new("/bin/sh")), None);
    }
}
