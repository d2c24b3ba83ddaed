//! The drop-in hipcc wrapper behind `regtune-hipcc` and `regtune cc`:
//! builds HIP sources with the tuned decisions, and never breaks a build.
//!
//! ```text
//! regtune-hipcc --offload-arch=gfx90a -O3 -c k.hip -o k.o
//! regtune cc [--mode use|tune|patch|off] [--compiler PATH] [--db PATH] [--] [COMPILER] ARGS...
//! ```
//!
//! Modes (`--mode`, else `REGTUNE_MODE`, else `use`):
//! - use: apply the db's current decisions for each HIP source through the
//!   pass plugin; a source without any compiles plainly.
//! - tune: first run `regtune tune` (with `$REGTUNE_TUNE_ARGS`, e.g.
//!   `--pow2 apply`) on a source the db has no current decisions for, then
//!   build as `use` does.
//! - patch: build each HIP source from a copy patched with its current
//!   decisions (`regtune fix`, verified), with the compiler as given and no
//!   plugin: ROCm's hipcc, or any other (patch.rs).
//! - off: run the compiler untouched.
//!
//! A decision is current when its input hash is this build's (hashes.rs).
//!
//! Never breaking a build: commands regtune has nothing to do with (no HIP
//! source, host-only, link-only, preprocess-only...) run the compiler with
//! the original arguments (`exec`). Any failure of regtune's own — plugin
//! missing or built for another LLVM, tuning failed, db corrupt — compiles
//! unmodified and adds exactly one line, `regtune: warning: <cause>;
//! compiling without regtune`. The compiler's exit code, stdout and stderr
//! always pass through unchanged; when a build fails with the plugin, the
//! plain build decides: if it fails too, the error is the user's and is
//! shown as the compiler printed it, with no regtune line.

pub mod cache;
pub mod command;
pub mod compiler;
pub(crate) mod hashes;
pub(crate) mod nvcc;
pub(crate) mod patch;

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::io::{IsTerminal, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Output};

use regtune_decisions::plugin::{DECISIONS_ENV, INPUT_HASH_ENV};
use regtune_decisions::{Db, Entry};

use crate::gpu::Arch;
use crate::toolchain::Toolchain;
use crate::tools;

use cache::Cache;
use command::CompileCommand;
use compiler::Compiler;

pub(crate) const MODE_ENV: &str = "REGTUNE_MODE";
pub(crate) const COMPILER_ENV: &str = "REGTUNE_COMPILER";
pub(crate) const DB_ENV: &str = "REGTUNE_DB";
/// More `regtune tune` options for tune mode, e.g. `--pow2 apply`.
pub(crate) const TUNE_ARGS_ENV: &str = "REGTUNE_TUNE_ARGS";
/// Relative to the directory the compiler runs in.
pub(crate) const DEFAULT_DB: &str = ".regtune/decisions.json";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Use,
    Tune,
    /// Build from patched copies: no plugin in the compiler.
    Patch,
    Off,
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Mode, String> {
        match s.trim() {
            "use" | "" => Ok(Mode::Use),
            "tune" => Ok(Mode::Tune),
            "patch" => Ok(Mode::Patch),
            "off" => Ok(Mode::Off),
            other => Err(format!("mode `{other}` is not use, tune, patch or off")),
        }
    }
}

/// How the wrapper was called.
#[derive(Debug, Clone, Default)]
pub struct Invocation {
    /// `--mode` (wins over `REGTUNE_MODE`).
    pub mode: Option<String>,
    /// `--compiler` (wins over `REGTUNE_COMPILER`).
    pub compiler: Option<OsString>,
    /// `--db` (wins over `REGTUNE_DB`).
    pub db: Option<PathBuf>,
    /// The compiler the command names (`regtune cc clang++ ...`, CMake's launcher form).
    pub named_compiler: Option<OsString>,
    /// The compiler's arguments.
    pub args: Vec<OsString>,
}

