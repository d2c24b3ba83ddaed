//! The program's runs decide, where its launches cannot: a kernel launched
//! once (most of the corpus's programs) leaves no launch after its replay
//! to pair plain's code with the choice's, so the replay's figure would
//! decide alone, and a replay on memory restored before every run can read
//! otherwise than the program (lavaMD on an H200: 1.08× replayed, 1.03×
//! over whole runs, 1.05× by its own timer). Here the program runs again, whole, plain's code on every
//! launch of the kernel in one run and the choice's in the next (ABBA, so
//! drift cancels), every launch timed by CUPTI's activity records
//! (`regtune_runtime::confirm`); a pair is one run of each, its ratio their
//! totals', the same statistic as pairs of launches. The whole runs stop at
//! their time budget, said in one line.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use regtune_runtime::confirm::{MIN_PAIRS, UNTIMED};
use regtune_runtime::plan::{self as wire, Confirmed, Event, WholeRun};

/// The kernels whose kept build (`kept`: entry key to candidate name, the
/// db's rule over the first run's replay) the program's own launches did
/// not confirm for want of launches after the replay: never started (the
/// kernel launched no more than `--launches`), or too few pairs. Not those
/// whose confirmation failed. (Module variables are shared with the choice
/// in both: `regtune_runtime::confirm::Shared`.)
pub(crate) fn wanted(events: &[Event], plan: &wire::Plan, kept: &BTreeMap<String, String>) -> Vec<WholeRun> {
    let mut last: BTreeMap<&str, &Confirmed> = BTreeMap::new();
    for e in events {
        if let Event::Confirmed(c) = e {
            last.insert(&c.key, c);
        }
    }
    let mut wanted = vec![];
    // The first run could not time launches (CUPTI's activity API): neither could these.
    if events.iter().any(|e| matches!(e, Event::Note { message, .. } if message.contains(UNTIMED))) {
        return wanted;
    }
    for (key, candidate) in kept {
        let confirmed = last.get(key.as_str());
        if confirmed.is_some_and(|c| c.failure.is_some() || c.whole_runs || c.plain_ms.len().min(c.choice_ms.len()) >= MIN_PAIRS) {
            continue;
        }
        // CUPTI's records time them: CUDA's kernels alone (HIP's interposer swaps nothing).
        let Some(kernel) = plan.kernels.iter().find(|k| &k.key == key && k.arch.starts_with("sm_")) else { continue };
        let Some(path) = kernel.candidates.iter().find(|p| &p.name == candidate).map(|p| p.path.clone()) else { continue };
        wanted.push(WholeRun { symbol: kernel.symbol.clone(), key: key.clone(), candidate: candidate.clone(), path, choice: false });
    }
    wanted
}

/// Which side whole run `i` runs (true: the choice): plain, choice, choice,
/// plain, and again, so that a drift over the runs favours neither.
pub(crate) fn runs_choice(i: usize) -> bool {
    matches!(i % 4, 1 | 2)
}

/// Each kernel's whole runs as one [`Confirmed`]: pair `k` is plain's `k`th
/// run and the choice's `k`th, each run's total over the kernel's launches
/// in it; a run that timed no launch of the kernel (or none of one side)
/// leaves its pair out. A failure in any run is the kernel's.
pub(crate) fn combine(wanted: &[WholeRun], runs: &[(bool, Vec<Event>)]) -> Vec<Confirmed> {
    wanted
        .iter()
        .map(|w| {
            let mut out = Confirmed {
                symbol: w.symbol.clone(),
                key: w.key.clone(),
                candidate: w.candidate.clone(),
                launches: 0,
                plain_ms: vec![],
                choice_ms: vec![],
                registers: [None, None],
                failure: None,
                whole_runs: true,
            };
            for (choice, events) in runs {
                let Some(c) = events.iter().rev().find_map(|e| match e {
                    Event::Confirmed(c) if c.key == w.key && c.whole_runs => Some(c),
                    _ => None,
                }) else {
                    continue;
                };
                out.launches += c.launches;
                if out.failure.is_none() {
                    out.failure = c.failure.clone();
                }
                let (times, side) = if *choice { (&c.choice_ms, 1) } else { (&c.plain_ms, 0) };
                if !times.is_empty() {
                    let total: f64 = times.iter().sum();
                    if *choice {
                        out.choice_ms.push(total)
                    } else {
                        out.plain_ms.push(total)
                    }
                }
                out.registers[side] = out.registers[side].or(c.registers[side]);
            }
            let pairs = out.plain_ms.len().min(out.choice_ms.len());
            out.plain_ms.truncate(pairs);
            out.choice_ms.truncate(pairs);
            out
        })
        .collect()
}

