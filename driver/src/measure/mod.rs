//! `regtune measure`: runtime truth. Runs the user's own program with the
//! interposer (regtune-runtime) that sees every kernel launch; for the
//! first launches of each kernel the db has a decision or a suggestion for,
//! the replayer times the candidate code objects `tune` kept and compares
//! their bytes with the plain build's, on a copy of the memory the launch
//! reaches; then the program's own launch runs on its untouched memory.
//! The measurements go into the db (`measured`), where the decision rule
//! ([`regtune_decisions::Entry::effective`]) uses them.
//!
//! (`gpu::resources` is the other measurement: registers and occupancy of
//! a compile. This one is time and bytes on a GPU.)

pub mod code;
pub mod plan;
pub(crate) mod results;
mod whole_runs;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, ExitStatus};
use std::time::Instant;

use regtune_decisions::Db;
use regtune_runtime::plan as wire;

use crate::output::{self, Format};

pub struct Options {
    pub db: PathBuf,
    pub launches: u32,
    pub runs: u32,
    /// Seconds of replay per kernel (0: no limit).
    pub budget: f64,
    /// The user's own builds to time beside the candidates (label, code
    /// object): reported, never chosen.
    pub compare: Vec<(String, PathBuf)>,
    /// What a measured launch's copy takes besides its arguments' allocations.
    pub capture: wire::Capture,
    pub format: Format,
    pub output: Option<PathBuf>,
    /// Check the db, the candidates and the tools, print the plan; run nothing.
    pub dry_run: bool,
    /// Keep the plan, the interposer's events and the replayer's log here.
    pub keep: Option<PathBuf>,
    /// Decide again from a run kept with `keep` (its events), running
    /// nothing: after a change of the rule, or to read a report again.
    pub from: Option<PathBuf>,
    /// Seconds the program's whole runs may take, together, where a
    /// kernel's launches after its replay are too few to confirm its
    /// choice ([`whole_runs`]); 0: none.
    pub whole_run_budget: f64,
    /// The program and its arguments.
    pub program: Vec<OsString>,
}

/// The interposer library and the replayer, beside the regtune binary
/// (cargo puts them all in target/<profile>/), or its parent (tests).
struct Tools {
    interposer: PathBuf,
    replayer: PathBuf,
    cupti: Option<PathBuf>,
}

pub(crate) const INTERPOSER: &str = "libregtune_runtime.so";
pub(crate) const REPLAYER: &str = "regtune-replay";

impl Tools {
    fn find() -> Result<Tools, String> {
        let exe_dir = std::env::current_exe().ok().and_then(|e| e.parent().map(PathBuf::from)).unwrap_or_default();
        let dirs = [exe_dir.clone(), exe_dir.join("..")];
        let find = |name: &str| {
            dirs.iter()
                .map(|d| d.join(name))
                .find(|p| p.is_file())
                .ok_or_else(|| format!("{name} not found beside {}; build it with `cargo build --workspace`", exe_dir.display()))
        };
        let interposer = std::path::absolute(find(INTERPOSER)?).map_err(|e| e.to_string())?;
        let replayer = std::path::absolute(find(REPLAYER)?).map_err(|e| e.to_string())?;
        Ok(Tools { interposer, replayer, cupti: cupti() })
    }
}

/// CUPTI for the interposer: `$REGTUNE_CUPTI` (left to the interposer), a
/// real toolkit's `extras/CUPTI`, or the one `ci/bootstrap.sh` assembles.
fn cupti() -> Option<PathBuf> {
    if std::env::var_os(regtune_runtime::cupti::CUPTI_ENV).is_some() {
        return None;
    }
    crate::toolchain::cuda::Cuda::candidates()
        .into_iter()
        .flat_map(|root| {
            ["lib64/libcupti.so.12", "extras/CUPTI/lib64/libcupti.so.12", "extras/CUPTI/lib64/libcupti.so"].map(|l| root.join(l))
        })
        .find(|p| p.is_file())
}

