//! `regtune measure` without a GPU (the CI machine has none): tune keeps
//! the candidate code objects the real backend built, measure plans them,
//! refuses bad input before the program runs, and otherwise lets the
//! program run with its own output and exit status. What it measures on a
//! GPU is in bench/runtime (docs/guide/measure.md).

// A test fails by panicking; `unwrap` says where.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use common::{evidence_all_proven, evidence_none, repo};
use regtune::measure::code;
use regtune_decisions::{Db, Entry, Transforms};

fn regtune() -> Command {
    let mut cmd = Command::cargo_bin("regtune").expect("regtune binary");
    cmd.current_dir(repo());
    cmd.env_remove("REGTUNE_EVIDENCE");
    cmd
}

/// A candidate's name as `regtune measure` gives it on sm_90: its labels,
/// occupancy targets in warps per SM.
fn sm_90_name(t: &Transforms) -> String {
    t.labels().join(" + ")
}

fn tools_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_regtune")).parent().unwrap().to_path_buf()
}

/// A db with one sm_90 kernel decided `sink`, and placeholder candidates.
fn fake_db(dir: &Path) -> PathBuf {
    let db_path = dir.join("decisions.json");
    let entry = Entry {
        symbol: "_Z4stepPd".into(),
        arch: "sm_90".into(),
        input_hash: "0123".into(),
        name: "step(double*)".into(),
        file: "step.cu".into(),
        transforms: Transforms { sink: true, ..Default::default() },
        reason: None,
        suggested: vec![],
        before: None,
        after: None,
        candidates: vec![],
        left_out: vec![],
        measured: None,
    };
    for (_, _, path) in code::candidates(&code::dir(&db_path), &entry) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, b"not a real cubin: never loaded without a GPU").unwrap();
    }
    let mut db = Db::default();
    db.insert(entry);
    db.save(&db_path).unwrap();
    db_path
}

fn stderr_lines(out: &std::process::Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr).lines().map(str::to_string).collect()
}