impl Invocation {
    /// `regtune-hipcc ARGS...`: every argument is the compiler's.
    pub fn hipcc(args: Vec<OsString>) -> Invocation {
        Invocation { args, ..Default::default() }
    }

    /// `regtune-nvcc ARGS...`: every argument is nvcc's (`nvcc`: the one
    /// found, used unless REGTUNE_COMPILER names another).
    pub fn nvcc(nvcc: Option<OsString>, args: Vec<OsString>) -> Invocation {
        Invocation { args, named_compiler: nvcc.or_else(|| Some("nvcc".into())), ..Default::default() }
    }

    /// `regtune cc [options] [--] [COMPILER] ARGS...`: the first word of the
    /// command is the compiler unless it reads as an argument or a file.
    pub fn cc(mode: Option<String>, compiler: Option<OsString>, db: Option<PathBuf>, mut command: Vec<OsString>) -> Invocation {
        let named_compiler = match command.first() {
            Some(first) if names_a_program(first) => Some(command.remove(0)),
            _ => None,
        };
        Invocation { mode, compiler, db, named_compiler, args: command }
    }
}

fn names_a_program(word: &OsStr) -> bool {
    let w = word.to_string_lossy();
    let ext = Path::new(w.as_ref()).extension().and_then(|e| e.to_str()).unwrap_or_default();
    let file_like = ["hip", "cu", "cuh", "c", "C", "cc", "cpp", "cxx", "c++", "o", "a", "so", "obj", "s", "S", "i", "ii"];
    !w.starts_with('-') && !w.starts_with('@') && !file_like.contains(&ext)
}

/// Run the wrapper; the exit code is the compiler's.
pub fn run(invocation: Invocation) -> ExitCode {
    let env_compiler = std::env::var_os(COMPILER_ENV).filter(|c| !c.is_empty());
    let explicit = invocation
        .compiler
        .as_deref()
        .map(|c| (c, "--compiler"))
        .or_else(|| env_compiler.as_deref().map(|c| (c, COMPILER_ENV)))
        .or_else(|| invocation.named_compiler.as_deref().map(|c| (c, "the command line")));
    let (compiler, toolchain) = match Compiler::resolve(explicit) {
        Ok(found) => found,
        Err(e) => {
            // Nothing can compile: say so the way a shell does, in one line.
            eprintln!("regtune: error: {e}");
            return ExitCode::from(127);
        }
    };
    let this = std::env::current_exe().and_then(std::fs::canonicalize).ok();
    if this.is_some() && std::fs::canonicalize(&compiler.path).ok() == this {
        let from = explicit.map_or("", |(_, from)| from);
        eprintln!("regtune: error: compiler `{}` is this wrapper itself ({from})", compiler.path.display());
        return ExitCode::from(127);
    }
    let mode = invocation.mode.clone().or_else(|| std::env::var(MODE_ENV).ok()).unwrap_or_default();
    let db = invocation
        .db
        .clone()
        .or_else(|| std::env::var_os(DB_ENV).filter(|d| !d.is_empty()).map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from(DEFAULT_DB));
    if nvcc::is_nvcc(&compiler.path) {
        return run_nvcc(&compiler.path, &invocation.args, &db, mode.parse());
    }
    let wrapper = Wrapper { compiler, toolchain, original: invocation.args, db, cache: Cache::from_env(), archs: None };
    wrapper.run(mode.parse())
}

