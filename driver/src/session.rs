//! One file on one target: the frontend runs once, then any number of
//! variants compile from its pre-optimization IR through the real O3
//! pipeline and code generator, with the pass plugin applying the variant.
//! A variant of one kernel compiles that kernel alone (the plugin drops the
//! others once it has placed the decisions, see passes/src/only_kernel.rs);
//! the kept sets together compile the whole file. Every variant compile may
//! have a deadline. Results are cached, so no variant compiles twice.
//! With `-fgpu-rdc` ([`Session::start_linked`]) each build is the file's
//! bitcode device-linked with the other files' ([`crate::rdc`]). Built with
//! nvcc ([`Session::start_nvcc`]), the file compiles once through nvcc, and
//! each variant is nvcc's PTX with the kernels' entries edited, assembled
//! by nvcc's own ptxas line (`gpu/nvptx/nvcc.rs`): register caps, launch
//! bounds and spilling to shared memory, no rewrite of the source.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use regtune_decisions::plugin::{Inspection, DECISIONS_ENV, INPUT_HASH_ENV, ONLY_KERNEL_ENV, VERBOSE_ENV};
use regtune_decisions::{Db, Entry, Transforms};

use crate::gpu::compile::{self, CompileError, Emit, Location, Unit, Variant};
use crate::gpu::measure::{self, Measured};
use crate::gpu::nvptx::nvcc;
use crate::gpu::Arch;
use crate::rdc;
use crate::toolchain::nvcc::Nvcc;
use crate::toolchain::{translate, Toolchain};

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error(transparent)]
    Compile(#[from] CompileError),
    #[error(transparent)]
    Measure(#[from] measure::MeasureError),
    #[error("{0}")]
    Io(String),
    #[error("the pass plugin failed on {file}: {detail}")]
    Plugin { file: String, detail: String },
    #[error("the one-kernel build of {file} has no kernel {symbol}")]
    NoSuchKernel { file: String, symbol: String },
}

impl From<rdc::RdcError> for SessionError {
    fn from(e: rdc::RdcError) -> SessionError {
        match e {
            rdc::RdcError::Compile(c) => SessionError::Compile(c),
            rdc::RdcError::Measure(m) => SessionError::Measure(m),
            rdc::RdcError::Other(message) => SessionError::Io(message),
        }
    }
}

impl SessionError {
    /// The compile was stopped at its deadline.
    pub(crate) fn timed_out(&self) -> bool {
        matches!(self, SessionError::Compile(c) if c.timed_out())
    }
}

/// What a variant compile produces.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Listing {
    /// Optimized LLVM IR.
    Ir,
    /// AMDGPU assembly, or PTX on NVPTX.
    Asm,
}

pub struct Session<'a> {
    toolchain: &'a Toolchain,
    pub arch: &'a Arch,
    plugin: &'a Path,
    pub source: &'a Path,
    dir: tempfile::TempDir,
    pre_ir: PathBuf,
    /// The plain build's code object (cubin on NVPTX).
    plain_object: PathBuf,
    /// Each variant's code object, kept for `regtune measure`'s candidates.
    objects: Mutex<HashMap<Vec<(String, Transforms)>, PathBuf>>,
    /// Identifies the input: preprocessed source, flags, compiler, target.
    pub input_hash: String,
    /// The user's clang flags: NVPTX hands their `-O` and `-Xcuda-ptxas` to ptxas.
    user_args: &'a [String],
    options: measure::Options,
    /// Wall time of the plain build: what variant time limits scale with.
    pub plain_seconds: f64,
    counter: AtomicUsize,
    cache: Mutex<HashMap<BuildKey, Vec<Measured>>>,
    /// `-fgpu-rdc`: each build is the unit's bitcode device-linked with
    /// the other units', as the build links them.
    link: Option<rdc::Link>,
    /// Built with nvcc: its PTX and ptxas line (no IR, no plugin).
    nvcc: Option<nvcc::Kept>,
}

