//! From the db to the interposer's plan: every kernel with a decision or a
//! suggestion whose candidate code objects `tune` kept.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use regtune_decisions::{Db, Transforms};
use regtune_runtime::plan::{Param, Plan, PlanCandidate, PlanKernel};

use super::code;

/// The plan, and for each db entry (by key) its candidates' transforms by name.
pub struct Planned {
    pub plan: Plan,
    pub candidates: BTreeMap<String, Vec<(String, Transforms)>>,
    /// Entries with something to measure but no code objects (tuned before
    /// regtune kept them, or by another machine): tune them again.
    pub missing: Vec<String>,
}

pub fn build(db: &Db, code_dir: &Path, launches: u32, runs: u32, replayer: PathBuf) -> Planned {
    let mut kernels = Vec::new();
    let mut candidates = BTreeMap::new();
    let mut missing = Vec::new();
    for entry in db.kernels.values().filter(|e| !e.transforms.is_empty() || !e.suggested.is_empty()) {
        let all = code::candidates(code_dir, entry);
        if !all.iter().all(|(_, _, p)| p.is_file()) {
            missing.push(format!("{} ({})", entry.name, entry.arch));
            continue;
        }
        let params = kernel_params(&all[0].2, &entry.symbol);
        candidates.insert(entry.key(), all.iter().map(|(n, t, _)| (n.clone(), t.clone())).collect());
        kernels.push(PlanKernel {
            symbol: entry.symbol.clone(),
            key: entry.key(),
            arch: entry.arch.clone(),
            candidates: all.into_iter().map(|(name, _, path)| PlanCandidate { name, path: absolute(&path) }).collect(),
            params,
        });
    }
    Planned { plan: Plan { launches, runs, replayer, kernels }, candidates, missing }
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
    let pairs: Option<Vec<(u64, u64)>> = if crate::target::nvptx::cubin::is_cubin(&bytes) {
        crate::target::nvptx::cubin::read(&bytes).ok().and_then(|ks| ks.into_iter().find(|k| k.name == symbol)).map(|k| k.params)
    } else {
        crate::target::amdgpu::codeobj::read(&bytes).ok().and_then(|os| os.into_iter().flat_map(|o| o.kernels).find(|k| k.name == symbol)).map(|k| k.args)
    };
    pairs.unwrap_or_default().into_iter().map(|(offset, size)| Param { offset, size }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use regtune_decisions::Entry;

    fn entry(symbol: &str, transforms: Transforms) -> Entry {
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
            measured: None,
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
        let planned = build(&db, dir.path(), 1, 10, "regtune-replay".into());
        let symbols: Vec<&str> = planned.plan.kernels.iter().map(|k| k.symbol.as_str()).collect();
        assert_eq!(symbols, ["_Z4sinkv"]);
        assert_eq!(planned.missing, ["_Z7missingv (sm_90)"]);
        let k = &planned.plan.kernels[0];
        assert_eq!(k.candidates.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["plain", "decided"]);
        assert!(k.candidates.iter().all(|c| c.path.is_absolute() && c.path.is_file()));
        assert_eq!(planned.candidates["sm_90/_Z4sinkv/h"], [("plain".into(), Transforms::default()), ("decided".into(), sink)]);
    }
}