fn describe(program: &[OsString]) -> String {
    program.first().map(|p| p.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Run the program under measurement and report. Errors are one line;
/// bad input (db, tools, nothing to measure) stops before the program runs.
/// What to measure in `db`, with `replayer` for the replays; Err where it
/// holds nothing to measure, or no code objects for it.
fn planned(o: &Options, db: &Db, code_dir: &Path, replayer: PathBuf) -> Result<plan::Planned, String> {
    let settings =
        plan::Settings { launches: o.launches, runs: o.runs, budget_s: o.budget, replayer, compare: o.compare.clone(), capture: o.capture };
    let planned = plan::build(db, code_dir, &settings);
    if planned.plan.kernels.is_empty() {
        return Err(if planned.missing.is_empty() {
            format!("{} has no kernel with a decision or a suggestion to measure; run `regtune tune` first", o.db.display())
        } else {
            format!(
                "{} has no candidate code objects for {} in {}; run `regtune tune` again to keep them",
                o.db.display(),
                planned.missing.join(", "),
                code_dir.display()
            )
        });
    }
    Ok(planned)
}

pub fn run(o: &Options) -> Result<ExitCode, String> {
    // The measurements go back into the db: it must be writable before the program runs.
    let db = Db::load_for_update(&o.db).map_err(|e| e.to_string())?;
    // A db that is not there loads empty; say so rather than that it has nothing to measure.
    if !o.db.exists() {
        return Err(format!("decisions db {} does not exist; run `regtune tune --db {}` first", o.db.display(), o.db.display()));
    }
    let code_dir = code::dir(&o.db);
    // A kept run needs none of the tools: nothing runs.
    if let Some(dir) = &o.from {
        let planned = planned(o, &db, &code_dir, PathBuf::new())?;
        return from_kept(o, dir, &planned, &code_dir, db);
    }
    let tools = Tools::find()?;
    let planned = planned(o, &db, &code_dir, tools.replayer.clone())?;
    let program = describe(&o.program);
    let nvidia = planned.plan.kernels.iter().any(|k| k.arch.starts_with("sm_"));
    let amd = planned.plan.kernels.iter().any(|k| k.arch.starts_with("gfx"));
    if o.dry_run {
        for k in &planned.plan.kernels {
            let names: Vec<&str> = k.candidates.iter().map(|c| c.name.as_str()).collect();
            eprintln!("would measure {} on {}: {}", k.symbol, k.arch, names.join(", "));
        }
        for note in left_out(&db, planned.candidates.keys()) {
            eprintln!("{note}");
        }
        eprintln!("interposer {}, replayer {}", tools.interposer.display(), tools.replayer.display());
        return Ok(ExitCode::SUCCESS);
    }

    // A GPU to measure on, else the program runs as it would without us.
    let gpu = if nvidia { regtune_runtime::cuda::probe() } else { regtune_runtime::hip::probe() };
    let temp = tempfile::tempdir().map_err(|e| format!("cannot create a temporary directory: {e}"))?;
    let run_dir = match &o.keep {
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
            let _ = std::fs::remove_file(dir.join(wire::EVENTS_FILE));
            std::path::absolute(dir).map_err(|e| e.to_string())?
        }
        None => temp.path().to_path_buf(),
    };
    planned.plan.save(&run_dir.join(wire::PLAN_FILE))?;
    let as_given = || {
        let mut cmd = Command::new(&o.program[0]);
        cmd.args(&o.program[1..]);
        cmd
    };
    // The program under the interposer, reading its plan from and writing its events to `dir`.
    let interposed = |dir: &Path| {
        let mut cmd = as_given();
        cmd.env(wire::DIR_ENV, dir);
        if nvidia {
            cmd.env("CUDA_INJECTION64_PATH", &tools.interposer);
            if let Some(c) = &tools.cupti {
                cmd.env(regtune_runtime::cupti::CUPTI_ENV, c);
            }
        }
        if amd {
            let mut preload = OsString::from(&tools.interposer);
            if let Some(old) = std::env::var_os("LD_PRELOAD").filter(|p| !p.is_empty()) {
                preload.push(":");
                preload.push(old);
            }
            cmd.env("LD_PRELOAD", preload);
        }
        cmd
    };
    let mut cmd = if gpu.is_ok() { interposed(&run_dir) } else { as_given() };
    let start = Instant::now();
    let status = cmd.status().map_err(|e| format!("cannot run {program}: {e}"))?;
    let seconds = start.elapsed().as_secs_f64();

    let mut events = wire::read_events(&run_dir.join(wire::EVENTS_FILE))?;
    let mut whole_notes = vec![];
    let wanted = whole_runs::wanted(&events, &planned.plan, &kept(&db, &planned, &events));
    if gpu.is_ok() && status.success() && o.whole_run_budget > 0.0 && !wanted.is_empty() {
        let names: Vec<String> = wanted.iter().map(|w| crate::names::short(&w.symbol)).collect();
        eprintln!(
            "regtune measure: {} launched too few times after the replay to confirm there: timing the choice over {} whole runs of {program}, plain's code and the choice's in turn (at most {:.0} s, --whole-run-budget; their output in {})",
            names.join(", "),
            2 * regtune_runtime::confirm::MIN_PAIRS,
            o.whole_run_budget,
            run_dir.join("whole-runs").display()
        );
        let runner = whole_runs::Runner { command: &interposed, plan: &planned.plan, dir: &run_dir, budget_s: o.whole_run_budget };
        let (combined, stopped) = whole_runs::run(&runner, &wanted);
        // Kept with the run's events, so that `--from` decides the same.
        let mut log = wire::EventLog::open(&run_dir.join(wire::EVENTS_FILE))?;
        for c in combined {
            let event = wire::Event::Confirmed(c);
            log.write(&event);
            events.push(event);
        }
        whole_notes.extend(stopped);
    }
    let Decided { rows, mut notes, nothing: launched_nothing_planned, started, program_notes } =
        decide(o, &planned, &code_dir, db, &events)?;
    notes.extend(whole_notes);
    notes.push(format!("{program}: {}, {seconds:.3} s under regtune measure", exit_text(&status)));
    let error = match &gpu {
        Err(reason) => Some(format!("{reason}; {program} ran unmeasured")),
        Ok(_) if !started => Some(format!("{program} never initialised the GPU runtime; nothing measured")),
        Ok(_) if launched_nothing_planned && !program_notes => {
            Some(format!("{program} launched none of the {} kernels {} has candidates for", planned.plan.kernels.len(), o.db.display()))
        }
        Ok(_) if launched_nothing_planned => Some("nothing measured".to_string()),
        Ok(_) => None,
    };
    emit(&rows, &notes, o)?;
    if let Some(e) = &error {
        eprintln!("error: {e}");
    }
    Ok(match status.code() {
        Some(0) if error.is_some() => ExitCode::FAILURE,
        Some(0) => ExitCode::SUCCESS,
        Some(c) => ExitCode::from(c.clamp(1, 255) as u8),
        None => ExitCode::from(128 + signal(&status).unwrap_or(0).clamp(0, 127) as u8),
    })
}

/// Each entry's build the db's rule keeps from `events`' replays, where it
/// is not plain and it and the program's own launches left plain's bytes:
/// entry key to candidate name.
fn kept(db: &Db, planned: &plan::Planned, events: &[wire::Event]) -> std::collections::BTreeMap<String, String> {
    let collected = results::collect(events, &planned.candidates);
    collected
        .measured
        .iter()
        .filter_map(|(key, m)| {
            let entry = regtune_decisions::Entry { measured: Some(m.clone()), ..db.kernels.get(key)?.clone() };
            let t = entry.effective();
            let proven = m.candidate(&t).is_some_and(|c| c.identical) && m.program_identical == Some(true);
            if t.is_empty() || !proven {
                return None;
            }
            let name = planned.candidates.get(key)?.iter().find(|p| p.role == plan::Role::Candidate && p.transforms == t)?.name.clone();
            Some((key.clone(), name))
        })
        .collect()
}

/// `--from DIR`: the report of a run kept in `dir`, decided again.
fn from_kept(o: &Options, dir: &Path, planned: &plan::Planned, code_dir: &Path, db: Db) -> Result<ExitCode, String> {
    let events = kept_events(dir, planned)?;
    let decided = decide(o, planned, code_dir, db, &events)?;
    let mut notes = decided.notes;
    notes.push(format!("decided again from the run kept in {}; nothing ran", dir.display()));
    emit(&decided.rows, &notes, o)?;
    if decided.nothing {
        eprintln!("error: the run kept in {} measured none of the kernels {} has candidates for", dir.display(), o.db.display());
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// What a run's events decide: the report's rows and notes, the db updated.
struct Decided {
    rows: Vec<results::Row>,
    notes: Vec<String>,
    /// No kernel with candidates was measured.
    nothing: bool,
    /// The program initialised the GPU runtime under the interposer.
    started: bool,
    /// The interposer or replayer said something (a fault, a refusal).
    program_notes: bool,
}

/// Collect the events against the plan, write the measurements into the
/// db, and make the report.
fn decide(o: &Options, planned: &plan::Planned, code_dir: &Path, db: Db, events: &[wire::Event]) -> Result<Decided, String> {
    let collected = results::collect(events, &planned.candidates);
    let db = if collected.measured.is_empty() { db } else { merge(&o.db, code_dir, planned, &collected)? };
    let rows: Vec<results::Row> = collected
        .measured
        .iter()
        .filter_map(|(key, m)| Some(results::rows(db.kernels.get(key)?, m, collected.compared.get(key).map_or(&[], Vec::as_slice))))
        .flatten()
        .collect();
    let mut notes = collected.notes.clone();
    notes.extend(left_out(&db, collected.measured.keys()));
    notes.extend(unconfirmed(&db, &collected));
    if !collected.unplanned.is_empty() {
        let names: Vec<String> = collected.unplanned.iter().map(|s| crate::names::short(s)).collect();
        notes.push(format!("launched without candidates in {}: {}", o.db.display(), names.join(", ")));
    }
    Ok(Decided {
        rows,
        notes,
        nothing: collected.measured.is_empty(),
        started: collected.started,
        program_notes: !collected.notes.is_empty(),
    })
}

/// The events of a run kept with `--keep` in `dir`. Where its plan is
/// there too, each kernel's candidates must be the ones planned now, by
/// name (a re-tune since that proposes other builds; the times are not
/// theirs).
fn kept_events(dir: &Path, planned: &plan::Planned) -> Result<Vec<wire::Event>, String> {
    let events = dir.join(wire::EVENTS_FILE);
    if !events.is_file() {
        return Err(format!("{} has no {}: keep a run with `regtune measure --keep DIR`", dir.display(), wire::EVENTS_FILE));
    }
    let plan = dir.join(wire::PLAN_FILE);
    if plan.is_file() {
        let then = wire::Plan::load(&plan)?;
        // The user's own builds (`--compare`) may be given again or not.
        let names = |k: &wire::PlanKernel| {
            k.candidates.iter().filter(|c| !c.name.starts_with(plan::COMPARE)).map(|c| c.name.clone()).collect::<Vec<_>>()
        };
        for k in &then.kernels {
            let now = planned.plan.kernels.iter().find(|n| n.key == k.key);
            if now.is_some_and(|n| names(n) != names(k)) {
                return Err(format!(
                    "the run kept in {} timed other builds of {} than the db's candidates now (re-tuned since?): measure it again",
                    dir.display(),
                    crate::names::short_name(&crate::names::demangle(&k.symbol))
                ));
            }
        }
    }
    wire::read_events(&events)
}

/// One line per entry whose candidates tune left out (`--candidates`, or
/// its time budget), and one per entry with builds only an earlier run
/// timed.
fn left_out<'a>(db: &Db, keys: impl Iterator<Item = &'a String>) -> Vec<String> {
    let mut notes = vec![];
    for e in keys.filter_map(|k| db.kernels.get(k)) {
        let name = crate::names::short_name(&e.name);
        if !e.left_out.is_empty() {
            notes.push(format!(
                "{name}: {} more candidates left out by tune (--candidates or --time-budget): {}",
                e.left_out.len(),
                e.left_out.join(", ")
            ));
        }
        let Some(m) = e.measured.as_ref().filter(|m| !m.earlier.is_empty()) else { continue };
        let timed: Vec<String> = m
            .earlier
            .iter()
            .map(|c| match m.speedup(c) {
                Some(s) => format!("{} {s:.3}×", code::label(&c.transforms)),
                None => format!("{} (failed)", code::label(&c.transforms)),
            })
            .collect();
        let builds = if timed.len() == 1 { "build" } else { "builds" };
        notes.push(format!("{name}: {} {builds} an earlier run timed, not timed again: {}", timed.len(), timed.join(", ")));
    }
    notes
}

/// One line per kernel whose kept build the program's own launches never
/// timed because it launched the kernel no more after its replayed launches
/// (a single launch, as most of the corpus's programs): the replay's figure
/// decides. The build is the db's own choice, `Entry::effective`.
fn unconfirmed(db: &Db, collected: &results::Collected) -> Vec<String> {
    let mut notes = vec![];
    for (key, m) in collected.measured.iter().filter(|(k, _)| !collected.confirmed.contains(*k)) {
        let Some(e) = db.kernels.get(key) else { continue };
        let kept = e.effective();
        if kept.is_empty() {
            continue;
        }
        let replayed = if m.launches == 1 { "its 1 launch".to_string() } else { format!("its {} launches", m.launches) };
        notes.push(format!(
            "{}: `{}` not confirmed: no launch after {replayed} replayed; the replay's figure decides",
            crate::names::short_name(&e.name),
            code::label(&kept)
        ));
    }
    notes
}

/// Write the measurements into the db under its lock; an entry that a
/// tune changed meanwhile (other candidates) keeps no stale measurement.
fn merge(path: &Path, code_dir: &Path, planned: &plan::Planned, collected: &results::Collected) -> Result<Db, String> {
    Db::update(path, |db| {
        for (key, m) in &collected.measured {
            let Some(entry) = db.kernels.get_mut(key) else { continue };
            let now: Vec<plan::PlannedCandidate> = code::candidates(code_dir, entry)
                .into_iter()
                .map(|(name, transforms, p)| plan::PlannedCandidate {
                    name,
                    transforms,
                    code: code::hash_of(&p),
                    role: plan::Role::Candidate,
                })
                .collect();
            let then: Option<Vec<plan::PlannedCandidate>> =
                planned.candidates.get(key).map(|cs| cs.iter().filter(|c| c.role == plan::Role::Candidate).cloned().collect());
            if then.as_ref() == Some(&now) {
                entry.measured = Some(m.clone().with_earlier(entry.measured.as_ref()));
            }
        }
        db.clone()
    })
    .map_err(|e| e.to_string())
}

fn exit_text(status: &ExitStatus) -> String {
    match (status.code(), signal(status)) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(s)) => format!("killed by signal {s}"),
        _ => "ended".into(),
    }
}

