//! Run clang: device-only HIP compiles and compiles of pre-optimization IR.
//!
//! Every compile that regtune measures goes through here, so the flags that
//! make the real backend's numbers come out right live in one place.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::target::Arch;
use crate::toolchain::Toolchain;

/// clang's default for HIP; the user's own -O in CLANG_ARGS comes later and wins.
const DEFAULT_OPT: &str = "-O3";

#[derive(Debug, thiserror::Error)]
pub enum CompileError {
    #[error("cannot read {}: {source}", file.display())]
    Input { file: PathBuf, source: std::io::Error },
    #[error("cannot run {}: {source}", tool.display())]
    Spawn { tool: PathBuf, source: std::io::Error },
    /// clang's own diagnostics are in `diagnostics`; the caller shows them.
    #[error("clang failed to compile {} for {arch} ({status})", file.display())]
    Failed { file: PathBuf, arch: String, status: String, diagnostics: String },
    #[error(transparent)]
    Toolchain(#[from] crate::toolchain::ToolchainError),
}

impl CompileError {
    /// Compiler diagnostics worth showing above the one-line error.
    pub fn diagnostics(&self) -> Option<&str> {
        match self {
            CompileError::Failed { diagnostics, .. } if !diagnostics.trim().is_empty() => Some(diagnostics),
            _ => None,
        }
    }
}

/// What one clang run left behind.
pub struct Compiled {
    /// clang's stderr: warnings and, when asked for, resource-usage remarks.
    pub stderr: String,
}

/// The flags of one HIP translation unit for one target.
pub struct Unit<'a> {
    pub toolchain: &'a Toolchain,
    pub arch: &'a Arch,
    pub source: &'a Path,
    pub user_args: &'a [String],
}

impl Unit<'_> {
    fn check_source(&self) -> Result<(), CompileError> {
        std::fs::File::open(self.source)
            .map(drop)
            .map_err(|source| CompileError::Input { file: self.source.into(), source })
    }

    fn hip_command(&self) -> Result<Command, CompileError> {
        self.check_source()?;
        self.toolchain.prepare(self.arch)?;
        let mut cmd = Command::new(&self.toolchain.clang);
        cmd.args(self.toolchain.hip_device_args(self.arch, self.user_args));
        cmd.arg(DEFAULT_OPT);
        cmd.args(self.user_args);
        Ok(cmd)
    }

    /// Device-only compile to a code object, with clang's resource-usage
    /// remarks on stderr (they carry each kernel's source location).
    pub fn code_object(&self, out: &Path) -> Result<Compiled, CompileError> {
        let mut cmd = self.hip_command()?;
        cmd.args(["-c", "-Rpass-analysis=kernel-resource-usage", "-o"]).arg(out).arg(self.source);
        run(cmd, self)
    }

    /// Preprocess only, to `out`: the same bytes as the `.hipi` that
    /// [`Unit::build_keeping_temps`] keeps, at a fraction of its cost.
    pub fn preprocess(&self, out: &Path) -> Result<Compiled, CompileError> {
        let mut cmd = self.hip_command()?;
        cmd.arg("-E").arg("-o").arg(out).arg(self.source);
        run(cmd, self)
    }

    /// The real build, keeping clang's intermediate files in `dir`: the
    /// object with remarks, plus the preprocessed source and the
    /// pre-optimization IR (device libraries linked) that the variants start
    /// from. One compile's worth of work for all three.
    pub fn build_keeping_temps(&self, dir: &Path) -> Result<Temps, CompileError> {
        let object = dir.join("plain.o");
        let mut cmd = self.hip_command()?;
        // Value names keep kernel parameters recognisable ("noalias=f14");
        // they never change the generated code.
        cmd.args(["-c", "-save-temps=obj", "-fno-discard-value-names", "-Rpass-analysis=kernel-resource-usage", "-o"])
            .arg(&object)
            .arg(self.source);
        let compiled = run(cmd, self)?;
        let find = |ext: &str| -> Result<PathBuf, CompileError> {
            let found = std::fs::read_dir(dir).ok().into_iter().flatten().flatten().map(|e| e.path()).find(|p| {
                p.extension().is_some_and(|x| x == ext)
                    && p.file_name().is_some_and(|n| n.to_string_lossy().contains(self.arch.processor()))
            });
            found.ok_or_else(|| CompileError::Input {
                file: dir.join(format!("*.{ext}")),
                source: std::io::Error::new(std::io::ErrorKind::NotFound, "clang kept no such intermediate file"),
            })
        };
        Ok(Temps { object, pre_opt_ir: find("bc")?, preprocessed: find("hipi")?, stderr: compiled.stderr })
    }
}