/// What the whole runs need of the first: the program, how to run it
/// under the interposer, the plan's settings, where to write.
pub(crate) struct Runner<'a> {
    /// The program under the interposer, its environment set but for the run directory.
    pub command: &'a dyn Fn(&Path) -> Command,
    pub plan: &'a wire::Plan,
    pub dir: &'a Path,
    /// Seconds the whole runs may take, together.
    pub budget_s: f64,
}

/// Run the program `2 × MIN_PAIRS` times, timing `wanted`'s kernels (their
/// output in `dir/whole-runs/N/`), until the budget: after the first pair,
/// runs that would not fit are not started. The combined results, and a
/// line where the runs stopped short.
pub(crate) fn run(r: &Runner<'_>, wanted: &[WholeRun]) -> (Vec<Confirmed>, Option<String>) {
    let start = Instant::now();
    let total = 2 * MIN_PAIRS;
    let mut runs: Vec<(bool, Vec<Event>)> = Vec::with_capacity(total);
    let mut stopped = None;
    for i in 0..total {
        let elapsed = start.elapsed().as_secs_f64();
        if i >= 2 {
            let per_run = elapsed / i as f64;
            if elapsed + per_run * (total - i) as f64 > r.budget_s {
                stopped = Some(format!(
                    "whole runs stopped after {i} of {total}: a run takes {per_run:.1} s, the rest would pass --whole-run-budget {:.0} s",
                    r.budget_s
                ));
                break;
            }
        }
        let choice = runs_choice(i);
        match one_run(r, wanted, i, choice) {
            Ok(events) => runs.push((choice, events)),
            Err(why) => {
                stopped = Some(format!("whole runs stopped after {i} of {total}: {why}"));
                break;
            }
        }
    }
    (combine(wanted, &runs), stopped)
}

/// One whole run: its plan written, the program run with its output kept
/// beside, its events read.
fn one_run(r: &Runner<'_>, wanted: &[WholeRun], i: usize, choice: bool) -> Result<Vec<Event>, String> {
    let dir = r.dir.join("whole-runs").join(i.to_string());
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let whole_runs = wanted.iter().map(|w| WholeRun { choice, ..w.clone() }).collect();
    let plan = wire::Plan { kernels: vec![], whole_runs, ..r.plan.clone() };
    plan.save(&dir.join(wire::PLAN_FILE))?;
    let _ = std::fs::remove_file(dir.join(wire::EVENTS_FILE));
    let output = |name: &str| std::fs::File::create(dir.join(name)).map_err(|e| format!("cannot write in {}: {e}", dir.display()));
    let status = (r.command)(&dir)
        .stdin(Stdio::null())
        .stdout(output("stdout")?)
        .stderr(output("stderr")?)
        .status()
        .map_err(|e| format!("cannot run the program again: {e}"))?;
    if !status.success() {
        return Err(format!("run {i} ended with {} (its output: {})", super::exit_text(&status), dir.display()));
    }
    wire::read_events(&dir.join(wire::EVENTS_FILE))
}

#[cfg(test)]
mod tests {
    use super::*;
    use regtune_runtime::plan::{PlanCandidate, PlanKernel};

    fn confirmed(key: &str, plain: &[f64], choice: &[f64], whole: bool) -> Confirmed {
        Confirmed {
            symbol: format!("_Z1{key}v"),
            key: key.into(),
            candidate: "decided".into(),
            launches: (plain.len() + choice.len()) as u64,
            plain_ms: plain.to_vec(),
            choice_ms: choice.to_vec(),
            registers: [plain.first().map(|_| 64), choice.first().map(|_| 40)],
            failure: None,
            whole_runs: whole,
        }
    }

