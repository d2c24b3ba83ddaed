//! The decisions db: which transforms apply to which kernel.
//!
//! The tuner writes it, the pass plugin and the hipcc wrapper read it, so a
//! build applies exactly the transforms whose effect the tuner measured. One
//! entry per (kernel symbol, target, input hash); the input hash covers the
//! preprocessed source and the flags, so a stale entry is never applied.

use std::collections::BTreeMap;
use std::fmt;
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use fs4::fs_std::FileExt;
use serde::{Deserialize, Serialize};

pub mod hash;
pub mod measured;
pub mod plugin;
pub use measured::Measured;

/// Bumped when the file layout changes incompatibly.
pub const FORMAT_VERSION: u32 = 1;

#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("cannot read decisions db {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("decisions db {path} is not valid JSON: {source}")]
    Parse { path: PathBuf, source: serde_json::Error },
    #[error("decisions db {path} has format version {found}, expected {FORMAT_VERSION}")]
    Version { path: PathBuf, found: u32 },
    #[error("cannot write decisions db {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
}

/// A kernel pointer parameter, by position (what the IR knows) and by source
/// name (what the user knows; empty when clang discarded it).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Param {
    pub index: u32,
    #[serde(default)]
    pub name: String,
}

impl fmt::Display for Param {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.name.is_empty() {
            write!(f, "#{}", self.index)
        } else {
            f.write_str(&self.name)
        }
    }
}

/// The set of transforms applied to one kernel. Empty means "compile plain".
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Transforms {
    #[serde(skip_serializing_if = "is_false")]
    pub pow2: bool,
    /// With `pow2`: also rewrite library pows that are not correctly
    /// rounded (ocml's, libdevice's `__nv_pow`) where the call has no `afn`.
    /// Changes results in the last bit: applied only on the user's word.
    #[serde(skip_serializing_if = "is_false")]
    pub pow2_inexact: bool,
    #[serde(skip_serializing_if = "is_false")]
    pub sink: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unroll_cap: Option<u32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub noalias: Vec<Param>,
    /// AMDGPU's occupancy step: at least W waves per EU (SIMD), the
    /// backend's `amdgpu-waves-per-eu`. Set on AMDGPU entries only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waves_per_eu: Option<u32>,
    /// NVPTX's occupancy step: W warps per SM, a register cap (`.maxnreg`).
    /// Set on NVIDIA entries (arch `sm_*`) only; older dbs kept it as
    /// `waves_per_eu`, which [`Db::load`] reads as this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warps_per_sm: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub launch_bounds: Option<u32>,
    /// Spill registers to shared memory (LDS) before local memory (scratch).
    /// NVPTX: ptxas's `enable_smem_spilling`, which needs a block size.
    #[serde(skip_serializing_if = "is_false")]
    pub spill_to_shared: bool,
    /// Keep up to N words per thread of long-lived values in LDS across the
    /// register-pressure peak (the plugin's `regtune-lds-spill<N>`, both
    /// targets); needs a block size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lds_spill: Option<u32>,
    /// nvcc's `-maxrregcount=R` for this kernel alone (nvcc's builds only):
    /// its code as `nvcc -maxrregcount=R` builds it (cicc's `-maxreg R`
    /// changes the PTX, so it is not the `.maxnreg R` entry's), the file's
    /// other kernels as they are. No IR attribute or source spelling
    /// carries it: `regtune-nvcc` builds it (the kernel's entry from nvcc's
    /// PTX at R, spliced into the file's), and `regtune fix` writes the
    /// `__maxnreg__` that reaches its registers, spills and occupancy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub maxrregcount: Option<u32>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Which occupancy step a target's entries hold: the unit of
/// [`Transforms::occupancy`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Occupancy {
    /// AMDGPU: waves per EU ([`Transforms::waves_per_eu`]).
    #[default]
    WavesPerEu,
    /// NVPTX: warps per SM ([`Transforms::warps_per_sm`]).
    WarpsPerSm,
}

impl Occupancy {
    /// The unit of an entry's arch: warps per SM for NVIDIA's ("sm_90").
    pub fn of_arch(arch: &str) -> Occupancy {
        if arch.starts_with("sm_") {
            Occupancy::WarpsPerSm
        } else {
            Occupancy::WavesPerEu
        }
    }
}

impl Transforms {
    pub fn is_empty(&self) -> bool {
        *self == Transforms::default()
    }

    /// The occupancy step, in its target's unit (waves per EU, warps per
    /// SM): whichever of the two is set.
    pub fn occupancy(&self) -> Option<u32> {
        self.waves_per_eu.or(self.warps_per_sm)
    }

    /// Set the occupancy step to `step` in `unit` (None: no step); the
    /// other unit's is cleared.
    pub fn set_occupancy(&mut self, unit: Occupancy, step: Option<u32>) {
        let (waves, warps) = match unit {
            Occupancy::WavesPerEu => (step, None),
            Occupancy::WarpsPerSm => (None, step),
        };
        (self.waves_per_eu, self.warps_per_sm) = (waves, warps);
    }

    /// This build with the occupancy step `step` in `unit` instead of its own.
    pub fn with_occupancy(&self, unit: Occupancy, step: Option<u32>) -> Transforms {
        let mut t = self.clone();
        t.set_occupancy(unit, step);
        t
    }

    /// An occupancy step alone: `w` in `unit`.
    pub fn occupancy_step(unit: Occupancy, w: u32) -> Transforms {
        Transforms::default().with_occupancy(unit, Some(w))
    }

    /// This build without its occupancy step.
    pub fn without_occupancy(&self) -> Transforms {
        Transforms { waves_per_eu: None, warps_per_sm: None, ..self.clone() }
    }

