//! The check before anything is written: every unit that reads a patched
//! file is compiled plainly (no plugin, the user's flags, for every target)
//! with the patched files in place (overlay.rs), and every kernel's usage
//! is compared with what the tuner measured: exactly the promise (the db's
//! `after`; code size aside) for a kernel whose decision the patch
//! expresses; for one whose decision it does not, or that decided nothing,
//! nothing the tuner would call worse (lower occupancy, more spills or
//! scratch), as code it shares with a kernel that decided may change it.
//! Built with nvcc, the check is nvcc's build with the user's nvcc flags
//! (`nvcc.rs`), and each kernel held to its promise is also compared with
//! the cubin of the candidate tune measured.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use regtune_decisions::Usage;

use crate::gpu::compile::Unit;
use crate::gpu::resources;
use crate::gpu::Arch;
use crate::names;
use crate::toolchain::nvcc::Nvcc;
use crate::toolchain::Toolchain;

use super::files::Files;
use super::nvcc;
use super::overlay::Overlay;
use super::unit_patch::Planned;
use super::Decision;

/// How the units build.
pub(crate) struct Build<'a> {
    pub toolchain: &'a Toolchain,
    pub archs: &'a [Arch],
    /// The user's flags: clang's, or nvcc's with `nvcc`.
    pub user_args: &'a [String],
    /// nvcc builds the units: the check is its build ([`nvcc::rebuild`]).
    pub nvcc: Option<&'a Nvcc>,
}

/// What a kernel's usage is held to.
pub(crate) enum Promise {
    /// Its decision is in the patch: exactly what the tuner measured.
    Exact,
    /// Its decision is not (left out, or another's taken for a shared
    /// definition): nothing worse than this.
    NoWorseThan(Option<Usage>),
    /// Its decision is in the patch as another build than tune measured
    /// (nvcc's `-maxrregcount=R` as the kernel's own cap, whose
    /// code differs): the measured registers, spills and occupancy, exactly.
    Numbers,
    /// No decision, yet an edit it shares gives it an attribute (a kernel
    /// template's register cap per instantiation, whose default is no
    /// absence of a cap): plain's registers, spills and occupancy, exactly.
    Plain(Option<Usage>),
}

/// What the rebuild found.
#[derive(Default)]
pub(crate) struct Found {
    /// Kernels whose usage breaks their promise, and how.
    pub wrong: BTreeMap<String, String>,
    /// Every kernel's usage, per target.
    pub usage: BTreeMap<(String, String), Usage>,
    /// Kernels that decided nothing and changed, not for the worse.
    pub side_effects: Vec<String>,
    /// Units the patched files do not compile: (unit, the error).
    pub broken: Vec<(usize, String)>,
    /// nvcc's builds: how each kernel held to its promise compares with
    /// the candidate tune measured, per target.
    pub nvcc: BTreeMap<(String, String), nvcc::Sameness>,
}

/// Rebuild every unit that reads one of `changed` with `overlay` (nvcc:
/// with `changes`, the patched texts, in a mirror of its directory),
/// holding each decided kernel to `promise(its decision)`.
pub(crate) fn check(
    build: &Build<'_>,
    units: &[Planned],
    changed: &BTreeSet<Arc<str>>,
    changes: &[(Arc<str>, String)],
    files: &Files,
    overlay: &Overlay,
    promise: &dyn Fn(&Decision) -> Promise,
) -> Found {
    let mut found = Found::default();
    for (i, u) in units.iter().enumerate() {
        if u.reads.is_disjoint(changed) {
            continue;
        }
        for arch in build.archs {
            let built = match build.nvcc {
                Some(n) => nvcc::rebuild(n, files, build.user_args, u, arch, changes).map(|r| (r.measured, Some(r.cubin))),
                None => measure(build, u, arch, overlay, i).map(|m| (m, None)),
            };
            let (measured, cubin) = match built {
                Ok(m) => m,
                Err(e) => {
                    found.broken.push((i, format!("the patched files do not compile for {arch} ({}): {e}", u.path.display())));
                    continue;
                }
            };
            for m in &measured {
                found.usage.insert((m.symbol.clone(), arch.to_string()), m.usage);
            }
            for d in u.decisions.iter().filter(|d| &d.arch == arch) {
                let got = measured.iter().find(|m| m.symbol == d.symbol).map(|m| m.usage);
                let promised = promise(d);
                let exact = matches!(promised, Promise::Exact | Promise::Numbers);
                let at_plain = matches!(promised, Promise::Plain(_));
                let problem = match (d.transforms.is_empty(), promised) {
                    (_, Promise::Plain(u)) => not_plain(got, u),
                    (true, _) => worse(got, d.promised),
                    (false, Promise::Exact) => mismatch(got, d.promised),
                    (false, Promise::Numbers) => differs(got, d.promised, "the candidate"),
                    (false, Promise::NoWorseThan(u)) => worse(got, u),
                };
                if let (Some(cubin), None, false, true) = (&cubin, &problem, d.transforms.is_empty(), exact) {
                    found.nvcc.insert((d.symbol.clone(), arch.to_string()), nvcc::compare(cubin, d.code.as_deref(), &d.symbol));
                }
                if let Some(why) = problem {
                    found.wrong.entry(d.symbol.clone()).or_insert(format!("the plain build of the patched files on {arch} gives {why}"));
                } else if let (true, false, Some(g), Some(p)) = (d.transforms.is_empty(), at_plain, got, d.promised) {
                    if mismatch(Some(g), Some(p)).is_some() {
                        let name = names::short(&d.symbol);
                        found.side_effects.push(format!(
                            "{}: {name} on {arch}, where nothing was decided, changes too (code it shares with a decided kernel or target): VGPRs {} → {}, occupancy {} → {}",
                            u.path.display(),
                            p.vgpr,
                            g.vgpr,
                            p.occupancy,
                            g.occupancy
                        ));
                    }
                }
            }
        }
    }
    found
}

