//! The measured search's candidates for one kernel: builds `regtune
//! measure` times inside the user's program, keeping the fastest one that
//! computes the same bytes as the plain build.
//!
//! The static rule cannot tell which occupancy step pays: a register cap
//! that makes the backend spill can still win on the GPU, and one that
//! does not can lose. So every step is a candidate, spilling or not, alone
//! and with the rewrites tune found, beside unroll caps. Only builds the
//! user already allows are proposed (no assumption about the caller, no
//! rounding change they did not accept). Builds whose code is byte-for-byte
//! one already kept are kept once; past the limit the rest are listed.

use rayon::prelude::*;
use regtune_decisions::{Candidate, Occupancy, Transforms, Usage};

/// What the candidates are made of.
#[derive(Debug, Clone, Default)]
pub(crate) struct Pool {
    /// Occupancy steps, lowest first.
    pub steps: Vec<u32>,
    /// Their unit, the target's: which field they set.
    pub occupancy: Occupancy,
    /// The plain build's own step (NVPTX: the lowest cap that keeps every
    /// register it uses), tried first.
    pub own_step: Option<u32>,
    /// The best combination of the rewrites the user allows (sink, exact
    /// pow2, and what they opted into); empty when none helps.
    pub rewrites: Transforms,
    /// Unroll caps to try (where a loop was unrolled).
    pub unroll_caps: Vec<u32>,
    /// Where the backend can spill to shared memory (a block size is
    /// known): what a step needs besides `spill_to_shared` (the launch
    /// bounds the user stated, or nothing when the source has them).
    pub spill_to_shared: Option<Transforms>,
    /// Where regtune's LDS spill can run (a block size is known): the
    /// same, with its slots set (`lds_spill`).
    pub lds_spill: Option<Transforms>,
}

/// Words per thread the LDS spill may take at a step: what the pass needs
/// to lower a peak by a step's worth of registers on the examples
/// (8 slots: 32 → 24 VGPRs), in a tenth of the 64 KiB at 256 threads.
pub(crate) const LDS_SLOTS: u32 = 8;

/// Every candidate, the most worth measuring first: the rewrites alone;
/// then per step, in [`nearest_first`] order from the plain build's own
/// (else in [`spread`] order), the register cap alone, with the backend's
/// spilling to shared memory, with regtune's LDS spill, and with the
/// rewrites; the unroll caps come after the first three steps (two without
/// an own step).
pub(crate) fn proposals(pool: &Pool) -> Vec<Transforms> {
    let at = |w: u32, with_rewrites: bool| {
        let base = if with_rewrites { pool.rewrites.clone() } else { Transforms::default() };
        base.with_occupancy(pool.occupancy, Some(w))
    };
    let mut out = Vec::new();
    if !pool.rewrites.is_empty() {
        out.push(pool.rewrites.clone());
    }
    let steps = match pool.own_step.and_then(|w| pool.steps.iter().position(|&s| s == w)) {
        Some(own) => nearest_first(&pool.steps, own),
        None => spread(&pool.steps),
    };
    let unroll_after = if pool.own_step.is_some() { 2 } else { 1 };
    for (i, &w) in steps.iter().enumerate() {
        out.push(at(w, false));
        if let Some(extra) = &pool.spill_to_shared {
            out.push(Transforms { spill_to_shared: true, ..extra.with_occupancy(pool.occupancy, Some(w)) });
        }
        if let Some(extra) = &pool.lds_spill {
            out.push(extra.with_occupancy(pool.occupancy, Some(w)));
        }
        if !pool.rewrites.is_empty() {
            out.push(at(w, true));
        }
        if i == unroll_after.min(steps.len() - 1) {
            out.extend(pool.unroll_caps.iter().map(|&c| Transforms { unroll_cap: Some(c), ..Default::default() }));
        }
    }
    if pool.steps.is_empty() {
        out.extend(pool.unroll_caps.iter().map(|&c| Transforms { unroll_cap: Some(c), ..Default::default() }));
    }
    out
}

/// `steps` (lowest first) from the one at `own`: it, the lowest (the most
/// registers), then by distance from `own`, the lower of two first. On an
/// H100 the hand sweep's best cap for a corpus kernel was its own or one
/// or two caps from it on 13 of 21, the lowest (255) on two, the highest
/// (32) on none.
fn nearest_first(steps: &[u32], own: usize) -> Vec<u32> {
    let mut order: Vec<usize> = (0..steps.len()).collect();
    order.sort_by_key(|&i| (i != own, i != 0, i.abs_diff(own), i));
    order.into_iter().map(|i| steps[i]).collect()
}