    /// The same build as dbs spelled it before [`Transforms::warps_per_sm`]:
    /// the step in `waves_per_eu` whatever the target. What names a
    /// candidate's code file (so an older tune's files are found), and what
    /// outputs other than the db (predict's `spec`, batch's variant lines)
    /// keep showing.
    pub fn older_spelling(&self) -> Transforms {
        Transforms { waves_per_eu: self.occupancy(), warps_per_sm: None, ..self.clone() }
    }

    /// nvcc's `-maxrregcount=R` alone.
    pub fn with_maxrregcount(r: u32) -> Transforms {
        Transforms { maxrregcount: Some(r), ..Default::default() }
    }

    /// The R of nvcc's `-maxrregcount` alone (no other transform): None
    /// for any other build.
    pub fn maxrregcount_alone(&self) -> Option<u32> {
        self.maxrregcount.filter(|&r| *self == Transforms::with_maxrregcount(r))
    }

    /// The occupancy step of a register cap alone (no launch bounds, no
    /// spilling, no rewrite): None for any other build.
    pub fn cap_alone(&self) -> Option<u32> {
        self.occupancy().filter(|_| self.without_occupancy().is_empty())
    }

    /// User-facing labels: "pow2" (or "pow2=inexact"), "sink",
    /// "unroll-cap=4", "noalias=g14", "waves-per-eu=5" (AMDGPU) or
    /// "warps-per-sm=48" (NVPTX), "launch-bounds=256", "maxrregcount=64".
    pub fn labels(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.pow2 {
            out.push(if self.pow2_inexact { "pow2=inexact" } else { "pow2" }.to_string());
        }
        if self.sink {
            out.push("sink".to_string());
        }
        if let Some(n) = self.unroll_cap {
            out.push(format!("unroll-cap={n}"));
        }
        out.extend(self.noalias.iter().map(|p| format!("noalias={p}")));
        if let Some(w) = self.waves_per_eu {
            out.push(format!("waves-per-eu={w}"));
        }
        if let Some(w) = self.warps_per_sm {
            out.push(format!("warps-per-sm={w}"));
        }
        if let Some(b) = self.launch_bounds {
            out.push(format!("launch-bounds={b}"));
        }
        if self.spill_to_shared {
            out.push("spill-to-shared".to_string());
        }
        if let Some(n) = self.lds_spill {
            out.push(format!("lds-spill={n}"));
        }
        if let Some(r) = self.maxrregcount {
            out.push(format!("maxrregcount={r}"));
        }
        out
    }
}

/// Resource usage of one kernel as the backend reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Usage {
    pub vgpr: u32,
    pub agpr: u32,
    pub sgpr: u32,
    pub scratch_bytes: u32,
    pub vgpr_spills: u32,
    pub sgpr_spills: u32,
    pub lds_bytes: u32,
    pub occupancy: u32,
    pub code_bytes: u64,
    /// Local-memory loads and stores of the final code (NVPTX: `LDL`/`STL`
    /// in the SASS, spills and private arrays alike), each weighted by the
    /// loops around it: what a variant that "removes spills" must not add.
    /// Zero where not read (AMDGPU counts scratch in `scratch_bytes`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub local_accesses: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Why a kernel got what it got, machine-readable (`"reason"` in JSON and
/// the db). The first three apply a result, the next three hold one back as
/// a suggestion until the user confirms it, the last three apply nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reason {
    /// Rewrites that remove work or live ranges raised occupancy.
    RaisesOccupancy,
    /// It removes spills or scratch (memory traffic): what lets a
    /// transform that trades unrolling for registers be applied.
    RemovesSpills,
    /// A run on the GPU said it is faster (or, held, slower).
    Measured,
    /// It reaches more occupancy only by giving up unrolling (instruction-
    /// level parallelism), which can run slower: suggested.
    TradesIlp,
    /// It rewrites a library pow that is not correctly rounded: results
    /// change in the last bit. Suggested.
    ChangesRounding,
    /// It rests on what callers do (noalias, launch bounds): suggested.
    AssumesCaller,
    /// No GPU has shown that this kind of change never slows a real kernel
    /// (see the evidence table in the driver): suggested.
    Unproven,
    /// Already at the target's most occupancy.
    AtBest,
    /// Nothing tried beat the plain compile.
    NoGain,
    /// Its gain vanished next to the other kernels' decisions.
    LostWhenCombined,
}

impl Reason {
    /// Whether a suggestion held back for `reasons` is the GPU's to decide
    /// alone: it is held only for speed ([`Reason::Unproven`]: no GPU has
    /// shown its class never loses; [`Reason::TradesIlp`]: it trades
    /// unrolling or registers for occupancy), so it computes the same
    /// values and promises nothing about the callers. Rounding changes and
    /// caller assumptions wait for the user's word, as do suggestions that
    /// do not say why (from older dbs).
    pub fn measure_decides(reasons: &[Reason]) -> bool {
        !reasons.is_empty() && reasons.iter().all(|r| matches!(r, Reason::Unproven | Reason::TradesIlp))
    }

