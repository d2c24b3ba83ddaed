//! Locate the regtune pass plugin (libregtune_passes.so).

use std::env;
use std::path::PathBuf;

pub const FILE_NAME: &str = "libregtune_passes.so";

/// What the plugin reads from its environment (passes/src/lib.rs).
pub const DECISIONS_ENV: &str = "REGTUNE_DECISIONS";
pub const INPUT_HASH_ENV: &str = "REGTUNE_INPUT_HASH";
/// Compile this kernel alone (the tuner's one-kernel variants).
pub const ONLY_KERNEL_ENV: &str = "REGTUNE_ONLY_KERNEL";

#[derive(Debug, thiserror::Error)]
#[error("pass plugin {FILE_NAME} not found (looked in {looked}); build it with `cargo build --release --workspace` or set REGTUNE_PLUGIN")]
pub struct NotFound {
    looked: String,
}

/// `$REGTUNE_PLUGIN`, else next to the regtune binary (cargo puts both in
/// target/<profile>/), else its parent (for test binaries in deps/).
pub fn find() -> Result<PathBuf, NotFound> {
    if let Some(p) = env::var_os("REGTUNE_PLUGIN") {
        let p = PathBuf::from(p);
        return if p.is_file() { Ok(p) } else { Err(NotFound { looked: p.display().to_string() }) };
    }
    let exe_dir = env::current_exe().ok().and_then(|e| e.parent().map(PathBuf::from));
    let candidates: Vec<PathBuf> = exe_dir
        .iter()
        .flat_map(|d| [d.join(FILE_NAME), d.join("..").join(FILE_NAME), d.join("../lib").join(FILE_NAME)])
        .collect();
    candidates.iter().find(|p| p.is_file()).cloned().ok_or_else(|| NotFound {
        looked: candidates.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "),
    })
}
