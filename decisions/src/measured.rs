//! What `regtune measure` saw on a GPU, inside the user's own program, and
//! the rule that turns it into the build's choice.
//!
//! Occupancy is a proxy: a decision that raises it can still run slower. A
//! measured entry keeps a decision only if the GPU says it computes the same
//! bytes as the plain build and runs faster than it beyond the noise.
//! Measurement only ever picks among what the user already allows (the
//! decision and confirmed suggestions) or falls back to plain: it never
//! applies an assumption or a rounding change the user did not opt into.

use serde::{Deserialize, Serialize};

use crate::Transforms;

/// One kernel's measurements on one GPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    /// The GPU and driver, e.g. "NVIDIA H100 80GB HBM3 (sm_90, driver 580.159.04)".
    pub device: String,
    /// Program launches replayed, and timed runs of each candidate per launch.
    pub launches: u32,
    pub runs: u32,
    /// The plain build's runs gave the same bytes twice; when not, no
    /// candidate can be shown identical and the plain build is kept.
    pub deterministic: bool,
    /// The program's own launch left the same bytes as regtune's plain
    /// build (None: not checked): the candidates were built from the code
    /// the program runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program_identical: Option<bool>,
    /// The plain build, then the decision, then each suggestion.
    pub candidates: Vec<Candidate>,
}

/// One candidate code object of the kernel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    pub transforms: Transforms,
    /// None when it could not run (see `error`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<Timing>,
    /// Every byte of every allocation the launch can reach equals the plain
    /// build's, on every launch measured.
    pub identical: bool,
    /// Why it was not measured: a fault, a refused launch, a load error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// A hash of the code object measured: a re-tune that builds the same
    /// bytes keeps this measurement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

/// Kernel time (CUDA/HIP events), milliseconds: over the timed runs of one
/// launch, the median and interquartile range; over several launches (of
/// different sizes, maybe), the sums of those, what the program spends.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    pub median_ms: f64,
    /// Interquartile range: the noise of this candidate's runs.
    pub spread_ms: f64,
}

impl Timing {
    /// Median and interquartile range of `samples` (None when empty).
    pub fn of(samples: &[f64]) -> Option<Timing> {
        let mut s: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
        if s.is_empty() {
            return None;
        }
        s.sort_by(f64::total_cmp);
        let q = |p: f64| {
            // Linear interpolation between closest ranks.
            let pos = p * (s.len() - 1) as f64;
            let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
            s[lo] + (s[hi] - s[lo]) * (pos - lo as f64)
        };
        Some(Timing { median_ms: q(0.5), spread_ms: q(0.75) - q(0.25) })
    }

    /// Faster than `other` beyond the noise: the medians lie further apart
    /// than the two spreads together.
    pub fn beats(&self, other: &Timing) -> bool {
        other.median_ms - self.median_ms > self.spread_ms + other.spread_ms
    }
}

/// Why the rule chose what it chose, for reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Identical, and faster than plain beyond the noise.
    Faster,
    /// Identical, and within the noise of plain.
    NotFaster,
    /// Identical, and slower than plain beyond the noise.
    Slower,
    /// Different bytes than the plain build (or the plain build itself is
    /// not deterministic).
    Differs,
    /// It did not run.
    Failed,
}

impl Measured {
    pub fn candidate(&self, t: &Transforms) -> Option<&Candidate> {
        self.candidates.iter().find(|c| &c.transforms == t)
    }

    pub fn plain(&self) -> Option<&Candidate> {
        self.candidate(&Transforms::default())
    }

    /// What the measurement says about one candidate.
    pub fn verdict(&self, c: &Candidate) -> Verdict {
        let (Some(time), Some(plain)) = (c.time, self.plain().and_then(|p| p.time)) else {
            return Verdict::Failed;
        };
        if c.error.is_some() {
            Verdict::Failed
        } else if !self.deterministic || !c.identical {
            Verdict::Differs
        } else if time.beats(&plain) {
            Verdict::Faster
        } else if plain.beats(&time) {
            Verdict::Slower
        } else {
            Verdict::NotFaster
        }
    }

    /// Plain time over the candidate's (> 1: faster).
    pub fn speedup(&self, c: &Candidate) -> Option<f64> {
        Some(self.plain()?.time?.median_ms / c.time?.median_ms)
    }