/// The file built by the CUDA compiler the session does not build with
/// ([`Session::build_with_other_compiler`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum OtherBuild {
    /// Written; by this compiler ("clang", "nvcc").
    Built(&'static str),
    /// No other compiler builds this file here: not CUDA, relocatable
    /// device code (`-fgpu-rdc`), or no nvcc installed.
    Unavailable,
    /// The compiler, and why it did not build the file (one line).
    Failed(&'static str, String),
}

/// The nvcc a clang session's file is also built with, found once.
fn other_nvcc() -> Option<&'static Nvcc> {
    static FOUND: OnceLock<Option<Nvcc>> = OnceLock::new();
    FOUND.get_or_init(|| Nvcc::detect().ok()).as_ref()
}

/// A build: the one kernel it keeps (None: the whole file), and the
/// transforms per kernel symbol.
type BuildKey = (Option<String>, Vec<(String, Transforms)>);

impl<'a> Session<'a> {
    /// Build once as the user's build would, keeping the pre-optimization IR
    /// (device libraries linked) that every variant starts from. Returns the
    /// session and the plain build's kernels with their source locations.
    pub fn start(
        toolchain: &'a Toolchain,
        arch: &'a Arch,
        plugin: &'a Path,
        source: &'a Path,
        user_args: &'a [String],
    ) -> Result<(Session<'a>, Vec<Measured>, Vec<Location>), SessionError> {
        Session::start_with(toolchain, arch, plugin, source, user_args, measure::Options::default())
    }

    /// [`Session::start`], measuring with `options` (NVPTX: the block size).
    pub(crate) fn start_with(
        toolchain: &'a Toolchain,
        arch: &'a Arch,
        plugin: &'a Path,
        source: &'a Path,
        user_args: &'a [String],
        options: measure::Options,
    ) -> Result<(Session<'a>, Vec<Measured>, Vec<Location>), SessionError> {
        let dir = tempfile::tempdir().map_err(|e| SessionError::Io(format!("cannot create a temporary directory: {e}")))?;
        let unit = Unit { toolchain, arch, source, user_args };
        let started = Instant::now();
        let temps = unit.build_keeping_temps(dir.path())?;
        let plain_seconds = started.elapsed().as_secs_f64();
        let preprocessed = std::fs::read(&temps.preprocessed)
            .map_err(|e| SessionError::Io(format!("cannot read {}: {e}", temps.preprocessed.display())))?;
        let baseline = measure::object_file_with(&temps.object, arch, &temps.stderr, &options)?;
        let session = Session {
            toolchain,
            arch,
            plugin,
            source,
            input_hash: unit.input_hash(&preprocessed),
            user_args,
            options,
            plain_seconds,
            dir,
            pre_ir: temps.pre_opt_ir,
            plain_object: temps.object,
            objects: Mutex::new(HashMap::new()),
            counter: AtomicUsize::new(0),
            cache: Mutex::new(HashMap::from([((None, vec![]), baseline.clone())])),
            link: None,
            nvcc: None,
        };
        let symbols: Vec<String> = baseline.iter().map(|m| m.symbol.clone()).collect();
        let locations = crate::gpu::of(arch).locations(source, &temps.stderr, &symbols);
        Ok((session, baseline, locations))
    }

    /// A `-fgpu-rdc` unit of `set`, already compiled: every build is its
    /// bitcode linked with the other units'. Its kernels that call a
    /// function no unit defines are left out (declarations, so the rest
    /// links); the others are measured from the linked code object.
    pub(crate) fn start_linked(
        toolchain: &'a Toolchain,
        plugin: &'a Path,
        set: &'a rdc::LinkSet,
        source: &'a Path,
        options: measure::Options,
    ) -> Result<(Session<'a>, Vec<Measured>, Vec<Location>), SessionError> {
        let arch = &set.arch;
        let dir = tempfile::tempdir().map_err(|e| SessionError::Io(format!("cannot create a temporary directory: {e}")))?;
        let plain = set.plain(toolchain, source, dir.path(), &options)?;
        let compile_unit = Unit { toolchain, arch, source, user_args: &plain.unit.user_args };
        let session = Session {
            toolchain,
            arch,
            plugin,
            source,
            input_hash: compile_unit.input_hash(&plain.preprocessed),
            user_args: &plain.unit.user_args,
            options,
            plain_seconds: plain.seconds,
            dir,
            pre_ir: plain.pre_ir,
            plain_object: plain.object,
            objects: Mutex::new(HashMap::new()),
            counter: AtomicUsize::new(0),
            cache: Mutex::new(HashMap::from([((None, vec![]), plain.measured.clone())])),
            link: Some(plain.link),
            nvcc: None,
        };
        Ok((session, plain.measured, plain.locations))
    }

