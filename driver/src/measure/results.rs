//! From the interposer's events to each kernel's `measured` field, and the
//! report rows.

use std::collections::{BTreeMap, BTreeSet};

use regtune_decisions::measured::{Candidate, Paired, ProgramTiming, Timing, Verdict};
use regtune_decisions::{Entry, Measured};
use regtune_runtime::confirm::MIN_PAIRS;
use regtune_runtime::plan::{Confirmed, Event, LaunchResult, Launches};
use serde::Serialize;

use super::plan::{PlannedCandidate, Role};
use crate::names;
use crate::output::Tabular;

/// What one run of the program showed.
#[derive(Debug, Default)]
pub(crate) struct Collected {
    /// Per db entry key.
    pub measured: BTreeMap<String, Measured>,
    /// The interposer was loaded (the program initialised the GPU runtime).
    pub started: bool,
    /// Kernels the program launched that the db has nothing to measure for.
    pub unplanned: BTreeSet<String>,
    /// One line each: faults, refusals, other targets.
    pub notes: Vec<String>,
    /// The user's own builds (`--compare`) per entry key: label and timing.
    pub compared: BTreeMap<String, Vec<(String, Candidate)>>,
    /// Entry keys whose choice the program's own launches timed, or tried to.
    pub confirmed: BTreeSet<String>,
}

/// Fold the events; `candidates` are each entry's, as planned.
pub(crate) fn collect(events: &[Event], candidates: &BTreeMap<String, Vec<PlannedCandidate>>) -> Collected {
    let mut out = Collected::default();
    let mut launches: BTreeMap<String, Vec<&LaunchResult>> = BTreeMap::new();
    let mut failed: BTreeMap<String, (Option<String>, String)> = BTreeMap::new();
    // Each note's latest count, in the order first seen.
    let mut counted: Vec<((String, String), u64)> = Vec::new();
    // Each kernel's replay's choice, timed on the program's launches after.
    let mut confirmed: BTreeMap<String, &Confirmed> = BTreeMap::new();
    for event in events {
        match event {
            Event::Started { .. } => out.started = true,
            Event::Unplanned { symbol } => {
                out.unplanned.insert(symbol.clone());
            }
            Event::OtherTarget { symbol, device, arch } => out.notes.push(format!(
                "{}: the db's candidates are for {arch}, the program ran it on {device}; not measured",
                names::short(symbol)
            )),
            Event::Measured(r) => {
                // What the copy left out (once each), and the first replay of a kernel not at the program's addresses.
                let name = names::short(&r.symbol);
                for note in r.notes.iter().map(|n| format!("{name}: {n}")) {
                    if !out.notes.contains(&note) {
                        out.notes.push(note);
                    }
                }
                let relocated = format!("{name}: replayed on copies of its own, not at the program's addresses");
                if let Some(why) = r.replayed.relocated.as_ref().filter(|_| !out.notes.iter().any(|n| n.starts_with(&relocated))) {
                    let moved = match r.replayed.moved {
                        0 => String::new(),
                        n => format!("; {n} pointer(s) stored in its memory moved to the copies"),
                    };
                    out.notes.push(format!("{relocated} ({why}){moved}"));
                }
                launches.entry(r.key.clone()).or_default().push(r)
            }
            Event::Failed { symbol, key, message } => {
                let name = if symbol.is_empty() { "measure".to_string() } else { names::short(symbol) };
                out.notes.push(format!("{name}: {message}"));
                if !key.is_empty() {
                    failed.insert(key.clone(), (faulted_candidate(message), message.clone()));
                }
            }
            Event::Confirmed(c) => {
                confirmed.insert(c.key.clone(), c);
            }
            Event::Note { symbol, message, launches } => {
                let id = (symbol.clone(), message.clone());
                match counted.iter_mut().find(|(k, _)| *k == id) {
                    Some((_, n)) => *n = (*n).max(*launches),
                    None => counted.push((id, *launches)),
                }
            }
        }
    }
    for ((symbol, message), n) in counted {
        let launches = if n == 1 { "1 launch".to_string() } else { format!("{n} launches") };
        out.notes.push(format!("{}: {message} ({launches})", names::short(&symbol)));
    }
    for (key, names) in candidates {
        let results = launches.get(key).map(Vec::as_slice).unwrap_or_default();
        let fault = failed.get(key);
        if results.is_empty() && fault.is_none_or(|(c, _)| c.is_none()) {
            continue;
        }
        let device = results.first().map(|r| r.device.clone()).unwrap_or_default();
        let program: Vec<Option<bool>> = results.iter().map(|r| r.program_identical).collect();
        let program_identical = if program.contains(&Some(false)) {
            Some(false)
        } else if !program.is_empty() && program.iter().all(|p| *p == Some(true)) {
            Some(true)
        } else {
            None
        };
        let plain = names.iter().find(|p| p.transforms.is_empty() && p.role == Role::Candidate).map_or("", |p| p.name.as_str());
        let replayed = Launches::new(results, plain);
        let candidates = names
            .iter()
            .map(|PlannedCandidate { name, transforms, code, .. }| {
                let fault = fault.filter(|(c, _)| c.as_deref() == Some(name.as_str())).map(|(_, message)| message.clone());
                Candidate { code: code.clone(), ..replayed.candidate(name, transforms, fault) }
            })
            .collect::<Vec<Candidate>>();
        let mut control = None;
        let mut ours = Vec::new();
        let mut theirs = Vec::new();
        for (p, c) in names.iter().zip(candidates) {
            match p.role {
                Role::Candidate => ours.push(c),
                // Plain's own code must leave plain's bytes, or nothing can be shown identical.
                Role::Control => control = Some(c),
                Role::Compared => theirs.push((p.name.clone(), c)),
            }
        }
        if !theirs.is_empty() {
            out.compared.insert(key.clone(), theirs);
        }
        let m = Measured {
            device,
            launches: results.len() as u32,
            runs: replayed.plain_runs(),
            deterministic: !results.is_empty()
                && results.iter().all(|r| r.replayed.deterministic)
                && control.as_ref().is_none_or(|c| c.identical || c.error.is_some()),
            program_identical,
            block: one_block(results),
            control: control.and_then(|c| c.paired),
            candidates: ours,
            earlier: vec![],
            program: None,
        };
        let mut m = m;
        if let Some(c) = confirmed.get(key) {
            out.confirmed.insert(key.clone());
            let name = names::short(&c.symbol);
            match program_timing(c, names) {
                Ok(p) => {
                    m.program = Some(p.clone());
                    out.notes.push(format!("{name}: {}", program_line(&m, &p, &c.candidate)));
                }
                Err(why) => out.notes.push(format!("{name}: {why}")),
            }
        }
        out.measured.insert(key.clone(), m);
    }
    out
}

