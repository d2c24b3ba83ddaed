//! Spilling to shared memory: ptxas's (`--spill-to-shared`, the PTX
//! pragma) where the backend has it, else regtune's LDS spill
//! (passes/src/lds_spill/). Both need the block size every launch keeps
//! to: the measured search offers them at the source's or the user's
//! launch bounds (kernel.rs), and here at a block size only `regtune
//! measure`'s launches showed, as a suggestion. No source spelling: the
//! plugin builds them, or regtune-nvcc's entry edit.

use regtune_decisions::{Reason, Transforms, Usage};

use super::{Proposal, Transform};
use crate::candidates;
use crate::evidence::Class;
use crate::gpu;
use crate::session::Session;

pub(super) struct Spill;

impl Transform for Spill {
    fn class(&self) -> Class {
        Class::SpillToShared
    }

    fn spelled_by(&self) -> Option<&'static str> {
        None
    }
}

/// Where a register cap spills and only `regtune measure`'s launches show
/// the block size, spilling to shared memory needs that size as launch
/// bounds, a promise about every later launch: proposed for measure to
/// time, applied once the user confirms it. At this many of the kept caps
/// whose spills the target says shared memory can beat
/// ([`gpu::OccupancyModel::shared_spill_pays`]).
const LAUNCHED_SPILLS: usize = 2;

/// [`LAUNCHED_SPILLS`]: at the kept register caps alone whose spills can
/// pay (the target's rule), those a GPU timed fastest (`timed`, the
/// measurement a re-tune of unchanged code keeps), else that spill most,
/// the same cap with launch bounds of `block`
/// threads and the backend's spilling to shared memory (regtune's LDS spill where the backend has
/// none); each built (`build`: usage and code hash) while time is left and
/// kept if its code differs from `known` and the others and it spills less
/// than the cap alone.
pub(in crate::tune) fn launched_spills(
    session: &Session<'_>,
    kept: &[regtune_decisions::Candidate],
    block: u32,
    timed: Option<&regtune_decisions::measured::Measured>,
    known: &[String],
    build: impl Fn(&Transforms) -> Option<(Usage, String)>,
    spent: impl Fn() -> bool,
) -> Vec<Proposal> {
    let target = gpu::of(session.arch);
    let mut spilling_caps: Vec<&regtune_decisions::Candidate> = kept
        .iter()
        .filter(|c| c.usage.vgpr_spills > 0 && c.transforms.without_occupancy().is_empty())
        .filter(|c| !target.backend_spills_to_shared() || target.shared_spill_pays(&c.usage))
        .collect();
    // The twin of the cap the GPU keeps is the one that can beat the
    // build: on RSBench the caps that spill most (208 bytes) ran 1.15-1.17×,
    // the kept cap (188) 1.635×, and only its twin ran faster (1.648×).
    // Untimed, shared memory gained most where a cap spills most.
    let median = |c: &regtune_decisions::Candidate| Some(timed?.candidate(&c.transforms).filter(|m| m.identical)?.time.as_ref()?.median_ms);
    spilling_caps.sort_by(|a, b| match (median(a), median(b)) {
        (Some(x), Some(y)) => x.total_cmp(&y),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => b.usage.vgpr_spills.cmp(&a.usage.vgpr_spills),
    });
    let mut seen = known.to_vec();
    let mut out = Vec::new();
    for cap in spilling_caps.into_iter().take(LAUNCHED_SPILLS) {
        if spent() {
            break;
        }
        let held = Transforms { launch_bounds: Some(block), ..Default::default() };
        let transforms = match target.backend_spills_to_shared() {
            true => Transforms { spill_to_shared: true, ..cap.transforms.clone() },
            false => Transforms { lds_spill: Some(candidates::LDS_SLOTS), ..cap.transforms.clone() },
        };
        let transforms = Transforms { launch_bounds: Some(block), ..transforms };
        let Some((usage, code)) = build(&transforms) else { continue };
        // `build` holds the backend's spilling to this already; regtune's
        // LDS spill, which the stated-block search offers where nothing
        // spills too, must here spill less than the cap alone.
        if seen.contains(&code) || usage.vgpr_spills >= cap.usage.vgpr_spills {
            continue;
        }
        seen.push(code);
        let step = cap.transforms.labels().join(" + ");
        let message = format!(
            "every measured launch used {block} threads per block: with __launch_bounds__({block}) at {step} the {} spill bytes \
             of the cap alone become {} ({} bytes of shared memory a block); `regtune measure` times it, and it applies once you confirm it \
             (`regtune confirm`) or pass --block-size {block}",
            cap.usage.vgpr_spills, usage.vgpr_spills, usage.lds_bytes
        );
        out.push(Proposal { held, transforms, usage, reasons: vec![Reason::AssumesCaller], message });
    }
    out
}