/// nvcc with the db's decisions ([`nvcc`]); never breaks a build: what
/// regtune cannot do builds with nvcc untouched, with one line why.
fn run_nvcc(compiler: &Path, args: &[OsString], db: &Path, mode: Result<Mode, String>) -> ExitCode {
    let plain = || Command::new(compiler).args(args).status();
    let exit = |status: std::io::Result<std::process::ExitStatus>| match status {
        Ok(s) => ExitCode::from(s.code().map_or_else(|| 128 + s.signal().unwrap_or(0) as u8, |c| c as u8)),
        Err(e) => {
            eprintln!("regtune: error: cannot run {}: {e}", compiler.display());
            ExitCode::from(127)
        }
    };
    let wrapped = std::env::var_os(compiler::WRAPPED_ENV).is_some();
    let strings = nvcc::strings(args);
    let (Some(strings), Ok(Mode::Use | Mode::Patch), false) = (strings, &mode, wrapped) else {
        if let Err(cause) = &mode {
            return fallback_nvcc(plain, exit, cause);
        }
        if mode == Ok(Mode::Tune) {
            return fallback_nvcc(
                plain,
                exit,
                "REGTUNE_MODE=tune is not supported with nvcc yet: run `regtune tune --compiler nvcc` first",
            );
        }
        return exit(plain());
    };
    match nvcc::build(compiler, &strings, db) {
        Ok(nvcc::Built::Plain) => exit(plain()),
        Ok(nvcc::Built::Edited { stdout, stderr, applied, warnings }) => {
            let _ = std::io::stdout().write_all(&stdout);
            let _ = std::io::stderr().write_all(&stderr);
            for w in &warnings {
                eprintln!("regtune: warning: {w}");
            }
            if verbose() {
                for a in &applied {
                    eprintln!("regtune: note: {a}");
                }
            }
            ExitCode::SUCCESS
        }
        Err(cause) => fallback_nvcc(plain, exit, &cause),
    }
}

/// Build plainly; when that succeeds, say in one line why regtune did not.
fn fallback_nvcc(
    plain: impl Fn() -> std::io::Result<std::process::ExitStatus>,
    exit: impl Fn(std::io::Result<std::process::ExitStatus>) -> ExitCode,
    cause: &str,
) -> ExitCode {
    let status = plain();
    if status.as_ref().is_ok_and(|s| s.success()) {
        eprintln!("regtune: warning: {cause}; compiling without regtune");
    }
    exit(status)
}

struct Wrapper {
    compiler: Compiler,
    toolchain: Option<Toolchain>,
    /// The compiler's arguments as given (response files unexpanded).
    original: Vec<OsString>,
    db: PathBuf,
    cache: Cache,
    /// The command's device targets, once known.
    archs: Option<Vec<String>>,
}

/// A build with decisions: the plugin and a db of this build's current entries.
struct Tuned {
    plugin: PathBuf,
    decisions: PathBuf,
    _dir: tempfile::TempDir,
    input_hash: Option<String>,
}

impl Wrapper {
    fn run(mut self, mode: Result<Mode, String>) -> ExitCode {
        let strings: Option<Vec<String>> = self.original.iter().map(|a| a.to_str().map(String::from)).collect();
        let Some(strings) = strings else {
            return self.exec_plain(None, &[]);
        };
        let cmd = match CompileCommand::parse(&strings) {
            Ok(cmd) => cmd,
            Err(e) => return self.fallback(None, &[], e.to_string()),
        };
        let has_hip = !cmd.hip_sources(self.compiler.cu_is_hip()).is_empty();
        // Debian's clang needs its HIP flags for any HIP input, with or without regtune.
        let (front, front_problem) = match has_hip.then(|| self.debian_flags(&cmd)) {
            Some(Err(cause)) => (vec![], Some(cause)),
            Some(Ok(flags)) => (flags, None),
            None => (vec![], None),
        };
        if let Some(cause) = front_problem {
            return self.fallback(Some(&cmd), &[], cause);
        }
        let wrapped = std::env::var_os(compiler::WRAPPED_ENV).is_some();
        if wrapped || mode == Ok(Mode::Off) || cmd.untouched_because(self.compiler.cu_is_hip()).is_some() {
            return self.exec_plain(Some(&cmd), &front);
        }
        let mode = match mode {
            Ok(mode) => mode,
            Err(cause) => return self.fallback(Some(&cmd), &front, cause),
        };
        if mode == Mode::Patch {
            return match self.plan_patch(&cmd) {
                Ok(None) => self.exec_plain(Some(&cmd), &front),
                Ok(Some(patched)) => self.build_patched(&cmd, &front, &patched),
                Err(cause) => self.fallback(Some(&cmd), &front, cause),
            };
        }
        match self.plan(&cmd, mode) {
            Ok(None) => self.exec_plain(Some(&cmd), &front),
            Ok(Some(tuned)) => self.build_tuned(&cmd, &front, &tuned),
            Err(cause) => self.fallback(Some(&cmd), &front, cause),
        }
    }