    fn plan(keys: &[&str]) -> wire::Plan {
        let kernels = keys
            .iter()
            .map(|k| PlanKernel {
                symbol: format!("_Z1{k}v"),
                key: k.to_string(),
                arch: "sm_90".into(),
                candidates: ["plain", "decided"]
                    .iter()
                    .map(|n| PlanCandidate { name: n.to_string(), path: format!("/c/{k}/{n}.cubin").into() })
                    .collect(),
                params: vec![],
                choices: vec![],
                control: None,
            })
            .collect();
        wire::Plan {
            launches: 1,
            runs: 200,
            budget_s: 5.0,
            replayer: "regtune-replay".into(),
            kernels,
            capture: Default::default(),
            whole_runs: vec![],
        }
    }

    fn kept(keys: &[&str]) -> BTreeMap<String, String> {
        keys.iter().map(|k| (k.to_string(), "decided".to_string())).collect()
    }

    #[test]
    fn only_kept_builds_left_unconfirmed_for_want_of_launches_get_whole_runs() {
        let pairs = vec![1.0; MIN_PAIRS];
        let mut failed = confirmed("f", &[], &[], false);
        failed.failure = Some("not confirmed: the choice's code could not be loaded".into());
        let events = [
            // "never": no confirmation began (launched no more than --launches).
            Event::Confirmed(confirmed("few", &[1.0; 6], &[0.9; 6], false)),
            Event::Confirmed(confirmed("enough", &pairs, &pairs, false)),
            Event::Confirmed(failed),
        ];
        let all = ["never", "few", "enough", "f"];
        let w = wanted(&events, &plan(&all), &kept(&all));
        let keys: Vec<(&str, &Path)> = w.iter().map(|w| (w.key.as_str(), w.path.as_path())).collect();
        assert_eq!(keys, [("few", Path::new("/c/few/decided.cubin")), ("never", Path::new("/c/never/decided.cubin"))]);
        // HIP's kernels, or CUPTI's activity API missing in the first run: none.
        let mut hip = plan(&all);
        hip.kernels.iter_mut().for_each(|k| k.arch = "gfx90a".into());
        assert!(wanted(&events, &hip, &kept(&all)).is_empty());
        let untimed = Event::Note {
            symbol: "measure".into(),
            message: "warning: the program's own launches are not timed (CUPTI's activity API is missing)".into(),
            launches: 1,
        };
        assert!(wanted(&[untimed], &plan(&all), &kept(&all)).is_empty());
        // Plain kept (not in `kept`), or a key the plan does not hold: not run.
        assert!(wanted(&events, &plan(&all), &kept(&[])).is_empty());
        assert!(wanted(&events, &plan(&["enough"]), &kept(&["never"])).is_empty());
    }

    #[test]
    fn runs_alternate_abba_and_pair_each_sides_totals_in_order() {
        assert_eq!((0..8).map(runs_choice).collect::<Vec<_>>(), [false, true, true, false, false, true, true, false]);
        let w = wanted(&[], &plan(&["k"]), &kept(&["k"]));
        let run = |choice: bool, ms: &[f64]| {
            let c = if choice { confirmed("k", &[], ms, true) } else { confirmed("k", ms, &[], true) };
            (choice, vec![Event::Started { pid: 1, vendor: "cuda".into() }, Event::Confirmed(c)])
        };
        // Two launches a run: each run's total is its pair's half; the fifth run (plain) has no partner.
        let runs = [
            run(false, &[1.0, 1.0]),
            run(true, &[0.875, 0.875]),
            run(true, &[0.75, 1.0]),
            run(false, &[1.25, 1.0]),
            run(false, &[1.0, 1.5]),
            (true, vec![]),
        ];
        let [c] = combine(&w, &runs).try_into().unwrap();
        assert_eq!((c.plain_ms, c.choice_ms), (vec![2.0, 2.25], vec![1.75, 1.75]));
        assert_eq!((c.launches, c.registers, c.whole_runs, c.failure), (10, [Some(64), Some(40)], true, None));
        // A run whose swap did not take fails the kernel's figure.
        let mut bad = run(true, &[1.0]);
        if let Event::Confirmed(c) = &mut bad.1[1] {
            c.failure = Some("not confirmed: the driver did not take the swap".into());
        }
        let [c] = combine(&w, &[run(false, &[1.0]), bad]).try_into().unwrap();
        assert_eq!(c.failure.as_deref(), Some("not confirmed: the driver did not take the swap"));
    }
}