    /// The build to use among `allowed` (what the user allows: the decision
    /// and confirmed suggestions): the fastest one measured identical and
    /// faster than plain beyond the noise, else plain. None when none of
    /// `allowed` was measured (the measurement predates them).
    pub fn choose<'a>(&self, allowed: impl IntoIterator<Item = &'a Transforms>) -> Option<Transforms> {
        let measured: Vec<&Candidate> = allowed.into_iter().filter_map(|t| self.candidate(t)).collect();
        if measured.is_empty() {
            return None;
        }
        let best = measured
            .into_iter()
            .filter(|c| self.verdict(c) == Verdict::Faster)
            .min_by(|a, b| a.time.map(|t| t.median_ms).partial_cmp(&b.time.map(|t| t.median_ms)).expect("finite times"));
        Some(best.map(|c| c.transforms.clone()).unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(cap: Option<u32>, sink: bool) -> Transforms {
        Transforms { unroll_cap: cap, sink, ..Default::default() }
    }

    fn cand(tr: Transforms, median: f64, spread: f64, identical: bool) -> Candidate {
        Candidate { transforms: tr, time: Some(Timing { median_ms: median, spread_ms: spread }), identical, error: None, code: None }
    }

    fn measured(cands: Vec<Candidate>) -> Measured {
        Measured { device: "gpu".into(), launches: 1, runs: 5, deterministic: true, program_identical: Some(true), candidates: cands }
    }

    #[test]
    fn median_and_interquartile_range() {
        let tm = Timing::of(&[5.0, 1.0, 3.0, 2.0, 4.0]).unwrap();
        assert_eq!(tm.median_ms, 3.0);
        assert_eq!(tm.spread_ms, 2.0); // 4 - 2
        let even = Timing::of(&[1.0, 2.0, 3.0, 4.0]).unwrap();
        assert_eq!(even.median_ms, 2.5);
        assert_eq!(even.spread_ms, 1.5); // 3.25 - 1.75
        assert_eq!(Timing::of(&[]), None);
        assert_eq!(Timing::of(&[f64::NAN]), None);
    }

    #[test]
    fn faster_means_beyond_both_spreads() {
        let plain = Timing { median_ms: 1.0, spread_ms: 0.02 };
        assert!(Timing { median_ms: 0.9, spread_ms: 0.02 }.beats(&plain));
        // 0.03 apart, 0.04 of noise: not faster.
        assert!(!Timing { median_ms: 0.97, spread_ms: 0.02 }.beats(&plain));
        assert!(!plain.beats(&plain));
    }

    #[test]
    fn a_slower_decision_is_rejected_and_a_faster_one_kept() {
        // The Laplacian on the H100: unroll-cap=1 raised occupancy and ran 6 % slower.
        let slower = measured(vec![cand(t(None, false), 0.186, 0.001, true), cand(t(Some(1), false), 0.199, 0.001, true)]);
        assert_eq!(slower.choose([&t(Some(1), false)]), Some(Transforms::default()));
        // md_lj_force_kick: sink ran 1.4x faster.
        let faster = measured(vec![cand(t(None, false), 0.614, 0.002, true), cand(t(None, true), 0.440, 0.002, true)]);
        assert_eq!(faster.choose([&t(None, true)]), Some(t(None, true)));
        // The verdicts say which way it went, and noise is neither.
        assert_eq!(slower.verdict(&slower.candidates[1]), Verdict::Slower);
        assert_eq!(faster.verdict(&faster.candidates[1]), Verdict::Faster);
        let close = measured(vec![cand(t(None, false), 1.0, 0.02, true), cand(t(Some(1), false), 1.03, 0.02, true)]);
        assert_eq!(close.verdict(&close.candidates[1]), Verdict::NotFaster);
    }

    #[test]
    fn different_bytes_or_a_nondeterministic_plain_build_reject() {
        let m = measured(vec![cand(t(None, false), 1.0, 0.0, true), cand(t(None, true), 0.5, 0.0, false)]);
        assert_eq!(m.verdict(&m.candidates[1]), Verdict::Differs);
        assert_eq!(m.choose([&t(None, true)]), Some(Transforms::default()));
        let mut noisy = measured(vec![cand(t(None, false), 1.0, 0.0, true), cand(t(None, true), 0.5, 0.0, true)]);
        noisy.deterministic = false;
        assert_eq!(noisy.choose([&t(None, true)]), Some(Transforms::default()));
    }

    #[test]
    fn the_fastest_allowed_identical_candidate_wins_and_unallowed_ones_never() {
        let m = measured(vec![
            cand(t(None, false), 1.0, 0.0, true),
            cand(t(Some(4), false), 0.8, 0.0, true),
            cand(t(Some(2), false), 0.7, 0.0, true),
            // Faster still, but a suggestion the user has not confirmed.
            cand(t(Some(1), false), 0.5, 0.0, true),
        ]);
        assert_eq!(m.choose([&t(Some(4), false), &t(Some(2), false)]), Some(t(Some(2), false)));
        // Nothing allowed was measured: the measurement has nothing to say.
        assert_eq!(m.choose([&t(None, true)]), None);
    }

    #[test]
    fn a_failed_candidate_is_never_chosen() {
        let mut failed = cand(t(None, true), 0.1, 0.0, true);
        failed.error = Some("CUDA_ERROR_ILLEGAL_ADDRESS".into());
        failed.time = None;
        let m = measured(vec![cand(t(None, false), 1.0, 0.0, true), failed]);
        assert_eq!(m.verdict(&m.candidates[1]), Verdict::Failed);
        assert_eq!(m.choose([&t(None, true)]), Some(Transforms::default()));
    }

    #[test]
    fn speedup_is_plain_over_candidate() {
        let m = measured(vec![cand(t(None, false), 0.6, 0.0, true), cand(t(None, true), 0.4, 0.0, true)]);
        assert!((m.speedup(&m.candidates[1]).unwrap() - 1.5).abs() < 1e-12);
    }
}