    /// A file built with nvcc as the user's flags say: nvcc's cubin is the
    /// plain build, and every variant edits nvcc's PTX (see the module's
    /// doc). The input hash is of nvcc's PTX and ptxas line.
    pub(crate) fn start_nvcc(
        toolchain: &'a Toolchain,
        arch: &'a Arch,
        nvcc: &Nvcc,
        source: &'a Path,
        user_args: &'a [String],
        options: measure::Options,
    ) -> Result<(Session<'a>, Vec<Measured>, Vec<Location>), SessionError> {
        let dir = tempfile::tempdir().map_err(|e| SessionError::Io(format!("cannot create a temporary directory: {e}")))?;
        let started = Instant::now();
        let kept = nvcc::keep(nvcc, arch, source, user_args, dir.path(), None)?;
        let plain_seconds = started.elapsed().as_secs_f64();
        let baseline = measure::object_file_with(&kept.cubin, arch, &kept.report, &options)?;
        let session = Session {
            toolchain,
            arch,
            // No plugin runs in nvcc's builds (plugin_variant, inspect and
            // plugin_notes are not reached with `nvcc` set).
            plugin: Path::new(""),
            source,
            input_hash: kept.input_hash(nvcc, arch),
            user_args,
            options,
            plain_seconds,
            dir,
            pre_ir: PathBuf::new(),
            plain_object: kept.cubin.clone(),
            objects: Mutex::new(HashMap::new()),
            counter: AtomicUsize::new(0),
            cache: Mutex::new(HashMap::from([((None, vec![]), baseline.clone())])),
            link: None,
            nvcc: Some(kept),
        };
        let symbols: Vec<String> = baseline.iter().map(|m| m.symbol.clone()).collect();
        let locations = crate::gpu::of(arch).locations(source, "", &symbols);
        Ok((session, baseline, locations))
    }

    /// Whether variants may rewrite the source (sink, pow2, unroll caps,
    /// noalias, regtune's LDS spill): not in nvcc's builds, which edit
    /// only what ptxas reads from a kernel's entry.
    pub(crate) fn rewrites_source(&self) -> bool {
        self.nvcc.is_none()
    }

    /// nvcc's PTX with `variant`'s entries edited, assembled into `out`;
    /// ptxas's report.
    /// With `as_built`, exactly as nvcc's build would (no report).
    fn assemble_nvcc(
        &self,
        kept: &nvcc::Kept,
        variant: &[(String, Transforms)],
        out: &Path,
        as_built: bool,
        deadline: Option<Instant>,
    ) -> Result<String, SessionError> {
        let ptx = kept.edited(variant).map_err(|e| SessionError::Compile(CompileError::NotWithNvcc(e)))?;
        let path = self.scratch_path("ptx");
        std::fs::write(&path, ptx).map_err(|e| SessionError::Io(format!("cannot write {}: {e}", path.display())))?;
        let report = match as_built {
            true => kept.assemble_as_nvcc(self.arch, &path, out, deadline).map(|()| String::new()),
            false => kept.assemble(self.arch, &path, out, deadline),
        };
        let _ = std::fs::remove_file(&path);
        Ok(report?)
    }

    /// Compile the IR with `variant`: to a code object (or a listing,
    /// `emit`), through the device link for a relocatable unit.
    fn compile(&self, variant: &Variant, out: &Path, emit: Emit) -> Result<compile::Compiled, SessionError> {
        let Some(link) = &self.link else {
            return Ok(crate::gpu::of(self.arch).ir_to_object(self.toolchain, &self.pre_ir, out, variant, self.user_args)?);
        };
        let own = out.with_extension("own.bc");
        let target = crate::gpu::of(self.arch);
        let compiled = target.ir_to_bitcode(self.toolchain, &self.pre_ir, &own, variant)?;
        let linked = link.device_link(self.toolchain, self.arch, own, out, emit, self.user_args, variant)?;
        Ok(compile::Compiled { stderr: compiled.stderr + &linked.stderr })
    }