/// The replay's choice as the program's own launches timed it, pair by
/// pair; Err: why there is no figure, one line.
fn program_timing(c: &Confirmed, names: &[PlannedCandidate]) -> Result<ProgramTiming, String> {
    if let Some(why) = &c.failure {
        return Err(why.clone());
    }
    let transforms = names.iter().find(|p| p.name == c.candidate && p.role == Role::Candidate).map(|p| p.transforms.clone());
    let pairs = c.plain_ms.len().min(c.choice_ms.len());
    let (Some(transforms), true) = (transforms, pairs >= MIN_PAIRS) else {
        let launches = if c.launches == 1 { "1 launch".to_string() } else { format!("{} launches", c.launches) };
        let timed = match c.whole_runs {
            true => format!("{pairs} pair(s) of whole runs timed"),
            false => format!("{launches} after the replay, {pairs} pair(s) timed"),
        };
        return Err(format!("`{}` not confirmed: {timed} ({MIN_PAIRS} needed); the replay's figure decides", c.candidate));
    };
    let paired = Paired::of(std::slice::from_ref(&c.choice_ms), std::slice::from_ref(&c.plain_ms))
        .ok_or_else(|| format!("`{}` not confirmed: no pair timed", c.candidate))?;
    let (plain, choice) = (Timing::of(&c.plain_ms), Timing::of(&c.choice_ms));
    let (Some(plain), Some(choice)) = (plain, choice) else { return Err(format!("`{}` not confirmed: no pair timed", c.candidate)) };
    Ok(ProgramTiming { transforms, paired, plain, choice, whole_runs: c.whole_runs })
}

/// One line: the replay's figure and the program's, side by side, and what follows.
fn program_line(m: &Measured, p: &ProgramTiming, name: &str) -> String {
    let replay = m.candidate(&p.transforms).and_then(|c| m.speedup(c)).map_or("-".to_string(), |s| format!("{s:.3}×"));
    let margin = relative_margin(p.paired).map_or(String::new(), |r| format!(" ±{:.1} %", 100.0 * r));
    let over = if p.whole_runs { "whole runs of the program (median total a run" } else { "the program's own launches (median" };
    let figures = format!(
        "`{name}` ran {replay} in the replay, {:.3}×{margin} over {} pairs of {over} {:.4} ms against plain's {:.4} ms)",
        p.speedup(),
        p.paired.rounds,
        p.choice.median_ms,
        p.plain.median_ms
    );
    if m.program_rejects(&p.transforms) {
        format!("{figures}: not faster there beyond its noise, plain kept")
    } else {
        format!("{figures}: confirmed")
    }
}

fn relative_margin(p: Paired) -> Option<f64> {
    p.margin().map(|m| m / p.median)
}

/// The threads per block every launch used; None when they differ.
fn one_block(results: &[&LaunchResult]) -> Option<u32> {
    let first = results.first()?.launch.threads_per_block();
    results.iter().all(|r| r.launch.threads_per_block() == first).then(|| u32::try_from(first).ok()).flatten()
}

/// "candidate `decided` faulted during replay (...)" → "decided".
fn faulted_candidate(message: &str) -> Option<String> {
    let rest = message.strip_prefix("candidate `")?;
    Some(rest[..rest.find('`')?].to_string())
}

/// How `regtune confirm` is told the kernel: its short name, or its symbol
/// where the name needs quoting (templates, operators).
fn confirm_name(entry: &Entry) -> String {
    let short = names::short_name(&entry.name);
    match short.chars().all(|c| c.is_alphanumeric() || c == '_' || c == ':') && !short.is_empty() {
        true => short.to_string(),
        false => entry.symbol.clone(),
    }
}

/// The verdict of a build that did not run to the end.
fn failed(c: &Candidate) -> String {
    format!("failed: {}", c.error.as_deref().unwrap_or("did not run"))
}

/// The verdict on the other CUDA compiler's code for the kernel
/// (`other:clang` beside nvcc's candidates, `other:nvcc` beside clang's):
/// whether it beats the build's choice beyond the noise, and by how much.
/// Two compilers need not round alike: where its bytes differ from plain's
/// it is still timed, and the verdict says so. Never chosen.
fn other_verdict(compiler: &str, m: &Measured, c: &Candidate, built_speedup: f64) -> String {
    let this = if compiler == "clang" { "nvcc" } else { "clang" };
    // Its speed as if its bytes were plain's: the identity is said apart.
    let speed = Measured { deterministic: true, ..m.clone() }.verdict(&Candidate { identical: true, ..c.clone() });
    let speedup = m.speedup(c).unwrap_or(0.0);
    let mut verdict = match speed {
        Verdict::Failed | Verdict::Differs => return failed(c),
        Verdict::Faster if speedup > built_speedup * (1.0 + m.least_gain()) => format!(
            "{compiler}'s code: faster than the build's choice ({:.2}×); build this file with {compiler} to get it",
            speedup / built_speedup
        ),
        Verdict::Faster => format!("{compiler}'s code: faster than {this}'s plain, not than the build's choice"),
        Verdict::NotFaster => format!("{compiler}'s code: not faster than {this}'s plain beyond noise"),
        Verdict::Slower => format!("{compiler}'s code: slower than {this}'s plain"),
    };
    if m.deterministic && !c.identical {
        verdict.push_str(&format!(" (different bytes from {this}'s plain: check its results)"));
    }
    verdict
}