    fn toolchain(&mut self) -> Result<&Toolchain, String> {
        if self.toolchain.is_none() {
            self.toolchain = Some(Toolchain::detect().map_err(|e| e.to_string())?);
        }
        Ok(self.toolchain.as_ref().expect("set above"))
    }

    /// The command's device targets, as the compiler would pick them.
    fn archs(&mut self, cmd: &CompileCommand) -> Vec<String> {
        if !cmd.offload_archs.is_empty() {
            return cmd.offload_archs.clone();
        }
        let compiler = &self.compiler;
        let original = &self.original;
        self.archs.get_or_insert_with(|| compiler::default_archs(&mut compiler.plain(original, Some(cmd), &[]))).clone()
    }

    fn debian_flags(&mut self, cmd: &CompileCommand) -> Result<Vec<OsString>, String> {
        let compiler = self.compiler.clone();
        // No toolchain of ours: the compiler is on its own, and so not Debian's clang.
        let Ok(toolchain) = self.toolchain() else { return Ok(vec![]) };
        if !compiler.needs_debian_flags(toolchain, cmd) {
            return Ok(vec![]);
        }
        let archs = self.archs(cmd);
        let cache = self.cache.clone();
        let toolchain = self.toolchain()?;
        let archs: Vec<Arch> = archs.iter().map(|a| Arch::parse(a)).collect::<Result<_, _>>().map_err(|e| e.to_string())?;
        compiler::debian_flags(toolchain, &archs, &cmd.device_args, cmd.host_only, &cache)
    }