    fn scratch_path(&self, what: &str) -> PathBuf {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        self.dir.path().join(format!("v{n}.{what}"))
    }

    /// A decisions file holding exactly this variant.
    fn decisions_file(&self, variant: &[(String, Transforms)]) -> Result<PathBuf, SessionError> {
        let mut db = Db::default();
        for (symbol, t) in variant.iter().filter(|(_, t)| !t.is_empty()) {
            db.insert(Entry {
                symbol: symbol.clone(),
                arch: self.arch.processor().to_string(),
                input_hash: self.input_hash.clone(),
                name: String::new(),
                file: String::new(),
                transforms: t.clone(),
                reason: None,
                suggested: vec![],
                before: None,
                after: None,
                candidates: vec![],
                left_out: vec![],
                measured: None,
            });
        }
        let path = self.scratch_path("json");
        db.save(&path).map_err(|e| SessionError::Io(e.to_string()))?;
        Ok(path)
    }

    /// The plugin's flags and environment for a variant; none for the plain
    /// compile of the whole file.
    fn plugin_variant(&self, variant: &[(String, Transforms)], only: Option<&str>) -> Result<Variant, SessionError> {
        if variant.iter().all(|(_, t)| t.is_empty()) && only.is_none() {
            return Ok(Variant::default());
        }
        let decisions = self.decisions_file(variant)?;
        let mut env = vec![(DECISIONS_ENV, decisions.into_os_string()), (INPUT_HASH_ENV, OsString::from(&self.input_hash))];
        if let Some(symbol) = only {
            env.push((ONLY_KERNEL_ENV, OsString::from(symbol)));
        }
        Ok(Variant { args: vec![OsString::from(format!("-fpass-plugin={}", self.plugin.display()))], env, deadline: None })
    }

    /// Compile the whole file with `variant` (transforms per kernel symbol;
    /// kernels not named compile plain), stopped at `deadline`, and measure
    /// every kernel.
    pub fn measure(&self, variant: &[(String, Transforms)], deadline: Option<Instant>) -> Result<Vec<Measured>, SessionError> {
        let key: Vec<(String, Transforms)> = variant.iter().filter(|(_, t)| !t.is_empty()).cloned().collect();
        self.build((None, key), deadline)
    }

    /// Compile `symbol` alone with `transforms` (the other kernels dropped
    /// once the decisions are placed), stopped at `deadline`, and measure it.
    pub fn measure_kernel(&self, symbol: &str, transforms: &Transforms, deadline: Option<Instant>) -> Result<Measured, SessionError> {
        let key = (Some(symbol.to_string()), vec![(symbol.to_string(), transforms.clone())]);
        let measured = self.build(key, deadline)?;
        measured
            .into_iter()
            .find(|m| m.symbol == symbol)
            .ok_or_else(|| SessionError::NoSuchKernel { file: self.source.display().to_string(), symbol: symbol.to_string() })
    }

    fn build(&self, key: BuildKey, deadline: Option<Instant>) -> Result<Vec<Measured>, SessionError> {
        if let Some(hit) = self.cache.lock().expect("cache lock").get(&key) {
            return Ok(hit.clone());
        }
        if let Some(kept) = &self.nvcc {
            let obj = self.scratch_path("cubin");
            let report = self.assemble_nvcc(kept, &key.1, &obj, false, deadline)?;
            let measured = measure::object_file_with(&obj, self.arch, &report, &self.options)?;
            self.objects.lock().expect("objects lock").entry(key.1.clone()).or_insert(obj);
            self.cache.lock().expect("cache lock").insert(key, measured.clone());
            return Ok(measured);
        }
        let mut variant = self.plugin_variant(&key.1, key.0.as_deref())?;
        variant.deadline = deadline;
        let obj = self.scratch_path("o");
        let measured = self.compile(&variant, &obj, Emit::Object).and_then(|c| {
            let all = measure::object_file_with(&obj, self.arch, &c.stderr, &self.options)?;
            Ok(match &self.link {
                Some(link) => link.own(all),
                None => all,
            })
        });
        let Ok(measured) = measured else {
            let _ = std::fs::remove_file(&obj);
            return measured;
        };
        // Kept for `regtune measure`'s candidates: a one-kernel build holds
        // the kernel it was built for as the whole-file build would.
        self.objects.lock().expect("objects lock").entry(key.1.clone()).or_insert(obj);
        self.cache.lock().expect("cache lock").insert(key, measured.clone());
        Ok(measured)
    }