/// One candidate of one kernel, as reported.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Row {
    pub kernel: String,
    pub symbol: String,
    pub arch: String,
    pub candidate: String,
    pub transforms: Vec<String>,
    pub registers: Option<u32>,
    /// Spilled registers or bytes, as the backend reports them.
    pub spills: Option<u32>,
    pub occupancy: Option<u32>,
    pub median_ms: Option<f64>,
    pub spread_ms: Option<f64>,
    /// Plain's median over this one's.
    pub speedup: Option<f64>,
    /// Timed rounds of its time over plain's, and the half-width of the
    /// median ratio's 99 % interval relative to it (0.01: the speedup
    /// ±1 %).
    pub rounds: Option<u32>,
    pub margin: Option<f64>,
    /// The replay's choice timed again on the program's own launches after
    /// the replay: plain's time over its own, pair by pair, the half-width
    /// of that median's 99 % interval relative to it, and the pairs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub program_speedup: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub program_margin: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub program_pairs: Option<u32>,
    pub identical: bool,
    pub verdict: String,
    /// The build now uses this candidate.
    pub built: bool,
    /// Program launches measured; the GPU; whether the program's own
    /// launches left the plain candidate's bytes.
    pub launches: u32,
    pub device: String,
    pub program_identical: Option<bool>,
}

/// The rows of one measured entry, plain first, then the user's own
/// builds (`--compare`).
pub(crate) fn rows(entry: &Entry, m: &Measured, compared: &[(String, Candidate)]) -> Vec<Row> {
    let built = entry.effective();
    let allowed = entry.allowed();
    // What every row of this kernel shares; each row fills in the rest.
    let row = |candidate: String, verdict: String| Row {
        kernel: names::short_name(&entry.name).to_string(),
        symbol: entry.symbol.clone(),
        arch: entry.arch.clone(),
        candidate,
        transforms: vec![],
        registers: None,
        spills: None,
        occupancy: None,
        median_ms: None,
        spread_ms: None,
        speedup: None,
        rounds: None,
        margin: None,
        program_speedup: None,
        program_margin: None,
        program_pairs: None,
        identical: false,
        verdict,
        built: false,
        launches: m.launches,
        device: m.device.clone(),
        program_identical: m.program_identical,
    };
    // A timed build's row: what the measurement says of it.
    let timed = |c: &Candidate, candidate: String, verdict: String| Row {
        median_ms: c.time.map(|t| t.median_ms),
        spread_ms: c.time.map(|t| t.spread_ms),
        speedup: m.speedup(c),
        rounds: c.paired.map(|p| p.rounds).filter(|&r| r > 0),
        margin: c.paired.and_then(relative_margin),
        identical: c.identical,
        ..row(candidate, verdict)
    };
    // The program's own figure, on the row of the build it timed.
    let program = |c: &Candidate| m.program.as_ref().filter(|p| p.transforms == c.transforms && !c.transforms.is_empty());
    let built_speedup = m.candidates.iter().find(|c| c.transforms == built).and_then(|c| m.speedup(c)).unwrap_or(1.0);
    // By more than the least gain: medians 0.01 % apart are the same speed.
    let beats_the_build = |c: &Candidate| m.speedup(c).is_some_and(|s| s > built_speedup * (1.0 + m.least_gain()));
    // A hand build (one -maxrregcount for every kernel) is never chosen, but
    // the user wants to know where it beat the build's choice.
    let theirs = compared.iter().map(|(name, c)| {
        if let Some(compiler) = super::plan::other_compiler(name) {
            return timed(c, name.clone(), other_verdict(compiler, m, c, built_speedup));
        }
        let verdict = match m.verdict(c) {
            Verdict::Faster if beats_the_build(c) => "your build: faster than the build's choice (never chosen)".into(),
            Verdict::Faster => "your build: faster than plain, not than the build's choice".into(),
            Verdict::NotFaster => "your build: not faster beyond noise".into(),
            Verdict::Slower => "your build: slower".into(),
            Verdict::Differs => "your build: different bytes".into(),
            Verdict::Failed => failed(c),
        };
        timed(c, name.clone(), verdict)
    });
    let ours: Vec<Row> = m
        .candidates
        .iter()
        .map(|c| {
            let usage = entry.usage_of(&c.transforms);
            let allowed = allowed.contains(&c.transforms);
            let verdict = if c.transforms.is_empty() {
                if m.launches == 0 {
                    "reference (no launch measured)".to_string()
                } else if m.deterministic {
                    "reference".to_string()
                } else {
                    "reference, not deterministic: nothing can be shown identical".to_string()
                }
            } else {
                match (m.verdict(c), allowed) {
                    (Verdict::Faster, true) if m.program_rejects(&c.transforms) => {
                        "faster in the replay, not in the program's own launches: plain kept".into()
                    }
                    (Verdict::Faster, true) if c.transforms == built && program(c).is_some() => {
                        "faster: kept (confirmed on the program's own launches)".into()
                    }
                    (Verdict::Faster, true) if c.transforms == built => "faster: kept".into(),
                    // The kept one is faster, or as fast with fewer transforms.
                    (Verdict::Faster, true) => "faster, not chosen".into(),
                    // Worth the user's word only if it beats what the build uses.
                    (Verdict::Faster, false) if beats_the_build(c) => {
                        match entry.suggested.iter().position(|s| s.transforms == c.transforms) {
                            Some(i) => {
                                format!("faster: `regtune confirm {} {}` to use it", confirm_name(entry), super::code::suggestion_name(i))
                            }
                            None => "faster: confirm the suggestion to use it".into(),
                        }
                    }
                    (Verdict::Faster, false) => "faster than plain, not than the build's choice".into(),
                    (Verdict::NotFaster, true) => "not faster beyond noise: rejected".into(),
                    (Verdict::NotFaster, false) => "not faster beyond noise".into(),
                    (Verdict::Slower, true) => "slower: rejected".into(),
                    (Verdict::Slower, false) => "slower".into(),
                    (Verdict::Differs, _) => "different bytes: rejected".into(),
                    (Verdict::Failed, _) => failed(c),
                }
            };
            let candidate = if c.transforms.is_empty() { "plain".into() } else { super::code::label(&c.transforms) };
            Row {
                transforms: c.transforms.labels(),
                registers: usage.map(|u| u.vgpr),
                spills: usage.map(|u| u.vgpr_spills + u.sgpr_spills),
                occupancy: usage.map(|u| u.occupancy),
                built: c.transforms == built,
                program_speedup: program(c).map(ProgramTiming::speedup),
                program_margin: program(c).and_then(|p| relative_margin(p.paired)),
                program_pairs: program(c).map(|p| p.paired.rounds),
                ..timed(c, candidate, verdict)
            }
        })
        .collect();
    let control = m.control.map(|c| Row {
        speedup: Some(1.0 / c.median),
        rounds: Some(c.rounds).filter(|&r| r > 0),
        margin: relative_margin(c),
        identical: m.deterministic,
        ..row(super::plan::CONTROL.into(), format!("control: plain's code loaded again; the least gain is {:.1} %", 100.0 * m.least_gain()))
    });
    ours.into_iter().chain(control).chain(theirs).collect()
}