    /// The JSON spelling: "trades-ilp".
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::RaisesOccupancy => "raises-occupancy",
            Reason::RemovesSpills => "removes-spills",
            Reason::Measured => "measured",
            Reason::TradesIlp => "trades-ilp",
            Reason::ChangesRounding => "changes-rounding",
            Reason::AssumesCaller => "assumes-caller",
            Reason::Unproven => "unproven",
            Reason::AtBest => "at-best",
            Reason::NoGain => "no-gain",
            Reason::LostWhenCombined => "lost-when-combined",
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the tuner decided for one kernel on one target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub symbol: String,
    pub arch: String,
    pub input_hash: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub file: String,
    pub transforms: Transforms,
    /// Why `transforms` (or, when empty, why nothing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<Reason>,
    /// What the tuner measured but did not apply (caller assumptions,
    /// unrolling traded for occupancy, inexact pow2); `confirmed` applies it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub suggested: Vec<Suggestion>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<Usage>,
    /// The usage the tuner measured with `transforms`: the build's promise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<Usage>,
    /// More builds for `regtune measure` to time: one per occupancy step
    /// (a register cap, spilling or not), with and without the rewrites
    /// tune found, and unroll caps. Each is allowed as it is (no assumption
    /// about the caller, no rounding the user did not accept): a
    /// measurement may choose it, a build without one never applies it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub candidates: Vec<Candidate>,
    /// Candidates past the limit (`--candidates N`) or the time budget, by
    /// label; those a GPU already timed are in `measured.earlier` instead.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<String>,
    /// Times and identity on a GPU, from `regtune measure`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured: Option<Measured>,
}

/// One build of the measured search (see [`Entry::candidates`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    pub transforms: Transforms,
    pub usage: Usage,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Suggestion {
    pub transforms: Transforms,
    pub usage: Usage,
    pub message: String,
    /// Why it waits for the user: trades-ilp, changes-rounding, assumes-caller.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<Reason>,
    #[serde(default)]
    pub confirmed: bool,
}

impl Entry {
    pub fn key(&self) -> String {
        Db::key(&self.symbol, &self.arch, &self.input_hash)
    }

    /// The transforms a build applies: what the user allows ([`Entry::tuned`]),
    /// unless a GPU measurement rejected it; then the fastest allowed build
    /// measured identical and faster than plain, else plain.
    pub fn effective(&self) -> Transforms {
        let tuned = self.tuned();
        let Some(m) = &self.measured else { return tuned };
        m.choose(self.allowed().iter()).unwrap_or(tuned)
    }

    /// Every build a measurement may choose: the decision (with what the
    /// user confirmed), confirmed suggestions and those a measurement
    /// decides ([`Reason::measure_decides`]), and the search's
    /// candidates.
    pub fn allowed(&self) -> Vec<Transforms> {
        let confirmed = self.suggested.iter().filter(|s| s.confirmed || Reason::measure_decides(&s.reasons)).map(|s| s.transforms.clone());
        let search = self.candidates.iter().map(|c| c.transforms.clone());
        let mut all = vec![self.tuned(), self.transforms.clone()];
        for t in confirmed.chain(search) {
            if !all.contains(&t) {
                all.push(t);
            }
        }
        all
    }

    /// The usage tune recorded for a build of this kernel, if it built it.
    pub fn usage_of(&self, t: &Transforms) -> Option<Usage> {
        if t.is_empty() {
            return self.before;
        }
        if *t == self.transforms {
            return self.after;
        }
        let suggested = self.suggested.iter().find(|s| &s.transforms == t).map(|s| s.usage);
        suggested.or_else(|| self.candidates.iter().find(|c| &c.transforms == t).map(|c| c.usage))
    }

    /// The kernel's demangled name, else its symbol (older entries).
    pub fn name_or_symbol(&self) -> &str {
        if self.name.is_empty() {
            &self.symbol
        } else {
            &self.name
        }
    }

    /// Apply `f` to every build the entry holds: the decision, the
    /// suggestions, the search's candidates, and what a measurement timed
    /// (its candidates, earlier ones, the program's choice).
    fn each_transforms(&mut self, f: &mut dyn FnMut(&mut Transforms)) {
        f(&mut self.transforms);
        self.suggested.iter_mut().for_each(|s| f(&mut s.transforms));
        self.candidates.iter_mut().for_each(|c| f(&mut c.transforms));
        if let Some(m) = &mut self.measured {
            m.candidates.iter_mut().chain(&mut m.earlier).for_each(|c| f(&mut c.transforms));
            if let Some(p) = &mut m.program {
                f(&mut p.transforms);
            }
        }
    }

    /// NVIDIA's step where older dbs kept it (`waves_per_eu` on an `sm_*`
    /// entry) moved to [`Transforms::warps_per_sm`]: the same build.
    fn read_older_spelling(&mut self) {
        if Occupancy::of_arch(&self.arch) == Occupancy::WarpsPerSm {
            self.each_transforms(&mut |t| {
                if let Some(w) = t.waves_per_eu.take() {
                    t.warps_per_sm = t.warps_per_sm.or(Some(w));
                }
            });
        }
    }

    /// The entry as dbs spelled it before [`Transforms::warps_per_sm`]
    /// ([`Transforms::older_spelling`]): what digests of entries hash, so
    /// that they stay as older runs recorded them.
    pub fn older_spelling(&self) -> Entry {
        let mut e = self.clone();
        e.each_transforms(&mut |t| *t = t.older_spelling());
        e
    }

    /// The decided transforms plus any suggestion the user confirmed in the
    /// db, before any GPU measurement.
    pub fn tuned(&self) -> Transforms {
        let mut t = self.transforms.clone();
        for s in self.suggested.iter().filter(|s| s.confirmed) {
            let c = &s.transforms;
            t.pow2 |= c.pow2;
            t.pow2_inexact |= c.pow2_inexact;
            t.sink |= c.sink;
            t.unroll_cap = c.unroll_cap.or(t.unroll_cap);
            t.waves_per_eu = c.waves_per_eu.or(t.waves_per_eu);
            t.warps_per_sm = c.warps_per_sm.or(t.warps_per_sm);
            t.launch_bounds = c.launch_bounds.or(t.launch_bounds);
            t.spill_to_shared |= c.spill_to_shared;
            t.lds_spill = c.lds_spill.or(t.lds_spill);
            t.maxrregcount = c.maxrregcount.or(t.maxrregcount);
            for p in &c.noalias {
                if !t.noalias.contains(p) {
                    t.noalias.push(p.clone());
                }
            }
        }
        t.noalias.sort();
        t
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Db {
    pub version: u32,
    pub kernels: BTreeMap<String, Entry>,
}

impl Default for Db {
    fn default() -> Self {
        Db { version: FORMAT_VERSION, kernels: BTreeMap::new() }
    }
}

impl Db {
    pub fn key(symbol: &str, arch: &str, input_hash: &str) -> String {
        format!("{arch}/{symbol}/{input_hash}")
    }

    /// Load a db; a missing file is an empty db.
    pub fn load(path: &Path) -> Result<Db, DbError> {
        let text = match fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Db::default()),
            Err(source) => return Err(DbError::Read { path: path.into(), source }),
        };
        Db::parse(&text, path)
    }

