//! `regtune fix --compiler nvcc`: the patch for a build with nvcc.
//!
//! What differs from clang's: the db's decisions for the unit are found by
//! nvcc's own input hash (its PTX and ptxas line, as `tune --compiler nvcc`
//! recorded it), from one nvcc build of the unit; only what `tune` built
//! with nvcc is patched: register caps and launch bounds, which a kernel's
//! PTX entry carries, and the rewrites tune built from this very spelling
//! (sink, pow2, unroll caps as `#pragma unroll N`, noalias as
//! `__restrict__`: spell.rs); a register cap is nvcc's
//! `__maxnreg__`, guarded (`gpu/nvptx`: `REGTUNE_MAXNREG`), and so is
//! nvcc's `-maxrregcount=R` where a cap's build reaches the
//! candidate's registers, spills and occupancy ([`AsMaxnreg`]); and the
//! verifying build is nvcc's, with the user's nvcc flags, of the patched
//! files in a mirror of the unit's directory (nvcc has no file-system
//! overlay). Each patched kernel's cubin is compared with the candidate
//! `tune` kept beside the db (`runtime/code.rs`): byte for byte, else its
//! own sections, else its registers, spills and occupancy.
//!
//! The files the unit reads and the kernels' places in them still come from
//! clang (its AST), run with the nvcc flags that mean the same to it
//! ([`clang_args`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use regtune_decisions::{Transforms, Usage};

use crate::gpu::compile::compile_failure;
use crate::gpu::nvptx::{cubin, nvcc, nvidia, MAXNREG_MACRO};
use crate::gpu::resources::{self, Measured};
use crate::gpu::Arch;
use crate::output::Failure;
use crate::toolchain::nvcc::Nvcc;

use super::copy;
use super::files::Files;
use super::unit_patch::Planned;

/// nvcc flags in clang's spelling (include paths, macros, the standard,
/// and what changes the code): what clang's AST of the unit reads.
pub(crate) use crate::toolchain::translate::clang_args;

/// The unit's input hash as `tune --compiler nvcc` recorded it, and the
/// text nvcc preprocessed for the device (its line markers name the files
/// the unit reads).
pub(crate) fn input(nvcc: &Nvcc, arch: &Arch, path: &Path, user_args: &[String]) -> Result<(String, String), Failure> {
    let dir = tempfile::tempdir().map_err(|e| Failure::new(format!("cannot create a temporary directory: {e}")))?;
    let kept = nvcc::keep(nvcc, arch, path, user_args, dir.path(), None).map_err(compile_failure)?;
    let hash = kept.input_hash(nvcc, arch);
    let preprocessed = preprocessed(dir.path()).map_err(|e| Failure::new(format!("{}: {e} for {arch}", path.display())))?;
    Ok((hash, preprocessed))
}

/// The device source nvcc preprocessed (its `.cpp1.ii`, kept in `dir`),
/// as fix reads its line markers.
pub(crate) fn preprocessed(dir: &Path) -> Result<String, String> {
    let mut preprocessed = String::new();
    for e in std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))? {
        let p = e.map_err(|e| e.to_string())?.path();
        if p.to_string_lossy().ends_with(".cpp1.ii") {
            let text = std::fs::read_to_string(&p).unwrap_or_default();
            preprocessed.extend(text.lines().filter(|l| !system_token_marker(l)).flat_map(|l| [l, "\n"]));
        }
    }
    if preprocessed.is_empty() {
        return Err("nvcc kept no preprocessed device source (.cpp1.ii)".into());
    }
    Ok(preprocessed)
}

/// gcc (which preprocesses for nvcc) flags a token a system header's
/// macro expands to (`stderr` in `fprintf(stderr, ...)`) with a line
/// marker of flag 3 in the user's own file, `# 219 "k.cu" 3 4`, neither
/// entering (1) nor leaving (2) a file: such a marker says nothing about
/// which files are system headers (their entering markers do).
fn system_token_marker(line: &str) -> bool {
    let Some(rest) = line.strip_prefix("# ") else { return false };
    let Some(flags) = rest.rfind('"').map(|i| &rest[i + 1..]) else { return false };
    let flags: Vec<&str> = flags.split_whitespace().collect();
    flags.contains(&"3") && !flags.contains(&"1") && !flags.contains(&"2")
}