impl Tabular for Row {
    fn header() -> Vec<&'static str> {
        vec![
            "kernel",
            "arch",
            "candidate",
            "regs",
            "spills",
            "occupancy",
            "median ms",
            "spread ms",
            "speedup",
            "rounds",
            "in the program",
            "identical",
            "verdict",
            "built",
        ]
    }

    fn cells(&self) -> Vec<String> {
        let opt = |v: Option<u32>| v.map_or("-".to_string(), |v| v.to_string());
        let ms = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.4}"));
        vec![
            self.kernel.clone(),
            self.arch.clone(),
            self.candidate.clone(),
            opt(self.registers),
            opt(self.spills),
            opt(self.occupancy),
            ms(self.median_ms),
            ms(self.spread_ms),
            match (self.speedup, self.margin) {
                (None, _) => "-".to_string(),
                (Some(s), None) => format!("{s:.3}×"),
                (Some(s), Some(m)) => format!("{s:.3}× ±{:.1} %", 100.0 * m),
            },
            opt(self.rounds),
            match (self.program_speedup, self.program_margin, self.program_pairs) {
                (Some(s), Some(m), Some(n)) => format!("{s:.3}× ±{:.1} % ({n} pairs)", 100.0 * m),
                (Some(s), _, _) => format!("{s:.3}×"),
                _ => "-".to_string(),
            },
            if self.identical { "yes" } else { "no" }.to_string(),
            self.verdict.clone(),
            if self.built { "yes" } else { "" }.to_string(),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use regtune_decisions::Transforms;
    use regtune_runtime::plan::{CandidateResult, LaunchConfig, Replayed};

    fn result(key: &str, cands: &[(&str, &[f64], bool)], deterministic: bool, program: Option<bool>) -> Event {
        Event::Measured(LaunchResult {
            symbol: "_Z1kPd".into(),
            key: key.into(),
            device: "NVIDIA H100 80GB HBM3 (sm_90, driver 580.159.04)".into(),
            launch: LaunchConfig { grid: [1, 1, 1], block: [256, 1, 1], shared_bytes: 0, cooperative: false },
            ranges: 2,
            bytes: 1024,
            replayed: Replayed {
                candidates: cands
                    .iter()
                    .map(|(n, t, i)| CandidateResult {
                        name: n.to_string(),
                        times_ms: t.to_vec(),
                        identical: *i,
                        difference: None,
                        error: None,
                    })
                    .collect(),
                deterministic,
                launches: 6,
                relocated: None,
                moved: 0,
            },
            program_identical: program,
            program_difference: None,
            reached: 0,
            globals: 0,
            notes: vec![],
        })
    }

    fn names() -> BTreeMap<String, Vec<PlannedCandidate>> {
        let cap = Transforms { unroll_cap: Some(1), ..Default::default() };
        let c = |name: &str, transforms| PlannedCandidate {
            name: name.into(),
            transforms,
            code: Some(format!("{name}-code")),
            role: Role::Candidate,
        };
        BTreeMap::from([("k".to_string(), vec![c("plain", Transforms::default()), c("decided", cap)])])
    }

    #[test]
    fn the_block_is_kept_only_when_every_launch_used_it() {
        let mut other = result("k", &[("plain", &[1.0], true), ("decided", &[1.0], true)], true, Some(true));
        if let Event::Measured(r) = &mut other {
            r.launch.block = [8, 8, 1];
        }
        let plain = result("k", &[("plain", &[1.0], true), ("decided", &[1.0], true)], true, Some(true));
        assert_eq!(collect(&[plain.clone(), plain.clone()], &names()).measured["k"].block, Some(256));
        assert_eq!(collect(&[other.clone()], &names()).measured["k"].block, Some(64));
        assert_eq!(collect(&[plain, other], &names()).measured["k"].block, None);
    }

    #[test]
    fn launches_add_up_and_identity_must_hold_on_each() {
        let events = [
            Event::Started { pid: 1, vendor: "cuda".into() },
            result("k", &[("plain", &[1.0, 1.1], true), ("decided", &[1.2, 1.3], true)], true, Some(true)),
            result("k", &[("plain", &[1.0, 1.2], true), ("decided", &[1.2, 1.4], false)], true, Some(true)),
        ];
        let c = collect(&events, &names());
        assert!(c.started);
        let m = &c.measured["k"];
        assert_eq!((m.launches, m.runs, m.deterministic, m.program_identical, m.block), (2, 2, true, Some(true), Some(256)));
        // Medians 1.05 + 1.1 and 1.25 + 1.3; spreads (interquartile ranges) 0.05 + 0.1 each.
        let (plain, capped) = (m.candidates[0].time.unwrap(), m.candidates[1].time.unwrap());
        assert!((plain.median_ms - 2.15).abs() < 1e-12 && (capped.median_ms - 2.55).abs() < 1e-12);
        assert!((plain.spread_ms - 0.15).abs() < 1e-12 && (capped.spread_ms - 0.15).abs() < 1e-12);
        assert!(m.candidates[0].identical && !m.candidates[1].identical);
        assert_eq!(m.device, "NVIDIA H100 80GB HBM3 (sm_90, driver 580.159.04)");
        // Round by round over both launches: (1.2 + 1.2) / (1.0 + 1.0) and (1.3 + 1.4) / (1.1 + 1.2).
        let paired = m.candidates[1].paired.unwrap();
        assert!((paired.lower - (2.7 / 2.3 + 0.25 * (1.2 - 2.7 / 2.3))).abs() < 1e-12, "{paired:?}");
        assert!((paired.median - (1.2 + 2.7 / 2.3) / 2.0).abs() < 1e-12, "{paired:?}");
        assert_eq!(m.candidates[0].paired.map(|p| p.median), Some(1.0));
    }

    #[test]
    fn the_control_sets_the_least_gain_and_must_leave_plains_bytes() {
        let mut planned = names();
        let control = PlannedCandidate { name: super::super::plan::CONTROL.into(), role: Role::Control, ..planned["k"][0].clone() };
        planned.get_mut("k").unwrap().push(control);
        // Plain's code loaded again ran 3 % faster in every round; the decision 2 %.
        let plain = [1.00, 1.10, 0.95, 1.20, 1.05, 0.98];
        let again: Vec<f64> = plain.iter().map(|t| t * 0.97).collect();
        let decided: Vec<f64> = plain.iter().map(|t| t * 0.98).collect();
        let events =
            [result("k", &[("plain", &plain, true), ("decided", &decided, true), ("plain again", &again, true)], true, Some(true))];
        let m = &collect(&events, &planned).measured["k"];
        assert_eq!(m.candidates.len(), 2, "the control is not a candidate");
        assert!((m.control.unwrap().median - 0.97).abs() < 1e-9);
        assert!((m.least_gain() - 0.03).abs() < 1e-9);
        assert_eq!(m.verdict(&m.candidates[1]), Verdict::NotFaster, "2 % is within what two loads of plain differ");
        let entry = super::super::plan::tests::entry("_Z1kPd", Transforms::default());
        let rows = rows(&entry, m, &[]);
        assert_eq!(rows.last().unwrap().candidate, "plain again");
        assert_eq!(rows.last().unwrap().verdict, "control: plain's code loaded again; the least gain is 3.0 %");
        // Plain's own code that leaves other bytes: the kernel is not deterministic.
        let events =
            [result("k", &[("plain", &plain, true), ("decided", &decided, true), ("plain again", &again, false)], true, Some(true))];
        assert!(!collect(&events, &planned).measured["k"].deterministic);
    }

    #[test]
    fn a_candidate_faster_in_every_round_is_kept_though_the_spreads_overlap() {
        // Rounds drift together (clocks, other work); the candidate is 2 % faster in each.
        let plain = [1.00, 1.10, 0.95, 1.20, 1.05, 0.98];
        let decided: Vec<f64> = plain.iter().map(|t| t * 0.98).collect();
        let events = [result("k", &[("plain", &plain, true), ("decided", &decided, true)], true, Some(true))];
        let m = &collect(&events, &names()).measured["k"];
        let (p, d) = (m.candidates[0].time.unwrap(), m.candidates[1].time.unwrap());
        assert!(!d.beats(&p), "the medians alone lie within the spreads");
        assert_eq!(m.verdict(&m.candidates[1]), Verdict::Faster);
        assert!((m.speedup(&m.candidates[1]).unwrap() - 1.0 / 0.98).abs() < 1e-9);
    }

    #[test]
    fn the_report_gives_the_rounds_and_the_speedups_interval_relative_to_it() {
        // Twice as slow, ±10 % from round to round.
        let plain = [1.0; 6];
        let decided = [1.8, 2.2, 1.8, 2.2, 2.0, 2.0];
        let events = [result("k", &[("plain", &plain, true), ("decided", &decided, true)], true, Some(true))];
        let m = &collect(&events, &names()).measured["k"];
        let cap = Transforms { warps_per_sm: Some(32), ..Default::default() };
        let entry = super::super::plan::tests::entry("_Z1kPd", cap);
        let row = &rows(&entry, m, &[])[1];
        // Quartiles 1.85 and 2.15: 2.576 * 1.2533 / 1.349 * 0.3 / sqrt(6) = 0.2931 on the ratio 2.
        assert_eq!(row.rounds, Some(6));
        assert!((row.margin.unwrap() - 0.2931 / 2.0).abs() < 1e-4, "{:?}", row.margin);
        assert_eq!(row.cells()[8..10], ["0.500× ±14.7 %".to_string(), "6".to_string()]);
    }

    #[test]
    fn a_hand_build_says_whether_it_beat_the_builds_choice() {
        let mut planned = names();
        let theirs = ["compare:r64", "compare:r72", "compare:r80", "compare:r255", "compare:r32", "compare:r48"];
        for name in theirs {
            let own = PlannedCandidate { name: name.into(), role: Role::Compared, ..planned["k"][0].clone() };
            planned.get_mut("k").unwrap().push(own);
        }
        let times: [(&str, &[f64], bool); 8] = [
            ("plain", &[1.0; 6], true),
            ("decided", &[0.5; 6], true),
            ("compare:r64", &[0.4; 6], true),
            // 0.2 % faster than the build's choice: within the least gain.
            ("compare:r72", &[0.499; 6], true),
            ("compare:r80", &[0.8; 6], true),
            ("compare:r255", &[1.0; 6], true),
            ("compare:r32", &[2.0; 6], true),
            ("compare:r48", &[0.4; 6], false),
        ];
        let collected = collect(&[result("k", &times, true, Some(true))], &planned);
        let entry = super::super::plan::tests::entry("_Z1kPd", Transforms { unroll_cap: Some(1), ..Default::default() });
        let rows = rows(&entry, &collected.measured["k"], &collected.compared["k"]);
        // Plain and the decided candidate first, then the user's builds.
        let verdicts: Vec<(String, String)> = rows.into_iter().skip(2).map(|r| (r.candidate, r.verdict)).collect();
        let expect = [
            ("compare:r64", "your build: faster than the build's choice (never chosen)"),
            ("compare:r72", "your build: faster than plain, not than the build's choice"),
            ("compare:r80", "your build: faster than plain, not than the build's choice"),
            ("compare:r255", "your build: not faster beyond noise"),
            ("compare:r32", "your build: slower"),
            ("compare:r48", "your build: different bytes"),
        ];
        assert_eq!(verdicts, expect.map(|(c, v)| (c.to_string(), v.to_string())));
    }

    #[test]
    fn the_other_compilers_code_says_whether_it_beats_the_builds_choice() {
        // Plain 1.0 ms, the build's choice (an unroll cap) 0.5 ms: 2× plain.
        let verdict = |name: &str, times: &[f64], identical: bool| {
            let mut planned = names();
            let other = PlannedCandidate { name: name.into(), role: Role::Compared, ..planned["k"][0].clone() };
            planned.get_mut("k").unwrap().push(other);
            let events =
                [result("k", &[("plain", &[1.0; 6], true), ("decided", &[0.5; 6], true), (name, times, identical)], true, Some(true))];
            let collected = collect(&events, &planned);
            let entry = super::super::plan::tests::entry("_Z1kPd", Transforms { unroll_cap: Some(1), ..Default::default() });
            let rows = rows(&entry, &collected.measured["k"], &collected.compared["k"]);
            assert_eq!((rows.len(), rows[2].candidate.as_str(), rows[2].built), (3, name, false), "reported after ours, never built");
            rows[2].verdict.clone()
        };
        assert_eq!(
            verdict("other:clang", &[0.4; 6], true),
            "clang's code: faster than the build's choice (1.25×); build this file with clang to get it"
        );
        assert_eq!(
            verdict("other:clang", &[0.4; 6], false),
            "clang's code: faster than the build's choice (1.25×); build this file with clang to get it \
             (different bytes from nvcc's plain: check its results)"
        );
        // 0.2 % faster than the build's choice: within the least gain.
        assert_eq!(verdict("other:clang", &[0.499; 6], true), "clang's code: faster than nvcc's plain, not than the build's choice");
        assert_eq!(verdict("other:nvcc", &[0.8; 6], true), "nvcc's code: faster than clang's plain, not than the build's choice");
        assert_eq!(verdict("other:nvcc", &[1.0; 6], true), "nvcc's code: not faster than clang's plain beyond noise");
        assert_eq!(
            verdict("other:nvcc", &[2.0; 6], false),
            "nvcc's code: slower than clang's plain (different bytes from clang's plain: check its results)"
        );
        assert_eq!(verdict("other:nvcc", &[], true), "failed: did not run");
        // A build of the user's named like one is still the user's.
        assert_eq!(verdict("compare:other:clang", &[0.4; 6], true), "your build: faster than the build's choice (never chosen)");
    }

    #[test]
    fn a_faster_suggestion_waiting_for_the_user_names_the_command_that_confirms_it() {
        let events = [result("k", &[("plain", &[1.0; 6], true), ("decided", &[0.5; 6], true)], true, Some(true))];
        let m = &collect(&events, &names()).measured["k"];
        let cap = Transforms { unroll_cap: Some(1), ..Default::default() };
        let suggestion = |symbol: &str, name: &str| Entry {
            name: name.into(),
            suggested: vec![regtune_decisions::Suggestion {
                transforms: cap.clone(),
                usage: Default::default(),
                message: String::new(),
                reasons: vec![regtune_decisions::Reason::AssumesCaller],
                confirmed: false,
            }],
            ..super::super::plan::tests::entry(symbol, Transforms::default())
        };
        let verdict = |e: &Entry| rows(e, m, &[])[1].verdict.clone();
        assert_eq!(verdict(&suggestion("_Z4stepPd", "step(double*)")), "faster: `regtune confirm step suggested` to use it");
        let template = suggestion("_Z4stepILi8EEvPd", "void step<8>(double*)");
        assert_eq!(verdict(&template), "faster: `regtune confirm _Z4stepILi8EEvPd suggested` to use it");

        // Slower than the build's own choice: confirming it would change nothing.
        let shared = Transforms { warps_per_sm: Some(40), launch_bounds: Some(256), spill_to_shared: true, ..Default::default() };
        let mut planned = names();
        planned.get_mut("k").unwrap().push(PlannedCandidate {
            name: "suggested".into(),
            transforms: shared.clone(),
            code: Some("suggested-code".into()),
            role: Role::Candidate,
        });
        let events =
            [result("k", &[("plain", &[1.0; 6], true), ("decided", &[0.5; 6], true), ("suggested", &[0.8; 6], true)], true, Some(true))];
        let m = &collect(&events, &planned).measured["k"];
        let mut entry = suggestion("_Z4stepPd", "step(double*)");
        entry.transforms = cap.clone();
        entry.suggested[0].transforms = shared;
        let rows = rows(&entry, m, &[]);
        assert!(rows[1].built && rows[1].verdict == "faster: kept", "{:?}", rows[1]);
        assert_eq!(rows[2].verdict, "faster than plain, not than the build's choice");

        // Confirmed, so allowed, but slower than the kept one: faster than plain, yet not what the build uses.
        entry.suggested[0].confirmed = true;
        entry.measured = Some(m.clone());
        let rows = super::rows(&entry, m, &[]);
        assert!(rows[1].built && rows[1].verdict == "faster: kept", "{:?}", rows[1]);
        assert!(!rows[2].built && rows[2].verdict == "faster, not chosen", "{:?}", rows[2]);
    }

    #[test]
    fn a_fault_is_recorded_against_its_candidate_and_reported() {
        let events = [Event::Failed {
            symbol: "_Z1kPd".into(),
            key: "k".into(),
            message: "candidate `decided` faulted during replay (the kernel: CUDA_ERROR_ILLEGAL_ADDRESS); stopped measuring this kernel"
                .into(),
        }];
        let c = collect(&events, &names());
        let m = &c.measured["k"];
        assert_eq!(m.verdict(&m.candidates[1]), Verdict::Failed);
        assert!(m.candidates[1].error.as_deref().unwrap().contains("CUDA_ERROR_ILLEGAL_ADDRESS"));
        assert_eq!(m.choose([&m.candidates[1].transforms]), Some(Transforms::default()));
        assert_eq!(
            c.notes,
            ["k: candidate `decided` faulted during replay (the kernel: CUDA_ERROR_ILLEGAL_ADDRESS); stopped measuring this kernel"]
        );
    }

    #[test]
    fn unplanned_and_unlaunched_kernels_leave_no_measurement() {
        let events = [Event::Unplanned { symbol: "_Z5otherv".into() }];
        let c = collect(&events, &names());
        assert!(c.measured.is_empty() && !c.started);
        assert_eq!(c.unplanned.iter().collect::<Vec<_>>(), ["_Z5otherv"]);
    }

    #[test]
    fn notes_keep_their_last_count_once_each() {
        let note = |message: &str, launches| Event::Note { symbol: "_Z1kPd".into(), message: message.into(), launches };
        let events = [
            note("ran unmeasured: a graph was being captured", 1),
            note("not compared", 1),
            note("ran unmeasured: a graph was being captured", 4),
        ];
        let c = collect(&events, &names());
        assert_eq!(c.notes, ["k: ran unmeasured: a graph was being captured (4 launches)", "k: not compared (1 launch)"]);
        assert!(c.measured.is_empty());
    }

    #[test]
    fn what_a_copy_left_out_and_a_relocated_replay_are_noted_once() {
        let mut events =
            vec![result("k", &[("plain", &[1.0], true)], true, Some(true)), result("k", &[("plain", &[1.0], true)], true, Some(true))];
        for e in &mut events {
            let Event::Measured(r) = e else { unreachable!() };
            r.notes = vec!["1 allocation(s) (5.0 GiB) reached through pointers in device memory were left out".into()];
            r.replayed.relocated = Some("cuMemAddressReserve at 0x7f0000000000 (2097152 bytes) gave 0x7f1000000000".into());
            r.replayed.moved = 64;
        }
        let c = collect(&events, &names());
        assert_eq!(
            c.notes,
            [
                "k: 1 allocation(s) (5.0 GiB) reached through pointers in device memory were left out",
                "k: replayed on copies of its own, not at the program's addresses (cuMemAddressReserve at 0x7f0000000000 (2097152 bytes) gave 0x7f1000000000); 64 pointer(s) stored in its memory moved to the copies"
            ]
        );
        assert_eq!(c.measured["k"].launches, 2);
    }

    #[test]
    fn a_program_launch_that_differs_from_plain_is_reported() {
        let events = [result("k", &[("plain", &[1.0], true), ("decided", &[0.5], true)], true, Some(false))];
        assert_eq!(collect(&events, &names()).measured["k"].program_identical, Some(false));
    }
}