#[test]
fn tune_keeps_the_candidates_it_measured_and_measure_plans_them() {
    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("decisions.json");
    // Sink proven by the evidence given: decided, as it was before the
    // default followed GPU evidence. (nvcc's build of the file, planned
    // beside these, is tests/nvptx.rs's.)
    regtune()
        .args(["tune", "--offload-arch", "sm_90", "--no-other-compiler", "--evidence"])
        .arg(evidence_all_proven())
        .arg("--db")
        .arg(&db_path)
        .arg("examples/long_lived.hip")
        .assert()
        .success();
    let db = Db::load(&db_path).unwrap();
    let entry = db.kernels.values().find(|e| e.symbol.starts_with("_Z16md_lj_force_kick")).expect("md_lj_force_kick tuned");
    assert!(entry.transforms.sink, "sink decided for sm_90: {:?}", entry.transforms);
    assert!(entry.suggested.is_empty(), "{:?}", entry.suggested);
    assert!(!entry.candidates.is_empty(), "the measured search kept builds of its own");
    let candidates = code::candidates(&code::dir(&db_path), entry);
    let names: Vec<String> = candidates.iter().map(|(n, _, _)| n.clone()).collect();
    let mut expected = vec!["plain".to_string(), "decided".to_string()];
    expected.extend(entry.candidates.iter().map(|c| sm_90_name(&c.transforms)));
    assert_eq!(names, expected);
    // The kept cubins are the very builds the db describes: ptxas's register counts, read back.
    let registers = |path: &Path| {
        let ks = regtune::gpu::nvptx::cubin::read(&std::fs::read(path).unwrap()).unwrap();
        ks.into_iter().find(|k| k.name == entry.symbol).unwrap().registers
    };
    assert_eq!(registers(&candidates[0].2), entry.before.unwrap().vgpr);
    assert_eq!(registers(&candidates[1].2), entry.after.unwrap().vgpr);
    assert!(entry.after.unwrap().vgpr < entry.before.unwrap().vgpr);
    for ((name, _, path), c) in candidates[2..].iter().zip(&entry.candidates) {
        assert_eq!(registers(path), c.usage.vgpr, "{name}");
    }
    // Parameters from .nv.info: 23 of them, the last three doubles at the end of the buffer.
    let params = regtune::measure::plan::kernel_params(&candidates[0].2, &entry.symbol);
    assert_eq!(params.len(), 23);
    assert_eq!((params[22].offset, params[22].size), (176, 8));

    let out = regtune().args(["measure", "--dry-run", "--db"]).arg(&db_path).args(["--", "true"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let line = format!("would measure {} on sm_90: {}, plain again", entry.symbol, names.join(", "));
    assert!(stderr_lines(&out).contains(&line), "{line} in {:?}", stderr_lines(&out));
}

/// A file's hash, for telling code objects apart.
fn file_hash(path: &Path) -> Vec<u8> {
    use sha2::Digest;
    sha2::Sha256::digest(std::fs::read(path).unwrap()).to_vec()
}

/// Two tunes of the same file keep the same bytes, on AMDGPU too (whose
/// code objects name a symbol after the compilation unit's ID): else a
/// re-tune would find every measured code object changed and drop what the
/// GPU measured.
#[test]
fn two_tunes_of_a_file_keep_the_same_code_objects() {
    let kept = |dir: &Path| {
        let db_path = dir.join("decisions.json");
        regtune()
            .args(["tune", "--offload-arch", "gfx90a", "--candidates", "2", "--db"])
            .arg(&db_path)
            .arg("examples/laplacian3d.hip")
            .assert()
            .success();
        let db = Db::load(&db_path).unwrap();
        let mut files: Vec<(String, Vec<u8>)> = db
            .kernels
            .values()
            .flat_map(|e| code::candidates(&code::dir(&db_path), e))
            .filter(|(_, _, path)| path.is_file())
            .map(|(name, _, path)| (name, file_hash(&path)))
            .collect();
        files.sort();
        files
    };
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let first = kept(a.path());
    assert!(first.len() >= 2, "plain and a candidate at least: {first:?}");
    assert_eq!(first, kept(b.path()));
}

/// The measured search on the Laplacian for sm_90 (64 registers, no
/// spills): every occupancy step's register cap is a candidate, spilling or
/// not, each kept code object differs from every other, `--candidates`
/// leaves the rest listed, and `regtune measure` plans them all.
#[test]
fn the_measured_search_keeps_every_occupancy_step_once_and_measure_plans_each() {
    let tune = |db: &Path, extra: &[&str]| -> serde_json::Value {
        let out = regtune()
            .args(["tune", "--format", "json", "--offload-arch", "sm_90", "--no-other-compiler", "--evidence"])
            .arg(evidence_none())
            .arg("--db")
            .arg(db)
            .args(extra)
            .arg("examples/laplacian3d.hip")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        doc["kernels"][0].clone()
    };
    let labels = |v: &serde_json::Value| -> Vec<String> {
        v.as_array().map(|a| a.iter().map(|l| l.as_str().unwrap().to_string()).collect()).unwrap_or_default()
    };
    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("decisions.json");
    // Room for every step (the default 8 takes the nearest to the kernel's own).
    let row = tune(&db_path, &["--candidates", "16"]);
    let db = Db::load(&db_path).unwrap();
    let entry = db.kernels.values().find(|e| e.symbol.starts_with("_Z20laplacian3d")).expect("laplacian3d tuned");
    let before = entry.before.unwrap();
    assert_eq!((before.vgpr, before.vgpr_spills, before.occupancy), (64, 0, 32), "{before:?}");
    assert!(entry.transforms.is_empty(), "nothing proven, nothing decided: {:?}", entry.transforms);
    assert_eq!(entry.suggested.len(), 1, "{:?}", entry.suggested);

    // The candidates, as the db keeps them and tune prints them.
    let names: Vec<String> = entry.candidates.iter().map(|c| sm_90_name(&c.transforms)).collect();
    assert_eq!(labels(&row["candidates"]), names);
    assert_eq!(labels(&row["left_out"]), entry.left_out);
    // Every step's cap alone is built (a ptxas run each on plain's PTX);
    // --candidates counts the suggestion and the rest, and what is left
    // out is left out only once the 16 are full.
    let caps = entry.candidates.iter().take_while(|c| c.transforms.cap_alone().is_some()).count();
    let kept = entry.candidates.len() - caps + entry.suggested.len();
    assert!(kept <= 16 && (entry.left_out.is_empty() || kept == 16), "{names:?}, left out {:?}", entry.left_out);
    // The kernel's own step (64 registers: the cap of 32 warps) first, then the lowest (255).
    assert_eq!(names[..2], ["warps-per-sm=32", "warps-per-sm=8"], "{names:?}");
    let steps: Vec<&regtune_decisions::Candidate> = entry.candidates.iter().filter(|c| c.transforms.warps_per_sm.is_some()).collect();
    assert!(steps.len() >= 3, "several occupancy steps: {names:?}");
    assert!(steps.iter().any(|c| c.usage.occupancy > before.occupancy), "a step above the plain build's occupancy: {steps:?}");
    assert!(
        steps.iter().any(|c| c.usage.vgpr_spills > 0 && c.usage.local_accesses > 0),
        "a step that spills is still a candidate: {steps:?}"
    );
    assert!(steps.iter().any(|c| c.transforms.warps_per_sm == Some(64)), "the highest step: {names:?}");
    assert!(entry.candidates.iter().any(|c| c.transforms.unroll_cap.is_some()), "unroll caps: {names:?}");

    // Every build is stored once, and no two are the same code.
    let files: Vec<_> = std::fs::read_dir(code::dir(&db_path).join(&entry.input_hash)).unwrap().map(|f| f.unwrap().path()).collect();
    let planned = code::candidates(&code::dir(&db_path), entry);
    assert_eq!(files.len(), planned.len(), "plain, the suggestion and each candidate: {files:?}");
    assert_eq!(planned.len(), 2 + entry.candidates.len());
    let mut hashes: Vec<Vec<u8>> = files.iter().map(|f| file_hash(f)).collect();
    hashes.sort();
    hashes.dedup();
    assert_eq!(hashes.len(), files.len(), "identical code is kept once");

    // `regtune measure` plans every one of them.
    let out = regtune().args(["measure", "--dry-run", "--db"]).arg(&db_path).args(["--", "true"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut all = vec!["plain".to_string(), "suggested".to_string()];
    all.extend(names.iter().cloned());
    let line = format!("would measure {} on sm_90: {}, plain again", entry.symbol, all.join(", "));
    assert!(stderr_lines(&out).contains(&line), "{line} in {:?}", stderr_lines(&out));

    // `--candidates 3`: every cap, the suggestion and the first two others;
    // the rest are listed, not built.
    let few_path = dir.path().join("few.json");
    let few_row = tune(&few_path, &["--candidates", "3"]);
    let few = Db::load(&few_path).unwrap().kernels.into_values().next().unwrap();
    assert_eq!(few.suggested.len(), 1);
    let few_names: Vec<String> = few.candidates.iter().map(|c| sm_90_name(&c.transforms)).collect();
    assert_eq!(few_names, names[..caps + 2], "every cap, then the same first others");
    assert_eq!(labels(&few_row["candidates"]), few_names);
    assert_eq!(labels(&few_row["left_out"]), few.left_out);
    for name in names[caps + 2..].iter().chain(&entry.left_out) {
        assert!(few.left_out.contains(name), "{name} left out: {:?}", few.left_out);
    }
    let stored = std::fs::read_dir(code::dir(&few_path).join(&few.input_hash)).unwrap().count();
    assert_eq!(stored, 4 + caps, "plain, the suggestion, every cap and two others");
    let out = regtune().args(["measure", "--dry-run", "--db"]).arg(&few_path).args(["--", "true"]).output().unwrap();
    let lines = stderr_lines(&out);
    assert!(
        lines.contains(&format!("would measure {} on sm_90: plain, suggested, {}, plain again", few.symbol, few_names.join(", "))),
        "{lines:?}"
    );
    let note = format!(
        "laplacian3d_o8_ztile: {} more candidates left out by tune (--candidates or --time-budget): {}",
        few.left_out.len(),
        few.left_out.join(", ")
    );
    assert!(lines.contains(&note), "{note} in {lines:?}");
}

/// Each turn of the loop (tune, measure, tune again) times what the last
/// left out: builds the GPU timed and found no faster wait behind those it
/// has not timed, so `--candidates` bounds each run and not the search.
/// The build it chose is timed again beside the new ones; the losers stay
/// in the db as `earlier` and are never chosen. On AMDGPU, where each cap
/// is a compile; on NVIDIA one turn builds every cap (a ptxas run each)
/// and leaves the Laplacian nothing for a second.
#[test]
fn each_turn_of_the_loop_times_what_the_last_left_out() {
    turns_of_the_loop("sm_90", sm_90_name);
    turns_of_the_loop("gfx90a", |t| t.labels().join(" + "));
}

fn turns_of_the_loop(arch: &str, name: fn(&Transforms) -> String) {
    use regtune_decisions::measured::{Candidate, Paired, Timing};
    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("decisions.json");
    let tune = || {
        let out = regtune()
            // Time for every build a turn takes, on a loaded machine too.
            .args(["tune", "--offload-arch", arch, "--candidates", "5", "--time-budget", "600", "--evidence"])
            .arg(evidence_none())
            .arg("--db")
            .arg(&db_path)
            .arg("examples/laplacian3d.hip")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        Db::load(&db_path).unwrap().kernels.into_values().find(|e| e.symbol.starts_with("_Z20laplacian3d")).unwrap()
    };
    // On NVIDIA every step's cap alone is built in every turn (a ptxas run
    // each, never left out): the turns are of the others.
    let turned = |e: &Entry| -> Vec<Transforms> {
        e.candidates.iter().map(|c| c.transforms.clone()).filter(|t| !(arch.starts_with("sm_") && t.cap_alone().is_some())).collect()
    };
    let names = |e: &Entry| turned(e).iter().map(name).collect::<Vec<_>>();
    // What `regtune measure` records: each build's ratio to plain, the code it timed.
    let timed = |e: &Entry, ratios: &[(&Transforms, f64)]| {
        let code_of = |t: &Transforms| {
            let (_, _, path) = code::candidates(&code::dir(&db_path), e).into_iter().find(|(_, c, _)| c == t).unwrap();
            code::hash_of(&path)
        };
        let candidate = |t: &Transforms, ratio: f64| Candidate {
            transforms: t.clone(),
            time: Some(Timing { median_ms: ratio, spread_ms: 0.0 }),
            identical: true,
            error: None,
            code: code_of(t),
            paired: Some(Paired { lower: ratio - 0.001, median: ratio, upper: ratio + 0.001, rounds: 40 }),
        };
        let plain = Transforms::default();
        regtune_decisions::Measured {
            device: "a test's".into(),
            launches: 1,
            runs: 40,
            deterministic: true,
            program_identical: None,
            block: None,
            candidates: std::iter::once(candidate(&plain, 1.0)).chain(ratios.iter().map(|(t, r)| candidate(t, *r))).collect(),
            control: None,
            earlier: vec![],
            program: None,
        }
    };
    let save = |e: &Entry, m: regtune_decisions::Measured| {
        let mut db = Db::load(&db_path).unwrap();
        let entry = db.kernels.get_mut(&e.key()).unwrap();
        // As measure writes it: what the db's last measurement timed carries on.
        entry.measured = Some(m.with_earlier(entry.measured.as_ref()));
        db.save(&db_path).unwrap();
    };

    let first = tune();
    if arch.starts_with("sm_") {
        // One turn builds every cap alone and, within --candidates, the
        // unroll caps: nothing of the Laplacian is left for a second.
        assert!(first.left_out.is_empty(), "one turn: {:?} left out", first.left_out);
        assert!(first.candidates.iter().filter(|c| c.transforms.cap_alone().is_some()).count() >= 6, "{:?}", names(&first));
        return;
    }
    let (turn1, left1) = (names(&first), first.left_out.clone());
    assert_eq!(turn1.len(), 4, "five less the suggestion: {turn1:?}");
    assert!(left1.len() >= 6, "room for two more turns: {left1:?}");
    // The GPU: the first candidate 5 % faster, the other three slower or no faster.
    let c = |e: &Entry, i: usize| turned(e)[i].clone();
    let winner = c(&first, 0);
    save(&first, timed(&first, &[(&winner, 0.95), (&c(&first, 1), 1.04), (&c(&first, 2), 1.0), (&c(&first, 3), 1.2)]));
    assert_eq!(Db::load(&db_path).unwrap().kernels[&first.key()].effective(), winner);

    // Then what the last turn left out, in its order (a build whose code
    // turns out to be one already kept is skipped); losers again only once
    // nothing untimed is left.
    let next_of = |turn: &[String], left: &[String]| {
        let fresh: Vec<&String> = turn[1..].iter().take_while(|n| left.contains(n)).collect();
        let at: Vec<usize> = fresh.iter().map(|n| left.iter().position(|l| l == *n).unwrap()).collect();
        assert!(at.first() == Some(&0) && at.windows(2).all(|w| w[0] < w[1]), "{turn:?} from {left:?}");
        let rest = left[at[at.len() - 1] + 1..].to_vec();
        assert!(fresh.len() == turn.len() - 1 || rest.is_empty(), "{turn:?} from {left:?}");
        rest
    };
    let second = tune();
    let turn2 = names(&second);
    assert_eq!(turn2[0], turn1[0], "the build the GPU chose is timed again: {turn2:?}");
    let left2 = next_of(&turn2, &left1);
    assert_eq!(second.left_out, left2, "the losers are not left out: they were timed");
    let m = second.measured.as_ref().expect("the measurement holds: the same code");
    let earlier: Vec<String> = m.earlier.iter().map(|c| name(&c.transforms)).collect();
    assert_eq!(earlier, turn1[1..]);
    assert_eq!(second.effective(), winner, "still the build the GPU chose");
    let out = regtune().args(["measure", "--dry-run", "--db"]).arg(&db_path).args(["--", "true"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let note = format!(
        "laplacian3d_o8_ztile: 3 builds an earlier run timed, not timed again: {} 0.962×, {} 1.000×, {} 0.833×",
        turn1[1], turn1[2], turn1[3]
    );
    assert!(stderr_lines(&out).contains(&note), "{note} in {:?}", stderr_lines(&out));

    // The second run: none of the new builds faster. The third turn goes on
    // past them, and never back to the first turn's losers.
    let ratios: Vec<(Transforms, f64)> = (0..4).map(|i| (c(&second, i), if i == 0 { 0.95 } else { 1.01 })).collect();
    let ratios: Vec<(&Transforms, f64)> = ratios.iter().map(|(t, r)| (t, *r)).collect();
    save(&second, timed(&second, &ratios));
    let third = tune();
    let turn3 = names(&third);
    assert_eq!(turn3[0], turn1[0]);
    assert_eq!(third.left_out, next_of(&turn3, &left2));
    // Both turns' losers, once each, but those timed again.
    let mut earlier: Vec<String> = third.measured.as_ref().unwrap().earlier.iter().map(|c| name(&c.transforms)).collect();
    let mut losers: Vec<String> = turn1[1..].iter().chain(&turn2[1..]).filter(|n| !turn3.contains(n)).cloned().collect();
    earlier.sort();
    losers.sort();
    assert_eq!(earlier, losers);
}

/// Spilling to shared memory needs a block size every launch keeps to.
/// Where only `regtune measure`'s launches showed one, the re-tune builds
/// it at the first two caps that spill, with that size as launch bounds:
/// suggestions (a promise about later launches) that measure times and
/// the build never applies unasked. ptxas moves spills to shared memory.
#[test]
fn a_block_size_only_measure_saw_makes_spilling_to_shared_a_suggestion() {
    let tune = |db: &Path| {
        let out = regtune()
            .args(["tune", "--format", "json", "--offload-arch", "sm_90", "--candidates", "16", "--evidence"])
            .arg(evidence_none())
            .arg("--db")
            .arg(db)
            .arg("examples/laplacian3d.hip")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    };
    let laplacian = |db: &Path| Db::load(db).unwrap().kernels.into_values().find(|e| e.symbol.starts_with("_Z20laplacian3d")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("decisions.json");
    tune(&db_path);
    let first = laplacian(&db_path);
    assert!(first.suggested.iter().all(|s| !s.transforms.spill_to_shared), "no block size known: {:?}", first.suggested);
    assert!(first.candidates.iter().all(|c| !c.transforms.spill_to_shared && c.transforms.lds_spill.is_none()));

    // What measure records: every launch used 256 threads.
    let launched_256 = |candidates| regtune_decisions::Measured {
        device: "a test's".into(),
        launches: 1,
        runs: 1,
        deterministic: true,
        program_identical: None,
        block: Some(256),
        candidates,
        control: None,
        earlier: vec![],
        program: None,
    };
    let mut db = Db::load(&db_path).unwrap();
    for e in db.kernels.values_mut() {
        e.measured = Some(launched_256(vec![]));
    }
    db.save(&db_path).unwrap();
    tune(&db_path);
    let entry = laplacian(&db_path);
    // No candidate was timed, so none survives the re-tune; the launches' block size does.
    let kept = entry.measured.as_ref().expect("the launches outlive the re-tune");
    assert!(kept.block == Some(256) && kept.candidates.is_empty(), "{kept:?}");
    let spills: Vec<&regtune_decisions::Suggestion> = entry.suggested.iter().filter(|s| s.transforms.spill_to_shared).collect();
    assert_eq!(spills.len(), 2, "{:?}", entry.suggested);
    // At the two caps that spill most.
    let cap_alone = |t: &Transforms| Transforms { warps_per_sm: t.warps_per_sm, ..Default::default() };
    let mut most: Vec<u32> =
        entry.candidates.iter().filter(|c| c.transforms == cap_alone(&c.transforms)).map(|c| c.usage.vgpr_spills).collect();
    most.sort_unstable_by(|a, b| b.cmp(a));
    let chosen: Vec<u32> = spills
        .iter()
        .map(|s| entry.candidates.iter().find(|c| c.transforms == cap_alone(&s.transforms)).unwrap().usage.vgpr_spills)
        .collect();
    assert_eq!(chosen, most[..2], "{:?}", entry.candidates);
    for s in &spills {
        let step = s.transforms.warps_per_sm;
        assert_eq!(s.transforms, Transforms { warps_per_sm: step, launch_bounds: Some(256), spill_to_shared: true, ..Default::default() });
        assert_eq!(s.reasons, [regtune_decisions::Reason::AssumesCaller]);
        assert!(s.message.contains("__launch_bounds__(256)") && s.message.contains("--block-size 256"), "{}", s.message);
        let cap = entry.candidates.iter().find(|c| c.transforms == Transforms { warps_per_sm: step, ..Default::default() }).unwrap();
        assert!(cap.usage.vgpr_spills > 0, "the cap alone spills: {cap:?}");
        assert!(s.usage.vgpr_spills < cap.usage.vgpr_spills && s.usage.lds_bytes > 0, "{:?} against {:?}", s.usage, cap.usage);
    }
    assert!(entry.allowed().iter().all(|t| !t.spill_to_shared), "never applied without the user's word");

    // Where a GPU timed the caps (a re-tune keeps that measurement), the
    // twins go to the spilling caps it timed fastest: here those that spill
    // least, so not the two above.
    let timed_path = dir.path().join("timed.json");
    let mut timed = Db::load(&db_path).unwrap();
    let kernel = timed.kernels.values_mut().find(|e| e.symbol.starts_with("_Z20laplacian3d")).unwrap();
    let mut caps: Vec<regtune_decisions::Candidate> =
        kernel.candidates.iter().filter(|c| c.transforms == cap_alone(&c.transforms) && c.usage.vgpr_spills > 0).cloned().collect();
    caps.sort_by_key(|c| c.usage.vgpr_spills);
    assert!(caps.len() >= 3, "{caps:?}");
    let measured_as = |transforms: Transforms, median_ms: f64| regtune_decisions::measured::Candidate {
        transforms,
        time: Some(regtune_decisions::measured::Timing { median_ms, spread_ms: 0.0 }),
        identical: true,
        error: None,
        code: None,
        paired: None,
    };
    kernel.measured = Some(launched_256(
        std::iter::once(measured_as(Transforms::default(), 10.0))
            .chain(caps.iter().enumerate().map(|(i, c)| measured_as(c.transforms.clone(), 5.0 + i as f64)))
            .collect(),
    ));
    timed.save(&timed_path).unwrap();
    tune(&timed_path);
    let steps =
        |e: &Entry| e.suggested.iter().filter(|s| s.transforms.spill_to_shared).map(|s| s.transforms.warps_per_sm).collect::<Vec<_>>();
    let fastest: Vec<Option<u32>> = caps[..2].iter().map(|c| c.transforms.warps_per_sm).collect();
    assert_eq!(steps(&laplacian(&timed_path)), fastest);
    assert_ne!(steps(&entry), fastest, "the test tells the two orders apart");

    // measure times them with the rest.
    let out = regtune().args(["measure", "--dry-run", "--db"]).arg(&db_path).args(["--", "true"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let planned = stderr_lines(&out).into_iter().find(|l| l.starts_with("would measure _Z20laplacian3d")).unwrap();
    assert!(planned.contains("plain, suggested, suggested-2, suggested-3, warps-per-sm="), "{planned}");

    // `regtune confirm` gives the user's word by measure's name: the build may then use it.
    let out = regtune().args(["confirm", "laplacian3d_o8_ztile", "suggested-2", "--db"]).arg(&db_path).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(said.starts_with("confirmed suggested-2 of laplacian3d_o8_ztile on sm_90: warps-per-sm="), "{said}");
    let entry = laplacian(&db_path);
    assert!(entry.suggested[1].confirmed && !entry.suggested[0].confirmed && !entry.suggested[2].confirmed);
    assert!(entry.allowed().contains(&entry.suggested[1].transforms), "a measurement may now choose it");
    let out = regtune().args(["confirm", "no_such_kernel", "--db"]).arg(&db_path).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr_lines(&out), [format!("error: {}: no kernel named no_such_kernel", db_path.display())]);
    assert_eq!(laplacian(&db_path).suggested, entry.suggested, "nothing changed");
}

#[test]
fn bad_input_is_one_line_and_the_program_never_runs() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let program = ["--", "touch", marker.to_str().unwrap()];
    let check = |db: &Path, message: &str| {
        let out = regtune().args(["measure", "--db"]).arg(db).args(program).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
        let lines = stderr_lines(&out);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].starts_with("error: ") && lines[0].contains(message), "{lines:?}");
        assert!(!marker.exists(), "the program ran");
    };
    let none = dir.path().join("none.json");
    check(&none, &format!("decisions db {} does not exist", none.display()));
    let empty = dir.path().join("empty.json");
    Db::default().save(&empty).unwrap();
    check(&empty, "has no kernel with a decision or a suggestion to measure; run `regtune tune` first");
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{ not json").unwrap();
    check(&bad, "is not valid JSON");
    // The measurements are written back: a db that cannot be saved stops it first (issue 23).
    check(Path::new("/proc/regtune-db.json"), "cannot write decisions db /proc/regtune-db.json: No such file or directory (os error 2)");
    let db = fake_db(dir.path());
    std::fs::remove_dir_all(code::dir(&db)).unwrap();
    check(&db, "has no candidate code objects for step(double*) (sm_90)");
}

#[test]
fn a_program_that_is_not_there_is_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let db = fake_db(dir.path());
    let out = regtune().args(["measure", "--db"]).arg(&db).args(["--", "./no-such-program"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stderr_lines(&out), ["error: cannot run ./no-such-program: No such file or directory (os error 2)"]);
}

#[test]
fn without_a_gpu_the_program_runs_with_its_own_output_and_status() {
    let dir = tempfile::tempdir().unwrap();
    let db = fake_db(dir.path());
    let gpu = regtune_runtime::cuda::probe();
    for (status, expected) in [(0, 1), (3, 3)] {
        let script = format!("echo program out; echo program err >&2; exit {status}");
        let out = regtune().args(["measure", "--db"]).arg(&db).args(["--", "sh", "-c", &script]).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "program out\n", "the program's stdout is its own");
        assert_eq!(out.status.code(), Some(expected), "the program's status when it fails, else 1: nothing measured");
        let lines = stderr_lines(&out);
        assert_eq!(lines[0], "program err");
        assert!(
            lines.iter().any(|l| l.starts_with(&format!("sh: exit status {status}, ")) && l.ends_with(" s under regtune measure")),
            "{lines:?}"
        );
        let error = lines.last().unwrap();
        match &gpu {
            Err(_) => {
                assert!(error.starts_with("error: no CUDA driver (libcuda.so.1") && error.ends_with("; sh ran unmeasured"), "{error}")
            }
            Ok(_) => assert_eq!(error, "error: sh never initialised the GPU runtime; nothing measured"),
        }
        assert_eq!(lines.iter().filter(|l| l.starts_with("error:")).count(), 1);
    }
    // Nothing measured, nothing written.
    assert!(Db::load(&db).unwrap().kernels.values().all(|e| e.measured.is_none()));
}

#[test]
fn the_interposer_exports_the_entry_points_its_hosts_call() {
    use object::{Object, ObjectSymbol};
    let path = tools_dir().join("libregtune_runtime.so");
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}; run `cargo build --workspace`", path.display()));
    let file = object::File::parse(&*bytes).unwrap();
    let exported: Vec<String> =
        file.dynamic_symbols().filter(|s| s.is_definition() && s.is_global()).filter_map(|s| s.name().ok().map(str::to_string)).collect();
    for name in ["InitializeInjection", "hipLaunchKernel", "hipModuleLaunchKernel", "hipModuleGetFunction", "__hipRegisterFunction"] {
        assert!(exported.iter().any(|e| e == name), "{name} not exported by {}", path.display());
    }
    assert!(tools_dir().join("regtune-replay").is_file(), "the replayer is built beside regtune");
}

/// The plugin builds what the rule says: the decision when the GPU found it
/// identical and faster, plain when it was slower (the build
/// bench/gpu/build.py and the wrapper make: clang with the plugin and the db).
#[test]
fn the_build_follows_the_measurement() {
    use regtune_decisions::measured::{Candidate, Timing};
    use regtune_decisions::Measured;

    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("decisions.json");
    // The default rule only suggests the Laplacian's cap: confirm it, as a
    // user does, and tune again so that it is the kernel's decision.
    let tune =
        || regtune().args(["tune", "--offload-arch", "sm_90", "--db"]).arg(&db_path).arg("examples/laplacian3d.hip").assert().success();
    tune();
    let mut db = Db::load(&db_path).unwrap();
    for e in db.kernels.values_mut() {
        for s in &mut e.suggested {
            s.confirmed = true;
        }
    }
    db.save(&db_path).unwrap();
    tune();
    let cuda = regtune::toolchain::cuda::Cuda::detect().unwrap();
    let plugin = regtune::plugin::find().unwrap();
    let registers = |db: &Path| {
        let out = dir.path().join("k.cubin");
        let status = std::process::Command::new("clang-22")
            .args(["-x", "cuda", "--cuda-device-only", "--cuda-gpu-arch=sm_90", "-Wno-unknown-cuda-version", "-O3", "-c"])
            .arg(format!("--cuda-path={}", cuda.root.display()))
            .arg(format!("-fpass-plugin={}", plugin.display()))
            .arg(repo().join("examples/laplacian3d.hip"))
            .arg("-o")
            .arg(&out)
            .env("REGTUNE_DECISIONS", db)
            .status()
            .unwrap();
        assert!(status.success());
        let kernels = regtune::gpu::nvptx::cubin::read(&std::fs::read(&out).unwrap()).unwrap();
        kernels.into_iter().find(|k| k.name.starts_with("_Z20laplacian3d")).unwrap().registers
    };
    let entry = Db::load(&db_path).unwrap().kernels.into_values().find(|e| e.symbol.starts_with("_Z20laplacian3d")).unwrap();
    let (plain, decided) = (entry.before.unwrap().vgpr, entry.after.unwrap().vgpr);
    assert!(decided < plain, "tune decided something for the Laplacian: {:?}", entry.transforms);
    assert_eq!(registers(&db_path), decided);

    // What the H100 measured (bench/runtime/results): the decision runs 5 % slower.
    let measured = |decided_ms: f64| Measured {
        device: "NVIDIA H100 80GB HBM3 (sm_90, driver 580.159.04)".into(),
        launches: 1,
        runs: 20,
        deterministic: true,
        program_identical: Some(true),
        block: None,
        candidates: vec![
            Candidate {
                transforms: Transforms::default(),
                time: Some(Timing { median_ms: 0.3272, spread_ms: 0.0014 }),
                identical: true,
                error: None,
                code: None,
                paired: None,
            },
            Candidate {
                transforms: entry.transforms.clone(),
                time: Some(Timing { median_ms: decided_ms, spread_ms: 0.0014 }),
                identical: true,
                error: None,
                code: None,
                paired: None,
            },
        ],
        control: None,
        earlier: vec![],
        program: None,
    };
    for (decided_ms, want) in [(0.3441, plain), (0.30, decided)] {
        Db::update(&db_path, |db| db.kernels.get_mut(&entry.key()).unwrap().measured = Some(measured(decided_ms))).unwrap();
        assert_eq!(registers(&db_path), want, "measured {decided_ms} ms against plain's 0.3272 ms");
    }
}

/// `regtune measure` naming a db that is not there: one line saying so,
/// exit status 2, and the program never runs (issue 39).
#[test]
fn a_db_that_is_not_there_is_one_line_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let db = dir.path().join("no-such-dir/decisions.json");
    let out = regtune().args(["measure", "--db"]).arg(&db).args(["--", "touch", marker.to_str().unwrap()]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        stderr_lines(&out),
        [format!("error: decisions db {} does not exist; run `regtune tune --db {}` first", db.display(), db.display())]
    );
    assert!(!marker.exists(), "the program ran");
    assert!(!db.exists() && !db.parent().unwrap().exists(), "nothing created");
}

/// A tree for the spelling test: `proj/.git`, the Laplacian in `proj/src`
/// and its header in `proj/inc`, each naming its own file in host code as
/// error-checking macros do.
fn laplacian_checkout(root: &Path) {
    for d in [".git", "src", "inc"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    let source = std::fs::read_to_string(repo().join("examples/laplacian3d.hip")).unwrap();
    std::fs::write(root.join("src/laplacian3d.hip"), format!("{source}\nconst char* this_file() {{ return __FILE__; }}\n")).unwrap();
    let header = std::fs::read_to_string(repo().join("examples/regtune_gpu.h")).unwrap();
    std::fs::write(root.join("inc/regtune_gpu.h"), format!("{header}\ninline const char* header_file() {{ return __FILE__; }}\n")).unwrap();
}

/// The input hash does not depend on how a command spells its paths
/// (issue 39): the same file tuned from its directory with `-I../inc`, from
/// elsewhere with the absolute `-I`, and from a copy of the checkout at
/// another path gets one hash each time, and what a GPU timed survives
/// every re-tune; a build from yet another directory finds the decision.
#[test]
fn a_retune_keeps_what_the_gpu_timed_however_the_paths_are_spelled() {
    use regtune_decisions::measured::{Candidate, Timing};
    let dir = tempfile::tempdir().unwrap();
    let proj = dir.path().join("proj");
    laplacian_checkout(&proj);
    let db_path = dir.path().join("db/decisions.json");
    let tune = |cwd: &Path, source: &Path, include: &Path| {
        let out = regtune()
            .current_dir(cwd)
            .args(["tune", "--offload-arch", "gfx90a", "--candidates", "2", "--evidence"])
            .arg(evidence_none())
            .arg("--db")
            .arg(&db_path)
            .arg(source)
            // As the build below spells its optimization level.
            .args(["--", "-O3"])
            .arg(format!("-I{}", include.display()))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let db = Db::load(&db_path).unwrap();
        let entries: Vec<Entry> = db.kernels.into_values().filter(|e| e.symbol.starts_with("_Z20laplacian3d")).collect();
        assert_eq!(entries.len(), 1, "one input hash: {:?}", entries.iter().map(|e| &e.input_hash).collect::<Vec<_>>());
        entries.into_iter().next().unwrap()
    };

    let first = tune(&proj.join("src"), Path::new("laplacian3d.hip"), Path::new("../inc"));
    let winner = first.candidates.first().expect("a candidate to time").transforms.clone();
    // What `regtune measure` records: the candidate 10 % faster, the code it timed.
    let timed = |t: &Transforms, ms: f64| {
        let (_, _, path) = code::candidates(&code::dir(&db_path), &first).into_iter().find(|(_, c, _)| c == t).unwrap();
        let time = Some(Timing { median_ms: ms, spread_ms: 0.001 });
        Candidate { transforms: t.clone(), time, identical: true, error: None, code: code::hash_of(&path), paired: None }
    };
    let measured = regtune_decisions::Measured {
        device: "a test's".into(),
        launches: 1,
        runs: 10,
        deterministic: true,
        program_identical: None,
        block: None,
        candidates: vec![timed(&Transforms::default(), 1.0), timed(&winner, 0.9)],
        control: None,
        earlier: vec![],
        program: None,
    };
    Db::update(&db_path, |d| d.kernels.get_mut(&first.key()).unwrap().measured = Some(measured.clone())).unwrap();
    assert_eq!(Db::load(&db_path).unwrap().kernels[&first.key()].effective(), winner);

    let copy = dir.path().join("elsewhere/copy");
    laplacian_checkout(&copy);
    let spellings = [
        ("absolute -I, from another directory", dir.path().to_path_buf(), proj.join("src/laplacian3d.hip"), proj.join("inc")),
        ("the checkout at another path", copy.join("src"), PathBuf::from("laplacian3d.hip"), PathBuf::from("../inc")),
        ("that copy, absolute", copy.clone(), copy.join("src/laplacian3d.hip"), copy.join("inc")),
    ];
    for (how, cwd, source, include) in &spellings {
        let again = tune(cwd, source, include);
        assert_eq!(again.input_hash, first.input_hash, "{how}");
        assert_eq!(again.measured.as_ref(), Some(&measured), "{how}: what the GPU timed survives the re-tune");
        assert_eq!(again.effective(), winner, "{how}");
    }

    // The build, from a directory of its own with the absolute -I, finds it.
    let build = dir.path().join("build");
    std::fs::create_dir(&build).unwrap();
    let mut hipcc = std::process::Command::new(assert_cmd::cargo::cargo_bin("regtune-hipcc"));
    for v in [
        "REGTUNE_MODE",
        "REGTUNE_COMPILER",
        "REGTUNE_PLUGIN",
        "REGTUNE_WRAPPED",
        "REGTUNE_DECISIONS",
        "REGTUNE_INPUT_HASH",
        "REGTUNE_TUNE_ARGS",
    ] {
        hipcc.env_remove(v);
    }
    let out = hipcc
        .current_dir(&build)
        .env("REGTUNE_DB", &db_path)
        .env("REGTUNE_VERBOSE", "1")
        .env("REGTUNE_CACHE_DIR", build.join("cache"))
        .args(["--offload-arch=gfx90a", "-O3", "-c"])
        .arg(format!("-I{}", proj.join("inc").display()))
        .arg(proj.join("src/laplacian3d.hip"))
        .args(["-o", "laplacian3d.o"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("regtune: note: building with 1 decisions"), "{stderr}");
}

/// `measure --from DIR` decides again from a run kept with `--keep`: the
/// same report and db as that run would have given, nothing run; a kept
/// run of other candidates, or none, is one line.
#[test]
fn a_kept_run_is_decided_again_without_running_anything() {
    use regtune_runtime::plan::{CandidateResult, Event, EventLog, LaunchConfig, LaunchResult, Plan, Replayed};
    let dir = tempfile::tempdir().unwrap();
    let db = fake_db(dir.path());
    let entry = Db::load(&db).unwrap().kernels.values().next().unwrap().clone();
    let kept = dir.path().join("kept");
    std::fs::create_dir_all(&kept).unwrap();
    // plain 1.0 ms, the control as plain, sink 0.8 ms: sink is faster.
    let mut runs: Vec<CandidateResult> = code::candidates(&code::dir(&db), &entry)
        .into_iter()
        .map(|(name, t, _)| {
            let ms = if t.is_empty() { 1.0 } else { 0.8 };
            CandidateResult {
                name,
                times_ms: (0..30).map(|i| ms + 0.001 * f64::from(i % 3)).collect(),
                identical: true,
                difference: None,
                error: None,
            }
        })
        .collect();
    runs.push(CandidateResult { name: "plain again".into(), ..runs[0].clone() });
    let launch = LaunchResult {
        symbol: entry.symbol.clone(),
        key: entry.key(),
        device: "NVIDIA H200 (sm_90, driver 580.159.04)".into(),
        launch: LaunchConfig { grid: [1, 1, 1], block: [128, 1, 1], shared_bytes: 0, cooperative: false },
        ranges: 1,
        bytes: 8,
        reached: 0,
        globals: 0,
        notes: vec![],
        replayed: Replayed { candidates: runs, deterministic: true, launches: 93, relocated: None, moved: 0 },
        program_identical: Some(true),
        program_difference: None,
    };
    let mut log = EventLog::open(&kept.join("events.jsonl")).unwrap();
    log.write(&Event::Started { pid: 1, vendor: "cuda".into() });
    log.write(&Event::Measured(launch));
    let report = dir.path().join("report.json");
    let marker = dir.path().join("ran");
    let out = regtune()
        .args(["measure", "--format", "json", "--db"])
        .arg(&db)
        .arg("--from")
        .arg(&kept)
        .arg("-o")
        .arg(&report)
        .args(["--", "touch", marker.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!marker.exists(), "the program ran");
    let rows: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let built: Vec<&str> =
        rows["kernels"].as_array().unwrap().iter().filter(|r| r["built"] == true).map(|r| r["candidate"].as_str().unwrap()).collect();
    assert_eq!(built, ["sink"]);
    let last = rows["notes"].as_array().unwrap().last().unwrap().as_str().unwrap().to_string();
    assert_eq!(last, format!("decided again from the run kept in {}; nothing ran", kept.display()));
    let measured = Db::load(&db).unwrap().kernels[&entry.key()].clone();
    assert_eq!(measured.effective(), Transforms { sink: true, ..Default::default() });
    assert_eq!(measured.measured.unwrap().launches, 1);

    // Its plan names other candidates: one line, the db as it was.
    let before = std::fs::read(&db).unwrap();
    let mut plan: Plan = serde_json::from_value(serde_json::json!({"launches": 1, "runs": 30, "replayer": "r", "kernels": [
        {"symbol": entry.symbol, "key": entry.key(), "arch": "sm_90", "candidates": [{"name": "plain", "path": "p"}, {"name": "unroll-cap=2", "path": "u"}]}
    ]}))
    .unwrap();
    plan.save(&kept.join("plan.json")).unwrap();
    let one_line = |dir: &Path, message: &str| {
        let out = regtune().args(["measure", "--db"]).arg(&db).arg("--from").arg(dir).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
        let lines = stderr_lines(&out);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].starts_with("error: ") && lines[0].contains(message), "{lines:?}");
    };
    one_line(&kept, "timed other builds of step than the db's candidates now (re-tuned since?): measure it again");
    assert_eq!(std::fs::read(&db).unwrap(), before);
    plan.kernels.clear();
    plan.save(&kept.join("plan.json")).unwrap();
    one_line(dir.path(), &format!("{} has no events.jsonl: keep a run with `regtune measure --keep DIR`", dir.path().display()));
}
