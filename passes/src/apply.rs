//! `regtune-apply`: apply the tuner's decisions db to a device module; what
//! `clang -fpass-plugin` runs.
//!
//! The db (`-regtune-decisions=<file>`, else `$REGTUNE_DECISIONS`) holds one
//! entry per (kernel symbol, target, input hash). For each kernel of the
//! module, matched by symbol and by its `"target-cpu"` attribute ("gfx90a",
//! or "sm_90" in a CUDA device compile) (and by `$REGTUNE_INPUT_HASH` when
//! set), the pass applies `Entry::effective()`:
//!   - early (PipelineStartEP): noalias, unroll cap, occupancy and block
//!     size, then pow2 (`pow2_inexact`: `regtune-pow2<inexact>`);
//!   - late (OptimizerLastEP): sink, then the LDS spill of the kernel body.
//!
//! With `REGTUNE_ONLY_KERNEL` set (the tuner's one-kernel builds), the
//! early phase then drops every other kernel ([`crate::only_kernel`]).
//!
//! A kernel's decision covers the kernel and the defined functions it
//! reaches through direct calls. A function several kernels reach is
//! transformed only when all of them decided the same for that transform
//! (a kernel with no entry counts as "plain"), so no kernel runs code it was
//! not measured with.
//!
//! Why it is legal: each transform is legal on its own (see its module);
//! this pass only chooses where they run. It never breaks a build: host
//! modules, a missing db, and kernels without an entry are left alone, and
//! an unreadable or malformed db, or a decision the plugin cannot apply,
//! costs one warning line on stderr and the build goes on without it.
//!
//!   REGTUNE_DECISIONS=decisions.json \
//!   opt-22 -load-pass-plugin=target/debug/libregtune_passes.so \
//!     -passes=regtune-apply in.ll -S -o out.ll
//!
//!   REGTUNE_DECISIONS=decisions.json clang-22 -x hip --offload-arch=gfx90a \
//!     -fpass-plugin=target/debug/libregtune_passes.so -O3 -c k.hip
//!
//!   REGTUNE_DECISIONS=decisions.json clang-22 -x cuda --cuda-gpu-arch=sm_90 \
//!     --cuda-path=/opt/regtune-cuda -fpass-plugin=target/debug/libregtune_passes.so -O3 -c k.cu

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::SystemTime;

use inkwell::module::Module;
use inkwell::values::FunctionValue;
use regtune_decisions::plugin::{DECISIONS_ENV, INPUT_HASH_ENV};
use regtune_decisions::{Db, Transforms};

use crate::pow2::Rounding;
use crate::spec::{Occupancy, Phase};
use crate::{ir, lds_spill, noalias, occupancy, only_kernel, pow2, sink, spill_to_shared, unroll_cap};

/// Options the host tool hands to every pass run.
#[derive(Debug, Default, Clone)]
pub struct RunOptions {
    /// The `-regtune-decisions=` option (empty: not given).
    pub decisions: Option<String>,
}

/// The largest work-group AMDGPU supports (and the largest CUDA block).
const MAX_BLOCK: u32 = 1024;

/// Apply the decisions of `phase` to `module`; true when the IR changed.
pub fn run(module: &Module<'_>, phase: Phase, options: &RunOptions) -> bool {
    // The host half of a HIP compile is none of our business.
    if !ir::is_device_module(module) {
        return false;
    }
    let Some(path) = decisions_path(options) else {
        return false;
    };
    let Some(db) = load(&path) else {
        return false;
    };
    let input_hash = std::env::var(INPUT_HASH_ENV).ok().filter(|h| !h.is_empty());
    let mut changed = false;
    if phase.early() {
        changed |= apply_early(module, &db, input_hash.as_deref());
        if let Some(symbol) = only_kernel::requested() {
            let plan = Plan::new(module, &db, input_hash.as_deref());
            changed |= only_kernel::keep_only(module, &symbol, &plan.disagreeing_with(&symbol, |t| t.sink));
        }
    }
    if phase.late() {
        changed |= apply_late(module, &Plan::new(module, &db, input_hash.as_deref()));
    }
    changed
}