/// The replay's choice against the program's own launches after it
/// (issue 39, item 2): the runtime's confirmation fed a fake GPU's
/// timings, its result folded by [`collect`], the db's rule applied.
#[cfg(test)]
mod program_tests {
    use super::*;
    use regtune_decisions::Transforms;
    use regtune_runtime::confirm::{Confirmation, Start};
    use regtune_runtime::plan::{CandidateResult, LaunchConfig, Replayed};

    fn cap() -> Transforms {
        Transforms { unroll_cap: Some(1), ..Default::default() }
    }

    fn names() -> BTreeMap<String, Vec<PlannedCandidate>> {
        let c = |name: &str, transforms| PlannedCandidate { name: name.into(), transforms, code: None, role: Role::Candidate };
        BTreeMap::from([("k".to_string(), vec![c("plain", Transforms::default()), c("decided", cap())])])
    }

    /// A fake GPU's replay: 30 rounds drifting together, `decided` at
    /// `ratio` of plain's time in every one.
    fn replayed(ratio: f64) -> Event {
        let plain: Vec<f64> = (0..30).map(|i| 0.010 * (1.0 + 0.02 * f64::from(i % 7))).collect();
        let decided: Vec<f64> = plain.iter().map(|t| t * ratio).collect();
        let cand = |name: &str, times_ms: &[f64]| CandidateResult {
            name: name.into(),
            times_ms: times_ms.to_vec(),
            identical: true,
            difference: None,
            error: None,
        };
        Event::Measured(LaunchResult {
            symbol: "_Z1kPd".into(),
            key: "k".into(),
            device: "Fake GPU".into(),
            launch: config(),
            ranges: 1,
            bytes: 8,
            reached: 0,
            globals: 0,
            notes: vec![],
            replayed: Replayed {
                candidates: vec![cand("plain", &plain), cand("decided", &decided)],
                deterministic: true,
                launches: 61,
                relocated: None,
                moved: 0,
            },
            program_identical: Some(true),
            program_difference: None,
        })
    }