fn signal(status: &ExitStatus) -> Option<i32> {
    std::os::unix::process::ExitStatusExt::signal(status)
}

/// The report goes to `-o FILE`, else stderr: the program's stdout stays
/// exactly its own.
fn emit(rows: &[results::Row], notes: &[String], o: &Options) -> Result<(), String> {
    let text = match o.format {
        Format::Json => {
            let doc = serde_json::json!({ "kernels": rows, "notes": notes });
            serde_json::to_string_pretty(&doc).expect("rows serialize") + "\n"
        }
        Format::Csv => output::render(rows, Format::Csv, "kernels"),
        Format::Table => {
            let mut t = if rows.is_empty() { String::new() } else { output::render(rows, Format::Table, "kernels") };
            for n in notes {
                t.push_str(n);
                t.push('\n');
            }
            t
        }
    };
    match &o.output {
        Some(path) => output::emit(&text, Some(path)).map_err(|e| e.to_string()),
        None => {
            eprint!("{text}");
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use regtune_decisions::measured::Measured;
    use regtune_decisions::Transforms;

    #[test]
    fn a_kept_build_the_program_never_launched_again_is_named() {
        let mut db = Db::default();
        db.kernels.insert("k".into(), plan::tests::entry("_Z1kv", Transforms { warps_per_sm: Some(32), ..Default::default() }));
        db.kernels.insert("p".into(), plan::tests::entry("_Z1pv", Transforms::default()));
        let measured: Measured =
            serde_json::from_value(serde_json::json!({"device": "d", "launches": 1, "runs": 3, "deterministic": true, "candidates": []}))
                .unwrap();
        let mut collected = results::Collected::default();
        collected.measured.insert("k".into(), measured.clone());
        collected.measured.insert("p".into(), measured);
        assert_eq!(
            unconfirmed(&db, &collected),
            ["_Z1kv: `warps-per-sm=32` not confirmed: no launch after its 1 launch replayed; the replay's figure decides"]
        );
        // Where the program's launches timed it (or tried to), nothing more is said here.
        collected.confirmed.insert("k".into());
        assert!(unconfirmed(&db, &collected).is_empty());
    }
}