/// Each transform gets a plan of its own, made after the one before ran:
/// a transform may delete functions (pow2 deletes what it leaves unused),
/// and a plan must not name them. pow2 goes last for the same reason.
fn apply_early<'ctx>(module: &Module<'ctx>, db: &Db, input_hash: Option<&str>) -> bool {
    let mut changed = false;
    let plan = Plan::new(module, db, input_hash);
    for (kernel, t) in plan.decided() {
        if !t.noalias.is_empty() {
            changed |= noted("noalias", &[kernel], noalias::run(kernel, &t.noalias));
        }
    }
    let plan = Plan::new(module, db, input_hash);
    for (cap, functions) in plan.agreed(|t| t.unroll_cap) {
        if let Some(cap) = cap {
            changed |= noted(&format!("unroll-cap={cap}"), &functions, unroll_cap::run_on(&functions, cap));
        }
    }
    for (kernel, t) in plan.decided() {
        let occ = Occupancy { waves_per_eu: t.occupancy(), max_block: t.launch_bounds };
        if occ != Occupancy::default() {
            changed |= noted("occupancy", &[kernel], occupancy::apply(kernel, &occ));
        }
    }
    // After occupancy: the pragma needs the block size it promised.
    for (kernel, t) in plan.decided() {
        if t.spill_to_shared {
            changed |= noted("spill-to-shared", &[kernel], spill_to_shared::apply(module, kernel));
        }
    }
    for (pow2, functions) in plan.agreed(pow2_rounding) {
        if let Some(rounding) = pow2 {
            let names: Vec<String> = functions.iter().map(|f| ir::symbol(*f)).collect();
            let label = if rounding == Rounding::Inexact { "pow2=inexact" } else { "pow2" };
            changed |= note(&format!("{label} changed {}", names.join(" ")), pow2::run_on(module, &functions, rounding));
        }
    }
    changed
}

/// The pow2 a decision asks for: none, exact, or inexact too.
fn pow2_rounding(t: &Transforms) -> Option<Rounding> {
    match (t.pow2, t.pow2_inexact) {
        (false, _) => None,
        (true, false) => Some(Rounding::Exact),
        (true, true) => Some(Rounding::Inexact),
    }
}

fn apply_late<'ctx>(module: &Module<'ctx>, plan: &Plan<'ctx>) -> bool {
    let mut changed = false;
    for (sink, mut functions) in plan.agreed(|t| t.sink) {
        functions.retain(|f| !only_kernel::sink_forbidden(*f));
        if sink && !functions.is_empty() {
            changed |= noted("sink", &functions, sink::run(&functions));
        }
    }
    // After sink, on the optimized kernel body: its own values only, never
    // its callees' (they are inlined by now or shared with other kernels).
    for (kernel, t) in plan.decided() {
        if let Some(slots) = t.lds_spill {
            changed |= noted(&format!("lds-spill={slots}"), &[kernel], lds_spill::run_on(module, kernel, slots));
        }
    }
    changed
}

/// The option wins over the environment; empty means not given.
fn decisions_path(options: &RunOptions) -> Option<PathBuf> {
    if let Some(p) = options.decisions.as_deref().filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    std::env::var_os(DECISIONS_ENV).filter(|p| !p.is_empty()).map(PathBuf::from)
}

/// The db at `path`, read once per process (per version of the file: clang
/// runs the host and device jobs, and both phases, in one process). A
/// missing file is an empty db, as `Db::load` has it.
fn load(path: &Path) -> Option<Arc<Db>> {
    type Cache = Mutex<HashMap<(PathBuf, Option<SystemTime>), Option<Arc<Db>>>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let stamp = std::fs::metadata(path).and_then(|m| m.modified()).ok();
    let key = (path.to_path_buf(), stamp);
    let cache = CACHE.get_or_init(Default::default);
    // A poisoned lock only means another thread panicked mid-insert.
    let mut cache = cache.lock().unwrap_or_else(|e| e.into_inner());
    cache
        .entry(key)
        .or_insert_with(|| match Db::load(path) {
            Ok(db) => Some(Arc::new(db)),
            Err(e) => {
                warn_once(&format!("{e}; compiling without regtune decisions"));
                None
            }
        })
        .clone()
}

/// With `REGTUNE_VERBOSE` set, say on stderr what a transform changed, so
/// a build log shows which decisions took effect.
fn noted(what: &str, functions: &[FunctionValue<'_>], changed: bool) -> bool {
    if changed && verbose() {
        let names: Vec<String> = functions.iter().map(|f| ir::symbol(*f)).collect();
        eprintln!("regtune: {what} changed {}", names.join(" "));
    }
    changed
}

fn note(message: &str, changed: bool) -> bool {
    if changed && verbose() {
        eprintln!("regtune: {message}");
    }
    changed
}

fn verbose() -> bool {
    regtune_decisions::plugin::verbose()
}

/// One `regtune: warning: ...` line per distinct message and process.
fn warn_once(message: &str) {
    static SEEN: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    let mut seen = SEEN.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    if seen.insert(message.to_string()) {
        eprintln!("regtune: warning: {message}");
    }
}

/// Who gets what: each kernel's transforms, and which kernels reach each
/// function.
struct Plan<'ctx> {
    kernels: Vec<FunctionValue<'ctx>>,
    /// Per kernel; `Transforms::default()` (plain) without an entry.
    transforms: Vec<Transforms>,
    reached_by: HashMap<FunctionValue<'ctx>, BTreeSet<usize>>,
    /// Every defined function, in module order, for a stable output.
    functions: Vec<FunctionValue<'ctx>>,
}

