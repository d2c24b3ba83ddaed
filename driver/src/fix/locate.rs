//! Run what debug_ir.rs and unrolled.rs compare: the unit's frontend with
//! line tables (`-gline-tables-only`, optimization off, device libraries
//! linked, as the plugin's early phase sees it); the plugin's early phase
//! under `opt` with the unit's decisions (pow2's removed calls); and, when
//! a decision caps unrolling, that IR through the unit's O3 pipeline and
//! code generator twice, plainly and with the decisions, for LoopUnroll's
//! optimization records. Line tables change no decision: only where things are is read
//! from this build.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use regtune_decisions::{Db, Entry};

use std::ffi::OsString;

use crate::gpu::compile::{Unit, Variant};
use regtune_decisions::plugin::{DECISIONS_ENV, INPUT_HASH_ENV};

use super::debug_ir::{self, Changes};
use super::{unrolled, Decision};

/// What the decisions change in the unit, by source position.
/// `uncapped`: the unit's kernels that cap nothing on this target.
pub(crate) fn changes(unit: &Unit<'_>, plugin: &Path, decisions: &[&Decision], uncapped: &BTreeSet<String>) -> Result<Changes, String> {
    let dir = tempfile::tempdir().map_err(|e| format!("cannot create a temporary directory: {e}"))?;
    let bc = dir.path().join("lines.bc");
    let mut front = unit.device_command().map_err(|e| e.to_string())?;
    front.args(["-gline-tables-only", "-emit-llvm", "-c", "-Xclang", "-disable-llvm-passes", "-o"]).arg(&bc).arg(unit.source);
    run(front, "clang (with line tables)")?;

    let mut db = Db::default();
    for d in decisions {
        // No input hash: this build is the unit's, with line tables added.
        db.insert(Entry {
            symbol: d.symbol.clone(),
            arch: d.arch.processor().to_string(),
            input_hash: String::new(),
            name: String::new(),
            file: String::new(),
            transforms: d.transforms.clone(),
            reason: None,
            suggested: vec![],
            before: None,
            after: None,
            candidates: vec![],
            left_out: vec![],
            measured: None,
        });
    }
    let decisions_file = dir.path().join("decisions.json");
    db.save(&decisions_file).map_err(|e| e.to_string())?;

    let llvm = &unit.toolchain.llvm_bin;
    let before = dir.path().join("before.ll");
    let mut dis = Command::new(llvm.join("llvm-dis"));
    dis.arg(&bc).arg("-o").arg(&before);
    run(dis, "llvm-dis")?;
    let after = dir.path().join("after.ll");
    let mut opt = Command::new(llvm.join("opt"));
    opt.arg(format!("-load-pass-plugin={}", plugin.display()))
        .args(["-passes=regtune-apply<early>", "-S", "-o"])
        .arg(&after)
        .arg(&bc)
        .env(DECISIONS_ENV, &decisions_file)
        .env_remove(INPUT_HASH_ENV);
    run(opt, "opt with the pass plugin")?;
    let read = |p: &Path| std::fs::read_to_string(p).map_err(|e| format!("cannot read {}: {e}", p.display()));
    let before = read(&before)?;
    let after = read(&after)?;
    let mut changes = debug_ir::changes(&before, &after);
    changes.callees = debug_ir::callees(&before);

    if decisions.iter().any(|d| d.transforms.unroll_cap.is_some()) {
        let remarks = |variant: Variant, name: &str| -> Result<Vec<unrolled::Remark>, String> {
            let mut variant = variant;
            let records = dir.path().join(format!("{name}.opt.yaml"));
            variant.args.push("-fsave-optimization-record".into());
            variant.args.push(format!("-foptimization-record-file={}", records.display()).into());
            variant.args.push("-foptimization-record-passes=loop-unroll".into());
            let out = dir.path().join(format!("{name}.o"));
            crate::gpu::of(unit.arch).ir_to_object(unit.toolchain, &bc, &out, &variant, unit.user_args).map_err(|e| e.to_string())?;
            Ok(unrolled::parse(&read_records(dir.path(), name)?))
        };
        let plain = remarks(Variant::default(), "plain")?;
        let capped = remarks(
            Variant {
                args: vec![OsString::from(format!("-fpass-plugin={}", plugin.display()))],
                env: vec![(DECISIONS_ENV, decisions_file.clone().into_os_string()), (INPUT_HASH_ENV, OsString::new())],
                deadline: None,
            },
            "capped",
        )?;
        (changes.loops, changes.unpatchable) =
            unrolled::changed(&plain, &capped, &debug_ir::loop_starts(&before), &changes.callees, uncapped);
        // A cap of 1 marks every loop: each gets its `nounroll`.
        for s in debug_ir::disabled_loops(&before, &after) {
            let known = changes.loops.iter().any(|l| l.function == s.function && l.at == s.at)
                || changes.unpatchable.iter().any(|(p, _)| *p == s.at);
            if !known {
                changes.loops.push(debug_ir::ChangedLoop { function: s.function, at: s.at, after: debug_ir::Unroll::Disable });
            }
        }
    }
    Ok(changes)
}

/// The record file a compile named `name` wrote: the name asked for, or,
/// where the driver adds the offload target to it, that.
fn read_records(dir: &Path, name: &str) -> Result<String, String> {
    let found = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(name) && n.ends_with(".yaml")));
    match found {
        Some(p) => std::fs::read_to_string(&p).map_err(|e| format!("cannot read {}: {e}", p.display())),
        None => Err(format!("the compile wrote no optimization records ({name}.opt.yaml in {})", dir.display())),
    }
}

fn run(mut cmd: Command, what: &str) -> Result<(), String> {
    let out = cmd.output().map_err(|e| format!("cannot run {what}: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let first = stderr.lines().find(|l| l.contains("error")).or_else(|| stderr.lines().next()).unwrap_or("no output");
    Err(format!("{what} failed ({}): {}", out.status, first.trim()))
}