/// Why a decision is not patched for nvcc: what tune does not build with
/// nvcc (regtune's LDS spill, a pass of its plugin, as only a hand-edited
/// db holds), spilling to shared memory, which fix does not spell in
/// source, and nvcc's `-maxrregcount=R` for the kernel, which no source
/// spells, where `spelled` is false (this nvcc has no `__maxnreg__`) or it
/// comes with other transforms: how to build it is suggested ([`flag`]).
/// Where `spelled`, a `-maxrregcount=R` alone is written as the kernel's
/// own `__maxnreg__` ([`AsMaxnreg`]).
pub(crate) fn refused(t: &Transforms, unit: &Path, spelled: bool) -> Option<String> {
    if let Some(r) = t.maxrregcount {
        if spelled && t.maxrregcount_alone().is_some() {
            return None;
        }
        return Some(format!("-maxrregcount={r} for this kernel has no source spelling: {}; not patched", flag(r, unit)));
    }
    if t.lds_spill.is_some() {
        return Some("lds-spill is a pass of regtune's plugin, which nvcc does not run; not patched for nvcc".into());
    }
    t.spill_to_shared.then(|| "spilling to shared memory has no source spelling regtune fix writes (the PTX pragma); not patched".into())
}

/// How to build a kernel's `-maxrregcount=R` without a source spelling:
/// regtune-nvcc, or nvcc's own flag for the whole of `unit`.
fn flag(r: u32, unit: &Path) -> String {
    let name = unit.file_name().map_or_else(|| unit.display().to_string(), |n| n.to_string_lossy().into_owned());
    format!(
        "build through regtune-nvcc, which gives it to this kernel alone, or add -maxrregcount={r} to this file's nvcc flags \
         (CMake: set_source_files_properties({name} PROPERTIES COMPILE_OPTIONS -maxrregcount={r})), which gives it to every kernel \
         of the file"
    )
}

/// A kernel's `-maxrregcount=R` decision written as its own
/// register cap, `REGTUNE_MAXNREG(cap)` (nvcc's `__maxnreg__`, guarded).
/// nvcc's flag also gives cicc `-maxreg R`, which changes the PTX, so
/// `__maxnreg__(R)` is another build: the patch is held to the candidate's
/// registers, spills and occupancy (not its bytes), and where `__maxnreg__(R)`
/// misses them the next cap is tried: those of tune's own `.maxnreg` builds
/// of the kernel that measured the candidate's numbers, then the candidate's
/// register count. None reaching them: not patched, the flag suggested.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AsMaxnreg {
    /// The decision's R.
    pub r: u32,
    /// The caps to try, in order (R first), each with why it is tried.
    pub tries: Vec<(u32, String)>,
    /// The one the patch writes now.
    pub at: usize,
    /// What each cap tried before it gave.
    pub missed: Vec<String>,
    /// The unit's name, for the flag's suggestion.
    pub unit: PathBuf,
}

