//! What `regtune measure` hands the interposer (the plan) and what it gets
//! back (one JSON line per event), both in the run directory named by
//! `REGTUNE_MEASURE_DIR`.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The variable naming the run directory (plan.json in, events.jsonl out).
pub const DIR_ENV: &str = "REGTUNE_MEASURE_DIR";
pub const PLAN_FILE: &str = "plan.json";
pub const EVENTS_FILE: &str = "events.jsonl";
/// The replayer's stderr, for diagnosis; never the program's.
pub const REPLAY_LOG: &str = "replay.log";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// Launches to measure per kernel (the first N).
    pub launches: u32,
    /// The most timed runs of each candidate per launch (fewer once its
    /// time over plain's is settled).
    pub runs: u32,
    /// Seconds of replay per kernel, over all its launches; fewer runs
    /// when the candidates would take longer (at least three). 0: no limit.
    #[serde(default)]
    pub budget_s: f64,
    /// The `regtune-replay` executable.
    pub replayer: PathBuf,
    pub kernels: Vec<PlanKernel>,
    /// What a launch's copy holds besides what its arguments point to.
    #[serde(default)]
    pub capture: Capture,
    /// A run of the program that replays nothing and times every launch
    /// of these kernels, running plain's code or their replay's choice on
    /// every one ([`WholeRun`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub whole_runs: Vec<WholeRun>,
}

/// A kernel whose replay's choice the program launched too few times after
/// the replay to confirm there: in this run of the program every launch of
/// it runs plain's code (the program's own, `choice` false) or the choice's
/// swapped in (`choice` true), each timed by CUPTI's activity records; the
/// driver pairs whole runs as the interposer pairs launches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WholeRun {
    pub symbol: String,
    pub key: String,
    /// The replay's choice (its candidate's name) and its code object.
    pub candidate: String,
    pub path: PathBuf,
    pub choice: bool,
}

/// Allocations a launch may reach through pointers stored in device
/// memory (or in the module's variables), besides those its arguments
/// name: found by following every aligned word of the copied bytes that
/// points into a live allocation, allocation by allocation; or every
/// allocation the program has live (`all`). Both within `budget_bytes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capture {
    #[serde(default)]
    pub all: bool,
    /// The most bytes copied beyond the arguments' allocations, per launch.
    #[serde(default = "default_capture_budget")]
    pub budget_bytes: u64,
}

/// 4 GiB: the replayer holds two copies of it.
pub const DEFAULT_CAPTURE_BUDGET: u64 = 4 << 30;

fn default_capture_budget() -> u64 {
    DEFAULT_CAPTURE_BUDGET
}

impl Default for Capture {
    fn default() -> Capture {
        Capture { all: false, budget_bytes: DEFAULT_CAPTURE_BUDGET }
    }
}

/// One db entry: a kernel, its target, and the code objects to compare.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanKernel {
    /// Mangled name, as the program's launches name it.
    pub symbol: String,
    /// The db entry's key.
    pub key: String,
    /// "sm_90", "gfx90a": only launches on such a GPU are measured.
    pub arch: String,
    /// The plain build first (the reference), then the others.
    pub candidates: Vec<PlanCandidate>,
    /// The kernel's explicit parameters (AMDGPU, from the code object's
    /// metadata); CUDA asks the driver instead.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub params: Vec<Param>,
    /// The candidates the build may use (what the user allows), by name,
    /// with their transforms: after the replay the interposer chooses among
    /// them by the db's rule and confirms the choice on the program's own
    /// launches (confirm.rs). Empty: nothing is confirmed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<Choice>,
    /// The control's name (plain's code loaded again): its least gain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control: Option<String>,
}

/// A candidate the build may use.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Choice {
    pub name: String,
    pub transforms: regtune_decisions::Transforms,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanCandidate {
    /// "plain", "decided", "suggested" (then a number when several).
    pub name: String,
    /// A cubin or AMDGPU code object holding the kernel.
    pub path: PathBuf,
}

/// One kernel parameter in the launch's argument buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Param {
    pub offset: u64,
    pub size: u64,
}

/// The grid, block and dynamic shared memory of a launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchConfig {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_bytes: u32,
    /// A cooperative launch (`cuLaunchCooperativeKernel`, or the
    /// cooperative attribute): every block resident at once, for grid-wide
    /// sync. The replayer launches it so too.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cooperative: bool,
}

impl LaunchConfig {
    pub fn threads_per_block(&self) -> u64 {
        self.block.iter().map(|&b| b as u64).product()
    }

    pub fn blocks(&self) -> u64 {
        self.grid.iter().map(|&g| g as u64).product()
    }
}