    fn config() -> LaunchConfig {
        LaunchConfig { grid: [64, 1, 1], block: [256, 1, 1], shared_bytes: 0, cooperative: false }
    }

    /// The same fake GPU inside the program: `launches` launches after the
    /// replay, plain's code `plain_us` and the choice's `choice_us`, each
    /// launch ±5 % from its neighbours (caches, the program's other work).
    fn program(launches: u32, plain_us: f64, choice_us: f64) -> Event {
        let start = Start {
            key: "k".into(),
            symbol: "_Z1kPd".into(),
            candidate: "decided".into(),
            path: "decided.cubin".into(),
            pairs: 200,
            whole: None,
        };
        let mut c = Confirmation::new(start);
        (c.registers, c.program_registers) = (Some(40), Some(64));
        for i in 0..launches {
            let swapped = c.launch(config(), i);
            let drift = 1.0 + 0.05 * f64::from((i * 7) % 11) / 10.0;
            let us = if swapped { choice_us } else { plain_us } * drift;
            c.timed(i, us / 1e3, if swapped { 40 } else { 64 });
        }
        Event::Confirmed(c.result())
    }

    fn decided(events: &[Event]) -> (Entry, Collected) {
        let collected = collect(events, &names());
        let mut entry = super::super::plan::tests::entry("_Z1kPd", cap());
        entry.measured = Some(collected.measured["k"].clone());
        (entry, collected)
    }