impl AsMaxnreg {
    /// The caps to try for `-maxrregcount=r`, whose candidate measured
    /// `promised`, given the builds tune measured of the kernel
    /// (`candidates`: transforms and usage).
    pub(crate) fn new<'a>(
        r: u32,
        promised: Option<Usage>,
        candidates: impl Iterator<Item = (&'a Transforms, &'a Usage)>,
        unit: &Path,
    ) -> AsMaxnreg {
        let mut tries = vec![(r, String::new())];
        if let Some(p) = promised {
            let mut own: Vec<(u32, u32)> = candidates
                .filter_map(|(t, u)| Some((t.cap_alone()?, u)))
                .filter(|(_, u)| same_numbers(u, &p))
                .map(|(w, _)| (nvidia::register_cap_for_warps(w), w))
                .collect();
            own.sort();
            for (cap, w) in own {
                if !tries.iter().any(|(c, _)| *c == cap) {
                    let why =
                        format!("tune's .maxnreg {cap} build (warps-per-sm={w}) measured the candidate's registers, spills and occupancy");
                    tries.push((cap, why));
                }
            }
            if p.vgpr > 0 && !tries.iter().any(|(c, _)| *c == p.vgpr) {
                tries.push((p.vgpr, format!("the candidate's own register count, {}", p.vgpr)));
            }
        }
        AsMaxnreg { r, tries, at: 0, missed: vec![], unit: unit.to_path_buf() }
    }

    /// The cap the patch writes now.
    pub(crate) fn cap(&self) -> u32 {
        self.tries[self.at].0
    }

    /// The attribute it writes.
    pub(crate) fn attribute(&self) -> String {
        format!("{MAXNREG_MACRO}({})", self.cap())
    }

    /// The cap now written missed (`why`): the next one, if any is left.
    pub(crate) fn next(&self, why: &str) -> Option<AsMaxnreg> {
        let missed = format!("__maxnreg__({}) gives {why}", self.cap());
        (self.at + 1 < self.tries.len()).then(|| AsMaxnreg {
            at: self.at + 1,
            missed: self.missed.iter().cloned().chain(std::iter::once(missed)).collect(),
            ..self.clone()
        })
    }

    /// What the kernel's line says of the spelling written: which, and why.
    pub(crate) fn spelled(&self) -> String {
        let (cap, why) = &self.tries[self.at];
        let chosen = match self.at {
            0 => String::new(),
            _ => format!("{}; {cap}: {why}; ", self.missed.join("; ")),
        };
        format!(
            "written as __maxnreg__({cap}) ({chosen}nvcc's -maxrregcount={r} also gives cicc -maxreg {r}, which no source spelling \
             carries: regtune-nvcc builds the candidate's code)",
            r = self.r
        )
    }

    /// Why it is not patched: every cap missed (the last one: `why`).
    pub(crate) fn refusal(&self, why: &str) -> String {
        let last = format!("__maxnreg__({}) gives {why}", self.cap());
        let missed: Vec<String> = self.missed.iter().cloned().chain(std::iter::once(last)).collect();
        format!(
            "no __maxnreg__ reaches the registers, spills and occupancy of nvcc's -maxrregcount={} ({}): {}; not patched",
            self.r,
            missed.join("; "),
            flag(self.r, &self.unit)
        )
    }
}

/// Registers, spills and occupancy alike (what a `-maxrregcount=R` decision
/// written as `__maxnreg__` is held to).
pub(crate) fn same_numbers(a: &Usage, b: &Usage) -> bool {
    let spills = |u: &Usage| u.vgpr_spills + u.sgpr_spills;
    (a.vgpr, spills(a), a.occupancy) == (b.vgpr, spills(b), b.occupancy)
}

/// How a patched kernel's nvcc build compares with the candidate tune
/// measured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Sameness {
    /// The unit's cubin is the candidate's, byte for byte.
    Cubin,
    /// The kernel's own sections (code, `.nv.info`, constants) are the
    /// candidate's, byte for byte but the symbols they name (by index,
    /// which differ where the candidate is the kernel built alone):
    /// the other kernels' decisions differ, or the candidate holds the
    /// kernel alone.
    Kernel,
    /// Only its registers, spills and occupancy are the candidate's: why.
    Usage(String),
}

impl Sameness {
    /// As the patch's summary says it.
    pub(crate) fn phrase(&self) -> String {
        match self {
            Sameness::Cubin => "nvcc's cubin is the measured candidate's, byte for byte".into(),
            Sameness::Kernel => {
                "the kernel's code in nvcc's cubin is the measured candidate's (its sections byte for byte, the symbols they name by name)"
                    .into()
            }
            Sameness::Usage(why) => format!("registers, spills and occupancy are the measured candidate's ({why})"),
        }
    }
}