/// What happened inside the program, one JSON line each.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// The interposer was loaded into the program.
    Started { pid: u32, vendor: String },
    /// The first launch of a kernel the plan does not name.
    Unplanned { symbol: String },
    /// A planned kernel launched on a GPU of another target.
    OtherTarget { symbol: String, device: String, arch: String },
    /// One launch, replayed.
    Measured(LaunchResult),
    /// A launch that could not be measured; measuring that kernel stops.
    Failed { symbol: String, key: String, message: String },
    /// Something about some of a kernel's launches, measuring goes on (they
    /// ran unmeasured, or unmeasured in part): `launches` so far. Written
    /// again as the count grows (1, 2, 4, ... and at exit); the last says it all.
    Note { symbol: String, message: String, launches: u64 },
    /// The replay's choice for a kernel, timed on the program's own
    /// launches after the replay (confirm.rs).
    Confirmed(Confirmed),
}

/// The program's launches of a kernel after its replay, plain's code and
/// the replay's choice on alternate ones of the same grid, block and
/// shared memory, each timed by CUPTI's activity records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Confirmed {
    pub symbol: String,
    pub key: String,
    /// The candidate swapped in (the replay's choice).
    pub candidate: String,
    /// Launches of the kernel after the replay (timed or not).
    pub launches: u64,
    /// Pair by pair, milliseconds: plain's launch and the choice's.
    pub plain_ms: Vec<f64>,
    pub choice_ms: Vec<f64>,
    /// Registers per thread CUPTI's records showed for plain's launches
    /// and the choice's (the first pair's): whether the swap took.
    #[serde(default)]
    pub registers: [Option<u16>; 2],
    /// Why there is no figure, or why it is partial (None: confirmed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// The times are of whole runs of the program ([`WholeRun`]): from one
    /// run, every launch's (plain's or the choice's alone); combined by the
    /// driver, each pair's total per run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub whole_runs: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaunchResult {
    pub symbol: String,
    pub key: String,
    /// "NVIDIA H100 80GB HBM3 (sm_90, driver 580.159.04)".
    pub device: String,
    pub launch: LaunchConfig,
    /// Allocations the launch can reach, and their bytes.
    pub ranges: usize,
    pub bytes: u64,
    /// Of those, allocations reached through pointers stored in device
    /// memory or the module's variables (or, with `capture.all`, every
    /// other live one).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reached: usize,
    /// The module's `__device__` and `__constant__` variables copied (and compared).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub globals: usize,
    /// What the copy left out and why (over the capture budget, a
    /// variable the program's module lacks), one line each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    pub replayed: Replayed,
    /// The program's own launch left the plain candidate's bytes (None:
    /// not compared).
    pub program_identical: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program_difference: Option<String>,
}

/// The replayer's answer for one launch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Replayed {
    pub candidates: Vec<CandidateResult>,
    /// The plain build's first and last runs left the same bytes.
    pub deterministic: bool,
    /// Kernel launches the replay made.
    pub launches: u32,
    /// Why the replay ran on memory of its own, the pointers moved to it,
    /// rather than at the program's own addresses (None: it ran at the
    /// program's addresses, the argument buffer unchanged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relocated: Option<String>,
    /// Relocated: the pointers stored in the copied memory and the module's
    /// variables that were moved to the replayer's copies (every aligned
    /// word that pointed into a copied allocation).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub moved: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CandidateResult {
    pub name: String,
    /// One per timed run, milliseconds (events).
    pub times_ms: Vec<f64>,
    pub identical: bool,
    /// Where it first differs from plain, when it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub difference: Option<String>,
    /// Why it did not run: refused, failed to load, faulted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A kernel's replayed launches (`results`), read for the db: plain's
/// rounds (the build named `plain`) once, every build against them. The
/// driver's report and the interposer's choice before confirming
/// (`confirm::choose`) both read the launches through it.
pub struct Launches<'a, R> {
    results: &'a [R],
    plain: &'a str,
    plain_rounds: Option<Vec<Vec<f64>>>,
}