/// `items` in the order to take them when not all fit: the first, the
/// last, then repeatedly the middle of the widest gap between those taken.
pub(crate) fn spread<T: Copy>(items: &[T]) -> Vec<T> {
    let n = items.len();
    if n <= 2 {
        return items.to_vec();
    }
    let mut taken = vec![0, n - 1];
    while taken.len() < n {
        let mut sorted = taken.clone();
        sorted.sort_unstable();
        let (lo, hi) = sorted.windows(2).map(|w| (w[0], w[1])).max_by_key(|(a, b)| (b - a, std::cmp::Reverse(*a))).expect("two taken");
        taken.push(lo + (hi - lo) / 2);
    }
    taken.into_iter().map(|i| items[i]).collect()
}

/// `proposals` with those a GPU already timed and found no faster than
/// plain (`lost`) moved behind every other, in order: each turn of tune and
/// measure times the builds the last left out, and a loser again only
/// where the limit leaves room.
pub(crate) fn untimed_first(proposals: Vec<Transforms>, lost: impl Fn(&Transforms) -> bool) -> Vec<Transforms> {
    let (behind, first): (Vec<Transforms>, Vec<Transforms>) = proposals.into_iter().partition(|t| lost(t));
    first.into_iter().chain(behind).collect()
}

/// What [`select`] kept and left out.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Selection {
    pub kept: Vec<Candidate>,
    /// Proposals past the limit or the time budget (not built).
    pub left_out: Vec<Transforms>,
    /// The codes of `known` and of every kept build: what a later proposal
    /// must differ from.
    pub codes: Vec<String>,
    /// Register caps alone left out because the kernel's caps took the
    /// file's time budget (clang's NVPTX caps, `tune/kernel.rs`): said.
    pub caps_past_budget: Vec<Transforms>,
}

/// How [`select`] builds its proposals: one at a time (any closure), or in
/// batches that are cheaper together.
pub(crate) trait Build: Sync {
    /// A proposal's usage and a hash of its code (None: it did not build,
    /// or the time budget is spent).
    fn build(&self, t: &Transforms) -> Option<(Usage, String)>;

    /// How many to build at once: a core's worth.
    fn batch(&self) -> usize {
        rayon::current_num_threads()
    }

    /// Called with each batch before its builds, for work the batch shares
    /// (NVPTX: one nvdisasm run reads all of their SASS).
    fn prepare(&self, _batch: &[Transforms]) {}
}

impl<F: Fn(&Transforms) -> Option<(Usage, String)> + Sync> Build for F {
    fn build(&self, t: &Transforms) -> Option<(Usage, String)> {
        self(t)
    }
}

