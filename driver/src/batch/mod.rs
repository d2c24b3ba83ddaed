//! `regtune batch`: tune every HIP translation unit of a codebase from its
//! `compile_commands.json`, each with its own flags and targets, into the
//! shared decisions db; `regtune merge` joins the dbs of shards.
//!
//! Stages: read the compilation database ([`compile_db`]) → select (filter,
//! de-duplicate, shard) → per unit and target: preprocess, and reuse the
//! recorded result if nothing changed ([`records`]), else `tune` it and record
//! it at once → report ([`render`], [`html`]).

pub(crate) mod compile_db;
pub mod html;
pub(crate) mod records;
pub mod render;

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use rayon::prelude::*;
use regtune_decisions::{Db, DbError, Usage};
use serde::{Deserialize, Serialize};

use crate::context::Context;
use crate::gpu::compile::{self, Unit as CompileUnit};
use crate::gpu::Arch;
use crate::output::Failure;
use crate::progress::Progress;
use crate::rdc::{self, Given, LinkSet};
use crate::toolchain::Toolchain;
use crate::tune::{self, KernelTuning};
use compile_db::{CompileDbError, Parsed, Unit};
use records::{Records, UnitRecord};

/// The target a unit gets when neither `--offload-arch` nor its entry names one.
pub(crate) const DEFAULT_ARCH: &str = "gfx90a";

#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    #[error(transparent)]
    CompileDb(#[from] CompileDbError),
    #[error(transparent)]
    Db(#[from] DbError),
    #[error("cannot open --record-all file {}: {source}", path.display())]
    Record { path: PathBuf, source: std::io::Error },
}

/// `--shard I/N`: the I-th of N parts (1 ≤ I ≤ N).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl std::str::FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("`{s}` is not a shard: use I/N with 1 ≤ I ≤ N, e.g. 1/4");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count): (usize, usize) = (i.trim().parse().map_err(|_| bad())?, n.trim().parse().map_err(|_| bad())?);
        if index == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

pub struct Options {
    pub tune: tune::Options,
    /// `--offload-arch`: every unit gets these instead of its own.
    pub archs: Option<Vec<Arch>>,
    /// `--filter`: a unit is kept when any pattern matches its path.
    pub filters: Vec<glob::Pattern>,
    pub shard: Option<Shard>,
    pub db: PathBuf,
    pub record_all: Option<PathBuf>,
}

impl Options {
    /// What besides the input decides a result: a unit tuned under other
    /// options (or by another regtune version) is tuned again.
    fn fingerprint(&self) -> String {
        let t = &self.tune;
        format!(
            "regtune {}; objective={:?}; noalias={:?}; pow2={:?}; block-size={:?}; allow-scratch={}; noalias-candidates={}; \
             variant-timeout={:?}; time-budget={:?}; candidates={}; evidence={}",
            env!("CARGO_PKG_VERSION"),
            t.objective,
            t.noalias,
            t.pow2,
            t.block_size,
            t.allow_scratch,
            t.noalias_candidates,
            t.variant_timeout,
            t.time_budget,
            t.candidates,
            t.evidence.fingerprint()
        )
    }

    fn selects(&self, file: &Path, cwd: Option<&Path>) -> bool {
        if self.filters.is_empty() {
            return true;
        }
        let file = compile_db::lexical(file);
        let relative = cwd.and_then(|c| file.strip_prefix(c).ok());
        self.filters.iter().any(|p| p.matches_path(&file) || relative.is_some_and(|r| p.matches_path(r)))
    }
}

/// One kernel's row: the same keys as `tune`'s JSON, plus the translation
/// unit it came from, what limited it before tuning, and whether this run
/// took it from the records instead of tuning it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelRow {
    pub name: String,
    pub symbol: String,
    pub file: String,
    pub line: u32,
    pub arch: String,
    pub limiter: String,
    pub before: Usage,
    pub after: Usage,
    pub applied: Vec<String>,
    pub suggested: Vec<String>,
    pub why: String,
    pub suggestions: Vec<String>,
    pub variants: usize,
    /// The translation unit (the compile_commands.json `file`, absolute).
    pub unit: String,
    pub limiter_before: String,
    #[serde(default)]
    pub cached: bool,
    /// `tune`'s other keys (usage, vgprs_to_next_step...), as they are.
    #[serde(flatten)]
    pub rest: serde_json::Map<String, serde_json::Value>,
}