    #[test]
    fn a_choice_the_programs_own_launches_do_not_favour_is_not_kept() {
        // The replay: 1.449×; the program's launches: 10 µs each way, within 1 %.
        let (entry, c) = decided(&[replayed(0.69), program(500, 10.0, 9.95)]);
        let m = entry.measured.as_ref().unwrap();
        let p = m.program.as_ref().unwrap();
        assert_eq!((p.transforms.clone(), p.paired.rounds), (cap(), 200));
        assert!((p.speedup() - 1.005).abs() < 0.01, "{p:?}");
        assert!((m.speedup(&m.candidates[1]).unwrap() - 1.449).abs() < 0.001);
        assert_eq!(m.verdict(&m.candidates[1]), Verdict::Faster, "the replay alone would keep it");
        assert_eq!(entry.effective(), Transforms::default(), "the program's launches decide: plain");
        assert!(m.lost(&cap()));
        let rows = rows(&entry, m, &[]);
        assert!(rows[0].built && !rows[1].built);
        assert_eq!(rows[1].verdict, "faster in the replay, not in the program's own launches: plain kept");
        // Both figures side by side in the table.
        let cells = rows[1].cells();
        assert!(cells[8].starts_with("1.449×"), "{cells:?}");
        assert!(cells[10].starts_with("1.00") && cells[10].ends_with(" (200 pairs)"), "{cells:?}");
        let line = c.notes.iter().find(|n| n.contains("pairs of the program's own launches")).unwrap();
        assert!(line.starts_with("k: `decided` ran 1.449× in the replay, 1.00"), "{line}");
        assert!(line.ends_with(": not faster there beyond its noise, plain kept"), "{line}");
        // The db keeps the program's figure; a db written before it reads as before.
        let json = serde_json::to_string(m).unwrap();
        let read: Measured = serde_json::from_str(&json).unwrap();
        assert_eq!(read.program.as_ref().map(|p| (p.paired.rounds, &p.transforms)), Some((200, &cap())));
        assert!(read.program_rejects(&cap()));
        let mut old: serde_json::Value = serde_json::from_str(&json).unwrap();
        old.as_object_mut().unwrap().remove("program").unwrap();
        let old: Measured = serde_json::from_value(old).unwrap();
        assert_eq!(old.program, None);
        assert_eq!(old.choose([&cap()]), Some(cap()), "without the program's figure the replay decides");
    }