    /// Load a db this run will write: readable, valid, and in a directory
    /// it can write (or create). Checked before any work, so a long tune
    /// never ends in a save that fails.
    pub fn load_for_update(path: &Path) -> Result<Db, DbError> {
        let db = Db::load(path)?;
        check_writable(path)?;
        Ok(db)
    }

    fn parse(text: &str, path: &Path) -> Result<Db, DbError> {
        let mut db: Db = serde_json::from_str(text).map_err(|source| DbError::Parse { path: path.into(), source })?;
        if db.version != FORMAT_VERSION {
            return Err(DbError::Version { path: path.into(), found: db.version });
        }
        // NVIDIA's step, which older dbs kept as `waves_per_eu`.
        db.kernels.values_mut().for_each(Entry::read_older_spelling);
        Ok(db)
    }

    /// The entries for a kernel on a target, newest input first is not
    /// knowable, so a hash narrows it when the caller has one.
    pub fn lookup<'a>(&'a self, symbol: &'a str, arch: &'a str, input_hash: Option<&'a str>) -> impl Iterator<Item = &'a Entry> + 'a {
        self.kernels.values().filter(move |e| e.symbol == symbol && e.arch == arch && input_hash.is_none_or(|h| e.input_hash == h))
    }

    /// Insert or replace an entry as it is, its measurement included: the
    /// tuner, which sees the code objects, decides which measurement still
    /// holds (see `regtune tune`).
    pub fn insert(&mut self, entry: Entry) {
        self.kernels.insert(entry.key(), entry);
    }

    /// Join an entry from another db: a measurement of the entry it
    /// replaces stays when the newcomer has none and offers the same
    /// candidates; otherwise it is stale and dropped. A newcomer's own
    /// measurement keeps what the replaced one timed and it did not, as
    /// `earlier` ([`Measured::with_earlier`]), as `regtune measure` does.
    pub fn join(&mut self, mut entry: Entry) {
        if let Some(old) = self.kernels.get(&entry.key()) {
            match entry.measured.take() {
                Some(m) => entry.measured = Some(m.with_earlier(old.measured.as_ref())),
                None => {
                    let builds = |e: &Entry| {
                        let mut all = vec![e.transforms.clone()];
                        all.extend(e.suggested.iter().map(|s| s.transforms.clone()));
                        all.extend(e.candidates.iter().map(|c| c.transforms.clone()));
                        all
                    };
                    if builds(old) == builds(&entry) {
                        entry.measured = old.measured.clone();
                    }
                }
            }
        }
        self.kernels.insert(entry.key(), entry);
    }

    /// Write atomically: a reader sees the old file or the new one, never half.
    pub fn save(&self, path: &Path) -> Result<(), DbError> {
        let err = |source| DbError::Write { path: path.into(), source };
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        fs::create_dir_all(dir).map_err(err)?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(err)?;
        let text = serde_json::to_string_pretty(self).expect("db serializes");
        tmp.write_all(text.as_bytes()).map_err(err)?;
        tmp.write_all(b"\n").map_err(err)?;
        tmp.as_file().sync_all().map_err(err)?;
        tmp.persist(path).map_err(|e| err(e.error))?;
        Ok(())
    }

    /// Read-modify-write under an exclusive lock, so concurrent writers
    /// (`make -j` through the wrapper, batch shards) never lose an entry.
    pub fn update<T>(path: &Path, f: impl FnOnce(&mut Db) -> T) -> Result<T, DbError> {
        let err = |source| DbError::Write { path: path.into(), source };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir).map_err(err)?;
        }
        let lock_path = lock_path(path);
        let lock = File::options().create(true).truncate(false).write(true).open(&lock_path).map_err(err)?;
        lock.lock_exclusive().map_err(err)?;
        let mut db = Db::load(path)?;
        let out = f(&mut db);
        db.save(path)?;
        // The lock is released when `lock` is dropped.
        Ok(out)
    }
}

/// Can `path` be saved? Its directory, or the nearest ancestor that exists
/// (`save` creates the rest), takes a temporary file.
fn check_writable(path: &Path) -> Result<(), DbError> {
    let err = |source| DbError::Write { path: path.into(), source };
    let mut dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    while !dir.exists() {
        match dir.parent() {
            Some(up) if !up.as_os_str().is_empty() => dir = up,
            _ => {
                dir = Path::new(".");
                break;
            }
        }
    }
    if !dir.is_dir() {
        return Err(err(std::io::Error::other(format!("{} is not a directory", dir.display()))));
    }
    // A file of our own rather than tempfile's, whose error would name it.
    let probe = dir.join(format!(".regtune-write-check-{}", std::process::id()));
    File::options().write(true).create(true).truncate(true).open(&probe).map_err(err)?;
    fs::remove_file(&probe).map_err(err)
}