impl<'ctx> Plan<'ctx> {
    fn new(module: &Module<'ctx>, db: &Db, input_hash: Option<&str>) -> Self {
        let kernels = ir::kernels(module);
        let transforms = kernels.iter().map(|k| decide(db, *k, input_hash).unwrap_or_default()).collect();
        let reached_by = ir::reaching_kernels(&kernels);
        Plan { kernels, transforms, reached_by, functions: ir::defined_functions(module) }
    }

    /// The kernels with a non-empty decision.
    fn decided(&self) -> impl Iterator<Item = (FunctionValue<'ctx>, &Transforms)> {
        self.kernels.iter().copied().zip(self.transforms.iter()).filter(|(_, t)| !t.is_empty())
    }

    /// The functions `symbol` reaches that another kernel reaches with a
    /// different `pick`: after that kernel is dropped, they must still not
    /// get the transform.
    fn disagreeing_with<T: PartialEq>(&self, symbol: &str, pick: impl Fn(&Transforms) -> T) -> Vec<FunctionValue<'ctx>> {
        let Some(kept) = self.kernels.iter().position(|k| ir::symbol(*k) == symbol) else {
            return vec![];
        };
        let value = pick(&self.transforms[kept]);
        self.functions
            .iter()
            .filter(|f| {
                self.reached_by.get(*f).is_some_and(|ks| ks.contains(&kept) && ks.iter().any(|&k| pick(&self.transforms[k]) != value))
            })
            .copied()
            .collect()
    }

    /// The functions every reaching kernel decided the same `pick` for,
    /// grouped by that value.
    fn agreed<T: PartialEq>(&self, pick: impl Fn(&Transforms) -> T) -> Vec<(T, Vec<FunctionValue<'ctx>>)> {
        let mut groups: Vec<(T, Vec<FunctionValue<'ctx>>)> = Vec::new();
        for f in &self.functions {
            let Some(kernels) = self.reached_by.get(f) else {
                continue; // no kernel reaches it: nobody decided
            };
            let mut values = kernels.iter().map(|&k| pick(&self.transforms[k]));
            let Some(first) = values.next() else {
                continue;
            };
            if !values.all(|v| v == first) {
                continue;
            }
            match groups.iter_mut().find(|(v, _)| *v == first) {
                Some((_, fs)) => fs.push(*f),
                None => groups.push((first, vec![*f])),
            }
        }
        groups
    }
}

/// The transforms the db decided for `kernel` on its target, if any.
fn decide(db: &Db, kernel: FunctionValue<'_>, input_hash: Option<&str>) -> Option<Transforms> {
    let symbol = ir::symbol(kernel);
    let arch = ir::string_attribute(kernel, "target-cpu")?;
    let entries: Vec<_> = db.lookup(&symbol, &arch, input_hash).collect();
    let first = entries.first()?.effective();
    if entries.iter().any(|e| e.effective() != first) {
        warn_once(&format!(
            "{} entries for kernel {symbol} on {arch} disagree (set {INPUT_HASH_ENV} to pick one); \
             compiling it without regtune decisions",
            entries.len()
        ));
        return None;
    }
    Some(valid(first, &symbol))
}

/// Drop values the backend would reject (a build must not fail on a db).
fn valid(mut t: Transforms, symbol: &str) -> Transforms {
    let drop = |what: &str, v: u32| warn_once(&format!("ignoring {what}={v} for kernel {symbol}: out of range"));
    if let Some(n) = t.unroll_cap.filter(|n| *n == 0) {
        drop("unroll-cap", n);
        t.unroll_cap = None;
    }
    if let Some(w) = t.waves_per_eu.filter(|w| *w == 0) {
        drop("waves-per-eu", w);
        t.waves_per_eu = None;
    }
    if let Some(w) = t.warps_per_sm.filter(|w| *w == 0) {
        drop("warps-per-sm", w);
        t.warps_per_sm = None;
    }
    if let Some(b) = t.launch_bounds.filter(|b| *b == 0 || *b > MAX_BLOCK) {
        drop("launch-bounds", b);
        t.launch_bounds = None;
    }
    // nvcc's flag for a whole file (tune --compiler nvcc's candidates): no pass spells it.
    if let Some(r) = t.maxrregcount.take() {
        warn_once(&format!("ignoring maxrregcount={r} for kernel {symbol}: nvcc's -maxrregcount for a whole file, which no pass applies"));
    }
    t
}
