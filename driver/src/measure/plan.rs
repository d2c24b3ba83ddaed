//! From the db to the interposer's plan: every kernel with a decision or a
//! suggestion whose candidate code objects `tune` kept.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use regtune_decisions::{Db, Transforms};
use regtune_runtime::plan::{self as wire, Param, Plan, PlanCandidate, PlanKernel};

use super::code;

/// The plan, and for each db entry (by key) its candidates.
pub(crate) struct Planned {
    pub plan: Plan,
    pub candidates: BTreeMap<String, Vec<PlannedCandidate>>,
    /// Entries with something to measure but no code objects (tuned before
    /// regtune kept them, or by another machine): tune them again.
    pub missing: Vec<String>,
}

/// One candidate as planned: its name, transforms, and its code object's
/// hash, which a measurement keeps so that a re-tune knows whether it
/// still holds.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PlannedCandidate {
    pub name: String,
    pub transforms: Transforms,
    pub code: Option<String>,
    pub role: Role,
}

/// What a timed build is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// One of the db's candidates: the build may use it.
    Candidate,
    /// Plain's code loaded a second time: how far apart two loads of the
    /// same code run, the least gain the others must show.
    Control,
    /// A build of the user's (`--compare`): timed and reported, never a
    /// candidate of the db.
    Compared,
}

/// The control's name in the plan and the report.
pub(crate) const CONTROL: &str = "plain again";

/// How the user's own builds (`--compare LABEL=...`) are named: `compare:LABEL`.
pub(crate) const COMPARE: &str = "compare:";

/// How the other CUDA compiler's build is named in the plan and the
/// report: `other:clang`, `other:nvcc`.
pub(crate) const OTHER: &str = "other:";

/// The compiler of a build named `other:COMPILER`.
pub(crate) fn other_compiler(name: &str) -> Option<&str> {
    name.strip_prefix(OTHER)
}

/// How the plan is made: the measurement's settings and the user's own
/// builds to time beside the candidates (label, code object).
pub(crate) struct Settings {
    pub launches: u32,
    pub runs: u32,
    pub budget_s: f64,
    pub replayer: PathBuf,
    pub compare: Vec<(String, PathBuf)>,
    pub capture: wire::Capture,
}

pub(crate) fn build(db: &Db, code_dir: &Path, settings: &Settings) -> Planned {
    let mut kernels = Vec::new();
    let mut candidates = BTreeMap::new();
    let mut missing = Vec::new();
    for entry in db.kernels.values().filter(|e| code::has_candidates(e)) {
        let all = code::candidates(code_dir, entry);
        if !all.iter().all(|(_, _, p)| p.is_file()) {
            missing.push(format!("{} ({})", entry.name, entry.arch));
            continue;
        }
        let params = kernel_params(&all[0].2, &entry.symbol);
        let mut planned: Vec<PlannedCandidate> = all
            .iter()
            .map(|(n, t, p)| PlannedCandidate { name: n.clone(), transforms: t.clone(), code: code::hash_of(p), role: Role::Candidate })
            .collect();
        let mut paths: Vec<PathBuf> = all.into_iter().map(|(_, _, p)| p).collect();
        // Each build loads as a module of its own, and where a module lands
        // can move a small kernel's time by a few percent: plain loaded
        // again shows how much.
        planned.push(PlannedCandidate { name: CONTROL.into(), role: Role::Control, ..planned[0].clone() });
        paths.push(paths[0].clone());
        // The other CUDA compiler's code for the same kernel, where it takes
        // the same parameters: timed and reported like the user's builds.
        let other =
            code::other(code_dir, entry).filter(|(_, p)| holds_kernel(p, &entry.symbol) && kernel_params(p, &entry.symbol) == params);
        if let Some((compiler, path)) = other {
            planned.push(PlannedCandidate {
                name: format!("{OTHER}{compiler}"),
                transforms: Transforms::default(),
                code: code::hash_of(&path),
                role: Role::Compared,
            });
            paths.push(path);
        }
        for (label, path) in settings.compare.iter().filter(|(_, p)| holds_kernel(p, &entry.symbol)) {
            planned.push(PlannedCandidate {
                name: format!("{COMPARE}{label}"),
                transforms: Transforms::default(),
                code: code::hash_of(path),
                role: Role::Compared,
            });
            paths.push(path.clone());
        }
        // The builds the measurement may choose: the interposer chooses among
        // them after the replay and confirms the choice on the program's
        // launches.
        let allowed = entry.allowed();
        let choices = planned
            .iter()
            .filter(|c| c.role == Role::Candidate && allowed.contains(&c.transforms))
            .map(|c| wire::Choice { name: c.name.clone(), transforms: c.transforms.clone() })
            .collect();
        kernels.push(PlanKernel {
            symbol: entry.symbol.clone(),
            key: entry.key(),
            arch: entry.arch.clone(),
            candidates: planned.iter().zip(&paths).map(|(c, p)| PlanCandidate { name: c.name.clone(), path: absolute(p) }).collect(),
            params,
            choices,
            control: Some(CONTROL.to_string()),
        });
        candidates.insert(entry.key(), planned);
    }
    let plan = Plan {
        launches: settings.launches,
        runs: settings.runs,
        budget_s: settings.budget_s,
        replayer: settings.replayer.clone(),
        kernels,
        capture: settings.capture,
        whole_runs: vec![],
    };
    Planned { plan, candidates, missing }
}

