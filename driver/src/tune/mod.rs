//! `regtune tune`: per file and target, run the frontend once, search each
//! kernel's variants with the backend in the loop, keep the minimal set that
//! helps, verify the kept sets together, and record them in the decisions db.
//!
//! One job a file: `run.rs` fans the files out, checks each file's kept
//! sets together and writes the db; `kernel.rs` runs one kernel's phases
//! (what is searched, applied, suggested, and the measured search's
//! candidates); `transforms/` is each transform's home (what is tried of
//! it, applied unasked, suggested, held and why, and what a suggestion
//! says of it); `messages.rs` says why a kernel ended as it did; `diff.rs`
//! the listings (`--diff`, and the cost model's).

mod diff;
mod kernel;
mod messages;
mod run;
mod transforms;

use std::path::PathBuf;
use std::time::Duration;

use regtune_decisions::{Entry, Reason, Transforms, Usage};
use serde::Serialize;

use crate::evidence::Evidence;
use crate::gpu::Limiter;
use crate::names;
use crate::output::Tabular;
use crate::report::KernelReport;
use crate::search::Objective;

pub(crate) use diff::profile;
pub use run::run;
pub(crate) use run::{tune_linked, tune_unit, tune_unit_session};

/// Whether noalias (an assumption about the caller) is tried and applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Noalias {
    Off,
    /// Measure and report, never apply (the default).
    Suggest,
    Apply,
}

/// Whether pow2 may rewrite library pows that are not correctly rounded
/// (ocml's, libdevice's `__nv_pow`) where the call has no `afn`. Exact
/// rewrites, and any rewrite under `afn`, are always tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pow2 {
    Off,
    /// Measure and report, never apply (the default).
    Suggest,
    Apply,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockSize {
    /// Leave the launch bounds alone.
    Unset,
    /// The user states every launch uses at most N threads: apply it.
    Given(u32),
    /// Infer from the file's launch sites and only suggest.
    Auto,
}

impl BlockSize {
    /// The block size the user stated (`--block-size N`), if any.
    pub(crate) fn stated(self) -> Option<u32> {
        match self {
            BlockSize::Given(n) => Some(n),
            _ => None,
        }
    }
}

impl std::str::FromStr for BlockSize {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s == "auto" {
            return Ok(BlockSize::Auto);
        }
        match s.parse::<u32>() {
            Ok(n) if (1..=1024).contains(&n) => Ok(BlockSize::Given(n)),
            _ => Err(format!("`{s}` is not a block size: use 1..1024 or `auto`")),
        }
    }
}

pub struct Options {
    pub objective: Objective,
    pub noalias: Noalias,
    pub pow2: Pow2,
    pub block_size: BlockSize,
    pub allow_scratch: bool,
    pub diff: bool,
    /// How many noalias candidates to try, in the heuristic's order.
    pub noalias_candidates: usize,
    /// The longest one variant may compile [default: max(5 s, 10× the
    /// file's plain compile)].
    pub variant_timeout: Option<Duration>,
    /// The longest a file's search may run [default: 8× its plain compile].
    pub time_budget: Option<Duration>,
    /// Where to keep each decided kernel's candidate code objects (plain,
    /// decided, suggested) for `regtune measure`; None: nowhere.
    pub code_dir: Option<PathBuf>,
    /// Keep, beside the candidates, each CUDA file's plain build by the
    /// other compiler (clang's when tuning nvcc's code, nvcc's, where one is
    /// installed, when tuning clang's): `regtune measure` times it and says
    /// whether it is faster, never choosing it.
    pub other_compiler: bool,
    /// Builds per kernel for `regtune measure` to choose from (the decision
    /// and suggestions count; [`crate::candidates`] adds the rest); 0: none.
    pub candidates: usize,
    /// What GPUs showed of each class of transform: the default applies
    /// unasked only what never lost ([`crate::evidence`]).
    pub evidence: Evidence,
}

impl Options {
    /// What measuring a build needs of these options: the block size the
    /// user stated (NVPTX occupancy is computed for it).
    pub(crate) fn measure_options(&self) -> crate::gpu::resources::Options {
        crate::gpu::resources::Options { block_size: self.block_size.stated() }
    }
}

/// One kernel's tuning result: the report's keys (with the usage after
/// tuning) plus before/after, what was applied and what is only suggested.
#[derive(Debug, Clone, Serialize)]
pub struct KernelTuning {
    #[serde(flatten)]
    pub report: KernelReport,
    pub before: Usage,
    pub after: Usage,
    pub applied: Vec<String>,
    pub suggested: Vec<String>,
    /// Why it was applied, suggested or left: "raises-occupancy",
    /// "removes-spills", "trades-ilp", "changes-rounding", ...
    pub reason: Reason,
    /// Why each suggested transform waits for the user.
    pub suggestion_reasons: Vec<Reason>,
    /// One line of why.
    pub why: String,
    /// What each suggestion would do, and what to check before accepting it.
    pub suggestions: Vec<String>,
    /// Variants compiled for this kernel.
    pub variants: usize,
    /// Variants stopped at the time limit (labels).
    pub timed_out: Vec<String>,
    /// The file's time budget ended this kernel's search early.
    pub budget_reached: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// What limited occupancy before tuning (`report.limiter` is after).
    #[serde(skip)]
    pub limiter_before: Limiter,
    /// The measured search's builds for `regtune measure` (labels), and
    /// those past `--candidates` or the time budget.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub candidates: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<String>,
    /// Every variant compiled for this kernel, for `batch --record-all`.
    #[serde(skip)]
    pub measured: Vec<Measurement>,
    #[serde(skip)]
    pub(crate) entry: Entry,
}

/// One variant compile of one kernel: its transforms, the usage the backend
/// reported (None: it did not build), how it ended and its wall time.
#[derive(Debug, Clone, Serialize)]
pub struct Measurement {
    pub transforms: Transforms,
    pub usage: Option<Usage>,
    pub status: VariantStatus,
    pub seconds: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum VariantStatus {
    #[serde(rename = "ok")]
    Ok,
    /// clang or ptxas failed on it.
    #[serde(rename = "failed")]
    Failed,
    /// Stopped at the variant time limit.
    #[serde(rename = "timed out")]
    TimedOut,
    /// Stopped because the file's time budget ended.
    #[serde(rename = "budget reached")]
    BudgetReached,
}

impl Tabular for KernelTuning {
    fn header() -> Vec<&'static str> {
        vec!["kernel", "arch", "VGPR", "spills", "occupancy", "applied", "suggested", "why"]
    }

    fn cells(&self) -> Vec<String> {
        let (b, a) = (&self.before, &self.after);
        let arrow = |x: u32, y: u32| if x == y { x.to_string() } else { format!("{x} → {y}") };
        let list = |v: &[String]| if v.is_empty() { "-".to_string() } else { v.join(", ") };
        vec![
            names::short_name(&self.report.name).to_string(),
            self.report.arch.clone(),
            arrow(b.vgpr, a.vgpr),
            arrow(b.vgpr_spills + b.sgpr_spills, a.vgpr_spills + a.sgpr_spills),
            match &self.report.nvidia {
                Some(n) => format!("{} @{} ({})", arrow(b.occupancy, a.occupancy), n.block_size, n.block_size_from),
                None => arrow(b.occupancy, a.occupancy),
            },
            list(&self.applied),
            list(&self.suggested),
            self.why.clone(),
        ]
    }
}