/// `cubin` against the candidate `tune` kept for `symbol` (None: it kept none).
pub(crate) fn compare(cubin: &[u8], candidate: Option<&Path>, symbol: &str) -> Sameness {
    let Some(path) = candidate else { return Sameness::Usage("tune kept no cubin of this candidate to compare".into()) };
    let Ok(theirs) = std::fs::read(path) else { return Sameness::Usage(format!("{} cannot be read", path.display())) };
    if cubin == theirs.as_slice() {
        return Sameness::Cubin;
    }
    match (cubin::own_sections(cubin, symbol), cubin::own_sections(&theirs, symbol)) {
        (Some(ours), Some(candidate)) if !ours.is_empty() && ours == candidate => Sameness::Kernel,
        (Some(ours), Some(candidate)) => {
            let differ: Vec<&str> = ours
                .keys()
                .chain(candidate.keys())
                .filter(|k| ours.get(*k) != candidate.get(*k))
                .map(|k| k.split(symbol).next().unwrap_or(k).trim_end_matches('.'))
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            Sameness::Usage(format!("its cubin sections {} differ", differ.join(", ")))
        }
        _ => Sameness::Usage("a cubin cannot be read".into()),
    }
}

/// What nvcc's build of a patched unit gives.
pub(crate) struct Rebuilt {
    pub measured: Vec<Measured>,
    pub cubin: Vec<u8>,
}

