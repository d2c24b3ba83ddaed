//! Run what debug_ir.rs and unrolled.rs compare: the unit's frontend with
//! line tables (`-gline-tables-only`, optimization off, device libraries
//! linked, as the plugin's early phase sees it); the plugin's early phase
//! under `opt` with the unit's decisions (pow2's removed calls); and, when
//! a decision caps unrolling, that IR through the unit's O3 pipeline and
//! code generator twice, plainly and with the decisions, for LoopUnroll's
//! optimization records. Line tables change no decision: only where things are is read
//! from this build.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use regtune_decisions::{Db, Entry};

use std::ffi::OsString;

use crate::gpu::compile::{Unit, Variant};
use regtune_decisions::plugin::{DECISIONS_ENV, INPUT_HASH_ENV};

use super::debug_ir::{self, Changes};
use super::{unrolled, Decision};

/// The unit's frontend with line tables, and what no decision changes (its
/// text, the plain compile's unrolling): read once for any number of
/// decisions ([`changes_in`]).
pub(crate) struct Lines {
    dir: tempfile::TempDir,
    bc: PathBuf,
    before: String,
    plain: OnceLock<Result<Vec<unrolled::Remark>, String>>,
}

impl Lines {
    pub(crate) fn new(unit: &Unit<'_>) -> Result<Lines, String> {
        let dir = tempfile::tempdir().map_err(|e| format!("cannot create a temporary directory: {e}"))?;
        let bc = dir.path().join("lines.bc");
        let mut front = unit.device_command().map_err(|e| e.to_string())?;
        // Value names kept, as tune's own frontend keeps them: the plugin's
        // inspection names the parameters it ranks by them.
        front
            .args(["-gline-tables-only", "-emit-llvm", "-c", "-Xclang", "-disable-llvm-passes", "-fno-discard-value-names", "-o"])
            .arg(&bc)
            .arg(unit.source);
        run(front, "clang (with line tables)")?;
        let before = dir.path().join("before.ll");
        let mut dis = Command::new(unit.toolchain.llvm_bin.join("llvm-dis"));
        dis.arg(&bc).arg("-o").arg(&before);
        run(dis, "llvm-dis")?;
        let before = std::fs::read_to_string(&before).map_err(|e| format!("cannot read {}: {e}", before.display()))?;
        Ok(Lines { dir, bc, before, plain: OnceLock::new() })
    }

    /// The bitcode: the unit's device IR before optimization, device
    /// libraries linked, with line tables.
    pub(crate) fn bitcode(&self) -> &Path {
        &self.bc
    }

    /// The plain compile's unrolling remarks.
    fn plain_remarks(&self, unit: &Unit<'_>) -> Result<&[unrolled::Remark], String> {
        let plain = self.plain.get_or_init(|| remarks(unit, &self.bc, self.dir.path(), Variant::default(), "plain"));
        plain.as_deref().map_err(Clone::clone)
    }
}

/// What the decisions change in the unit, by source position.
/// `uncapped`: the unit's kernels that cap nothing on this target.
pub(crate) fn changes(unit: &Unit<'_>, plugin: &Path, decisions: &[&Decision], uncapped: &BTreeSet<String>) -> Result<Changes, String> {
    changes_in(&Lines::new(unit)?, unit, plugin, decisions, uncapped)
}

/// [`changes`] on a unit's [`Lines`].
pub(crate) fn changes_in(
    lines: &Lines,
    unit: &Unit<'_>,
    plugin: &Path,
    decisions: &[&Decision],
    uncapped: &BTreeSet<String>,
) -> Result<Changes, String> {
    let dir = tempfile::tempdir().map_err(|e| format!("cannot create a temporary directory: {e}"))?;
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
    let after = dir.path().join("after.ll");
    let mut opt = Command::new(llvm.join("opt"));
    opt.arg(format!("-load-pass-plugin={}", plugin.display()))
        .args(["-passes=regtune-apply<early>", "-S", "-o"])
        .arg(&after)
        .arg(&lines.bc)
        .env(DECISIONS_ENV, &decisions_file)
        .env_remove(INPUT_HASH_ENV);
    run(opt, "opt with the pass plugin")?;
    let after = std::fs::read_to_string(&after).map_err(|e| format!("cannot read {}: {e}", after.display()))?;
    let before = &lines.before;
    let mut changes = debug_ir::changes(before, &after);
    changes.callees = debug_ir::callees(before);

    if decisions.iter().any(|d| d.transforms.unroll_cap.is_some()) {
        let plain = lines.plain_remarks(unit)?;
        let capped = remarks(
            unit,
            &lines.bc,
            dir.path(),
            Variant {
                args: vec![OsString::from(format!("-fpass-plugin={}", plugin.display()))],
                env: vec![(DECISIONS_ENV, decisions_file.clone().into_os_string()), (INPUT_HASH_ENV, OsString::new())],
                deadline: None,
            },
            "capped",
        )?;
        (changes.loops, changes.unpatchable) =
            unrolled::changed(plain, &capped, &debug_ir::loop_starts(before), &changes.callees, uncapped);
        // A cap of 1 marks every loop: each gets its `nounroll`.
        for s in debug_ir::disabled_loops(before, &after) {
            let known = changes.loops.iter().any(|l| l.function == s.function && l.at == s.at)
                || changes.unpatchable.iter().any(|(p, _)| *p == s.at);
            if !known {
                changes.loops.push(debug_ir::ChangedLoop { function: s.function, at: s.at, after: debug_ir::Unroll::Disable });
            }
        }
    }
    Ok(changes)
}

/// LoopUnroll's optimization records of `bc` compiled with `variant`
/// (files named `name` in `dir`).
fn remarks(unit: &Unit<'_>, bc: &Path, dir: &Path, mut variant: Variant, name: &str) -> Result<Vec<unrolled::Remark>, String> {
    let records = dir.join(format!("{name}.opt.yaml"));
    variant.args.push("-fsave-optimization-record".into());
    variant.args.push(format!("-foptimization-record-file={}", records.display()).into());
    variant.args.push("-foptimization-record-passes=loop-unroll".into());
    let out = dir.join(format!("{name}.o"));
    crate::gpu::of(unit.arch).ir_to_object(unit.toolchain, bc, &out, &variant, unit.user_args).map_err(|e| e.to_string())?;
    Ok(unrolled::parse(&read_records(dir, name)?))
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