    /// What to build with, or `None` to build plainly.
    fn plan(&mut self, cmd: &CompileCommand, mode: Mode) -> Result<Option<Tuned>, String> {
        if !self.compiler.cu_is_hip() && !cmd.sets_optimization() {
            // clang builds device code at -O0 then; the tuner measures -O3, as hipcc builds.
            if verbose() {
                eprintln!("regtune: note: no -O: clang builds device code at -O0, which regtune does not tune");
            }
            return Ok(None);
        }
        let db = Db::load(&self.db).map_err(|e| e.to_string())?;
        let arch_names = self.archs(cmd);
        let processor = |a: &str| a.split(':').next().unwrap_or(a).to_string();
        if mode == Mode::Use && !db.kernels.values().any(|e| arch_names.iter().any(|a| processor(a) == e.arch)) {
            return Ok(None);
        }
        let cache = self.cache.clone();
        let compiler = self.compiler.clone();
        let toolchain = self.toolchain()?.clone();
        if !compiler.is_toolchain_clang(&toolchain) {
            return Err(format!("{} is not the compiler regtune tunes with ({})", compiler.path.display(), toolchain.clang.display()));
        }
        let mut archs = Vec::new();
        for name in &arch_names {
            match Arch::parse(name) {
                Ok(a) => archs.push(a),
                Err(e) if mode == Mode::Tune => return Err(e.to_string()),
                Err(_) => {} // nothing can have been tuned for it
            }
        }
        // (source, target, input hash) for every HIP source and target.
        let mut units: Vec<(PathBuf, Arch, String)> = Vec::new();
        for source in cmd.hip_sources(compiler.cu_is_hip()) {
            for arch in &archs {
                let path = PathBuf::from(&source.path);
                let (hash, _) = hashes::input_hash(&toolchain, arch, &path, &cmd.device_args, &cache).map_err(|e| e.to_string())?;
                units.push((path, arch.clone(), hash));
            }
        }
        let current = |db: &Db, (_, arch, hash): &(PathBuf, Arch, String)| {
            db.kernels.values().any(|e| e.arch == arch.processor() && &e.input_hash == hash)
        };
        let db = if mode == Mode::Tune {
            let missing: Vec<&(PathBuf, Arch, String)> =
                units.iter().filter(|u| !current(&db, u) && !cache.has_mark("no-kernels", &u.2)).collect();
            if missing.is_empty() {
                db
            } else {
                self.tune(cmd, &missing)?
            }
        } else {
            db
        };
        let entries: Vec<&Entry> =
            db.kernels.values().filter(|e| units.iter().any(|(_, a, h)| e.arch == a.processor() && &e.input_hash == h)).collect();
        if entries.iter().all(|e| e.effective().is_empty()) {
            return Ok(None);
        }
        // One decision per kernel and target: a template kernel instantiated
        // in two sources of one command must have been decided alike.
        let mut decided: BTreeMap<(&str, &str), regtune_decisions::Transforms> = BTreeMap::new();
        for e in &entries {
            let t = e.effective();
            if decided.insert((&e.symbol, &e.arch), t.clone()).is_some_and(|other| other != t) {
                return Err(format!("kernel {} on {} has different decisions in two sources of this command", e.name, e.arch));
            }
        }
        let plugin = crate::plugin::find().map_err(|e| e.to_string())?;
        let check_with = if compiler.is_hipcc() { toolchain.clang.clone() } else { compiler.path.clone() };
        compiler::check_plugin(&check_with, &plugin, &cache)?;
        let dir = tempfile::tempdir().map_err(|e| format!("cannot create a temporary directory: {e}"))?;
        let decisions = dir.path().join("decisions.json");
        let mut subset = Db::default();
        for e in entries {
            subset.insert(e.clone());
        }
        subset.save(&decisions).map_err(|e| e.to_string())?;
        let hashes: std::collections::BTreeSet<&String> = units.iter().map(|u| &u.2).collect();
        let input_hash = (hashes.len() == 1).then(|| hashes.into_iter().next().cloned()).flatten();
        if verbose() {
            eprintln!("regtune: note: building with {} decisions from {}", subset.kernels.len(), self.db.display());
        }
        Ok(Some(Tuned { plugin, decisions, _dir: dir, input_hash }))
    }

    /// `regtune tune` each source on the targets it lacks, into the db
    /// (under its lock, so concurrent builds lose nothing), and reload it.
    fn tune(&self, cmd: &CompileCommand, missing: &[&(PathBuf, Arch, String)]) -> Result<Db, String> {
        let regtune = regtune_binary()?;
        let extra = match std::env::var(TUNE_ARGS_ENV) {
            Ok(v) => shlex::split(&v).ok_or_else(|| format!("{TUNE_ARGS_ENV} is not a valid shell word list: {v}"))?,
            Err(_) => vec![],
        };
        let mut by_source: BTreeMap<&Path, Vec<&Arch>> = BTreeMap::new();
        for (source, arch, _) in missing {
            by_source.entry(source.as_path()).or_default().push(arch);
        }
        let mut failures = Vec::new();
        for (source, archs) in &by_source {
            let list: Vec<&str> = archs.iter().map(|a| a.name()).collect();
            if verbose() {
                eprintln!("regtune: note: tuning {} for {}", source.display(), list.join(","));
            }
            let out = Command::new(&regtune)
                .args(["tune", "--format", "json", "--offload-arch", &list.join(","), "--db"])
                .arg(&self.db)
                .args(&extra)
                .arg(source)
                .arg("--")
                .args(&cmd.device_args)
                .output()
                .map_err(|e| format!("cannot run {}: {e}", regtune.display()))?;
            if !out.status.success() {
                failures.push(String::from_utf8_lossy(&out.stderr).into_owned());
            }
        }
        let db = Db::load(&self.db).map_err(|e| e.to_string())?;
        for (source, arch, hash) in missing {
            if db.kernels.values().any(|e| e.arch == arch.processor() && &e.input_hash == hash) {
                continue;
            }
            let no_kernels = format!("{} defines no kernels (no __global__ functions for {arch})", source.display());
            if failures.iter().any(|f| f.contains(&no_kernels)) {
                self.cache.set_mark("no-kernels", hash);
                continue;
            }
            let why = failures
                .iter()
                .flat_map(|f| f.lines())
                .filter_map(|l| l.strip_prefix("error: "))
                .collect::<Vec<_>>()
                .pop()
                .map_or_else(|| "its input hash is not the build's".to_string(), str::to_string);
            return Err(format!("tuning {} for {arch} recorded no decisions: {why}", source.display()));
        }
        Ok(db)
    }