/// Whether a code object defines the kernel `symbol`.
fn holds_kernel(object: &Path, symbol: &str) -> bool {
    kernel_symbols(object).iter().any(|s| s == symbol)
}

/// The kernels a code object defines.
fn kernel_symbols(object: &Path) -> Vec<String> {
    let Ok(bytes) = std::fs::read(object) else { return vec![] };
    if crate::gpu::nvptx::cubin::is_cubin(&bytes) {
        crate::gpu::nvptx::cubin::read(&bytes).map(|ks| ks.into_iter().map(|k| k.name).collect()).unwrap_or_default()
    } else {
        let objects = crate::gpu::amdgpu::codeobj::read(&bytes).unwrap_or_default();
        objects.into_iter().flat_map(|o| o.kernels).map(|k| k.name).collect()
    }
}

/// The program runs in its own directory: paths must not depend on ours.
fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

/// Where each parameter goes in the launch's argument buffer, from the
/// plain code object: a cubin's `.nv.info`, an AMDGPU object's metadata.
/// (Launches pass one value pointer per parameter; CUDA's driver can also
/// tell, and the interposer checks the two agree.)
pub fn kernel_params(object: &Path, symbol: &str) -> Vec<Param> {
    let Ok(bytes) = std::fs::read(object) else { return vec![] };
    let pairs: Option<Vec<(u64, u64)>> = if crate::gpu::nvptx::cubin::is_cubin(&bytes) {
        crate::gpu::nvptx::cubin::read(&bytes).ok().and_then(|ks| ks.into_iter().find(|k| k.name == symbol)).map(|k| k.params)
    } else {
        crate::gpu::amdgpu::codeobj::read(&bytes)
            .ok()
            .and_then(|os| os.into_iter().flat_map(|o| o.kernels).find(|k| k.name == symbol))
            .map(|k| k.args)
    };
    pairs.unwrap_or_default().into_iter().map(|(offset, size)| Param { offset, size }).collect()
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use regtune_decisions::Entry;

    /// A db entry for `symbol` on sm_90 (the other runtime tests use it too).
    pub(in crate::measure) fn entry(symbol: &str, transforms: Transforms) -> Entry {
        Entry {
            symbol: symbol.into(),
            arch: "sm_90".into(),
            input_hash: "h".into(),
            name: symbol.into(),
            file: "k.cu".into(),
            transforms,
            reason: None,
            suggested: vec![],
            before: None,
            after: None,
            candidates: vec![],
            left_out: vec![],
            measured: None,
        }
    }

    /// A plan's settings for these tests: one launch, ten runs.
    fn settings() -> Settings {
        Settings {
            launches: 1,
            runs: 10,
            budget_s: 5.0,
            replayer: "regtune-replay".into(),
            compare: vec![],
            capture: wire::Capture::default(),
        }
    }

    #[test]
    fn only_entries_with_something_to_measure_and_their_code_objects_are_planned() {
        let dir = tempfile::tempdir().unwrap();
        let mut db = Db::default();
        let sink = Transforms { sink: true, ..Default::default() };
        db.insert(entry("_Z5plainv", Transforms::default()));
        db.insert(entry("_Z4sinkv", sink.clone()));
        db.insert(entry("_Z7missingv", sink.clone()));
        for (_, _, p) in code::candidates(dir.path(), &db.kernels["sm_90/_Z4sinkv/h"]) {
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, b"cubin").unwrap();
        }
        let settings = settings();
        let planned = build(&db, dir.path(), &settings);
        let symbols: Vec<&str> = planned.plan.kernels.iter().map(|k| k.symbol.as_str()).collect();
        assert_eq!(symbols, ["_Z4sinkv"]);
        assert_eq!(planned.missing, ["_Z7missingv (sm_90)"]);
        let k = &planned.plan.kernels[0];
        assert_eq!(k.candidates.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["plain", "decided", CONTROL]);
        assert!(k.candidates.iter().all(|c| c.path.is_absolute() && c.path.is_file()));
        assert_eq!(k.candidates[2].path, k.candidates[0].path, "the control is plain's own code, loaded again");
        // What the interposer may choose after the replay, and confirm on the program's launches.
        let choices: Vec<(&str, &Transforms)> = k.choices.iter().map(|c| (c.name.as_str(), &c.transforms)).collect();
        assert_eq!(choices, [("decided", &sink)]);
        assert_eq!(k.control.as_deref(), Some(CONTROL));
        let names: Vec<(&str, &Transforms, Role)> =
            planned.candidates["sm_90/_Z4sinkv/h"].iter().map(|c| (c.name.as_str(), &c.transforms, c.role)).collect();
        assert_eq!(
            names,
            [
                ("plain", &Transforms::default(), Role::Candidate),
                ("decided", &sink, Role::Candidate),
                (CONTROL, &Transforms::default(), Role::Control)
            ]
        );
        assert!(planned.candidates["sm_90/_Z4sinkv/h"].iter().all(|c| c.code.is_some()));
    }
}