fn lock_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".lock");
    path.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(symbol: &str, hash: &str) -> Entry {
        Entry {
            symbol: symbol.into(),
            arch: "gfx90a".into(),
            input_hash: hash.into(),
            name: String::new(),
            file: "k.hip".into(),
            transforms: Transforms {
                pow2: true,
                unroll_cap: Some(4),
                noalias: vec![Param { index: 13, name: "g14".into() }],
                ..Default::default()
            },
            reason: Some(Reason::RaisesOccupancy),
            suggested: vec![],
            before: None,
            after: Some(Usage { vgpr: 96, occupancy: 5, ..Default::default() }),
            candidates: vec![],
            left_out: vec![],
            measured: None,
        }
    }

    #[test]
    fn labels_use_the_user_facing_spelling() {
        let t = Transforms {
            pow2: true,
            pow2_inexact: false,
            sink: true,
            unroll_cap: Some(4),
            noalias: vec![Param { index: 13, name: "g14".into() }, Param { index: 2, name: String::new() }],
            waves_per_eu: Some(5),
            warps_per_sm: None,
            launch_bounds: Some(256),
            spill_to_shared: true,
            lds_spill: Some(8),
            maxrregcount: None,
        };
        assert_eq!(
            t.labels(),
            [
                "pow2",
                "sink",
                "unroll-cap=4",
                "noalias=g14",
                "noalias=#2",
                "waves-per-eu=5",
                "launch-bounds=256",
                "spill-to-shared",
                "lds-spill=8"
            ]
        );
        let inexact = Transforms { pow2: true, pow2_inexact: true, ..Default::default() };
        assert_eq!(inexact.labels(), ["pow2=inexact"]);
        assert_eq!(Transforms { maxrregcount: Some(64), ..Default::default() }.labels(), ["maxrregcount=64"]);
    }

    #[test]
    fn nvccs_maxrregcount_is_its_own_field_chosen_like_any_build_and_older_dbs_read_without_it() {
        let capped = Transforms::with_maxrregcount(64);
        let json = serde_json::to_string(&capped).unwrap();
        assert_eq!(json, r#"{"maxrregcount":64}"#);
        assert_eq!(serde_json::from_str::<Transforms>(&json).unwrap(), capped);
        assert_eq!(capped.maxrregcount_alone(), Some(64));
        // The .maxnreg cap at the same registers is another build.
        let cap = Transforms { warps_per_sm: Some(32), ..Default::default() };
        assert_ne!(capped, cap);
        let old: Transforms = serde_json::from_str(r#"{"waves_per_eu":32}"#).unwrap();
        assert_eq!(old.maxrregcount, None);
        let mut e = entry("_Z1kPf", "h");
        e.transforms = Transforms::default();
        e.candidates = vec![
            Candidate { transforms: capped.clone(), usage: Usage::default() },
            Candidate { transforms: cap.clone(), usage: Usage::default() },
        ];
        e.measured = Some(measured_with(&[(&capped, 0.7, true), (&cap, 0.9, true)]));
        assert_eq!(e.effective(), capped);
        e.measured = Some(measured_with(&[(&capped, 1.2, true), (&cap, 0.9, true)]));
        assert_eq!(e.effective(), cap);
    }

    #[test]
    fn an_older_dbs_file_wide_fields_are_read_and_dropped() {
        let mut e = serde_json::to_value(entry("_Z1kPf", "h")).unwrap();
        e["file_wide_same_as"] = serde_json::json!({"128": {"warps_per_sm": 24}, "64": null});
        let read: Entry = serde_json::from_value(e).unwrap();
        assert_eq!(read, entry("_Z1kPf", "h"));
        assert!(!serde_json::to_string(&read).unwrap().contains("file_wide"));
    }

    #[test]
    fn each_targets_occupancy_step_is_labelled_from_its_own_field() {
        let nvidia = Transforms::occupancy_step(Occupancy::WarpsPerSm, 48);
        assert_eq!(nvidia, Transforms { warps_per_sm: Some(48), ..Default::default() });
        assert_eq!(nvidia.labels(), ["warps-per-sm=48"]);
        assert_eq!(Transforms { sink: true, ..nvidia.clone() }.labels(), ["sink", "warps-per-sm=48"]);
        let amd = Transforms::occupancy_step(Occupancy::WavesPerEu, 5);
        assert_eq!(amd.labels(), ["waves-per-eu=5"]);
        assert_eq!((nvidia.occupancy(), amd.occupancy(), nvidia.cap_alone()), (Some(48), Some(5), Some(48)));
        // Setting a step in one unit clears the other's.
        assert_eq!(nvidia.with_occupancy(Occupancy::WavesPerEu, Some(5)), amd);
        assert!(nvidia.without_occupancy().is_empty());
        assert_eq!(nvidia.older_spelling(), Transforms { waves_per_eu: Some(48), ..Default::default() });
        assert_eq!((Occupancy::of_arch("sm_90"), Occupancy::of_arch("gfx90a:xnack-")), (Occupancy::WarpsPerSm, Occupancy::WavesPerEu));
    }

    #[test]
    fn an_older_db_s_nvidia_steps_read_as_warps_per_sm_and_amdgpu_s_stay() {
        let usage =
            r#"{"vgpr":40,"agpr":0,"sgpr":0,"scratch_bytes":0,"vgpr_spills":0,"sgpr_spills":0,"lds_bytes":0,"occupancy":8,"code_bytes":4}"#;
        let timed = |t: &str, ms: f64| format!(r#"{{"transforms":{t},"time":{{"median_ms":{ms},"spread_ms":0.01}},"identical":true}}"#);
        let entry = |arch: &str, step: &str| {
            let (plain, cap, sunk) = ("{}".to_string(), format!("{{{step}:32}}"), format!("{{\"sink\":true,{step}:40}}"));
            format!(
                r#""{arch}/_Z1kv/h":{{"symbol":"_Z1kv","arch":"{arch}","input_hash":"h","transforms":{sunk},
                "suggested":[{{"transforms":{cap},"usage":{usage},"message":"m","reasons":["trades-ilp"]}}],
                "candidates":[{{"transforms":{cap},"usage":{usage}}},{{"transforms":{{"unroll_cap":1}},"usage":{usage}}}],
                "measured":{{"device":"gpu","launches":1,"runs":10,"deterministic":true,
                "candidates":[{t0},{t1},{t2}],"earlier":[{t3}]}}}}"#,
                t0 = timed(&plain, 1.0),
                t1 = timed(&sunk, 0.9),
                t2 = timed(&cap, 0.7),
                t3 = timed(&format!("{{{step}:24}}"), 0.8),
            )
        };
        let db = |step: &str| format!(r#"{{"version":1,"kernels":{{{},{}}}}}"#, entry("sm_90", step), entry("gfx90a", r#""waves_per_eu""#));
        let old = Db::parse(&db(r#""waves_per_eu""#), Path::new("old.json")).unwrap();
        let new = Db::parse(&db(r#""warps_per_sm""#), Path::new("new.json")).unwrap();
        assert_eq!(old, new, "the older spelling means the same");
        let step = |unit, w| Transforms::occupancy_step(unit, w);
        let nvidia = &old.kernels["sm_90/_Z1kv/h"];
        assert_eq!(nvidia.transforms, Transforms { sink: true, ..step(Occupancy::WarpsPerSm, 40) });
        assert_eq!(nvidia.suggested[0].transforms, step(Occupancy::WarpsPerSm, 32));
        assert_eq!(nvidia.candidates[0].transforms, step(Occupancy::WarpsPerSm, 32));
        let m = nvidia.measured.as_ref().unwrap();
        assert_eq!(m.candidates[2].transforms, step(Occupancy::WarpsPerSm, 32));
        assert_eq!(m.earlier[0].transforms, step(Occupancy::WarpsPerSm, 24));
        assert_eq!(nvidia.effective(), step(Occupancy::WarpsPerSm, 32), "the fastest allowed build, in the new spelling");
        assert_eq!(nvidia.effective(), new.kernels["sm_90/_Z1kv/h"].effective());
        // AMDGPU's step is waves per EU, as it was.
        let amd = &old.kernels["gfx90a/_Z1kv/h"];
        assert_eq!(amd.effective(), step(Occupancy::WavesPerEu, 32));
        assert_eq!(amd.measured.as_ref().unwrap().earlier[0].transforms, step(Occupancy::WavesPerEu, 24));
        // Written back: NVIDIA's step as warps_per_sm, AMDGPU's as waves_per_eu.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.json");
        old.save(&path).unwrap();
        let text = fs::read_to_string(&path).unwrap();
        let written: Db = serde_json::from_str(&text).unwrap();
        let spelled = |key: &str| serde_json::to_string(&written.kernels[key]).unwrap();
        assert!(!spelled("sm_90/_Z1kv/h").contains("waves_per_eu"), "{text}");
        assert_eq!(spelled("sm_90/_Z1kv/h").matches(r#""warps_per_sm""#).count(), 6, "{text}");
        assert!(!spelled("gfx90a/_Z1kv/h").contains("warps_per_sm"), "{text}");
        assert_eq!(Db::load(&path).unwrap(), old);
        // The older spelling, where digests and code files still use it.
        assert_eq!(serde_json::to_string(&nvidia.older_spelling()).unwrap().replace("sm_90", "gfx90a"), spelled("gfx90a/_Z1kv/h"));
    }

    #[test]
    fn entries_without_reasons_still_load_and_reasons_are_kebab_case() {
        // A db written before reasons existed.
        let old = r#"{"version":1,"kernels":{"gfx90a/k/h":{"symbol":"k","arch":"gfx90a","input_hash":"h",
            "transforms":{"pow2":true},"suggested":[{"transforms":{"unroll_cap":1},"usage":{"vgpr":1,"agpr":0,
            "sgpr":0,"scratch_bytes":0,"vgpr_spills":0,"sgpr_spills":0,"lds_bytes":0,"occupancy":8,"code_bytes":4},
            "message":"m"}]}}}"#;
        let db = Db::parse(old, Path::new("old.json")).unwrap();
        let e = &db.kernels["gfx90a/k/h"];
        assert_eq!((e.reason, e.suggested[0].reasons.len()), (None, 0));
        assert!(!e.transforms.pow2_inexact);
        let mut e = e.clone();
        e.reason = Some(Reason::TradesIlp);
        e.suggested[0].reasons = vec![Reason::TradesIlp, Reason::ChangesRounding];
        let json = serde_json::to_string(&e).unwrap();
        assert!(json.contains(r#""reason":"trades-ilp""#) && json.contains(r#""reasons":["trades-ilp","changes-rounding"]"#), "{json}");
        assert_eq!(Reason::LostWhenCombined.to_string(), "lost-when-combined");
    }

    #[test]
    fn db_round_trips_through_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/decisions.json");
        let mut db = Db::default();
        db.insert(entry("_Z1kPf", "abc"));
        db.save(&path).unwrap();
        assert_eq!(Db::load(&path).unwrap(), db);
    }

    #[test]
    fn missing_db_is_empty_and_malformed_db_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(Db::load(&dir.path().join("none.json")).unwrap(), Db::default());
        let bad = dir.path().join("bad.json");
        fs::write(&bad, "{ not json").unwrap();
        let e = Db::load(&bad).unwrap_err().to_string();
        assert!(e.starts_with(&format!("decisions db {} is not valid JSON", bad.display())), "{e}");
    }

    #[test]
    fn lookup_filters_by_symbol_arch_and_hash() {
        let mut db = Db::default();
        db.insert(entry("_Z1kPf", "old"));
        db.insert(entry("_Z1kPf", "new"));
        assert_eq!(db.lookup("_Z1kPf", "gfx90a", None).count(), 2);
        assert_eq!(db.lookup("_Z1kPf", "gfx90a", Some("new")).count(), 1);
        assert_eq!(db.lookup("_Z1kPf", "gfx1100", None).count(), 0);
    }

    #[test]
    fn confirmed_suggestions_join_the_effective_transforms() {
        let mut e = entry("_Z1kPf", "h");
        let s = |confirmed| Suggestion {
            transforms: Transforms { launch_bounds: Some(256), ..Default::default() },
            usage: Usage::default(),
            message: String::new(),
            reasons: vec![Reason::AssumesCaller],
            confirmed,
        };
        e.suggested = vec![s(false)];
        assert_eq!(e.effective().launch_bounds, None);
        e.suggested = vec![s(true)];
        assert_eq!(e.effective().launch_bounds, Some(256));
    }

    fn measured_with(cands: &[(&Transforms, f64, bool)]) -> Measured {
        let plain = measured::Candidate {
            transforms: Transforms::default(),
            time: Some(measured::Timing { median_ms: 1.0, spread_ms: 0.01 }),
            identical: true,
            error: None,
            code: None,
            paired: None,
        };
        let others = cands.iter().map(|(t, ms, identical)| measured::Candidate {
            transforms: (*t).clone(),
            time: Some(measured::Timing { median_ms: *ms, spread_ms: 0.01 }),
            identical: *identical,
            error: None,
            code: None,
            paired: None,
        });
        Measured {
            device: "gpu".into(),
            launches: 1,
            runs: 10,
            deterministic: true,
            program_identical: Some(true),
            block: None,
            candidates: std::iter::once(plain).chain(others).collect(),
            control: None,
            earlier: vec![],
            program: None,
        }
    }

    /// An sm_90 entry of file `hash` whose search holds `builds`, measured
    /// at those times (plain: 1 ms).
    fn measured_entry(symbol: &str, hash: &str, builds: &[(&Transforms, f64)]) -> Entry {
        let mut e = entry(symbol, hash);
        e.arch = "sm_90".into();
        e.transforms = Transforms::default();
        e.candidates = builds.iter().map(|(t, _)| Candidate { transforms: (*t).clone(), usage: Usage::default() }).collect();
        let timed: Vec<(&Transforms, f64, bool)> = builds.iter().map(|(t, ms)| (*t, *ms, true)).collect();
        e.measured = Some(measured_with(&timed));
        e
    }

    #[test]
    fn each_kernel_of_a_file_takes_its_own_maxrregcount() {
        let r = Transforms::with_maxrregcount;
        let step = |w| Transforms { warps_per_sm: Some(w), ..Default::default() };
        let mut db = Db::default();
        let a = measured_entry("_Z1av", "f", &[(&r(128), 0.80), (&step(32), 0.90)]);
        let b = measured_entry("_Z1bv", "f", &[(&r(96), 0.85), (&step(24), 0.80)]);
        let c = measured_entry("_Z1cv", "f", &[(&r(64), 0.70)]);
        for e in [&a, &b, &c] {
            db.insert(e.clone());
        }
        let read = Db::parse(&serde_json::to_string(&db).unwrap(), Path::new("db.json")).unwrap();
        let kept: Vec<Transforms> = [&a, &b, &c].iter().map(|e| read.kernels[&e.key()].effective()).collect();
        assert_eq!(kept, [r(128), step(24), r(64)]);
    }

    #[test]
    fn a_measurement_decides_what_the_build_applies() {
        let mut e = entry("_Z1kPf", "h");
        let decided = e.transforms.clone();
        assert_eq!(e.effective(), decided);
        e.measured = Some(measured_with(&[(&decided, 1.2, true)]));
        assert!(e.effective().is_empty(), "slower: built plain");
        e.measured = Some(measured_with(&[(&decided, 0.8, false)]));
        assert!(e.effective().is_empty(), "different bytes: built plain");
        e.measured = Some(measured_with(&[(&decided, 0.8, true)]));
        assert_eq!(e.effective(), decided);
        // tune's view of what the user confirmed is not the measurement's.
        e.measured = Some(measured_with(&[(&decided, 1.2, true)]));
        assert_eq!(e.tuned(), decided);
    }

    #[test]
    fn a_confirmed_suggestion_measured_faster_wins_an_unconfirmed_one_never() {
        let mut e = entry("_Z1kPf", "h");
        let decided = e.transforms.clone();
        let wider = Transforms { launch_bounds: Some(256), ..decided.clone() };
        e.suggested = vec![Suggestion {
            transforms: wider.clone(),
            usage: Usage::default(),
            message: String::new(),
            reasons: vec![],
            confirmed: false,
        }];
        e.measured = Some(measured_with(&[(&decided, 1.2, true), (&wider, 0.5, true)]));
        assert!(e.effective().is_empty());
        e.suggested[0].confirmed = true;
        assert_eq!(e.effective(), wider);
    }

    #[test]
    fn a_suggestion_held_for_speed_alone_is_the_measurement_s_to_keep() {
        let mut e = entry("_Z1kPf", "h");
        let sink = Transforms { sink: true, ..Default::default() };
        let suggest = |reasons: Vec<Reason>| Suggestion {
            transforms: sink.clone(),
            usage: Usage::default(),
            message: String::new(),
            reasons,
            confirmed: false,
        };
        e.transforms = Transforms::default();
        e.measured = Some(measured_with(&[(&sink, 0.5, true)]));
        for speed in [vec![Reason::Unproven], vec![Reason::TradesIlp], vec![Reason::Unproven, Reason::TradesIlp]] {
            e.suggested = vec![suggest(speed.clone())];
            assert_eq!(e.effective(), sink, "{speed:?}");
        }
        for needs_the_user in [vec![], vec![Reason::AssumesCaller], vec![Reason::Unproven, Reason::ChangesRounding]] {
            e.suggested = vec![suggest(needs_the_user.clone())];
            assert!(e.effective().is_empty(), "{needs_the_user:?}");
        }
        // Faster, but different bytes: plain.
        e.suggested = vec![suggest(vec![Reason::Unproven])];
        e.measured = Some(measured_with(&[(&sink, 0.5, false)]));
        assert!(e.effective().is_empty());
    }

    #[test]
    fn joining_keeps_a_measurement_of_the_same_candidates_only() {
        let mut db = Db::default();
        let mut e = entry("_Z1kPf", "h");
        e.measured = Some(measured_with(&[]));
        db.join(e.clone());
        db.join(entry("_Z1kPf", "h"));
        assert!(db.kernels[&e.key()].measured.is_some());
        let mut more = entry("_Z1kPf", "h");
        more.candidates =
            vec![Candidate { transforms: Transforms { waves_per_eu: Some(6), ..Default::default() }, usage: Usage::default() }];
        db.join(more);
        assert!(db.kernels[&e.key()].measured.is_none(), "another candidate: stale");
        // A newcomer's measurement keeps what the old one timed and it did
        // not, where plain's code is the same.
        let step = |w| Transforms { waves_per_eu: Some(w), ..Default::default() };
        let with_code = |mut m: Measured| {
            m.candidates[0].code = Some("plain".into());
            m
        };
        let mut old = entry("_Z1kPf", "h");
        old.measured = Some(with_code(measured_with(&[(&step(4), 1.2, true)])));
        db.join(old);
        let mut newer = entry("_Z1kPf", "h");
        newer.measured = Some(with_code(measured_with(&[(&step(6), 0.9, true)])));
        db.join(newer.clone());
        let joined = db.kernels[&e.key()].measured.clone().unwrap();
        assert_eq!(joined.candidates, newer.measured.clone().unwrap().candidates);
        assert_eq!(joined.earlier.iter().map(|c| c.transforms.clone()).collect::<Vec<_>>(), [step(4)]);
        let mut other_plain = newer.clone();
        other_plain.measured.as_mut().unwrap().candidates[0].code = Some("changed".into());
        db.join(other_plain);
        assert!(db.kernels[&e.key()].measured.as_ref().unwrap().earlier.is_empty(), "plain's code changed: nothing carried");
        // insert replaces as it is: the tuner decided what still holds.
        db.insert(e.clone());
        db.insert(entry("_Z1kPf", "h"));
        assert!(db.kernels[&e.key()].measured.is_none());
    }

    #[test]
    fn a_db_to_update_is_checked_for_a_writable_directory_first() {
        let dir = tempfile::tempdir().unwrap();
        let fresh = dir.path().join("new/sub/db.json");
        assert_eq!(Db::load_for_update(&fresh).unwrap(), Db::default());
        assert!(!dir.path().join("new").exists(), "checking creates nothing");
        let file = dir.path().join("plain.txt");
        std::fs::write(&file, "").unwrap();
        let under_a_file = file.join("db.json");
        let e = Db::load_for_update(&under_a_file).unwrap_err();
        assert_eq!(e.to_string(), format!("cannot read decisions db {}: Not a directory (os error 20)", under_a_file.display()));
        let gone = file.join("sub/db.json");
        let e = Db::load_for_update(&gone).unwrap_err();
        assert_eq!(e.to_string(), format!("cannot read decisions db {}: Not a directory (os error 20)", gone.display()));
        // A directory nobody can write to, root included.
        let e = Db::load_for_update(Path::new("/proc/regtune-db.json")).unwrap_err();
        assert_eq!(e.to_string(), "cannot write decisions db /proc/regtune-db.json: No such file or directory (os error 2)");
        let broken = dir.path().join("broken.json");
        std::fs::write(&broken, "{").unwrap();
        assert!(matches!(Db::load_for_update(&broken), Err(DbError::Parse { .. })));
    }

    #[test]
    fn a_measurement_may_choose_a_search_candidate_the_static_rule_never_applies() {
        let mut e = entry("_Z1kPf", "h");
        e.transforms = Transforms::default();
        let step = Transforms { waves_per_eu: Some(40), ..Default::default() };
        let cap = Transforms { unroll_cap: Some(2), ..Default::default() };
        e.candidates = vec![
            Candidate { transforms: step.clone(), usage: Usage::default() },
            Candidate { transforms: cap.clone(), usage: Usage::default() },
        ];
        assert!(e.effective().is_empty(), "no measurement: the decision (plain)");
        e.measured = Some(measured_with(&[(&step, 0.83, true), (&cap, 0.9, true)]));
        assert_eq!(e.effective(), step);
        e.measured = Some(measured_with(&[(&step, 0.83, false), (&cap, 0.9, true)]));
        assert_eq!(e.effective(), cap, "the fastest identical one");
        assert_eq!(e.usage_of(&step), Some(Usage::default()));
    }

    #[test]
    fn concurrent_updates_lose_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.json");
        std::thread::scope(|s| {
            for i in 0..8 {
                let path = &path;
                s.spawn(move || Db::update(path, |db| db.insert(entry(&format!("_Z1k{i}"), "h"))).unwrap());
            }
        });
        assert_eq!(Db::load(&path).unwrap().kernels.len(), 8);
    }
}