/// Every kernel's usage in a plain build of unit `u` with the overlay.
fn measure(build: &Build<'_>, u: &Planned, arch: &Arch, overlay: &Overlay, i: usize) -> Result<Vec<resources::Measured>, String> {
    let mut args = overlay.args();
    args.extend(build.user_args.iter().cloned());
    let unit = Unit { toolchain: build.toolchain, arch, source: &u.path, user_args: &args };
    let obj = overlay.dir().join(format!("unit{i}-{}.o", arch.processor()));
    let compiled = unit.code_object(&obj).map_err(|e| {
        let first = e.diagnostics().and_then(|d| d.lines().find(|l| l.contains("error"))).map(str::to_string);
        first.unwrap_or_else(|| e.to_string())
    })?;
    resources::object_file_with(&obj, arch, &compiled.stderr, &resources::Options::default()).map_err(|e| e.to_string())
}

/// Is `got` worse than `promised` by the tuner's rule (lower occupancy,
/// more spills or scratch)?
pub(crate) fn worse(got: Option<Usage>, promised: Option<Usage>) -> Option<String> {
    let (Some(got), Some(promised)) = (got, promised) else { return None };
    let spills = |u: &Usage| u.vgpr_spills + u.sgpr_spills;
    let fields = [
        ("occupancy", got.occupancy, promised.occupancy, got.occupancy < promised.occupancy),
        ("spills", spills(&got), spills(&promised), spills(&got) > spills(&promised)),
        ("scratch bytes", got.scratch_bytes, promised.scratch_bytes, got.scratch_bytes > promised.scratch_bytes),
    ];
    let diffs: Vec<String> = fields.iter().filter(|f| f.3).map(|(what, g, p, _)| format!("{what} {g} where it was {p}")).collect();
    (!diffs.is_empty()).then(|| diffs.join(", "))
}

/// How `got` differs from plain's registers, spills and occupancy, if it does.
pub(crate) fn not_plain(got: Option<Usage>, plain: Option<Usage>) -> Option<String> {
    differs(got, plain, "plain")
}

/// How `got` differs from `whose` registers, spills and occupancy (`want`), if it does.
pub(crate) fn differs(got: Option<Usage>, want: Option<Usage>, whose: &str) -> Option<String> {
    let plain = want?;
    let Some(got) = got else { return Some("no such kernel".into()) };
    let spills = |u: &Usage| u.vgpr_spills + u.sgpr_spills;
    let fields =
        [("registers", got.vgpr, plain.vgpr), ("spills", spills(&got), spills(&plain)), ("occupancy", got.occupancy, plain.occupancy)];
    let diffs: Vec<String> =
        fields.iter().filter(|(_, g, p)| g != p).map(|(what, g, p)| format!("{what} {g} where {whose} has {p}")).collect();
    (!diffs.is_empty()).then(|| diffs.join(", "))
}

/// How `got` differs from the promise, if it does (code size aside).
pub(crate) fn mismatch(got: Option<Usage>, promised: Option<Usage>) -> Option<String> {
    let promised = promised?;
    let Some(got) = got else { return Some("no such kernel".into()) };
    let fields: [(&str, u32, u32); 8] = [
        ("VGPRs", got.vgpr, promised.vgpr),
        ("AGPRs", got.agpr, promised.agpr),
        ("SGPRs", got.sgpr, promised.sgpr),
        ("scratch bytes", got.scratch_bytes, promised.scratch_bytes),
        ("VGPR spills", got.vgpr_spills, promised.vgpr_spills),
        ("SGPR spills", got.sgpr_spills, promised.sgpr_spills),
        ("LDS bytes", got.lds_bytes, promised.lds_bytes),
        ("occupancy", got.occupancy, promised.occupancy),
    ];
    let diffs: Vec<String> =
        fields.iter().filter(|(_, g, p)| g != p).map(|(what, g, p)| format!("{what} {g} where the tuner measured {p}")).collect();
    (!diffs.is_empty()).then(|| diffs.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mismatches_name_every_number_but_code_size() {
        let promised = Usage { vgpr: 48, occupancy: 8, code_bytes: 100, ..Default::default() };
        assert_eq!(mismatch(Some(Usage { code_bytes: 120, ..promised }), Some(promised)), None);
        assert_eq!(
            mismatch(Some(Usage { vgpr: 50, occupancy: 7, ..promised }), Some(promised)).as_deref(),
            Some("VGPRs 50 where the tuner measured 48, occupancy 7 where the tuner measured 8")
        );
        assert_eq!(mismatch(None, Some(promised)).as_deref(), Some("no such kernel"));
    }

    #[test]
    fn held_to_plain_means_its_registers_spills_and_occupancy() {
        let plain = Usage { vgpr: 48, occupancy: 40, code_bytes: 100, ..Default::default() };
        assert_eq!(not_plain(Some(Usage { code_bytes: 128, scratch_bytes: 8, ..plain }), Some(plain)), None);
        assert_eq!(
            not_plain(Some(Usage { vgpr: 40, occupancy: 48, ..plain }), Some(plain)).as_deref(),
            Some("registers 40 where plain has 48, occupancy 48 where plain has 40")
        );
    }

    #[test]
    fn undecided_kernels_may_change_but_not_for_the_worse() {
        let was = Usage { vgpr: 90, occupancy: 16, ..Default::default() };
        assert_eq!(worse(Some(Usage { vgpr: 84, ..was }), Some(was)), None);
        assert_eq!(worse(Some(Usage { occupancy: 12, ..was }), Some(was)).as_deref(), Some("occupancy 12 where it was 16"));
    }
}