    /// What the plugin says it did to `symbol` built alone with
    /// `transforms` (`REGTUNE_VERBOSE`): its `regtune: ...` lines.
    pub(crate) fn plugin_notes(&self, symbol: &str, transforms: &Transforms) -> Result<Vec<String>, SessionError> {
        if self.nvcc.is_some() {
            return Err(SessionError::Io("nvcc's builds run no pass plugin".into()));
        }
        let mut variant = self.plugin_variant(&[(symbol.to_string(), transforms.clone())], Some(symbol))?;
        variant.env.push((VERBOSE_ENV, OsString::from("1")));
        // The values' names, for the notes (clang drops them reading IR).
        variant.args.push(OsString::from("-fno-discard-value-names"));
        let compiled = self.compile(&variant, &self.scratch_path("o"), Emit::Object)?;
        Ok(compiled.stderr.lines().filter(|l| l.starts_with("regtune: ")).map(str::to_string).collect())
    }

    /// A hash of the code object of `symbol` built alone with `transforms`
    /// (built now if it was not): equal hashes, identical code.
    pub(crate) fn kernel_code_hash(&self, symbol: &str, transforms: &Transforms) -> Result<String, SessionError> {
        self.measure_kernel(symbol, transforms, None)?;
        let key = vec![(symbol.to_string(), transforms.clone())];
        let path = self.objects.lock().expect("objects lock").get(&key).cloned().expect("a measured build keeps its object");
        let bytes = std::fs::read(&path).map_err(|e| SessionError::Io(format!("cannot read {}: {e}", path.display())))?;
        Ok(crate::hash::of_parts([bytes.as_slice()]))
    }

    /// Write the code object of a variant to `dest`: the one already
    /// measured (kept in the session's directory), else a fresh compile.
    pub(crate) fn save_code_object(&self, variant: &[(String, Transforms)], dest: &Path) -> Result<(), SessionError> {
        let key: Vec<(String, Transforms)> = variant.iter().filter(|(_, t)| !t.is_empty()).cloned().collect();
        if let (Some(nvcc), false) = (&self.nvcc, key.is_empty()) {
            // What nvcc's build makes of it: the search's cubins carry ptxas's -v in a note.
            return self.assemble_nvcc(nvcc, &key, dest, true, None).map(drop);
        }
        let kept =
            if key.is_empty() { Some(self.plain_object.clone()) } else { self.objects.lock().expect("objects lock").get(&key).cloned() };
        let source = match kept {
            Some(path) => path,
            None => {
                self.measure(&key, None)?;
                self.objects.lock().expect("objects lock").get(&key).cloned().expect("measure keeps the object")
            }
        };
        std::fs::copy(&source, dest).map(drop).map_err(|e| SessionError::Io(format!("cannot write {}: {e}", dest.display())))
    }