    /// The plain compile, for running with its output captured: clang sees
    /// a pipe, so diagnostics keep the colours a terminal would have had.
    fn captured(&self, cmd: Option<&CompileCommand>, front: &[OsString]) -> Command {
        let mut command = self.compiler.plain(&self.original, cmd, front);
        let chose = |c: &CompileCommand| c.args.iter().any(|a| a.contains("color-diagnostics") || a.starts_with("-fdiagnostics-color"));
        if std::io::stderr().is_terminal() && cmd.is_some_and(|c| !chose(c)) {
            command.arg("-fcolor-diagnostics");
        }
        command
    }

    fn build_tuned(&self, cmd: &CompileCommand, front: &[OsString], tuned: &Tuned) -> ExitCode {
        let mut command = self.captured(Some(cmd), front);
        command.arg(format!("-fpass-plugin={}", tuned.plugin.display()));
        command.env(DECISIONS_ENV, &tuned.decisions);
        match &tuned.input_hash {
            Some(h) => command.env(INPUT_HASH_ENV, h),
            None => command.env_remove(INPUT_HASH_ENV),
        };
        let out = match command.output() {
            Ok(out) => out,
            Err(e) => return self.fallback(Some(cmd), front, format!("cannot run {}: {e}", self.compiler.path.display())),
        };
        let stderr = String::from_utf8_lossy(&out.stderr);
        let plugin_warning = stderr.lines().find_map(|l| l.strip_prefix("regtune: warning: "));
        match plugin_warning {
            None if out.status.success() => forward(&out),
            Some(w) => {
                let cause = w.trim_end_matches("; compiling without regtune decisions").to_string();
                self.fallback(Some(cmd), front, cause)
            }
            None => {
                let cause = format!("the build with the pass plugin failed ({})", describe(&out));
                self.fallback(Some(cmd), front, cause)
            }
        }
    }

    /// The plain compile. A HIP compile runs captured, so that a failure to
    /// spawn one of clang's offload tools can be named; anything else
    /// replaces this process.
    fn exec_plain(&self, cmd: Option<&CompileCommand>, front: &[OsString]) -> ExitCode {
        if cmd.is_some_and(|c| !c.hip_sources(self.compiler.cu_is_hip()).is_empty()) {
            return match self.run_plain(cmd, front) {
                Ok(out) => self.pass_through(&out),
                Err(code) => code,
            };
        }
        let _ = std::io::stdout().flush();
        let error = self.compiler.plain(&self.original, cmd, front).exec();
        eprintln!("regtune: error: cannot run {}: {error}", self.compiler.path.display());
        ExitCode::from(127)
    }

    /// regtune could not do its part: compile plainly and, if that
    /// succeeds, say why in one line. If it fails, the error is the user's
    /// (or a missing tool's, which is then named).
    fn fallback(&self, cmd: Option<&CompileCommand>, front: &[OsString], cause: String) -> ExitCode {
        let out = match self.run_plain(cmd, front) {
            Ok(out) => out,
            Err(code) => return code,
        };
        if out.output.status.success() {
            let cause = cause.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ");
            eprintln!("regtune: warning: {cause}; compiling without regtune");
        }
        self.pass_through(&out)
    }