    #[test]
    fn a_choice_the_programs_own_launches_confirm_is_kept() {
        let (entry, c) = decided(&[replayed(0.69), program(500, 10.0, 7.4)]);
        let m = entry.measured.as_ref().unwrap();
        let p = m.program.as_ref().unwrap();
        assert!((p.speedup() - 10.0 / 7.4).abs() < 0.02, "{p:?}");
        assert_eq!(entry.effective(), cap());
        let rows = rows(&entry, m, &[]);
        assert!(rows[1].built);
        assert_eq!(rows[1].verdict, "faster: kept (confirmed on the program's own launches)");
        assert!(rows[1].cells()[10].starts_with("1.35"), "{:?}", rows[1].cells());
        assert!(
            c.notes.iter().any(|n| n.starts_with("k: `decided` ran 1.449× in the replay, 1.35") && n.ends_with(": confirmed")),
            "{:?}",
            c.notes
        );
    }

    #[test]
    fn whole_runs_of_the_program_decide_where_its_launches_were_too_few() {
        // Twenty pairs of runs, each run's total; the choice 1.5 % faster, each pair ±0.2 %.
        let plain: Vec<f64> = (0..20).map(|i| 1.0 + 0.002 * f64::from(i % 3)).collect();
        let choice: Vec<f64> = plain.iter().enumerate().map(|(i, p)| p * (0.985 + 0.002 * (i % 2) as f64)).collect();
        let whole = |plain: &[f64], choice: &[f64]| {
            Event::Confirmed(Confirmed {
                symbol: "_Z1kPd".into(),
                key: "k".into(),
                candidate: "decided".into(),
                launches: 40,
                plain_ms: plain.to_vec(),
                choice_ms: choice.to_vec(),
                registers: [Some(64), Some(40)],
                failure: None,
                whole_runs: true,
            })
        };
        // The first run's own confirmation (no launch after the replay), then the whole runs'.
        let (entry, c) = decided(&[replayed(0.69), program(1, 10.0, 9.95), whole(&plain, &choice)]);
        let m = entry.measured.as_ref().unwrap();
        let p = m.program.as_ref().unwrap();
        assert!(p.whole_runs && p.paired.rounds == 20, "{p:?}");
        assert!((p.speedup() - 1.0 / 0.986).abs() < 0.002, "{p:?}");
        assert_eq!(entry.effective(), cap(), "1.4 % faster beyond the noise: kept");
        let line = c.notes.iter().find(|n| n.contains("pairs of whole runs of the program (median total a run")).unwrap();
        assert!(line.starts_with("k: `decided` ran 1.449× in the replay, 1.01") && line.ends_with(": confirmed"), "{line}");
        // As the program's runs read lavaMD: no faster; plain kept.
        let (entry, _) = decided(&[replayed(0.69), whole(&plain, &plain)]);
        assert_eq!(entry.effective(), Transforms::default());
        // Stopped short of twenty pairs: the replay decides, and says how many there were.
        let (entry, c) = decided(&[replayed(0.69), whole(&plain[..7], &choice[..7])]);
        assert_eq!(entry.effective(), cap());
        assert!(
            c.notes
                .iter()
                .any(|n| n == "k: `decided` not confirmed: 7 pair(s) of whole runs timed (20 needed); the replay's figure decides"),
            "{:?}",
            c.notes
        );
    }

    #[test]
    fn too_few_launches_after_the_replay_leave_the_replays_figure_to_decide() {
        let (entry, c) = decided(&[replayed(0.69), program(12, 10.0, 9.95)]);
        assert_eq!(entry.measured.as_ref().unwrap().program, None);
        assert_eq!(entry.effective(), cap());
        assert!(
            c.notes.contains(
                &"k: `decided` not confirmed: 12 launches after the replay, 6 pair(s) timed (20 needed); the replay's figure decides"
                    .to_string()
            ),
            "{:?}",
            c.notes
        );
        // A failure (the choice's code could not be loaded) is one line, the replay deciding.
        let failed = Event::Confirmed(Confirmed {
            symbol: "_Z1kPd".into(),
            key: "k".into(),
            candidate: "decided".into(),
            launches: 0,
            plain_ms: vec![],
            choice_ms: vec![],
            registers: [None, None],
            failure: Some(
                "not confirmed: the choice's code could not be loaded into the program (cuModuleLoadData: CUDA_ERROR_INVALID_IMAGE)".into(),
            ),
            whole_runs: false,
        });
        let (entry, c) = decided(&[replayed(0.69), failed]);
        assert_eq!(entry.effective(), cap());
        assert!(c.notes.iter().any(|n| n.starts_with("k: not confirmed: the choice's code could not be loaded")), "{:?}", c.notes);
        // No launch after the replayed one: nothing confirmed (measure says so from the db).
        let (entry, c) = decided(&[replayed(0.69)]);
        assert_eq!(entry.effective(), cap());
        assert!(!c.confirmed.contains("k") && c.notes.is_empty(), "{:?}", c.notes);
    }
}