    /// The file's plain build by the other CUDA compiler, written to
    /// `dest`, for `regtune measure` to time beside the candidates: clang's
    /// for a session built with nvcc (nvcc's flags as clang's,
    /// [`translate::clang_build_args`]), nvcc's for clang's CUDA where an
    /// nvcc is installed ([`translate::nvcc_args`]; nvcc's cubin as its
    /// build makes it). Never the session's own build, never a candidate.
    pub(crate) fn build_with_other_compiler(&self, dest: &Path) -> OtherBuild {
        let first_line = |e: CompileError| {
            let error = e.diagnostics().and_then(|d| d.lines().find(|l| l.contains("error")).map(|l| l.trim().to_string()));
            error.unwrap_or_else(|| e.to_string().lines().next().unwrap_or_default().to_string())
        };
        let (compiler, built) = if self.nvcc.is_some() {
            let args = translate::clang_build_args(self.user_args);
            let unit = Unit { toolchain: self.toolchain, arch: self.arch, source: self.source, user_args: &args };
            let out = self.scratch_path("other.cubin");
            ("clang", unit.code_object(&out).map(|_| out).map_err(first_line))
        } else {
            if crate::gpu::of(self.arch).family() != "nvptx" || self.link.is_some() {
                return OtherBuild::Unavailable;
            }
            let Some(nvcc) = other_nvcc() else { return OtherBuild::Unavailable };
            let dir = self.dir.path().join(format!("nvcc-{}", self.counter.fetch_add(1, Ordering::Relaxed)));
            let deadline = Instant::now() + Duration::from_secs_f64(30.0 + 10.0 * self.plain_seconds);
            let args = translate::nvcc_args(self.user_args, self.source);
            let kept = std::fs::create_dir_all(&dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))
                .and_then(|()| nvcc::keep(nvcc, self.arch, self.source, &args, &dir, Some(deadline)).map_err(first_line));
            ("nvcc", kept.map(|k| k.cubin))
        };
        match built.and_then(|cubin| std::fs::copy(&cubin, dest).map_err(|e| format!("cannot write {}: {e}", dest.display()))) {
            Ok(_) => OtherBuild::Built(compiler),
            Err(why) => OtherBuild::Failed(compiler, why),
        }
    }

    /// Optimized IR or assembly of a variant, for `--diff`.
    pub(crate) fn listing(&self, variant: &[(String, Transforms)], kind: Listing) -> Result<String, SessionError> {
        if let Some(kept) = &self.nvcc {
            return match kind {
                Listing::Asm => kept.edited(variant).map_err(|e| SessionError::Compile(CompileError::NotWithNvcc(e))),
                Listing::Ir => Err(SessionError::Io("nvcc's builds have no LLVM IR (cicc is not LLVM's optimizer)".into())),
            };
        }
        let mut v = self.plugin_variant(variant, None)?;
        let out = self.scratch_path("s");
        if self.link.is_some() {
            // The device link writes the listing of the whole; IR comes as bitcode.
            let emit = if matches!(kind, Listing::Ir) { Emit::Ir } else { Emit::Asm };
            self.compile(&v, &out, emit)?;
            if matches!(kind, Listing::Ir) {
                return rdc::disassemble(self.toolchain, &out).map_err(|f| SessionError::Io(f.message));
            }
        } else {
            v.args.push("-S".into());
            if matches!(kind, Listing::Ir) {
                v.args.push("-emit-llvm".into());
            }
            crate::gpu::of(self.arch).ir_to_object(self.toolchain, &self.pre_ir, &out, &v, self.user_args)?;
        }
        std::fs::read_to_string(&out).map_err(|e| SessionError::Io(format!("cannot read {}: {e}", out.display())))
    }

    /// What the plugin sees in each kernel before any variant compiles:
    /// which transforms could change it, and the noalias candidates.
    pub(crate) fn inspect(&self) -> Result<HashMap<String, Inspection>, SessionError> {
        if self.nvcc.is_some() {
            // No rewrite of the source reaches nvcc's build: none is tried.
            let plain = self.cache.lock().expect("cache lock").get(&(None, vec![])).cloned().unwrap_or_default();
            let none =
                |kernel: String| Inspection { kernel, pow2: false, pow2_inexact: false, unroll_cap: false, noalias_candidates: vec![] };
            return Ok(plain.into_iter().map(|m| (m.symbol.clone(), none(m.symbol))).collect());
        }
        let out = Command::new(self.toolchain.llvm_bin.join("opt"))
            .arg(format!("-load-pass-plugin={}", self.plugin.display()))
            .args(["-passes=regtune-inspect", "-disable-output"])
            .arg(&self.pre_ir)
            .output()
            .map_err(|e| SessionError::Io(format!("cannot run opt: {e}")))?;
        let plugin_error = |detail: String| SessionError::Plugin { file: self.source.display().to_string(), detail };
        if !out.status.success() {
            return Err(plugin_error(String::from_utf8_lossy(&out.stderr).trim().to_string()));
        }
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.starts_with('{'))
            .map(|line| {
                let i: Inspection = serde_json::from_str(line).map_err(|e| plugin_error(e.to_string()))?;
                Ok((i.kernel.clone(), i))
            })
            .collect()
    }
}