/// The first `limit` proposals that build and whose code differs from
/// every build before them. `known` are the codes already kept (the plain
/// build, the decision, the suggestions); `build` compiles a proposal and
/// gives its usage and a hash of its code (None: it did not build, or the
/// time budget is spent, which `spent` then says).
///
/// They are built a batch at a time, in parallel: never more than the
/// room left under `limit`, so each would have been built one by one too,
/// and kept in their order, so the selection is the same.
pub(crate) fn select(proposals: Vec<Transforms>, limit: usize, known: &[String], build: impl Build, spent: impl Fn() -> bool) -> Selection {
    let mut out = Selection { codes: known.to_vec(), ..Selection::default() };
    let mut rest = proposals.into_iter().peekable();
    while rest.peek().is_some() {
        let room = limit.saturating_sub(out.kept.len());
        if room == 0 || spent() {
            out.left_out.extend(rest);
            break;
        }
        let batch: Vec<Transforms> = rest.by_ref().take(room.min(build.batch().max(1))).collect();
        build.prepare(&batch);
        let built: Vec<Option<(Usage, String)>> = batch.par_iter().map(|t| build.build(t)).collect();
        for (t, b) in batch.into_iter().zip(built) {
            let Some((usage, code)) = b else {
                if spent() {
                    out.left_out.push(t);
                }
                continue;
            };
            if out.codes.contains(&code) {
                continue;
            }
            out.codes.push(code);
            out.kept.push(Candidate { transforms: t, usage });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(w: u32) -> Transforms {
        Transforms { waves_per_eu: Some(w), ..Default::default() }
    }

    #[test]
    fn spread_takes_the_ends_then_the_middles() {
        assert_eq!(spread(&[1, 2, 3, 4, 5, 6, 7]), [1, 7, 4, 2, 5, 3, 6]);
        assert_eq!(spread(&[16, 24]), [16, 24]);
        assert_eq!(spread::<u32>(&[]), Vec::<u32>::new());
    }

    #[test]
    fn steps_come_alone_and_with_the_rewrites_and_unroll_caps_after_two_steps() {
        let sink = Transforms { sink: true, ..Default::default() };
        let pool = Pool { steps: vec![5, 6, 8], rewrites: sink.clone(), unroll_caps: vec![1, 2], ..Default::default() };
        let labels: Vec<String> = proposals(&pool).iter().map(|t| t.labels().join("+")).collect();
        assert_eq!(
            labels,
            [
                "sink",
                "waves-per-eu=5",
                "sink+waves-per-eu=5",
                "waves-per-eu=8",
                "sink+waves-per-eu=8",
                "unroll-cap=1",
                "unroll-cap=2",
                "waves-per-eu=6",
                "sink+waves-per-eu=6"
            ]
        );
        let lds = Transforms { lds_spill: Some(LDS_SLOTS), ..Default::default() };
        // NVPTX's steps, in warps per SM.
        let shared = Pool {
            steps: vec![40],
            occupancy: Occupancy::WarpsPerSm,
            spill_to_shared: Some(Transforms::default()),
            lds_spill: Some(lds),
            ..Default::default()
        };
        let labels: Vec<String> = proposals(&shared).iter().map(|t| t.labels().join("+")).collect();
        assert_eq!(labels, ["warps-per-sm=40", "warps-per-sm=40+spill-to-shared", "warps-per-sm=40+lds-spill=8"]);
        let caps_only = Pool { unroll_caps: vec![4], ..Default::default() };
        assert_eq!(proposals(&caps_only), [Transforms { unroll_cap: Some(4), ..Default::default() }]);
        let one_step = Pool { steps: vec![7], unroll_caps: vec![8], ..Default::default() };
        assert_eq!(proposals(&one_step), [step(7), Transforms { unroll_cap: Some(8), ..Default::default() }]);
        // The plain build's own step first, the lowest, then the nearest to
        // it, the lower of two first; unroll caps after three steps.
        let own = Pool { steps: vec![8, 12, 16, 20, 24, 28], own_step: Some(20), unroll_caps: vec![2], ..Default::default() };
        let cap2 = Transforms { unroll_cap: Some(2), ..Default::default() };
        assert_eq!(proposals(&own), [step(20), step(8), step(16), cap2, step(24), step(12), step(28)]);
        let not_a_step = Pool { steps: vec![8, 12, 16], own_step: Some(10), ..Default::default() };
        assert_eq!(proposals(&not_a_step), [step(8), step(16), step(12)]);
    }

    #[test]
    fn builds_that_lost_on_the_gpu_go_behind_the_untimed_ones() {
        let all: Vec<Transforms> = [32, 8, 40, 24, 16].into_iter().map(step).collect();
        let lost = |t: &Transforms| matches!(t.waves_per_eu, Some(8 | 40));
        assert_eq!(untimed_first(all.clone(), lost), [32, 24, 16, 8, 40].map(step));
        assert_eq!(untimed_first(all.clone(), |_| false), all, "nothing timed: the order stands");
    }

    #[test]
    fn identical_code_is_kept_once_and_the_limit_leaves_the_rest_listed() {
        // Steps 5 and 6 give the same code (the cap changes nothing more);
        // step 7 fails to build.
        let build = |t: &Transforms| match t.waves_per_eu {
            Some(7) => None,
            Some(w) => Some((Usage { occupancy: w, ..Default::default() }, if w <= 6 { "a".into() } else { format!("c{w}") })),
            None => Some((Usage::default(), "plain".into())),
        };
        let props = vec![step(5), step(6), step(7), step(8), step(9), step(10)];
        let s = select(props, 2, &["plain".to_string()], build, || false);
        assert_eq!(s.kept.iter().map(|c| c.transforms.clone()).collect::<Vec<_>>(), [step(5), step(8)]);
        assert_eq!(s.left_out, [step(9), step(10)]);
        assert_eq!(s.codes, ["plain", "a", "c8"], "the known codes, then the kept ones");
        // Code equal to a known build (the plain one) is not a candidate.
        let same_as_plain = select(vec![Transforms::default()], 8, &["plain".to_string()], build, || false);
        assert!(same_as_plain.kept.is_empty() && same_as_plain.left_out.is_empty());
    }

    #[test]
    fn a_spent_budget_leaves_the_rest_out() {
        // Spent once step 6 is built: at most the batch it was built in is
        // kept, the rest is left out unbuilt.
        let spent = std::sync::atomic::AtomicBool::new(false);
        let built = std::sync::atomic::AtomicUsize::new(0);
        let build = |t: &Transforms| {
            built.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if t.waves_per_eu == Some(6) {
                spent.store(true, std::sync::atomic::Ordering::Relaxed);
            }
            Some((Usage::default(), format!("{:?}", t.waves_per_eu)))
        };
        let props: Vec<Transforms> = (5..205).map(step).collect();
        let s = select(props, 8, &[], build, || spent.load(std::sync::atomic::Ordering::Relaxed));
        let batch = 8.min(rayon::current_num_threads()).max(2);
        assert!(s.kept.len() <= batch && s.kept.len() >= 2, "{}", s.kept.len());
        assert_eq!(s.kept[..2].iter().map(|c| c.transforms.clone()).collect::<Vec<_>>(), [step(5), step(6)]);
        assert_eq!(s.kept.len() + s.left_out.len(), 200);
        assert_eq!(built.load(std::sync::atomic::Ordering::Relaxed), s.kept.len());
    }
}
