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
//! bounds and spilling to shared memory. A variant that rewrites the source
//! (sink, pow2, unroll caps, noalias) is the source as `regtune fix` writes
//! those rewrites, built by nvcc once per distinct set of rewrites (a
//! [`Rewriter`], which tune gives the session), and its entries edited on
//! that build's PTX: a cap on top of a rewrite is one more ptxas run.
//! nvcc's `-maxrregcount=R` for one kernel is that kernel's entry from
//! nvcc's PTX of the file with the flag (made once per R), spliced into
//! the plain PTX (`gpu/nvptx/splice.rs`); a candidate's build gives every
//! kernel it can its entry at R, so the file's kernels share one build per
//! R, as every nvcc build with the same PTX and edits is made once.

use std::borrow::Cow;
use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use regtune_decisions::plugin::{Inspection, DECISIONS_ENV, INPUT_HASH_ENV, ONLY_KERNEL_ENV, VERBOSE_ENV};
use regtune_decisions::{Db, Entry, Transforms};

use crate::gpu::compile::{self, CompileError, Emit, Location, Unit, Variant};
use crate::gpu::nvptx::{nvcc, splice};
use crate::gpu::resources::{self, Measured};
use crate::gpu::Arch;
use crate::rdc;
use crate::toolchain::nvcc::Nvcc;
use crate::toolchain::{translate, Toolchain};

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error(transparent)]
    Compile(#[from] CompileError),
    #[error(transparent)]
    Measure(#[from] resources::MeasureError),
    #[error("{0}")]
    Io(String),
    #[error("the pass plugin failed on {file}: {detail}")]
    Plugin { file: String, detail: String },
    #[error("the one-kernel build of {file} has no kernel {symbol}")]
    NoSuchKernel { file: String, symbol: String },
    /// A rewrite of the source nvcc's builds cannot be given (see [`Rewriter`]).
    #[error("{0}")]
    Rewrite(String),
}

/// nvcc's builds of rewrites of the source: the file with a variant's
/// rewrites written in as `regtune fix` writes them (fix/spell.rs), built by
/// nvcc with the user's flags.
pub(crate) trait Rewriter: Sync {
    /// nvcc's build, kept in `dir`, of the file with `rewrites` (per kernel
    /// symbol; rewrites only, no entry edits) written in its source: its
    /// PTX, for `plain`'s ptxas line (nvcc's build of the file as it is).
    fn build(
        &self,
        rewrites: &[(String, Transforms)],
        plain: &nvcc::Kept,
        dir: &Path,
        deadline: Option<Instant>,
    ) -> Result<nvcc::Kept, RewriteError>;
    /// Which rewrites could change each kernel (clang's reading of the
    /// file, as fix reads it): what is tried.
    fn inspect(&self) -> Result<HashMap<String, Inspection>, String>;
}

/// Why a variant's rewrites were not built.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RewriteError {
    /// Written as fix writes them, they change nothing in the source.
    #[error("{0}")]
    Nothing(String),
    /// fix cannot write `what` (labels) for `kernel` (a file it may not
    /// edit, a construct it does not handle): why.
    #[error("{kernel}: regtune fix cannot write {what} in the source: {why}")]
    Unwritable { kernel: String, what: String, why: String },
    /// nvcc failed on the patched source.
    #[error(transparent)]
    Compile(#[from] CompileError),
}

/// One set of rewrites' nvcc build, built once (later askers wait for it).
type RewriteSlot = Arc<Mutex<Option<Result<Arc<nvcc::Kept>, String>>>>;

/// One kernel's plain PTX, made once (later askers wait for it).
type PtxSlot = Arc<Mutex<Option<Result<Arc<String>, String>>>>;

/// Kernels given their code at nvcc's `-maxrregcount=R`: (symbol, R).
type Capped = Vec<(String, u32)>;

/// What an nvcc build is made of: the rewrites whose build it edits (none:
/// nvcc's own), the kernels given their code at nvcc's `-maxrregcount`,
/// the entry edits; whether it is assembled exactly as nvcc's build (no
/// `-v`); and the one kernel ptxas builds, where it builds one alone
/// (`ptxas -e`: a kernel's candidates cost a ptxas run of that kernel, not
/// of every kernel of the file).
type NvccBuild = (PerKernel, Capped, PerKernel, bool, Option<String>);

/// One nvcc build, made once (later askers wait for it): ptxas's report
/// (none for a build as nvcc's) and its cubin.
type BuiltSlot = Arc<Mutex<Option<(String, PathBuf)>>>;

/// A build's object before its usage is read: [`Session::read_kernels`]
/// reads a batch's together. `shared`: an nvcc build's, which other
/// variants' builds may be too (kept when reading it fails).
struct Unread {
    obj: PathBuf,
    report: String,
    shared: bool,
}

/// A build's outcome: read before (cached), or built now.
enum Built {
    Read(Vec<Measured>),
    Unread(Unread),
}

/// One build of a variant, its usage not read yet ([`Session::read_kernels`]).
pub(crate) struct Build {
    key: BuildKey,
    built: Built,
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

/// A register cap (NVPTX's `warps_per_sm`) on nothing, or on rewrites no
/// pass reads the cap for (pow2, sink, unroll caps, noalias: IR passes
/// that run whatever the occupancy target): the rewrites. Such a build is
/// the rewrites' PTX with `.maxnreg` edited. Launch bounds, spilling to
/// shared memory and regtune's LDS spill (which sizes itself by the cap)
/// are not.
pub(crate) fn cap_on_rewrites(t: &Transforms) -> Option<Transforms> {
    t.warps_per_sm?;
    let rewrites = t.without_occupancy();
    let others = Transforms { pow2: false, pow2_inexact: false, sink: false, unroll_cap: None, noalias: vec![], ..rewrites.clone() };
    others.is_empty().then_some(rewrites)
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
    options: resources::Options,
    /// Wall time of the plain build: what variant time limits scale with.
    pub plain_seconds: f64,
    counter: AtomicUsize,
    cache: Mutex<HashMap<BuildKey, Vec<Measured>>>,
    /// `-fgpu-rdc`: each build is the unit's bitcode device-linked with
    /// the other units', as the build links them.
    link: Option<rdc::Link>,
    /// Built with nvcc: its PTX and ptxas line (no IR, no plugin).
    nvcc: Option<Arc<nvcc::Kept>>,
    /// nvcc's builds of rewrites of the source, if it may rewrite it.
    rewriter: Option<Box<dyn Rewriter>>,
    /// Each set of rewrites' build (per kernel symbol).
    rewritten: Mutex<HashMap<PerKernel, RewriteSlot>>,
    /// What the rewrites could not be given (notes for the user).
    rewrite_notes: Mutex<RewriteNotes>,
    /// The nvcc that built the file (its `-maxrregcount` builds).
    nvcc_tool: Option<Nvcc>,
    /// nvcc's PTX of the file with each `-maxrregcount=R`, by R.
    capped_ptx: Mutex<HashMap<u32, PtxSlot>>,
    /// Each distinct nvcc build (the kernels of a file share one).
    nvcc_built: Mutex<HashMap<NvccBuild, BuiltSlot>>,
    /// clang's PTX of each NVPTX kernel built alone, plain or with
    /// rewrites ([`cap_on_rewrites`]): its register caps are this PTX with
    /// the entry's `.maxnreg` edited.
    kernel_ptx: Mutex<HashMap<(String, Transforms), PtxSlot>>,
    /// nvcc's builds: whether ptxas's build of each kernel alone gives it
    /// the code nvcc's build of the whole file does ([`Session::builds_alone`]).
    alone_same: Mutex<HashMap<String, bool>>,
}

/// What rewrites of the source nvcc's builds could not be given.
#[derive(Default)]
struct RewriteNotes {
    lines: Vec<String>,
    /// Per kernel and reason, the rewrites fix cannot write (labels).
    unwritable: Vec<((String, String), Vec<String>)>,
}

/// Transforms per kernel symbol.
type PerKernel = Vec<(String, Transforms)>;

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
        Session::start_with(toolchain, arch, plugin, source, user_args, resources::Options::default())
    }

    /// [`Session::start`], measuring with `options` (NVPTX: the block size).
    pub(crate) fn start_with(
        toolchain: &'a Toolchain,
        arch: &'a Arch,
        plugin: &'a Path,
        source: &'a Path,
        user_args: &'a [String],
        options: resources::Options,
    ) -> Result<(Session<'a>, Vec<Measured>, Vec<Location>), SessionError> {
        let dir = tempfile::tempdir().map_err(|e| SessionError::Io(format!("cannot create a temporary directory: {e}")))?;
        let unit = Unit { toolchain, arch, source, user_args };
        let started = Instant::now();
        let temps = unit.build_keeping_temps(dir.path())?;
        let plain_seconds = started.elapsed().as_secs_f64();
        let preprocessed = std::fs::read(&temps.preprocessed)
            .map_err(|e| SessionError::Io(format!("cannot read {}: {e}", temps.preprocessed.display())))?;
        let baseline = resources::object_file_with(&temps.object, arch, &temps.stderr, &options)?;
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
            rewriter: None,
            rewritten: Mutex::new(HashMap::new()),
            rewrite_notes: Mutex::new(RewriteNotes::default()),
            nvcc_tool: None,
            capped_ptx: Mutex::new(HashMap::new()),
            nvcc_built: Mutex::new(HashMap::new()),
            kernel_ptx: Mutex::new(HashMap::new()),
            alone_same: Mutex::new(HashMap::new()),
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
        options: resources::Options,
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
            rewriter: None,
            rewritten: Mutex::new(HashMap::new()),
            rewrite_notes: Mutex::new(RewriteNotes::default()),
            nvcc_tool: None,
            capped_ptx: Mutex::new(HashMap::new()),
            nvcc_built: Mutex::new(HashMap::new()),
            kernel_ptx: Mutex::new(HashMap::new()),
            alone_same: Mutex::new(HashMap::new()),
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
        options: resources::Options,
    ) -> Result<(Session<'a>, Vec<Measured>, Vec<Location>), SessionError> {
        let dir = tempfile::tempdir().map_err(|e| SessionError::Io(format!("cannot create a temporary directory: {e}")))?;
        let started = Instant::now();
        let kept = nvcc::keep(nvcc, arch, source, user_args, dir.path(), None)?;
        let plain_seconds = started.elapsed().as_secs_f64();
        let baseline = resources::object_file_with(&kept.cubin, arch, &kept.report, &options)?;
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
            nvcc: Some(Arc::new(kept)),
            rewriter: None,
            rewritten: Mutex::new(HashMap::new()),
            rewrite_notes: Mutex::new(RewriteNotes::default()),
            nvcc_tool: Some(nvcc.clone()),
            capped_ptx: Mutex::new(HashMap::new()),
            nvcc_built: Mutex::new(HashMap::new()),
            kernel_ptx: Mutex::new(HashMap::new()),
            alone_same: Mutex::new(HashMap::new()),
        };
        let symbols: Vec<String> = baseline.iter().map(|m| m.symbol.clone()).collect();
        let locations = crate::gpu::of(arch).locations(source, "", &symbols);
        Ok((session, baseline, locations))
    }

    /// Whether variants may rewrite the source (sink, pow2, unroll caps,
    /// noalias): clang's builds, and nvcc's given a [`Rewriter`].
    pub(crate) fn rewrites_source(&self) -> bool {
        self.nvcc.is_none() || self.rewriter.is_some()
    }

    /// Whether variants are built by regtune's pass plugin (regtune's LDS
    /// spill is one of its passes): not nvcc's.
    pub(crate) fn runs_plugin(&self) -> bool {
        self.nvcc.is_none()
    }

    /// Whether a register cap, alone or on rewrites ([`cap_on_rewrites`]),
    /// is built from the kernel's PTX (one ptxas run,
    /// [`Session::kernel_from_ptx`]): clang's NVPTX builds, not
    /// device-linked ones.
    pub(crate) fn caps_from_ptx(&self) -> bool {
        crate::gpu::of(self.arch).cap_is_an_assembly_directive() && self.link.is_none() && self.nvcc.is_none()
    }

    /// nvcc's `-maxrregcount` candidates at the register caps of `steps`
    /// (warps per SM), in their order: nvcc's builds only.
    pub(crate) fn maxrregcount_caps(&self, steps: &[u32]) -> Vec<Transforms> {
        match self.nvcc {
            Some(_) => steps.iter().map(|&w| nvcc::maxrregcount_at(w)).collect(),
            None => vec![],
        }
    }

    /// nvcc's builds may rewrite the source through `rewriter`.
    pub(crate) fn set_rewriter(&mut self, rewriter: Box<dyn Rewriter>) {
        self.rewriter = Some(rewriter);
    }

    /// Where nvcc kept its plain build of the file (its preprocessed
    /// source among it); None: not built with nvcc.
    pub(crate) fn nvcc_dir(&self) -> Option<&Path> {
        self.nvcc.as_ref().map(|_| self.dir.path())
    }

    /// What rewrites of the source could not be given to nvcc's builds,
    /// and why: one line per kernel and reason.
    pub(crate) fn rewrite_notes(&self) -> Vec<String> {
        let notes = self.rewrite_notes.lock().expect("notes lock");
        let unwritable = notes.unwritable.iter().map(|((kernel, why), what)| {
            RewriteError::Unwritable { kernel: kernel.clone(), what: what.join(", "), why: why.clone() }.to_string()
        });
        notes.lines.iter().cloned().chain(unwritable).collect()
    }

    fn note(&self, line: String) {
        let mut notes = self.rewrite_notes.lock().expect("notes lock");
        if !notes.lines.contains(&line) {
            notes.lines.push(line);
        }
    }

    fn note_unwritable(&self, kernel: &str, what: &str, why: &str) {
        let mut notes = self.rewrite_notes.lock().expect("notes lock");
        let key = (kernel.to_string(), why.to_string());
        match notes.unwritable.iter_mut().find(|(k, _)| *k == key) {
            Some((_, whats)) if !whats.iter().any(|w| w == what) => whats.push(what.to_string()),
            Some(_) => {}
            None => notes.unwritable.push((key, vec![what.to_string()])),
        }
    }

    /// The nvcc build a variant's entries are edited on: nvcc's own, or,
    /// where the variant rewrites the source, that rewrite's (built once
    /// per distinct set of rewrites); and the variant's entry edits.
    /// `alone`: the one kernel built alone.
    fn nvcc_parts(
        &self,
        plain: &Arc<nvcc::Kept>,
        variant: &[(String, Transforms)],
        alone: Option<&str>,
        deadline: Option<Instant>,
    ) -> Result<(Arc<nvcc::Kept>, PerKernel, NvccBuild), SessionError> {
        let alone = alone.map(str::to_string);
        let (mut rewrites, mut entries) = (Vec::new(), Vec::new());
        for (symbol, t) in variant {
            let (entry, rewrite) = nvcc::split(t);
            if !rewrite.is_empty() {
                rewrites.push((symbol.clone(), rewrite));
            }
            if !entry.is_empty() {
                entries.push((symbol.clone(), entry));
            }
        }
        rewrites.sort_by(|a, b| a.0.cmp(&b.0));
        let mut id_entries = entries.clone();
        id_entries.sort_by(|a, b| a.0.cmp(&b.0));
        let capped: Capped = variant.iter().filter_map(|(symbol, t)| Some((symbol.clone(), t.maxrregcount?))).collect();
        if !capped.is_empty() {
            if !rewrites.is_empty() {
                let labels: Vec<String> = rewrites.iter().flat_map(|(_, t)| t.labels()).collect();
                let why = format!("-maxrregcount with rewrites of the source ({}) is not built", labels.join(" + "));
                return Err(SessionError::Compile(CompileError::NotWithNvcc(why)));
            }
            let kept = self.capped_build(plain, &capped, deadline)?;
            return Ok((kept, entries, (rewrites, capped, id_entries, false, alone)));
        }
        let id = (rewrites.clone(), vec![], id_entries, false, alone);
        if rewrites.is_empty() {
            return Ok((plain.clone(), entries, id));
        }
        let Some(rewriter) = &self.rewriter else {
            let labels: Vec<String> = rewrites.iter().flat_map(|(_, t)| t.labels()).collect();
            let why =
                format!("{} rewrite the source, which this nvcc build cannot (no pass plugin for fix's spelling)", labels.join(" + "));
            return Err(SessionError::Compile(CompileError::NotWithNvcc(why)));
        };
        let slot = self.rewritten.lock().expect("rewrites lock").entry(rewrites.clone()).or_default().clone();
        let mut slot = slot.lock().expect("rewrite lock");
        if let Some(done) = slot.as_ref() {
            return done.clone().map(|k| (k, entries, id)).map_err(SessionError::Rewrite);
        }
        let dir = self.dir.path().join(format!("rewrite-{}", self.counter.fetch_add(1, Ordering::Relaxed)));
        std::fs::create_dir_all(&dir).map_err(|e| SessionError::Io(format!("cannot create {}: {e}", dir.display())))?;
        match rewriter.build(&rewrites, plain, &dir, deadline) {
            Ok(kept) => {
                let kept = Arc::new(kept);
                *slot = Some(Ok(kept.clone()));
                Ok((kept, entries, id))
            }
            // Stopped at its deadline: a later variant may try again.
            Err(RewriteError::Compile(e)) if e.timed_out() => Err(SessionError::Compile(e)),
            Err(e) => {
                match &e {
                    RewriteError::Unwritable { kernel, what, why } => self.note_unwritable(kernel, what, why),
                    RewriteError::Compile(c) => {
                        self.note(format!("nvcc failed on the rewritten source: {}", c.to_string().lines().next().unwrap_or_default()))
                    }
                    RewriteError::Nothing(_) => {}
                }
                let why = e.to_string();
                *slot = Some(Err(why.clone()));
                Err(SessionError::Rewrite(why))
            }
        }
    }

    /// The plain build with each kernel of `capped` given its code at
    /// nvcc's `-maxrregcount=R` (symbol, R): its entry from nvcc's PTX of
    /// the file at R, spliced ([`splice::splice`]).
    fn capped_build(&self, plain: &Arc<nvcc::Kept>, capped: &Capped, deadline: Option<Instant>) -> Result<Arc<nvcc::Kept>, SessionError> {
        let mut ptxs = std::collections::BTreeMap::new();
        for &(_, r) in capped {
            if let std::collections::btree_map::Entry::Vacant(v) = ptxs.entry(r) {
                v.insert(self.capped_ptx(plain, r, deadline)?.to_string());
            }
        }
        match splice::splice(&plain.ptx, capped, &ptxs) {
            Ok(ptx) => Ok(Arc::new(nvcc::Kept { ptx, ..(**plain).clone() })),
            Err(why) => {
                self.note(why.clone());
                Err(SessionError::Compile(CompileError::NotWithNvcc(why)))
            }
        }
    }

    /// nvcc's PTX of the file with `-maxrregcount=R` added to the user's
    /// flags ([`nvcc::keep_ptx`]: cicc's `-maxreg R`), made once per R
    /// (later askers wait for it); refused where no kernel's entry can be
    /// taken from it ([`splice::spliceable`]), said once.
    fn capped_ptx(&self, plain: &Arc<nvcc::Kept>, r: u32, deadline: Option<Instant>) -> Result<Arc<String>, SessionError> {
        let Some(tool) = &self.nvcc_tool else {
            return Err(SessionError::Compile(CompileError::NotWithNvcc(format!("-maxrregcount={r} is built with nvcc alone"))));
        };
        let slot = self.capped_ptx.lock().expect("capped PTX lock").entry(r).or_default().clone();
        let mut slot = slot.lock().expect("capped PTX slot lock");
        if let Some(done) = slot.as_ref() {
            return done.clone().map_err(SessionError::Rewrite);
        }
        let dir = self.dir.path().join(format!("maxrregcount-{r}"));
        std::fs::create_dir_all(&dir).map_err(|e| SessionError::Io(format!("cannot create {}: {e}", dir.display())))?;
        let args = nvcc::user_args_with_maxrregcount(self.user_args, r);
        let made = match nvcc::keep_ptx(tool, self.arch, self.source, &args, &dir, deadline, plain) {
            // Stopped at its deadline: a later variant may try again.
            Err(e) if e.timed_out() => return Err(SessionError::Compile(e)),
            Err(e) => Err(format!("nvcc -maxrregcount={r} failed: {}", e.to_string().lines().next().unwrap_or_default())),
            Ok(kept) => match splice::spliceable(&plain.ptx, &kept.ptx, splice::Calls::Plain) {
                Err(why) => Err(format!("no -maxrregcount={r} candidate: {why}")),
                Ok(_) => Ok(Arc::new(kept.ptx)),
            },
        };
        if let Err(why) = &made {
            self.note(why.clone());
        }
        *slot = Some(made.clone());
        made.map_err(SessionError::Rewrite)
    }

    /// The slot of one nvcc build ([`NvccBuild`]).
    fn nvcc_slot(&self, id: NvccBuild) -> BuiltSlot {
        self.nvcc_built.lock().expect("nvcc builds lock").entry(id).or_default().clone()
    }

    /// Whether `symbol`'s candidates are built alone (`ptxas -e`): where
    /// ptxas's build of the kernel alone gives it the code nvcc's build of
    /// the whole file does. Most kernels' code does not depend on the
    /// others'; one that calls `vprintf` reaches it through an address
    /// the file's layout places (bytes of its code differ), and is built
    /// with the whole file. Checked once per kernel, on plain's PTX.
    fn builds_alone(&self, plain: &nvcc::Kept, symbol: &str) -> bool {
        if let Some(&same) = self.alone_same.lock().expect("alone lock").get(symbol) {
            return same;
        }
        let out = self.scratch_path("alone.cubin");
        let same = self.assemble_nvcc(plain, &[], &out, (true, Some(symbol)), None).is_ok() && {
            let code = |path: &Path| std::fs::read(path).ok().and_then(|b| crate::gpu::nvptx::cubin::kernel_code(&b, symbol));
            code(&out).is_some() && code(&out) == code(&self.plain_object)
        };
        let _ = std::fs::remove_file(&out);
        self.alone_same.lock().expect("alone lock").insert(symbol.to_string(), same);
        same
    }

    /// nvcc's PTX with `variant`'s entries edited, assembled into `out`;
    /// ptxas's report. `(as_built, alone)`: exactly as nvcc's build would
    /// (no report); only that kernel (`ptxas -e`), whose code is what the
    /// whole file's build gives it (ptxas builds each entry on its own).
    fn assemble_nvcc(
        &self,
        kept: &nvcc::Kept,
        variant: &[(String, Transforms)],
        out: &Path,
        (as_built, alone): (bool, Option<&str>),
        deadline: Option<Instant>,
    ) -> Result<String, SessionError> {
        let ptx = kept.edited(variant).map_err(|e| SessionError::Compile(CompileError::NotWithNvcc(e)))?;
        let path = self.scratch_path("ptx");
        std::fs::write(&path, ptx).map_err(|e| SessionError::Io(format!("cannot write {}: {e}", path.display())))?;
        let alone = alone.map(|symbol| kept.alone(symbol));
        let kept = alone.as_ref().unwrap_or(kept);
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
        let build = self.build_kernel(symbol, transforms, deadline);
        self.read_kernels(symbol, vec![build]).pop().expect("one build, one result")
    }

    /// [`Session::measure_kernel`]'s build, its usage not read yet:
    /// [`Session::read_kernels`] reads many builds' together.
    pub(crate) fn build_kernel(&self, symbol: &str, transforms: &Transforms, deadline: Option<Instant>) -> Result<Build, SessionError> {
        self.begin((Some(symbol.to_string()), vec![(symbol.to_string(), transforms.clone())]), deadline)
    }

    /// `symbol`'s usage in each of `builds`, read together.
    pub(crate) fn read_kernels(&self, symbol: &str, builds: Vec<Result<Build, SessionError>>) -> Vec<Result<Measured, SessionError>> {
        let own = |all: Vec<Measured>| {
            all.into_iter()
                .find(|m| m.symbol == symbol)
                .ok_or_else(|| SessionError::NoSuchKernel { file: self.source.display().to_string(), symbol: symbol.to_string() })
        };
        self.read(builds).into_iter().map(|measured| measured.and_then(own)).collect()
    }

    fn build(&self, key: BuildKey, deadline: Option<Instant>) -> Result<Vec<Measured>, SessionError> {
        let build = self.begin(key, deadline);
        self.read(vec![build]).pop().expect("one build, one result")
    }

    fn begin(&self, key: BuildKey, deadline: Option<Instant>) -> Result<Build, SessionError> {
        Ok(Build { built: self.object(&key, deadline)?, key })
    }

    /// The usage of each build: the fresh ones' read together (on NVPTX
    /// one nvdisasm run reads all of their SASS, where a run per build
    /// would cost more than the builds).
    fn read(&self, builds: Vec<Result<Build, SessionError>>) -> Vec<Result<Vec<Measured>, SessionError>> {
        let unread: Vec<(&Path, &str)> = builds
            .iter()
            .filter_map(|b| match b {
                Ok(Build { built: Built::Unread(u), .. }) => Some((u.obj.as_path(), u.report.as_str())),
                _ => None,
            })
            .collect();
        let mut read = resources::objects_with(&unread, self.arch, &self.options).into_iter();
        builds
            .into_iter()
            .map(|b| match b? {
                Build { built: Built::Read(measured), .. } => Ok(measured),
                Build { key, built: Built::Unread(u) } => self.finish(&key, u, read.next().expect("a usage per object built")),
            })
            .collect()
    }

    /// A fresh build's usage, as read: its object kept and the usage
    /// cached, or the object removed where it could not be read.
    fn finish(
        &self,
        key: &BuildKey,
        u: Unread,
        read: Result<Vec<Measured>, resources::MeasureError>,
    ) -> Result<Vec<Measured>, SessionError> {
        let all = match read {
            Ok(all) => all,
            Err(e) => {
                if !u.shared {
                    let _ = std::fs::remove_file(&u.obj);
                }
                return Err(e.into());
            }
        };
        let measured = match &self.link {
            Some(link) => link.own(all),
            None => all,
        };
        // Kept for `regtune measure`'s candidates: a one-kernel build holds
        // the kernel it was built for as the whole-file build would.
        self.objects.lock().expect("objects lock").entry(key.1.clone()).or_insert(u.obj);
        self.cache.lock().expect("cache lock").insert(key.clone(), measured.clone());
        Ok(measured)
    }

    /// The object of one build, its usage not read yet; what was read
    /// before where this build was made.
    fn object(&self, key: &BuildKey, deadline: Option<Instant>) -> Result<Built, SessionError> {
        if let Some(hit) = self.cache.lock().expect("cache lock").get(key) {
            return Ok(Built::Read(hit.clone()));
        }
        if let Some(plain) = &self.nvcc {
            let alone = key.0.as_deref().filter(|symbol| self.builds_alone(plain, symbol));
            let (kept, entries, id) = self.nvcc_parts(plain, &key.1, alone, deadline)?;
            // The same PTX with the same edits is built once.
            let slot = self.nvcc_slot(id);
            let mut slot = slot.lock().expect("nvcc build lock");
            if let Some((report, obj)) = slot.as_ref() {
                return Ok(Built::Unread(Unread { obj: obj.clone(), report: report.clone(), shared: true }));
            }
            let obj = self.scratch_path("cubin");
            let report = self.assemble_nvcc(&kept, &entries, &obj, (false, alone), deadline)?;
            *slot = Some((report.clone(), obj.clone()));
            return Ok(Built::Unread(Unread { obj, report, shared: true }));
        }
        if let Some(unread) = self.kernel_from_ptx(key, deadline)? {
            return Ok(Built::Unread(unread));
        }
        let mut variant = self.plugin_variant(&key.1, key.0.as_deref())?;
        variant.deadline = deadline;
        let obj = self.scratch_path("o");
        match self.compile(&variant, &obj, Emit::Object) {
            Ok(c) => Ok(Built::Unread(Unread { obj, report: c.stderr, shared: false })),
            Err(e) => {
                let _ = std::fs::remove_file(&obj);
                Err(e)
            }
        }
    }

    /// One NVPTX kernel built alone by clang, as its PTX made once
    /// ([`Session::kernel_ptx`]) through ptxas: the same clang and ptxas
    /// commands as a build to an object, so the caps on these rewrites and
    /// the rewrites alone share one clang compile (lavaMD compiled each
    /// rewrite twice before). A register cap alone or on rewrites the cap
    /// does not reach ([`cap_on_rewrites`]) is the rewrites' PTX with the
    /// entry's `.maxnreg` edited: the cap is no input to LLVM's code
    /// generation (the occupancy pass sets `nvvm.maxnreg`, which the PTX
    /// printer writes as that directive), so this is the plugin's build,
    /// byte for byte (tests/nvptx.rs), for one ptxas run instead of a
    /// compile: tune builds every step. None where the build is not one
    /// kernel's (the whole file, `-fgpu-rdc`, AMDGPU).
    fn kernel_from_ptx(&self, key: &BuildKey, deadline: Option<Instant>) -> Result<Option<Unread>, SessionError> {
        let (Some(symbol), [(only, t)]) = (&key.0, key.1.as_slice()) else { return Ok(None) };
        if !self.caps_from_ptx() || only != symbol {
            return Ok(None);
        }
        let rewrites = cap_on_rewrites(t);
        let ptx = self.kernel_ptx(symbol, rewrites.as_ref().unwrap_or(t), deadline)?;
        let text = match rewrites {
            Some(_) => {
                let entry =
                    nvcc::Entry::of(&Transforms { warps_per_sm: t.warps_per_sm, ..Transforms::default() }).map_err(SessionError::Io)?;
                Cow::Owned(nvcc::edit_entry(&ptx, symbol, &entry).map_err(SessionError::Io)?)
            }
            None => Cow::Borrowed(ptx.as_str()),
        };
        let ptx_path = self.scratch_path("ptx");
        std::fs::write(&ptx_path, text.as_bytes()).map_err(|e| SessionError::Io(format!("{}: {e}", ptx_path.display())))?;
        let obj = self.scratch_path("o");
        let assemble = || -> Result<String, CompileError> {
            Ok(crate::gpu::nvptx::ptxas::assemble(self.toolchain.cuda()?, self.arch, &ptx_path, &obj, self.user_args, deadline)?)
        };
        let report = assemble();
        let _ = std::fs::remove_file(&ptx_path);
        match report {
            Ok(report) => Ok(Some(Unread { obj, report, shared: false })),
            Err(e) => {
                let _ = std::fs::remove_file(&obj);
                Err(e.into())
            }
        }
    }

    /// clang's PTX of `symbol` built alone with `transforms` (the plugin
    /// drops the other kernels, as for each of its variants), made once; a
    /// compile stopped at `deadline` is not kept, so a later caller with
    /// more time builds it again.
    fn kernel_ptx(&self, symbol: &str, transforms: &Transforms, deadline: Option<Instant>) -> Result<Arc<String>, SessionError> {
        let key = (symbol.to_string(), transforms.clone());
        let slot = self.kernel_ptx.lock().expect("kernel PTX lock").entry(key).or_default().clone();
        let mut slot = slot.lock().expect("kernel PTX slot lock");
        if let Some(done) = slot.as_ref() {
            return done.clone().map_err(SessionError::Io);
        }
        let built = (|| {
            let mut variant = self.plugin_variant(&[(symbol.to_string(), transforms.clone())], Some(symbol))?;
            variant.args.push("-S".into());
            variant.deadline = deadline;
            let out = self.scratch_path("s");
            crate::gpu::of(self.arch).ir_to_object(self.toolchain, &self.pre_ir, &out, &variant, self.user_args)?;
            let ptx = std::fs::read_to_string(&out).map_err(|e| SessionError::Io(format!("{}: {e}", out.display())));
            let _ = std::fs::remove_file(&out);
            ptx.map(Arc::new)
        })();
        match &built {
            Err(e) if e.timed_out() => {}
            _ => *slot = Some(built.as_ref().map(Arc::clone).map_err(|e| e.to_string())),
        }
        built
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
    /// nvcc's builds hold the whole file, the other kernels and ptxas's
    /// options included: the kernel's own code is hashed there
    /// ([`crate::gpu::nvptx::cubin::kernel_code`]), so a `-maxrregcount`
    /// that gives the kernel the code of its `.maxnreg` cap is one build,
    /// not two. So is clang's cubin: its caps that give one
    /// code differ only in the cap ptxas records (LBM at 255, 168 and 128,
    /// bench/cost/results/redundant-sm90-2026-11-28.txt).
    pub(crate) fn kernel_code_hash(&self, symbol: &str, transforms: &Transforms) -> Result<String, SessionError> {
        self.measure_kernel(symbol, transforms, None)?;
        let key = vec![(symbol.to_string(), transforms.clone())];
        let path = self.objects.lock().expect("objects lock").get(&key).cloned().expect("a measured build keeps its object");
        let bytes = std::fs::read(&path).map_err(|e| SessionError::Io(format!("cannot read {}: {e}", path.display())))?;
        let own = crate::gpu::nvptx::cubin::kernel_code(&bytes, symbol);
        Ok(crate::hash::of_parts([own.as_deref().unwrap_or(&bytes)]))
    }

    /// Write the code object of a variant to `dest`: the one already
    /// measured (kept in the session's directory), else a fresh compile.
    pub(crate) fn save_code_object(&self, variant: &[(String, Transforms)], dest: &Path) -> Result<(), SessionError> {
        let key: Vec<(String, Transforms)> = variant.iter().filter(|(_, t)| !t.is_empty()).cloned().collect();
        if let (Some(plain), false) = (&self.nvcc, key.is_empty()) {
            // What nvcc's build makes of it: the search's cubins carry ptxas's
            // -v in a note. One kernel's build holds that kernel alone.
            let alone = match key.as_slice() {
                [(symbol, _)] => Some(symbol.as_str()).filter(|symbol| self.builds_alone(plain, symbol)),
                _ => None,
            };
            let (kept, entries, (rewrites, capped, edits, _, alone_id)) = self.nvcc_parts(plain, &key, alone, None)?;
            let slot = self.nvcc_slot((rewrites, capped, edits, true, alone_id));
            let mut slot = slot.lock().expect("nvcc build lock");
            let built = match slot.as_ref() {
                Some((_, built)) => built.clone(),
                None => {
                    let built = self.scratch_path("built.cubin");
                    self.assemble_nvcc(&kept, &entries, &built, (true, alone), None)?;
                    *slot = Some((String::new(), built.clone()));
                    built
                }
            };
            return std::fs::copy(&built, dest).map(drop).map_err(|e| SessionError::Io(format!("cannot write {}: {e}", dest.display())));
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
            let out = dir.join("nvcc.cubin");
            let built = std::fs::create_dir_all(&dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))
                .and_then(|()| nvcc::cubin(nvcc, self.arch, self.source, &args, (&dir, &out), Some(deadline)).map_err(first_line));
            ("nvcc", built.map(|()| out))
        };
        match built.and_then(|cubin| std::fs::copy(&cubin, dest).map_err(|e| format!("cannot write {}: {e}", dest.display()))) {
            Ok(_) => OtherBuild::Built(compiler),
            Err(why) => OtherBuild::Failed(compiler, why),
        }
    }

    /// Optimized IR or assembly of a variant, for `--diff`.
    pub(crate) fn listing(&self, variant: &[(String, Transforms)], kind: Listing) -> Result<String, SessionError> {
        if let Some(plain) = &self.nvcc {
            return match kind {
                Listing::Asm => {
                    let (kept, entries, _) = self.nvcc_parts(plain, variant, None, None)?;
                    kept.edited(&entries).map_err(|e| SessionError::Compile(CompileError::NotWithNvcc(e)))
                }
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
            // The rewrites clang's reading of the file finds for each kernel
            // (none where the session may not rewrite the source); the
            // rest, as nvcc's PTX entries carry them, need no inspection.
            let plain = self.cache.lock().expect("cache lock").get(&(None, vec![])).cloned().unwrap_or_default();
            let none =
                |kernel: String| Inspection { kernel, pow2: false, pow2_inexact: false, unroll_cap: false, noalias_candidates: vec![] };
            let found = match self.rewriter.as_ref().map(|r| r.inspect()) {
                Some(Ok(found)) => found,
                Some(Err(why)) => {
                    self.note(format!("clang cannot read the file as fix does ({why}): no rewrite of the source is tried"));
                    HashMap::new()
                }
                None => HashMap::new(),
            };
            return Ok(plain
                .into_iter()
                .map(|m| (m.symbol.clone(), found.get(&m.symbol).cloned().unwrap_or_else(|| none(m.symbol))))
                .collect());
        }
        inspect_ir(self.toolchain, self.plugin, &self.pre_ir)
            .map_err(|detail| SessionError::Plugin { file: self.source.display().to_string(), detail })
    }
}

/// The plugin's inspection of a module's kernels (`ir`: IR before
/// optimization, device libraries linked): which transforms could change
/// each, and its noalias candidates. Err: what went wrong.
pub(crate) fn inspect_ir(toolchain: &Toolchain, plugin: &Path, ir: &Path) -> Result<HashMap<String, Inspection>, String> {
    let out = Command::new(toolchain.llvm_bin.join("opt"))
        .arg(format!("-load-pass-plugin={}", plugin.display()))
        .args(["-passes=regtune-inspect", "-disable-output"])
        .arg(ir)
        .output()
        .map_err(|e| format!("cannot run opt: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|line| {
            let i: Inspection = serde_json::from_str(line).map_err(|e| e.to_string())?;
            Ok((i.kernel.clone(), i))
        })
        .collect()
}