    /// Run the plain compile captured; Err is the exit code when the
    /// compiler cannot be run at all (said in one line).
    fn run_plain(&self, cmd: Option<&CompileCommand>, front: &[OsString]) -> Result<PlainRun, ExitCode> {
        let mut command = self.captured(cmd, front);
        let args: Vec<OsString> = command.get_args().map(OsString::from).collect();
        match command.output() {
            Ok(output) => Ok(PlainRun { args, output }),
            Err(e) => {
                eprintln!("regtune: error: cannot run {}: {e}", self.compiler.path.display());
                Err(ExitCode::from(127))
            }
        }
    }

    /// The compiler's output and exit code, unchanged; after a failure that
    /// was a tool missing from the toolchain, one more line naming it.
    fn pass_through(&self, run: &PlainRun) -> ExitCode {
        let code = forward(&run.output);
        if !run.output.status.success() {
            let stderr = String::from_utf8_lossy(&run.output.stderr);
            if let Some(line) = tools::explain_missing(&self.compiler.path, &run.args, &stderr) {
                eprintln!("regtune: error: {line}");
            }
        }
        code
    }
}

/// A plain compile that ran: its arguments (to ask the compiler what it
/// spawns) and what it printed.
struct PlainRun {
    args: Vec<OsString>,
    output: Output,
}

/// Write the compiler's output as it wrote it and return its exit code.
fn forward(out: &Output) -> ExitCode {
    let _ = std::io::stdout().write_all(&out.stdout);
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().write_all(&out.stderr);
    ExitCode::from(exit_code(out.status))
}

fn exit_code(status: std::process::ExitStatus) -> u8 {
    match status.code() {
        Some(c) => c as u8,
        None => 128u8.saturating_add(status.signal().unwrap_or(0) as u8),
    }
}

fn describe(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr);
    match stderr.lines().find(|l| l.contains("error")) {
        Some(line) => format!("{}: {}", out.status, line.trim()),
        None => out.status.to_string(),
    }
}

fn verbose() -> bool {
    regtune_decisions::plugin::verbose()
}

/// The `regtune` CLI (for `regtune tune`): this binary, or the one next to it.
fn regtune_binary() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find the regtune binary: {e}"))?;
    if exe.file_stem().is_some_and(|s| s == "regtune") {
        return Ok(exe);
    }
    let sibling = exe.with_file_name("regtune");
    if sibling.is_file() {
        Ok(sibling)
    } else {
        Err(format!("cannot find the regtune binary next to {}", exe.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_bad_ones_are_named() {
        assert_eq!("use".parse::<Mode>(), Ok(Mode::Use));
        assert_eq!("".parse::<Mode>(), Ok(Mode::Use));
        assert_eq!("tune".parse::<Mode>(), Ok(Mode::Tune));
        assert_eq!("off".parse::<Mode>(), Ok(Mode::Off));
        assert_eq!("patch".parse::<Mode>(), Ok(Mode::Patch));
        assert_eq!("fast".parse::<Mode>(), Err("mode `fast` is not use, tune, patch or off".to_string()));
    }

    #[test]
    fn cc_takes_the_first_word_as_the_compiler_unless_it_is_an_argument() {
        let words = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
        let launcher = Invocation::cc(None, None, None, words(&["/usr/bin/clang++-22", "-c", "k.hip"]));
        assert_eq!(launcher.named_compiler, Some("/usr/bin/clang++-22".into()));
        assert_eq!(launcher.args, words(&["-c", "k.hip"]));
        let bare = Invocation::cc(None, None, None, words(&["-c", "k.hip"]));
        assert_eq!(bare.named_compiler, None);
        let source_first = Invocation::cc(None, None, None, words(&["k.hip", "-c"]));
        assert_eq!(source_first.named_compiler, None);
        assert!(names_a_program(OsStr::new("hipcc")));
    }
}
