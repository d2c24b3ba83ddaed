//! A compile: what it takes ([`Unit`], [`Variant`]), what it gives
//! ([`Compiled`], [`Temps`]), how it fails ([`CompileError`]), and clang or
//! a tool run for it through the job runner: device-only HIP or CUDA
//! compiles and compiles of pre-optimization IR.
//!
//! Every compile that regtune measures goes through here, so the flags that
//! make the real backend's numbers come out right live in one place.
//!
//! What differs per target (HIP or CUDA flags, how a code object is built
//! and which intermediate files are kept) is the target's
//! ([`crate::gpu::Target`]); NVPTX compiles as CUDA, to PTX and then
//! through ptxas, whose `-v` report is appended to [`Compiled::stderr`].

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::gpu::nvptx::ptxas;
use crate::gpu::{self, Arch};
use crate::job::{self, JobError};
use crate::names;
use crate::output::Failure;
use crate::toolchain::Toolchain;

/// clang's default for HIP; the user's own -O in CLANG_ARGS comes later and wins.
pub(crate) const DEFAULT_OPT: &str = "-O3";

#[derive(Debug, thiserror::Error)]
pub enum CompileError {
    #[error("cannot read {}: {source}", file.display())]
    Input { file: PathBuf, source: std::io::Error },
    #[error("cannot run {}: {source}", tool.display())]
    Spawn { tool: PathBuf, source: std::io::Error },
    /// clang's own diagnostics are in `diagnostics`; the caller shows them.
    #[error("clang failed to compile {} for {arch} ({status})", file.display())]
    Failed { file: PathBuf, arch: String, status: String, diagnostics: String },
    /// Stopped at its deadline, with everything it had started.
    #[error("{} ran past its time limit on {} for {arch} ({seconds:.1} s) and was stopped", tool.display(), file.display())]
    TimedOut { tool: PathBuf, file: PathBuf, arch: String, seconds: f64 },
    /// lld's diagnostics are in `diagnostics`.
    #[error("the device link (lld) of {} for {arch} failed ({status})", file.display())]
    Link { file: PathBuf, arch: String, status: String, diagnostics: String },
    /// nvcc's own diagnostics (or why its build is not tuned) are in `diagnostics`.
    #[error("nvcc failed to compile {} for {arch} ({status})", file.display())]
    Nvcc { file: PathBuf, arch: String, status: String, diagnostics: String },
    /// A variant nvcc's PTX cannot carry (a source rewrite).
    #[error("{0}")]
    NotWithNvcc(String),
    #[error("relocatable device code (-fgpu-rdc) is not supported for {arch}: {why}")]
    NoRdc { arch: String, why: &'static str },
    #[error(transparent)]
    Toolchain(#[from] crate::toolchain::ToolchainError),
    #[error(transparent)]
    Ptxas(#[from] ptxas::PtxasError),
}

impl CompileError {
    /// Whether the compile was stopped at its deadline.
    pub(crate) fn timed_out(&self) -> bool {
        matches!(self, CompileError::TimedOut { .. } | CompileError::Ptxas(ptxas::PtxasError::TimedOut { .. }))
    }

    /// Compiler diagnostics worth showing above the one-line error.
    pub(crate) fn diagnostics(&self) -> Option<&str> {
        match self {
            CompileError::Failed { diagnostics, .. } | CompileError::Link { diagnostics, .. } | CompileError::Nvcc { diagnostics, .. }
                if !diagnostics.trim().is_empty() =>
            {
                Some(diagnostics)
            }
            CompileError::Ptxas(ptxas::PtxasError::Failed { diagnostics, .. }) if !diagnostics.trim().is_empty() => Some(diagnostics),
            _ => None,
        }
    }
}

/// Preprocessor options (their separate forms; the joined ones start with
/// them): they read headers or define macros for the frontend run, and a
/// compile of its IR has no source for them. Longer names first, so
/// `-include-pch` is not read as `-include` `-pch`.
const FRONTEND_ONLY: &[&str] = &["-include-pch", "-include", "-imacros", "-isystem", "-iquote", "-idirafter", "-I", "-D", "-U"];

/// The user's flags for a compile of pre-optimization IR: without the
/// frontend-only ones. NVPTX compiles IR as an empty CUDA file made without
/// CUDA's headers (`-nocudainc`), where `-include hdr.h` of a header that
/// includes `<cuda_runtime.h>` would fail.
pub(crate) fn backend_args(user_args: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(user_args.len());
    let mut args = user_args.iter();
    while let Some(a) = args.next() {
        match FRONTEND_ONLY.iter().find(|f| a.starts_with(**f)) {
            // The separate form takes the next argument with it.
            Some(f) if a == f => {
                args.next();
            }
            Some(_) => {}
            None => out.push(a.clone()),
        }
    }
    out
}

/// What one clang run left behind.
pub struct Compiled {
    /// clang's stderr: warnings and, when asked for, resource-usage remarks
    /// (NVPTX: followed by the `ptxas -v` report).
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
        std::fs::File::open(self.source).map(drop).map_err(|source| CompileError::Input { file: self.source.into(), source })
    }

    /// The device-only compile command: HIP for AMDGPU, CUDA for NVPTX
    /// (no action, output or input yet).
    pub(crate) fn device_command(&self) -> Result<Command, CompileError> {
        self.hip_command()
    }

    fn hip_command(&self) -> Result<Command, CompileError> {
        self.check_source()?;
        let target = gpu::of(self.arch);
        target.prepare(self.toolchain)?;
        let mut cmd = Command::new(&self.toolchain.clang);
        cmd.args(target.device_args(self.toolchain, self.user_args)?);
        // The compilation unit's ID from its source alone: clang's own hashes
        // the whole command line, output path included (a temporary
        // directory here), and names a symbol of an AMDGPU code object with
        // it, so that no two builds of the same code were the same bytes (a
        // re-tune would drop every measurement). The user's own -cuid wins.
        cmd.arg(format!("-cuid={}", cuid(self.source)));
        cmd.arg(DEFAULT_OPT);
        cmd.args(self.user_args);
        Ok(cmd)
    }

    /// Device-only compile to a code object, with the target's usage report
    /// on stderr: clang's resource-usage remarks (they carry each kernel's
    /// source location); NVPTX: a cubin, with the `ptxas -v` report.
    pub(crate) fn code_object(&self, out: &Path) -> Result<Compiled, CompileError> {
        let cmd = self.hip_command()?;
        gpu::of(self.arch).code_object(self, cmd, out)
    }

    /// Device-only compile to a listing in `out`: assembly (PTX on NVPTX,
    /// no ptxas), or optimized LLVM IR with `-emit-llvm` among `extra`.
    pub(crate) fn listing(&self, out: &Path, extra: &[&str]) -> Result<Compiled, CompileError> {
        let mut cmd = self.hip_command()?;
        cmd.args(extra).arg("-S").arg("-o").arg(out).arg(self.source);
        run(cmd, self)
    }

    /// Preprocess only, to `out`: the same bytes as the `.hipi` that
    /// [`Unit::build_keeping_temps`] keeps, at a fraction of its cost.
    pub(crate) fn preprocess(&self, out: &Path) -> Result<Compiled, CompileError> {
        let mut cmd = self.hip_command()?;
        cmd.arg("-E").arg("-o").arg(out).arg(self.source);
        run(cmd, self)
    }

    /// The db's input hash of this unit, given its preprocessed source: what
    /// `tune` records and the hipcc wrapper looks up
    /// ([`regtune_decisions::hash::input_hash`]; NVPTX adds ptxas's version).
    /// Flags and text as [`crate::hash::Spelling`] writes them, so the hash
    /// is the same however the command spelled its paths (relative or
    /// absolute `-I`, the directory it ran in, a checkout at another path).
    pub(crate) fn input_hash(&self, preprocessed: &[u8]) -> String {
        let tools = gpu::of(self.arch).hash_inputs(self.toolchain);
        let spelling = crate::hash::Spelling::of(self.source);
        let (args, text) = (spelling.args(self.user_args), spelling.preprocessed(preprocessed));
        regtune_decisions::hash::input_hash(&self.toolchain.version, self.arch.name(), &tools, &args, &text)
    }

    /// Preprocess into `out` and hash: the input hash `tune` gives this unit,
    /// at the cost of a preprocess; and the preprocessed source.
    pub(crate) fn preprocess_and_hash(&self, out: &Path) -> Result<(String, Vec<u8>), CompileError> {
        self.preprocess(out)?;
        let bytes = std::fs::read(out).map_err(|source| CompileError::Input { file: out.to_path_buf(), source })?;
        Ok((self.input_hash(&bytes), bytes))
    }

    /// The real build, keeping clang's intermediate files in `dir`: the
    /// object with remarks, plus the preprocessed source and the
    /// pre-optimization IR (device libraries linked) that the variants start
    /// from. One compile's worth of work for all three.
    pub(crate) fn build_keeping_temps(&self, dir: &Path) -> Result<Temps, CompileError> {
        let object = dir.join("plain.o");
        // Value names keep kernel parameters recognisable ("noalias=f14");
        // they never change the generated code.
        let cmd = self.hip_command()?;
        gpu::of(self.arch).build_keeping_temps(self, cmd, dir, object)
    }
}

/// A compilation-unit ID for `source`: its name in its checkout (its
/// canonical path outside one), hashed; so a checkout at another path
/// builds the same bytes, and a re-tune there keeps what a GPU timed.
fn cuid(source: &Path) -> String {
    let spelling = crate::hash::Spelling::of(source);
    crate::hash::short(spelling.unit_name().as_os_str().as_encoded_bytes())
}

/// What a device link writes: the code object, or one listing of the
/// whole program (assembly, optimized IR).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Emit {
    Object,
    Asm,
    Ir,
}

/// What [`Unit::build_keeping_temps`] leaves behind.
pub struct Temps {
    pub object: PathBuf,
    pub pre_opt_ir: PathBuf,
    pub preprocessed: PathBuf,
    /// Warnings and the resource-usage remarks.
    pub stderr: String,
}

/// What makes a compile of pre-optimization IR a variant: extra clang
/// arguments (the plugin, `-S`), environment (the decisions), a deadline.
#[derive(Debug, Default, Clone)]
pub struct Variant {
    pub args: Vec<OsString>,
    pub env: Vec<(&'static str, OsString)>,
    /// Stop clang (and ptxas) here.
    pub deadline: Option<Instant>,
}

/// Run a compile of `ir` with the variant's environment, until its deadline.
pub(crate) fn run_variant(
    mut cmd: Command,
    toolchain: &Toolchain,
    arch: &Arch,
    ir: &Path,
    variant: &Variant,
) -> Result<Compiled, CompileError> {
    for (k, v) in &variant.env {
        cmd.env(k, v);
    }
    let unit = Unit { toolchain, arch, source: ir, user_args: &[] };
    run_until(cmd, &unit, variant.deadline)
}

pub(crate) fn run(cmd: Command, unit: &Unit<'_>) -> Result<Compiled, CompileError> {
    run_until(cmd, unit, None)
}

/// Run a tool other than clang (lld) on `file`'s behalf, until its deadline;
/// its failure is a [`CompileError::Link`].
pub(crate) fn run_tool(cmd: Command, tool: PathBuf, arch: &Arch, file: &Path, deadline: Option<Instant>) -> Result<Compiled, CompileError> {
    let done = job::run(cmd, deadline).map_err(|e| match e {
        JobError::Spawn(source) => CompileError::Spawn { tool: tool.clone(), source },
        JobError::TimedOut(after) => {
            CompileError::TimedOut { tool: tool.clone(), file: file.into(), arch: arch.to_string(), seconds: after.as_secs_f64() }
        }
    })?;
    let stderr = String::from_utf8_lossy(&done.stderr).into_owned();
    if !done.status.success() {
        return Err(CompileError::Link { file: file.into(), arch: arch.to_string(), status: done.status.to_string(), diagnostics: stderr });
    }
    Ok(Compiled { stderr })
}

fn run_until(cmd: Command, unit: &Unit<'_>, deadline: Option<Instant>) -> Result<Compiled, CompileError> {
    let tool = unit.toolchain.clang.clone();
    let done = job::run(cmd, deadline).map_err(|e| match e {
        JobError::Spawn(source) => CompileError::Spawn { tool: tool.clone(), source },
        JobError::TimedOut(after) => CompileError::TimedOut {
            tool: tool.clone(),
            file: unit.source.into(),
            arch: unit.arch.to_string(),
            seconds: after.as_secs_f64(),
        },
    })?;
    let status = done.status;
    let stderr = String::from_utf8_lossy(&done.stderr).into_owned();
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
pub(crate) fn without_remarks(stderr: &str) -> String {
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

/// Kernel locations read from the source, for targets without
/// resource-usage remarks (NVPTX): for each symbol, the first definition of
/// its unqualified name (`ns::k<int>(...)` -> `k`) that follows `__global__`
/// in the same declaration. Best effort: a kernel defined by a macro has no
/// location.
pub(crate) fn source_locations(source: &Path, symbols: &[String]) -> Vec<Location> {
    let Ok(text) = std::fs::read_to_string(source) else {
        return vec![];
    };
    let file = source.display().to_string();
    symbols
        .iter()
        .filter_map(|symbol| {
            let name = names::unqualified(symbol);
            let offset = kernel_definition(&text, &name)?;
            let line = text[..offset].matches('\n').count() as u32 + 1;
            Some(Location { symbol: symbol.clone(), file: file.clone(), line })
        })
        .collect()
}

/// Byte offset of `name(` in a declaration that says `__global__`.
fn kernel_definition(text: &str, name: &str) -> Option<usize> {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(name).map(|(i, _)| i).find(|&i| {
        let before = &text[..i];
        let after = &text[i + name.len()..];
        if before.chars().next_back().is_some_and(is_ident) || !after.trim_start().starts_with('(') {
            return false;
        }
        let declaration_start = before.rfind([';', '}', '{']).map_or(0, |p| p + 1);
        before[declaration_start..].contains("__global__")
    })
}

/// A compile error as one line for the user, with clang's diagnostics
/// below it where there are any.
pub(crate) fn compile_failure(e: CompileError) -> Failure {
    if let Some(message) = undefined_device_functions(&e) {
        return Failure::new(message);
    }
    Failure { message: e.to_string(), diagnostics: e.diagnostics().map(str::to_string) }
}

/// A whole-file compile whose device link found calls to functions the file
/// does not define: one line naming them, instead of lld's, and the way to
/// build them (relocatable device code, with the files that define them).
fn undefined_device_functions(e: &CompileError) -> Option<String> {
    let CompileError::Failed { file, arch, diagnostics, .. } = e else { return None };
    let mut names: Vec<&str> = Vec::new();
    for line in diagnostics.lines() {
        let Some((_, rest)) = line.split_once("error: undefined ") else { continue };
        let Some((_, name)) = rest.split_once("symbol: ") else { continue };
        if !names.contains(&name.trim()) {
            names.push(name.trim());
        }
    }
    if names.is_empty() {
        return None;
    }
    let file = file.display();
    let listed: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    Some(format!(
        "{file} for {arch}: its device code calls {}, which it does not define; if another file defines {} \
         (relocatable device code), give -fgpu-rdc and that file too: regtune tune {file} OTHER.hip -- -fgpu-rdc",
        listed.join(", "),
        if names.len() == 1 { "it" } else { "them" },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_locations_come_from_global_declarations() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("k.cu");
        std::fs::write(&file, "// axpy(x) is a kernel\n__device__ float axpy(float x);\n__global__ void\naxpy(float* x) {}\nint main() { axpy<<<1, 1>>>(0); }\n").unwrap();
        let locs = source_locations(&file, &["_Z4axpyPf".to_string(), "_Z5otherv".to_string()]);
        assert_eq!(locs.len(), 1);
        assert_eq!((locs[0].symbol.as_str(), locs[0].line), ("_Z4axpyPf", 4));
    }

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
    fn frontend_only_flags_stay_with_the_frontend() {
        let args: Vec<String> = [
            "-include",
            "hdr.h",
            "-imacros",
            "m.h",
            "-includeother.h",
            "-include-pch",
            "p.pch",
            "-I",
            "inc",
            "-Iinc2",
            "-DX=1",
            "-D",
            "Y",
            "-UZ",
            "-isystem",
            "sys",
            "-O2",
            "-ffast-math",
            "-Xcuda-ptxas",
            "-v",
            "-std=c++17",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(backend_args(&args), ["-O2", "-ffast-math", "-Xcuda-ptxas", "-v", "-std=c++17"]);
    }

    #[test]
    fn remarks_are_filtered_but_warnings_kept() {
        assert_eq!(
            without_remarks(REMARKS),
            "k.hip:7:3: warning: unused variable 'q' [-Wunused-variable]\n    7 |   int q;\n      |       ^\n"
        );
    }
}