/// nvcc's build of unit `u` for `arch` with the user's flags, the patched
/// files (`changes`: canonical path, patched text) in place: every file
/// the unit reads below its own directory is copied, patched or not, into
/// a mirror of that directory (with `#line` directives naming the original,
/// as [`copy`] writes them), and the unit is built there, the original
/// directories searched after the user's `-I` paths for what the mirror
/// lacks. A patched file outside the unit's directory cannot be put in
/// place: an error.
pub(crate) fn rebuild(
    nvcc: &Nvcc,
    files: &Files,
    user_args: &[String],
    u: &Planned,
    arch: &Arch,
    changes: &[(Arc<str>, String)],
) -> Result<Rebuilt, String> {
    let mirror = Mirror::new(files, user_args, &u.path, &u.reads, changes)?;
    let out = mirror.dir.path().join(format!(".regtune-nvcc-{}", arch.processor()));
    std::fs::create_dir_all(&out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let kept = nvcc::keep(nvcc, arch, &mirror.source, &mirror.args, &out, None).map_err(|e| first_error(&e))?;
    let measured =
        resources::object_file_with(&kept.cubin, arch, &kept.report, &resources::Options::default()).map_err(|e| e.to_string())?;
    let cubin = std::fs::read(&kept.cubin).map_err(|e| format!("cannot read {}: {e}", kept.cubin.display()))?;
    Ok(Rebuilt { measured, cubin })
}

/// An nvcc failure in one line: its first error, else what it says.
pub(crate) fn first_error(e: &crate::gpu::compile::CompileError) -> String {
    let first = e.diagnostics().and_then(|d| d.lines().find(|l| l.contains("error"))).map(str::to_string);
    first.unwrap_or_else(|| e.to_string())
}

/// A unit's directory mirrored with the patched files in place, for nvcc
/// (see [`rebuild`]).
pub(crate) struct Mirror {
    pub dir: tempfile::TempDir,
    /// The unit's copy.
    pub source: PathBuf,
    /// The user's flags, then the original directories to search.
    pub args: Vec<String>,
}

impl Mirror {
    /// The unit at `path`, which reads `reads` (canonical), with `changes`.
    pub(crate) fn new(
        files: &Files,
        user_args: &[String],
        path: &Path,
        reads: &std::collections::BTreeSet<Arc<str>>,
        changes: &[(Arc<str>, String)],
    ) -> Result<Mirror, String> {
        let unit = std::fs::canonicalize(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let root = unit.parent().ok_or_else(|| format!("{} names no file", path.display()))?.to_path_buf();
        let mirror = tempfile::Builder::new()
            .prefix("regtune-fix-nvcc")
            .tempdir()
            .map_err(|e| format!("cannot create a temporary directory: {e}"))?;
        let patched = |p: &str| changes.iter().find(|(c, _)| &**c == p).map(|(_, t)| t.as_str());
        if let Some((outside, _)) = changes.iter().find(|(p, _)| reads.contains(p) && !Path::new(&**p).starts_with(&root)) {
            return Err(format!(
                "its patched file {} lies outside the unit's directory, where nvcc's build of the unit cannot be given it",
                files.shown(outside)
            ));
        }
        let mut dirs: Vec<PathBuf> = vec![root.clone()];
        let unit_key: Arc<str> = Arc::from(unit.display().to_string());
        let copies = reads.iter().filter(|p| **p != unit_key && Path::new(&***p).starts_with(&root)).chain(std::iter::once(&unit_key));
        for file in copies {
            let Ok(relative) = Path::new(&**file).strip_prefix(&root) else { continue };
            let original = match files.text(file) {
                Some(t) => t.to_string(),
                None if **file == *unit_key => {
                    std::fs::read_to_string(&unit).map_err(|e| format!("cannot read {}: {e}", unit.display()))?
                }
                // Not the project's (refused): read in place.
                None => continue,
            };
            let text = patched(file).unwrap_or(&original);
            let dest = mirror.path().join(relative);
            if let Some(parent) = dest.parent() {
                std::fs::create_dir_all(parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
            }
            let name = if **file == *unit_key { path.display().to_string() } else { file.to_string() };
            std::fs::write(&dest, copy::with_line_directives(&name, &original, text))
                .map_err(|e| format!("cannot write {}: {e}", dest.display()))?;
            if let Some(d) = Path::new(&**file).parent().filter(|d| !dirs.iter().any(|x| x == d)) {
                dirs.push(d.to_path_buf());
            }
        }
        let source = mirror.path().join(unit.strip_prefix(&root).unwrap_or(&unit));
        let mut args = user_args.to_vec();
        for d in &dirs {
            args.extend(["-I".to_string(), d.display().to_string()]);
        }
        Ok(Mirror { dir: mirror, source, args })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gccs_markers_of_a_system_macros_tokens_are_not_files() {
        assert!(system_token_marker("# 219 \"k.cu\" 3 4"));
        assert!(!system_token_marker("# 1 \"/usr/include/stdio.h\" 1 3 4"));
        assert!(!system_token_marker("# 12 \"/usr/include/stdio.h\" 2 3 4"));
        assert!(!system_token_marker("# 219 \"k.cu\""));
        assert!(!system_token_marker("int x;"));
    }

    #[test]
    fn only_what_tune_builds_with_nvcc_and_fix_spells_is_patched_for_nvcc() {
        let cap = Transforms { warps_per_sm: Some(32), ..Default::default() };
        let unit = Path::new("src/k.cu");
        assert_eq!(refused(&cap, unit, true), None);
        assert_eq!(refused(&Transforms { launch_bounds: Some(256), ..cap.clone() }, unit, true), None);
        // The rewrites tune builds from fix's own spelling.
        assert_eq!(refused(&Transforms { sink: true, unroll_cap: Some(2), pow2: true, ..cap.clone() }, unit, true), None);
        let lds = refused(&Transforms { lds_spill: Some(8), launch_bounds: Some(256), ..cap.clone() }, unit, true).unwrap();
        assert!(lds.starts_with("lds-spill is a pass of regtune's plugin") && lds.ends_with("not patched for nvcc"), "{lds}");
        assert!(refused(&Transforms { spill_to_shared: true, launch_bounds: Some(256), ..cap }, unit, true)
            .unwrap()
            .contains("shared memory"));
        // A build flag alone: the kernel's own __maxnreg__ where this nvcc has one, else suggested as a flag.
        let wide = Transforms { maxrregcount: Some(64), ..Default::default() };
        assert_eq!(refused(&wide, unit, true), None);
        let said = refused(&wide, unit, false).unwrap();
        assert_eq!(
            said,
            "-maxrregcount=64 for this kernel has no source spelling: build through regtune-nvcc, which gives it to this kernel alone, \
             or add -maxrregcount=64 to this file's nvcc flags (CMake: set_source_files_properties(k.cu PROPERTIES COMPILE_OPTIONS \
             -maxrregcount=64)), which gives it to every kernel of the file; not patched"
        );
        // With another transform: not written, how to build it suggested.
        assert!(refused(&Transforms { sink: true, ..wide }, unit, true).unwrap().starts_with("-maxrregcount=64 for this kernel has no"));
    }

    #[test]
    fn a_maxrregcount_cap_tries_r_then_tunes_own_caps_at_the_candidates_numbers_then_its_register_count() {
        let at = |vgpr, spills, occupancy| Usage { vgpr, vgpr_spills: spills, occupancy, ..Default::default() };
        let cap = |w| Transforms { warps_per_sm: Some(w), ..Default::default() };
        // miniBUDE's fasten_main<4> on sm_90 as tune measured it: -maxrregcount=128 gave 112 registers.
        let candidates = [
            (cap(8), at(110, 0, 16)),
            (cap(20), at(96, 0, 16)),
            (Transforms { sink: true, warps_per_sm: Some(12), ..Default::default() }, at(112, 0, 16)),
            (Transforms { maxrregcount: Some(255), ..Default::default() }, at(112, 0, 16)),
            (cap(12), at(112, 0, 16)),
        ];
        let unit = Path::new("src/k.cu");
        let f = AsMaxnreg::new(128, Some(at(112, 0, 16)), candidates.iter().map(|(t, u)| (t, u)), unit);
        let caps: Vec<u32> = f.tries.iter().map(|(c, _)| *c).collect();
        // R, then the .maxnreg 168 build (12 warps) that measured 112 registers, then 112.
        assert_eq!(caps, [128, 168, 112]);
        assert_eq!(f.attribute(), "REGTUNE_MAXNREG(128)");
        assert_eq!(
            f.spelled(),
            "written as __maxnreg__(128) (nvcc's -maxrregcount=128 also gives cicc -maxreg 128, which no source spelling carries: \
             regtune-nvcc builds the candidate's code)"
        );
        let second = f.next("registers 110 where the candidate has 112").unwrap();
        assert_eq!(second.attribute(), "REGTUNE_MAXNREG(168)");
        assert!(second.spelled().starts_with(
            "written as __maxnreg__(168) (__maxnreg__(128) gives registers 110 where the candidate has 112; 168: tune's .maxnreg 168 \
             build (warps-per-sm=12) measured the candidate's registers, spills and occupancy; nvcc's -maxrregcount=128"
        ));
        let last = second.next("registers 114 where the candidate has 112").unwrap();
        assert_eq!(last.cap(), 112);
        assert!(last.next("registers 110 where the candidate has 112").is_none());
        let why = last.refusal("registers 110 where the candidate has 112");
        assert!(why.starts_with("no __maxnreg__ reaches the registers, spills and occupancy of nvcc's -maxrregcount=128 (__maxnreg__(128) gives registers 110 where the candidate has 112; __maxnreg__(168) gives registers 114 where the candidate has 112; __maxnreg__(112) gives registers 110 where the candidate has 112): build through regtune-nvcc"), "{why}");
        assert!(why.ends_with("which gives it to every kernel of the file; not patched"), "{why}");
    }

    #[test]
    fn a_cubin_that_cannot_be_read_is_compared_by_usage() {
        assert_eq!(compare(b"x", None, "k"), Sameness::Usage("tune kept no cubin of this candidate to compare".into()));
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.cubin");
        std::fs::write(&p, b"same").unwrap();
        assert_eq!(compare(b"same", Some(&p), "k"), Sameness::Cubin);
        assert_eq!(compare(b"other", Some(&p), "k"), Sameness::Usage("a cubin cannot be read".into()));
    }
}