/// What [`Unit::build_keeping_temps`] leaves behind.
pub struct Temps {
    pub object: PathBuf,
    pub pre_opt_ir: PathBuf,
    pub preprocessed: PathBuf,
    /// Warnings and the resource-usage remarks.
    pub stderr: String,
}

/// Compile pre-optimization IR to a code object through the same O3
/// pipeline and code generator as the HIP compile, with the pass plugin.
pub fn ir_to_object(
    toolchain: &Toolchain,
    arch: &Arch,
    ir: &Path,
    out: &Path,
    extra_args: &[OsString],
    env: &[(&str, OsString)],
) -> Result<Compiled, CompileError> {
    let mut cmd = Command::new(&toolchain.clang);
    cmd.args(toolchain.ir_args(arch)).arg(DEFAULT_OPT).args(extra_args);
    cmd.arg("-c").arg("-o").arg(out).arg(ir);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let unit = Unit { toolchain, arch, source: ir, user_args: &[] };
    run(cmd, &unit)
}

fn run(mut cmd: Command, unit: &Unit<'_>) -> Result<Compiled, CompileError> {
    let tool = unit.toolchain.clang.clone();
    let Output { status, stderr, .. } = cmd.output().map_err(|source| CompileError::Spawn { tool, source })?;
    let stderr = String::from_utf8_lossy(&stderr).into_owned();
    if !status.success() {
        return Err(CompileError::Failed {
            file: unit.source.into(),
            arch: unit.arch.to_string(),
            status: status.to_string(),
            diagnostics: without_remarks(&stderr),
        });
    }
    Ok(Compiled { stderr })
}

/// clang's stderr less our own resource-usage remarks and their context lines.
pub fn without_remarks(stderr: &str) -> String {
    let mut out = String::new();
    let mut skipping = false;
    for line in stderr.lines() {
        if line.contains("[-Rpass-analysis=kernel-resource-usage]") {
            skipping = true;
            continue;
        }
        // Source excerpt and caret lines follow a remark; a new diagnostic ends them.
        let context = line.starts_with(' ') || line.starts_with('\t') || line.is_empty();
        if skipping && context {
            continue;
        }
        skipping = false;
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// A kernel's source location, from the "Function Name:" remark.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub symbol: String,
    pub file: String,
    pub line: u32,
}

/// Locations from "Function Name:" remarks, in either of clang's forms:
/// `k.hip:2:1: remark: Function Name: S` (from source) or
/// `remark: k.hip:2:0: Function Name: S` (from IR).
pub fn remark_locations(stderr: &str) -> Vec<Location> {
    stderr
        .lines()
        .filter_map(|l| {
            let l = l.strip_suffix(" [-Rpass-analysis=kernel-resource-usage]")?;
            let (head, symbol) = l.split_once("Function Name: ")?;
            let head = head.replace("remark:", "");
            let mut parts = head.trim().trim_end_matches(':').rsplitn(3, ':');
            let (_col, line, file) = (parts.next()?, parts.next()?, parts.next()?);
            Some(Location { symbol: symbol.trim().to_string(), file: file.trim().to_string(), line: line.parse().ok()? })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const REMARKS: &str = "\
k.hip:2:1: remark: Function Name: _Z4axpyfPKfPfi [-Rpass-analysis=kernel-resource-usage]
    2 | __global__ void axpy(float a, const float* x, float* y, int n) {
      | ^
k.hip:2:1: remark:     VGPRs: 25 [-Rpass-analysis=kernel-resource-usage]
k.hip:7:3: warning: unused variable 'q' [-Wunused-variable]
    7 |   int q;
      |       ^
";

    #[test]
    fn locations_come_from_function_name_remarks() {
        assert_eq!(
            remark_locations(REMARKS),
            [Location { symbol: "_Z4axpyfPKfPfi".into(), file: "k.hip".into(), line: 2 }]
        );
    }

    #[test]
    fn locations_come_from_remarks_on_ir_too() {
        let from_ir = "remark: ../k.hip:47:0: Function Name: _Z1kv [-Rpass-analysis=kernel-resource-usage]\n";
        assert_eq!(remark_locations(from_ir), [Location { symbol: "_Z1kv".into(), file: "../k.hip".into(), line: 47 }]);
    }

    #[test]
    fn remarks_are_filtered_but_warnings_kept() {
        assert_eq!(
            without_remarks(REMARKS),
            "k.hip:7:3: warning: unused variable 'q' [-Wunused-variable]\n    7 |   int q;\n      |       ^\n"
        );
    }
}