impl KernelRow {
    fn from_tuning(k: &KernelTuning, unit: &str) -> KernelRow {
        let mut v = serde_json::to_value(k).expect("tune rows serialize");
        let obj = v.as_object_mut().expect("tune rows are objects");
        obj.insert("unit".into(), unit.into());
        obj.insert("limiter_before".into(), serde_json::to_value(k.limiter_before).expect("limiters serialize"));
        serde_json::from_value(v).expect("tune rows have every key a batch row needs")
    }

    pub(crate) fn spills_before(&self) -> u32 {
        self.before.vgpr_spills + self.before.sgpr_spills
    }

    pub(crate) fn spills_after(&self) -> u32 {
        self.after.vgpr_spills + self.after.sgpr_spills
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Tuned by this run.
    Tuned,
    /// Unchanged since it was tuned: taken from the records.
    Cached,
    Failed,
}

/// One translation unit on one target (or a bad entry, with no target).
#[derive(Debug, Clone, Serialize)]
pub struct UnitStatus {
    /// Position in compile_commands.json, from 1 (0 for merged records).
    pub entry: usize,
    pub file: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arch: Option<String>,
    pub status: Status,
    pub kernels: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_hash: Option<String>,
    /// This run's time on it (a preprocess, for a cached unit).
    pub seconds: f64,
    /// Variants compiled, when it was tuned.
    pub variants: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip)]
    pub diagnostics: Option<String>,
}

impl UnitStatus {
    fn new(entry: usize, file: String, arch: Option<String>, status: Status) -> UnitStatus {
        UnitStatus { entry, file, arch, status, kernels: 0, input_hash: None, seconds: 0.0, variants: 0, error: None, diagnostics: None }
    }

    /// The one-line error, naming the entry, file and target.
    pub(crate) fn message(&self) -> Option<String> {
        let error = self.error.as_ref()?;
        let what = match &self.arch {
            Some(a) => format!("{} for {a}", self.file),
            None if self.file.is_empty() => "no file".to_string(),
            None => self.file.clone(),
        };
        Some(format!("compile_commands.json entry {} ({what}): {error}", self.entry))
    }

    pub fn print_failure(&self) {
        if let Some(message) = self.message() {
            Failure { message, diagnostics: self.diagnostics.clone() }.print();
        }
    }
}

/// What the selection kept and left out, entries counted.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Selection {
    /// Entries in compile_commands.json.
    pub entries: usize,
    pub not_hip: usize,
    pub filtered_out: usize,
    /// Same file, flags and targets as an earlier entry.
    pub duplicates: usize,
    pub in_other_shards: usize,
}

/// A batch run's (or a merge's) result.
pub struct Batch {
    pub source: String,
    pub selection: Option<Selection>,
    pub units: Vec<UnitStatus>,
    pub kernels: Vec<KernelRow>,
    pub seconds: f64,
}

impl Batch {
    /// Translation units (entries) with at least one failure: the exit status.
    pub fn failed_units(&self) -> usize {
        let failed: BTreeSet<(usize, &str)> =
            self.units.iter().filter(|u| u.status == Status::Failed).map(|u| (u.entry, u.file.as_str())).collect();
        failed.len()
    }
}

/// Everything a unit's processing reads.
struct Shared<'a> {
    ctx: &'a Context,
    options: &'a Options,
    fingerprint: String,
    known: Db,
    records: Records,
    recorder: Option<Mutex<BufWriter<File>>>,
}