impl<'a, R: std::borrow::Borrow<LaunchResult>> Launches<'a, R> {
    pub fn new(results: &'a [R], plain: &'a str) -> Launches<'a, R> {
        let mut launches = Launches { results, plain, plain_rounds: None };
        launches.plain_rounds = launches.rounds(plain);
        launches
    }

    fn all(&self) -> impl Iterator<Item = &LaunchResult> + '_ {
        self.results.iter().map(|r| r.borrow())
    }

    /// Each launch's timed rounds of one build, when every launch ran it.
    fn rounds(&self, name: &str) -> Option<Vec<Vec<f64>>> {
        self.all().map(|r| r.replayed.candidates.iter().find(|c| c.name == name).map(|c| c.times_ms.clone())).collect()
    }

    /// Plain's fewest timed rounds over the launches.
    pub fn plain_runs(&self) -> u32 {
        self.all().map(|r| r.replayed.candidates.iter().find(|c| c.name == self.plain).map_or(0, |c| c.times_ms.len())).min().unwrap_or(0)
            as u32
    }

    /// One build's measurement, as the db keeps it: its time, the sum of
    /// each launch's median and spread (launches of one kernel can differ
    /// in size); its time over plain's round by round; identical when every
    /// launch ran it and left plain's bytes. An error, its own or `fault`,
    /// leaves no time.
    pub fn candidate(
        &self,
        name: &str,
        transforms: &regtune_decisions::Transforms,
        fault: Option<String>,
    ) -> regtune_decisions::measured::Candidate {
        use regtune_decisions::measured::{Candidate, Paired, Timing};
        let mine: Vec<&CandidateResult> = self.all().filter_map(|r| r.replayed.candidates.iter().find(|c| c.name == name)).collect();
        let per_launch: Option<Vec<Timing>> = mine.iter().map(|c| Timing::of(&c.times_ms)).collect();
        let time = per_launch
            .filter(|t| !t.is_empty() && t.len() == self.results.len())
            .map(|t| Timing { median_ms: t.iter().map(|t| t.median_ms).sum(), spread_ms: t.iter().map(|t| t.spread_ms).sum() });
        let error = fault.or_else(|| mine.iter().find_map(|c| c.error.clone()));
        let paired = self.plain_rounds.as_ref().zip(self.rounds(name)).and_then(|(plain, mine)| Paired::of(&mine, plain));
        Candidate {
            transforms: transforms.clone(),
            time: if error.is_some() { None } else { time },
            identical: !mine.is_empty() && mine.len() == self.results.len() && mine.iter().all(|c| c.identical),
            paired: if error.is_some() { None } else { paired },
            error,
            code: None,
        }
    }
}

impl Plan {
    pub fn load(path: &Path) -> Result<Plan, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        serde_json::from_str(&text).map_err(|e| format!("{} is not a measure plan: {e}", path.display()))
    }

    pub fn save(&self, path: &Path) -> Result<(), String> {
        let text = serde_json::to_string_pretty(self).expect("plan serializes");
        std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
    }
}

/// Appends events, one line each, flushed at once: a program that exits
/// early (or crashes) loses nothing already measured.
pub struct EventLog {
    file: File,
}

impl EventLog {
    pub fn open(path: &Path) -> Result<EventLog, String> {
        let file = OpenOptions::new().create(true).append(true).open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        Ok(EventLog { file })
    }

    pub fn write(&mut self, event: &Event) {
        let mut line = serde_json::to_string(event).expect("event serializes");
        line.push('\n');
        // One write per line (O_APPEND): lines from several processes never interleave.
        let _ = self.file.write_all(line.as_bytes());
    }
}

/// Every event in a log; a torn last line (the program was killed
/// mid-write) is skipped.
pub fn read_events(path: &Path) -> Result<Vec<Event>, String> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    Ok(BufReader::new(file).lines().map_while(Result::ok).filter_map(|l| serde_json::from_str(&l).ok()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_round_trips_and_a_bad_plan_names_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let plan = Plan {
            launches: 1,
            runs: 10,
            budget_s: 5.0,
            replayer: "regtune-replay".into(),
            kernels: vec![PlanKernel {
                symbol: "_Z1kPd".into(),
                key: "sm_90/_Z1kPd/h".into(),
                arch: "sm_90".into(),
                candidates: vec![PlanCandidate { name: "plain".into(), path: "p.cubin".into() }],
                params: vec![],
                choices: vec![],
                control: None,
            }],
            capture: Capture { all: true, budget_bytes: 1 << 20 },
            whole_runs: vec![],
        };
        let path = dir.path().join(PLAN_FILE);
        plan.save(&path).unwrap();
        assert_eq!(Plan::load(&path).unwrap(), plan);
        // A plan written before `capture` was there reads with the defaults.
        let mut old: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        old.as_object_mut().unwrap().remove("capture");
        std::fs::write(&path, old.to_string()).unwrap();
        assert_eq!(Plan::load(&path).unwrap().capture, Capture::default());
        std::fs::write(&path, "{").unwrap();
        assert!(Plan::load(&path).unwrap_err().starts_with(&format!("{} is not a measure plan", path.display())));
    }

    #[test]
    fn events_append_and_a_torn_line_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(EVENTS_FILE);
        assert!(read_events(&path).unwrap().is_empty());
        let mut log = EventLog::open(&path).unwrap();
        log.write(&Event::Started { pid: 1, vendor: "cuda".into() });
        log.write(&Event::Unplanned { symbol: "_Z1kv".into() });
        std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(b"{\"event\":\"meas").unwrap();
        let events = read_events(&path).unwrap();
        assert_eq!(events, [Event::Started { pid: 1, vendor: "cuda".into() }, Event::Unplanned { symbol: "_Z1kv".into() }]);
    }
}