/// Tune the codebase `compile_db` describes (a build directory or the file).
pub fn run(ctx: &Context, compile_db: &Path, options: &Options) -> Result<Batch, BatchError> {
    let started = Instant::now();
    let compile_db = compile_db::locate(compile_db);
    let parsed = compile_db::load(&compile_db)?;
    // A db we could not write to would lose every result: stop before tuning.
    let known = Db::load_for_update(&options.db)?;
    let records = Records::load(&records::path_for(&options.db));
    let recorder = match &options.record_all {
        Some(path) => Some(Mutex::new(BufWriter::new(
            File::options().create(true).append(true).open(path).map_err(|source| BatchError::Record { path: path.clone(), source })?,
        ))),
        None => None,
    };
    let cwd = std::env::current_dir().ok();

    let (units, partners, selection, mut statuses) = select(parsed, options, cwd.as_deref());
    let archs_of = |u: &Unit| -> Vec<String> {
        match &options.archs {
            Some(a) => a.iter().map(|a| a.name().to_string()).collect(),
            // nvcc 13 builds sm_75 where a command names no architecture.
            None if u.archs.is_empty() && u.nvcc.is_some() => vec!["sm_75".to_string()],
            None if u.archs.is_empty() => vec![DEFAULT_ARCH.to_string()],
            None => u.archs.clone(),
        }
    };
    let jobs: Vec<(&Unit, String)> = units.iter().flat_map(|u| archs_of(u).into_iter().map(move |a| (u, a))).collect();
    // -fgpu-rdc units are device-linked, per target, with every -fgpu-rdc unit of the codebase.
    let (linked, alone): (Vec<_>, Vec<_>) = jobs.into_iter().partition(|(u, _)| rdc::enabled(&u.args));
    let shared = Shared { ctx, options, fingerprint: options.fingerprint(), known, records, recorder };
    let progress = Progress::new((alone.len() + linked.len()) as u64, "batch");
    let mut results: Vec<(UnitStatus, Vec<KernelRow>)> = alone
        .par_iter()
        .map(|(unit, arch)| {
            let r = process(&shared, unit, arch, &progress);
            progress.inc();
            r
        })
        .collect();
    let link_archs: BTreeSet<&String> = linked.iter().map(|(_, a)| a).collect();
    for arch in link_archs {
        let tuned: Vec<&Unit> = linked.iter().filter(|(_, a)| a == arch).map(|(u, _)| *u).collect();
        let with: Vec<&Unit> = partners.iter().filter(|u| archs_of(u).contains(arch)).collect();
        results.extend(process_linked(&shared, &tuned, &with, arch, &progress));
    }
    progress.finish();
    let mut kernels = Vec::new();
    for (status, rows) in results {
        statuses.push(status);
        kernels.extend(rows);
    }
    statuses.sort_by(|a, b| (a.entry, &a.arch).cmp(&(b.entry, &b.arch)));
    kernels.sort_by(|a, b| (&a.unit, &a.arch, a.line, &a.name).cmp(&(&b.unit, &b.arch, b.line, &b.name)));
    Ok(Batch {
        source: compile_db.display().to_string(),
        selection: Some(selection),
        units: statuses,
        kernels,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// HIP units that this run (filter, shard) takes, de-duplicated and in a
/// stable order; every `-fgpu-rdc` unit before the filter and the shard
/// (what the device link brings in); failures for entries that cannot be
/// used.
fn select(parsed: Vec<Parsed>, options: &Options, cwd: Option<&Path>) -> (Vec<Unit>, Vec<Unit>, Selection, Vec<UnitStatus>) {
    let mut selection = Selection { entries: parsed.len(), ..Selection::default() };
    let mut units = Vec::new();
    let mut partners: Vec<Unit> = Vec::new();
    let mut bad = Vec::new();
    for p in parsed {
        if let Parsed::Hip(u) = &p {
            if rdc::enabled(&u.args) && !partners.iter().any(|o| o.file == u.file && o.args == u.args) {
                partners.push(u.clone());
            }
        }
        match p {
            Parsed::Hip(u) if options.selects(&u.file, cwd) => units.push(u),
            Parsed::Hip(_) => selection.filtered_out += 1,
            Parsed::NotHip => selection.not_hip += 1,
            Parsed::Bad { entry, file, message } => {
                bad.push(UnitStatus { error: Some(message), ..UnitStatus::new(entry, file, None, Status::Failed) })
            }
        }
    }
    // Sorted by file and flags (not by position in the file, which build
    // generators do not keep stable), so every shard sees the same order.
    units.sort();
    let before = units.len();
    units.dedup_by(|a, b| a.file == b.file && a.args == b.args && a.archs == b.archs);
    selection.duplicates = before - units.len();
    if let Some(Shard { index, count }) = options.shard {
        let before = units.len();
        units = units.into_iter().enumerate().filter(|(i, _)| i % count == index - 1).map(|(_, u)| u).collect();
        selection.in_other_shards = before - units.len();
    }
    partners.sort();
    (units, partners, selection, bad)
}

/// One unit on one target: reuse its record if nothing changed, else tune
/// it and record the result at once.
fn process(shared: &Shared<'_>, unit: &Unit, arch: &str, progress: &Progress) -> (UnitStatus, Vec<KernelRow>) {
    let started = Instant::now();
    let mut status = UnitStatus::new(unit.entry, unit.file.display().to_string(), Some(arch.to_string()), Status::Tuned);
    let rows = match tune_or_reuse(shared, unit, arch, &mut status, progress) {
        Ok(rows) => rows,
        Err(f) => {
            status.status = Status::Failed;
            status.error = Some(f.message);
            status.diagnostics = f.diagnostics;
            vec![]
        }
    };
    status.kernels = rows.len();
    status.seconds = started.elapsed().as_secs_f64();
    (status, rows)
}

fn tune_or_reuse(
    shared: &Shared<'_>,
    unit: &Unit,
    arch: &str,
    status: &mut UnitStatus,
    progress: &Progress,
) -> Result<Vec<KernelRow>, Failure> {
    let arch = Arch::parse(arch).map_err(|e| Failure::new(e.to_string()))?;
    check_unit(unit)?;
    if let Some(nvcc) = &unit.nvcc {
        // nvcc's input hash needs nvcc's own compile: no cheaper check to cache on.
        let started = Instant::now();
        let unit_ctx =
            shared.ctx.for_unit(vec![arch.clone()], unit.args.clone()).with_nvcc(Some(nvcc)).map_err(|e| Failure::new(e.to_string()))?;
        let tuned = tune::tune_unit(&unit_ctx, &unit.file, &arch, &shared.options.tune, &shared.known, progress)?;
        return save_tuned(shared, unit, &arch, "", &tuned, started, status, false);
    }
    let key = preprocessed_hash(&shared.ctx.toolchain, &arch, &unit.file, &unit.args)?;
    if let Some(record) = shared.records.cached(&key, &shared.fingerprint, &shared.known) {
        status.status = Status::Cached;
        status.input_hash = Some(record.input_hash.clone());
        return Ok(record.kernels.iter().cloned().map(|k| KernelRow { cached: true, ..k }).collect());
    }

    let started = Instant::now();
    let unit_ctx = shared.ctx.for_unit(vec![arch.clone()], unit.args.clone());
    let tuned = tune::tune_unit(&unit_ctx, &unit.file, &arch, &shared.options.tune, &shared.known, progress)?;
    save_tuned(shared, unit, &arch, &key, &tuned, started, status, true)
}

/// Record a tuned unit: its db entries, its record under `key` (unless
/// `record` is false: then the next run tunes it again), its variants for
/// `--record-all`; the report rows.
#[allow(clippy::too_many_arguments)]
fn save_tuned(
    shared: &Shared<'_>,
    unit: &Unit,
    arch: &Arch,
    key: &str,
    tuned: &[KernelTuning],
    started: Instant,
    status: &mut UnitStatus,
    record: bool,
) -> Result<Vec<KernelRow>, Failure> {
    let seconds = started.elapsed().as_secs_f64();
    let unit_name = unit.file.display().to_string();
    let rows: Vec<KernelRow> = tuned.iter().map(|k| KernelRow::from_tuning(k, &unit_name)).collect();
    let entries: Vec<_> = tuned.iter().map(|k| k.entry.clone()).collect();
    let input_hash = entries.first().map_or_else(|| key.to_string(), |e| e.input_hash.clone());
    status.variants = rows.iter().map(|r| r.variants).sum();
    status.input_hash = Some(input_hash.clone());
    let unit_record = UnitRecord {
        file: unit_name.clone(),
        arch: arch.name().to_string(),
        input_hash: input_hash.clone(),
        options: shared.fingerprint.clone(),
        entries: String::new(),
        kernels: rows.clone(),
        seconds,
        variants: status.variants,
    };
    let saved = if record {
        records::save_unit(&shared.options.db, key, &entries, unit_record)
    } else {
        Db::update(&shared.options.db, |db| entries.iter().for_each(|e| db.insert(e.clone())))
    };
    saved.map_err(|e| Failure::new(e.to_string()))?;
    if let Some(recorder) = &shared.recorder {
        // The tune is saved; a research log that cannot be written does not undo it.
        if let Err(e) = record_variants(recorder, &unit_name, &input_hash, tuned) {
            eprintln!("warning: cannot write to the --record-all file: {e}");
        }
    }
    Ok(rows)
}

/// The `-fgpu-rdc` units `tuned` on `arch`, each device-linked with every
/// unit of `with` (the codebase's `-fgpu-rdc` units for that target, the
/// tuned ones among them), as the build links them. A unit is reused from
/// its record only when no unit of the link changed; one whose kernels
/// call functions no unit defines fails, its other kernels recorded in the
/// db, and is tuned again next time.
fn process_linked(
    shared: &Shared<'_>,
    tuned: &[&Unit],
    with: &[&Unit],
    arch_name: &str,
    progress: &Progress,
) -> Vec<(UnitStatus, Vec<KernelRow>)> {
    let status_of = |u: &Unit| UnitStatus::new(u.entry, u.file.display().to_string(), Some(arch_name.to_string()), Status::Tuned);
    let failed = |u: &Unit, f: Failure, started: Instant| {
        progress.inc();
        let mut status = status_of(u);
        (status.status, status.error, status.diagnostics) = (Status::Failed, Some(f.message), f.diagnostics);
        status.seconds = started.elapsed().as_secs_f64();
        (status, vec![])
    };
    let started = Instant::now();
    let arch = match Arch::parse(arch_name) {
        Ok(a) => a,
        Err(e) => return tuned.iter().map(|u| failed(u, Failure::new(e.to_string()), started)).collect(),
    };
    // Every unit of the link is preprocessed: a change in any one re-tunes them all.
    let keys: Vec<Result<String, Failure>> =
        with.par_iter().map(|u| check_unit(u).and_then(|_| preprocessed_hash(&shared.ctx.toolchain, &arch, &u.file, &u.args))).collect();
    let mut link_keys: Vec<&String> = keys.iter().flatten().collect();
    link_keys.sort();
    let link_key = crate::hash::of_parts(link_keys.iter().map(|k| k.as_bytes()));
    let key_of = |u: &Unit| -> Result<String, Failure> {
        let own = with.iter().position(|w| w.file == u.file && w.args == u.args).map(|i| keys[i].clone());
        let own = own.unwrap_or_else(|| check_unit(u).and_then(|_| preprocessed_hash(&shared.ctx.toolchain, &arch, &u.file, &u.args)))?;
        Ok(crate::hash::of_parts([own.as_bytes(), link_key.as_bytes()]))
    };
    let mut out = Vec::new();
    let mut to_tune = Vec::new();
    for u in tuned {
        match key_of(u) {
            Err(f) => out.push(failed(u, f, started)),
            Ok(key) => match shared.records.cached(&key, &shared.fingerprint, &shared.known) {
                Some(record) => {
                    progress.inc();
                    let mut status = status_of(u);
                    status.status = Status::Cached;
                    status.input_hash = Some(record.input_hash.clone());
                    let rows: Vec<KernelRow> = record.kernels.iter().cloned().map(|k| KernelRow { cached: true, ..k }).collect();
                    status.kernels = rows.len();
                    status.seconds = started.elapsed().as_secs_f64();
                    out.push((status, rows));
                }
                None => to_tune.push((*u, key)),
            },
        }
    }
    if to_tune.is_empty() {
        return out;
    }
    let units: Vec<(&Path, &[String])> =
        with.iter().zip(&keys).filter(|(_, k)| k.is_ok()).map(|(u, _)| (u.file.as_path(), u.args.as_slice())).collect();
    let set = match LinkSet::build(&shared.ctx.toolchain, &arch, &units) {
        Ok(set) => set,
        Err(f) => {
            out.extend(to_tune.iter().map(|(u, _)| failed(u, f.clone(), started)));
            return out;
        }
    };
    let tuned_now: Vec<(UnitStatus, Vec<KernelRow>)> = to_tune
        .par_iter()
        .map(|(u, key)| {
            let unit_started = Instant::now();
            if let Err(f) = set.unit(&u.file) {
                return failed(u, f, unit_started);
            }
            let unresolved = set.unresolved_failures(&u.file, Given::CompileDb);
            let mut status = status_of(u);
            let result = tune::tune_linked(shared.ctx, &set, &u.file, &shared.options.tune, &shared.known, progress)
                .and_then(|rows| save_tuned(shared, u, &arch, key, &rows, unit_started, &mut status, unresolved.is_empty()));
            progress.inc();
            let rows = match (result, unresolved.first()) {
                (Ok(rows), None) => rows,
                (Ok(rows), Some(_)) => {
                    let messages: Vec<String> = unresolved.into_iter().map(|f| f.message).collect();
                    (status.status, status.error) = (Status::Failed, Some(messages.join("; ")));
                    rows
                }
                (Err(f), _) => {
                    (status.status, status.error, status.diagnostics) = (Status::Failed, Some(f.message), f.diagnostics);
                    vec![]
                }
            };
            status.kernels = rows.len();
            status.seconds = unit_started.elapsed().as_secs_f64();
            (status, rows)
        })
        .collect();
    out.extend(tuned_now);
    out
}

/// A unit whose directory or source is gone cannot be compiled.
fn check_unit(unit: &Unit) -> Result<(), Failure> {
    if !unit.directory.is_dir() {
        return Err(Failure::new(format!("its directory {} is gone", unit.directory.display())));
    }
    if !unit.file.is_file() {
        return Err(Failure::new(format!("{} is gone", unit.file.display())));
    }
    Ok(())
}

/// The input hash `tune` gives this unit, from a preprocess alone (the
/// same bytes as the `.hipi` the tune keeps): the cost of a cache check.
fn preprocessed_hash(toolchain: &Toolchain, arch: &Arch, file: &Path, args: &[String]) -> Result<String, Failure> {
    let dir = tempfile::tempdir().map_err(|e| Failure::new(format!("cannot create a temporary directory: {e}")))?;
    let out = dir.path().join("unit.hipi");
    let unit = CompileUnit { toolchain, arch, source: file, user_args: args };
    let (hash, _) = unit.preprocess_and_hash(&out).map_err(compile::compile_failure)?;
    Ok(hash)
}

/// One `--record-all` line per variant compiled.
#[derive(Serialize)]
struct VariantLine<'a> {
    unit: &'a str,
    kernel: &'a str,
    name: &'a str,
    target: &'a str,
    input_hash: &'a str,
    /// Labels and transforms as these lines always spelled them (NVIDIA's
    /// step as `waves-per-eu`, `waves_per_eu`: [`regtune_decisions::Transforms::older_spelling`]).
    transforms: Vec<String>,
    spec: regtune_decisions::Transforms,
    /// None: the variant did not build (see `status`).
    usage: Option<Usage>,
    /// "ok", "failed", "timed out" or "budget reached".
    status: tune::VariantStatus,
    baseline: Usage,
    compile_seconds: f64,
}

fn record_variants(recorder: &Mutex<BufWriter<File>>, unit: &str, input_hash: &str, tuned: &[KernelTuning]) -> std::io::Result<()> {
    let mut text = String::new();
    for k in tuned {
        for m in &k.measured {
            let line = VariantLine {
                unit,
                kernel: &k.report.symbol,
                name: &k.report.name,
                target: &k.report.arch,
                input_hash,
                transforms: m.transforms.older_spelling().labels(),
                spec: m.transforms.older_spelling(),
                usage: m.usage,
                status: m.status,
                baseline: k.before,
                compile_seconds: m.seconds,
            };
            text.push_str(&serde_json::to_string(&line).expect("variant lines serialize"));
            text.push('\n');
        }
    }
    // One unit's lines together, flushed as it finishes.
    let mut w = recorder.lock().expect("record-all lock");
    w.write_all(text.as_bytes())?;
    w.flush()
}

/// `regtune merge`: join the dbs (and their records) into `out`; the report
/// covers the inputs' units. Returns it with the count of entries that
/// differed between inputs.
pub fn merge(inputs: &[PathBuf], out: &Path) -> Result<(Batch, usize), DbError> {
    let started = Instant::now();
    let (merged, conflicts) = records::merge(inputs, out)?;
    let mut units = Vec::new();
    let mut kernels = Vec::new();
    for r in merged.units.into_values() {
        units.push(UnitStatus {
            kernels: r.kernels.len(),
            input_hash: Some(r.input_hash),
            seconds: r.seconds,
            variants: r.variants,
            ..UnitStatus::new(0, r.file, Some(r.arch), Status::Tuned)
        });
        kernels.extend(r.kernels);
    }
    units.sort_by(|a, b| (&a.file, &a.arch).cmp(&(&b.file, &b.arch)));
    kernels.sort_by(|a, b| (&a.unit, &a.arch, a.line, &a.name).cmp(&(&b.unit, &b.arch, b.line, &b.name)));
    let source = inputs.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ");
    Ok((Batch { source, selection: None, units, kernels, seconds: started.elapsed().as_secs_f64() }, conflicts))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_are_one_based_and_checked() {
        assert_eq!("2/4".parse::<Shard>(), Ok(Shard { index: 2, count: 4 }));
        for bad in ["0/4", "5/4", "1", "a/b", "1/0"] {
            let e = bad.parse::<Shard>().unwrap_err();
            assert!(e.contains("is not a shard"), "{bad}: {e}");
        }
    }
}
