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
    /// Program launches replayed, and the plain build's timed rounds (the
    /// fewest of its launches; a candidate leaves the rounds once its
    /// ratio is settled, plain never).
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
    /// Threads per block of every launch measured (None: they differed,
    /// or an older measurement): a re-tune leaves out the register caps at
    /// which no block of this size fits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block: Option<u32>,
    /// The plain build, then the decision, then each suggestion.
    pub candidates: Vec<Candidate>,
    /// Plain's own code loaded a second time, against plain round by
    /// round: how far apart two loads of the same code run on this kernel
    /// (None: an older measurement).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control: Option<Paired>,
    /// Builds an earlier run timed, against the same plain code, that the
    /// candidates no longer hold: they are never chosen (their rounds did
    /// not run beside the candidates'), and a re-tune proposes the ones
    /// that lost ([`Measured::lost`]) after every build not yet timed, so
    /// each turn of the loop times what the last left out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub earlier: Vec<Candidate>,
    /// The replay's choice timed again on the program's own launches after
    /// the replay (None: not confirmed, or an older measurement): a choice
    /// not faster there beyond the noise is not kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<ProgramTiming>,
}

/// The replay's choice swapped into the program on alternate launches of
/// the kernel (same grid, block and arguments), each launch timed on the
/// GPU by CUPTI's activity records: a pair is one launch of plain's code
/// and one of the choice's, and the pair's ratio is a round of
/// [`Paired`]. What the program itself spends, cache state and launch
/// overheads included, which a replay on memory restored before every run
/// does not see.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProgramTiming {
    /// The build confirmed: the replay's choice.
    pub transforms: Transforms,
    /// Its time over plain's, pair by pair.
    pub paired: Paired,
    /// Each one's kernel time over its launches in those pairs.
    pub plain: Timing,
    pub choice: Timing,
    /// The pairs are of whole runs of the program (one ran plain's code on
    /// every launch, the other the choice's; each run's total), for a
    /// kernel launched too few times after the replay to pair its launches.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub whole_runs: bool,
}

impl ProgramTiming {
    /// Plain's time over the choice's on the program's launches (> 1: faster).
    pub fn speedup(&self) -> f64 {
        1.0 / self.paired.median
    }
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
    /// Its time over plain's, round by round (None: an older measurement,
    /// judged by [`Timing::beats`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paired: Option<Paired>,
}

/// A candidate's time over plain's in each timed round, their quartiles.
/// Every round runs each candidate once, interleaved, so a round's ratio
/// cancels what drifts between rounds (clocks, the GPU's other work) and
/// tells a steady 2 % apart from noise that the spread of the medians
/// hides.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Paired {
    pub median: f64,
    pub lower: f64,
    pub upper: f64,
    /// Rounds the ratios came from (0: an older measurement, judged by its
    /// quartiles).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rounds: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// The least gain worth a build of its own: timed until settled, plain's
/// code loaded as a second module ran within 0.9 % of plain on all 21
/// kernels of the development corpus, in each of three runs (H100,
/// 2026-11-27; bench/search/). Where the kernel's own control shows more, its
/// difference is the least gain ([`Measured::least_gain`]).
pub const MIN_GAIN: f64 = 0.01;

/// The confidence interval of a median ratio: 99 %, since a kernel has up
/// to eight candidates and any one crossing 1 by chance would be kept. At
/// 95 %, a 9 µs kernel with nothing faster (the MD example's small
/// lattice, 200 rounds, ±2 %) once kept a candidate at 1.023×.
pub const Z: f64 = 2.576;

/// Rounds before a candidate's ratio can count as settled: with 5, a
/// 30 µs kernel's interquartile range came out small by chance and
/// candidates as fast as plain left the rounds as slower (H100, lud).
pub const SETTLE_AFTER: usize = 20;

impl Paired {
    /// From each launch's timed rounds of the candidate and of plain (the
    /// same launches, in order): round i's ratio is the candidate's total
    /// over the launches in round i over plain's. None without a round
    /// both ran.
    pub fn of(candidate: &[Vec<f64>], plain: &[Vec<f64>]) -> Option<Paired> {
        if candidate.len() != plain.len() || candidate.is_empty() {
            return None;
        }
        let rounds = candidate.iter().chain(plain).map(Vec::len).min().unwrap_or(0);
        let total = |launches: &[Vec<f64>], i: usize| launches.iter().map(|l| l[i]).sum::<f64>();
        let mut ratios: Vec<f64> =
            (0..rounds).map(|i| total(candidate, i) / total(plain, i)).filter(|r| r.is_finite() && *r > 0.0).collect();
        if ratios.is_empty() {
            return None;
        }
        ratios.sort_by(f64::total_cmp);
        let q = |p: f64| quantile(&ratios, p);
        Some(Paired { median: q(0.5), lower: q(0.25), upper: q(0.75), rounds: ratios.len() as u32 })
    }

    /// Half the width of the median's confidence interval ([`Z`]), from
    /// the interquartile range (the sample median's standard error is
    /// about 1.2533 σ / √n, σ about IQR / 1.349; the notches of a box
    /// plot). Short kernels vary 10–20 % from round to round: many rounds
    /// tell their steady 2 % apart, a few cannot. None for an older
    /// measurement.
    pub fn margin(&self) -> Option<f64> {
        (self.rounds > 0).then(|| Z * 1.2533 / 1.349 * (self.upper - self.lower) / f64::from(self.rounds).sqrt())
    }

    /// The interval the median lies in: its confidence interval, or (older
    /// measurements, ten rounds) the quartiles, about the same bounds near
    /// twenty rounds.
    fn bounds(&self) -> (f64, f64) {
        self.margin().map_or((self.lower, self.upper), |m| (self.median - m, self.median + m))
    }

    /// Faster beyond the noise, and by at least `gain`.
    pub fn faster(&self, gain: f64) -> bool {
        self.bounds().1 < 1.0 && self.median <= 1.0 - gain
    }

    /// Slower beyond the noise, and by at least `gain`.
    pub fn slower(&self, gain: f64) -> bool {
        self.bounds().0 > 1.0 && self.median >= 1.0 + gain
    }

    /// More rounds would not change what the rule makes of it: its median
    /// is known to half the least gain, or it is slower beyond twice the
    /// noise (asked after every round, so stricter than the final rule: a
    /// bound crossed once by chance would end its rounds for good).
    pub fn settled(&self) -> bool {
        let Some(m) = self.margin() else { return false };
        self.rounds as usize >= SETTLE_AFTER && (m <= MIN_GAIN / 2.0 || self.median - 2.0 * m > 1.0)
    }
}

/// The `p` quantile of sorted `s` (not empty), interpolating linearly
/// between the closest ranks.
fn quantile(s: &[f64], p: f64) -> f64 {
    let pos = p * (s.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    s[lo] + (s[hi] - s[lo]) * (pos - lo as f64)
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
        let q = |p: f64| quantile(&s, p);
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
    /// Identical, and faster than plain beyond the noise: in most rounds
    /// and by at least [`MIN_GAIN`].
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
        } else if c.paired.map_or(time.beats(&plain), |p| p.faster(self.least_gain())) {
            Verdict::Faster
        } else if c.paired.map_or(plain.beats(&time), |p| p.slower(self.least_gain())) {
            Verdict::Slower
        } else {
            Verdict::NotFaster
        }
    }

    /// The least gain this measurement can tell from noise: [`MIN_GAIN`],
    /// or how far apart the control's two loads of plain's code ran where
    /// that is more (on a 30 µs kernel timed ten rounds, 2.7 % either way
    /// between runs).
    pub fn least_gain(&self) -> f64 {
        self.control.map_or(MIN_GAIN, |c| MIN_GAIN.max((1.0 - c.median).abs()))
    }

    /// Plain time over the candidate's (> 1: faster): round by round where
    /// the rounds were kept, else over the medians.
    pub fn speedup(&self, c: &Candidate) -> Option<f64> {
        let time = c.time?;
        match c.paired {
            Some(p) => Some(1.0 / p.median),
            None => Some(self.plain()?.time?.median_ms / time.median_ms),
        }
    }

    /// `t` was timed, here or in an earlier run, and was neither faster
    /// than plain nor a build to use: slower, within the noise, different
    /// bytes, or it failed.
    pub fn lost(&self, t: &Transforms) -> bool {
        !t.is_empty()
            && (self.candidates.iter().chain(&self.earlier).any(|c| &c.transforms == t && self.verdict(c) != Verdict::Faster)
                || self.program_rejects(t))
    }

    /// The program's own launches timed `t` (the replay's choice) and it
    /// was not faster there than plain beyond the noise and the least gain.
    pub fn program_rejects(&self, t: &Transforms) -> bool {
        self.program.as_ref().is_some_and(|p| &p.transforms == t && !p.paired.faster(self.least_gain()))
    }

    /// This run's measurement with what `old` (the db's measurement it
    /// replaces, if any) timed and this run did not (its candidates, and its
    /// own earlier ones) kept as `earlier`, where plain's code is the one
    /// `old` timed.
    pub fn with_earlier(mut self, old: Option<&Measured>) -> Measured {
        let Some(old) = old else { return self };
        let same_plain = match (self.plain(), old.plain()) {
            (Some(now), Some(then)) => now.code.is_some() && now.code == then.code,
            _ => false,
        };
        if !same_plain {
            return self;
        }
        for c in old.candidates.iter().chain(&old.earlier) {
            let known = self.candidates.iter().chain(&self.earlier).any(|k| k.transforms == c.transforms);
            if !known && !c.transforms.is_empty() {
                self.earlier.push(c.clone());
            }
        }
        self
    }

    /// The build to use among `allowed` (what the user allows: the decision
    /// and confirmed suggestions): of those measured identical and faster
    /// than plain beyond the noise, within the least gain of the fastest
    /// (builds that close swap places from run to run), one a source patch
    /// can spell (not nvcc's `-maxrregcount`, which `regtune-nvcc` alone
    /// builds for one kernel) with the fewest transforms (the simpler one
    /// is the steadier choice), else plain.
    /// None when none of `allowed` was measured (the measurement predates
    /// them).
    pub fn choose<'a>(&self, allowed: impl IntoIterator<Item = &'a Transforms>) -> Option<Transforms> {
        let simplest = |t: &Transforms| (t.maxrregcount.is_some(), t.labels().len());
        let measured: Vec<&Candidate> = allowed.into_iter().filter_map(|t| self.candidate(t)).collect();
        if measured.is_empty() {
            return None;
        }
        let faster: Vec<(&Candidate, f64)> =
            measured.into_iter().filter(|c| self.verdict(c) == Verdict::Faster).filter_map(|c| Some((c, self.speedup(c)?))).collect();
        let fastest = faster.iter().map(|(_, s)| *s).fold(f64::NEG_INFINITY, f64::max);
        let best = faster
            .into_iter()
            .filter(|(_, s)| s * (1.0 + self.least_gain()) >= fastest)
            // The first of equals, in the candidates' order.
            .min_by(|(a, sa), (b, sb)| simplest(&a.transforms).cmp(&simplest(&b.transforms)).then(sb.total_cmp(sa)));
        let best = best.map(|(c, _)| c.transforms.clone()).unwrap_or_default();
        // The program's own launches have the last word on the choice they timed.
        Some(if self.program_rejects(&best) { Transforms::default() } else { best })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(cap: Option<u32>, sink: bool) -> Transforms {
        Transforms { unroll_cap: cap, sink, ..Default::default() }
    }

    fn cand(tr: Transforms, median: f64, spread: f64, identical: bool) -> Candidate {
        Candidate {
            transforms: tr,
            time: Some(Timing { median_ms: median, spread_ms: spread }),
            identical,
            error: None,
            code: None,
            paired: None,
        }
    }

    fn measured(cands: Vec<Candidate>) -> Measured {
        Measured {
            device: "gpu".into(),
            launches: 1,
            runs: 5,
            deterministic: true,
            program_identical: Some(true),
            block: None,
            candidates: cands,
            control: None,
            earlier: vec![],
            program: None,
        }
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
    fn paired_rounds_give_the_quartiles_of_the_ratios_over_the_launches() {
        // Two launches; round i's ratio is (a_i + b_i) / (plain_a_i + plain_b_i).
        let plain = [vec![1.0, 1.0, 2.0, 1.0], vec![1.0, 1.0, 2.0, 3.0]];
        let cand = [vec![0.5, 1.0, 1.0, 2.0], vec![0.5, 3.0, 2.0, 2.0]];
        // Ratios 0.5, 2.0, 0.75, 1.0 → sorted 0.5, 0.75, 1.0, 2.0.
        let p = Paired::of(&cand, &plain).unwrap();
        assert_eq!((p.lower, p.median, p.upper, p.rounds), (0.6875, 0.875, 1.25, 4));
        assert_eq!(Paired::of(&cand[..1], &plain), None, "not the same launches");
        assert_eq!(Paired::of(&[vec![]], &[vec![1.0]]), None, "no round both ran");
        // The shortest launch's rounds are the ones that pair.
        assert_eq!(Paired::of(&[vec![0.9, 0.1]], &[vec![1.0]]).unwrap().median, 0.9);
    }

    #[test]
    fn a_steady_gain_the_spreads_hide_is_faster_round_by_round_and_a_tiny_one_is_not() {
        // lud_perimeter on the H100: medians 0.0234 and 0.0229 ms, spreads
        // 0.0003 each, yet faster in every round.
        let cap = t(Some(4), false);
        let mut m = measured(vec![cand(t(None, false), 0.0234, 0.0003, true), cand(cap.clone(), 0.0229, 0.0003, true)]);
        assert_eq!(m.verdict(&m.candidates[1]), Verdict::NotFaster, "without rounds: the medians' rule");
        m.candidates[1].paired = Some(Paired { lower: 0.975, median: 0.985, upper: 0.987, rounds: 0 });
        assert_eq!(m.verdict(&m.candidates[1]), Verdict::Faster);
        assert!((m.speedup(&m.candidates[1]).unwrap() - 1.0 / 0.985).abs() < 1e-12);
        assert_eq!(m.choose([&cap]), Some(cap.clone()));
        // Faster in most rounds, but by less than MIN_GAIN: not worth a build.
        m.candidates[1].paired = Some(Paired { lower: 0.993, median: 0.995, upper: 0.997, rounds: 0 });
        assert_eq!(m.verdict(&m.candidates[1]), Verdict::NotFaster);
        // Faster by 3 % at the median, slower in a quarter of the rounds: noise.
        m.candidates[1].paired = Some(Paired { lower: 0.95, median: 0.97, upper: 1.01, rounds: 0 });
        assert_eq!(m.verdict(&m.candidates[1]), Verdict::NotFaster);
        m.candidates[1].paired = Some(Paired { lower: 1.02, median: 1.05, upper: 1.08, rounds: 0 });
        assert_eq!(m.verdict(&m.candidates[1]), Verdict::Slower);
    }

    #[test]
    fn the_highest_paired_speedup_wins_and_the_first_of_equals() {
        let (a, b, c) = (t(Some(1), false), t(Some(2), false), t(Some(4), false));
        let mut m = measured(vec![
            cand(t(None, false), 1.0, 0.1, true),
            cand(a.clone(), 0.90, 0.1, true),
            cand(b.clone(), 0.95, 0.1, true),
            cand(c.clone(), 0.95, 0.1, true),
        ]);
        // The medians say a; the rounds say b and c equally.
        m.candidates[1].paired = Some(Paired { lower: 0.9, median: 0.97, upper: 0.99, rounds: 0 });
        m.candidates[2].paired = Some(Paired { lower: 0.9, median: 0.94, upper: 0.96, rounds: 0 });
        m.candidates[3].paired = Some(Paired { lower: 0.9, median: 0.94, upper: 0.96, rounds: 0 });
        assert_eq!(m.choose([&a, &b, &c]), Some(b.clone()));
        assert_eq!(m.choose([&a, &c, &b]), Some(c));
    }

    #[test]
    fn the_control_raises_the_least_gain_to_what_two_loads_of_plain_differ() {
        // lud_diagonal on the H100 (a 30 µs kernel): plain's code loaded
        // again ran 2.6 % faster than plain in most rounds.
        let cap = t(Some(4), false);
        let mut m = measured(vec![cand(t(None, false), 0.0288, 0.002, true), cand(cap.clone(), 0.0281, 0.002, true)]);
        m.candidates[1].paired = Some(Paired { lower: 0.96, median: 0.975, upper: 0.99, rounds: 0 });
        assert_eq!(m.verdict(&m.candidates[1]), Verdict::Faster, "no control: MIN_GAIN");
        m.control = Some(Paired { lower: 0.96, median: 0.974, upper: 0.992, rounds: 0 });
        assert!((m.least_gain() - 0.026).abs() < 1e-12);
        assert_eq!(m.verdict(&m.candidates[1]), Verdict::NotFaster, "no more than the control");
        assert_eq!(m.choose([&cap]), Some(Transforms::default()));
        m.candidates[1].paired = Some(Paired { lower: 0.93, median: 0.944, upper: 0.96, rounds: 0 });
        assert_eq!(m.verdict(&m.candidates[1]), Verdict::Faster);
        // A control slower than plain counts the same way.
        m.control = Some(Paired { lower: 1.01, median: 1.027, upper: 1.05, rounds: 0 });
        assert!((m.least_gain() - 0.027).abs() < 1e-12);
        // A quiet control leaves MIN_GAIN.
        m.control = Some(Paired { lower: 0.999, median: 1.002, upper: 1.004, rounds: 0 });
        assert_eq!(m.least_gain(), MIN_GAIN);
    }

    #[test]
    fn within_min_gain_of_the_fastest_the_fewest_transforms_win() {
        // md_lj_force_kick on the H100: sink 1.395x, sink + warps-per-sm=32
        // 1.392x in one run and the other way round in the next.
        let sink = t(None, true);
        let both = Transforms { warps_per_sm: Some(32), ..sink.clone() };
        let cap = Transforms { warps_per_sm: Some(32), ..Default::default() };
        let mut m = measured(vec![
            cand(t(None, false), 0.6165, 0.002, true),
            cand(both.clone(), 0.4420, 0.002, true),
            cand(sink.clone(), 0.4424, 0.002, true),
            cand(cap.clone(), 0.5098, 0.002, true),
        ]);
        m.candidates[1].paired = Some(Paired { lower: 0.70, median: 1.0 / 1.399, upper: 0.72, rounds: 0 });
        m.candidates[2].paired = Some(Paired { lower: 0.70, median: 1.0 / 1.395, upper: 0.72, rounds: 0 });
        m.candidates[3].paired = Some(Paired { lower: 0.80, median: 1.0 / 1.209, upper: 0.84, rounds: 0 });
        assert_eq!(m.choose([&both, &sink, &cap]), Some(sink.clone()));
        // More than MIN_GAIN apart, the faster one wins however many transforms it has.
        m.candidates[1].paired = Some(Paired { lower: 0.68, median: 1.0 / 1.45, upper: 0.70, rounds: 0 });
        assert_eq!(m.choose([&both, &sink, &cap]), Some(both));
    }

    #[test]
    fn within_min_gain_of_the_fastest_a_build_a_source_spells_wins_over_nvccs_maxrregcount() {
        // dmmaTensorCoreGemm's compute_dgemm_async_copy on an H200 (nvcc):
        // -maxrregcount=80 1.019x, warps-per-sm=24 1.016x.
        let wide = Transforms::with_maxrregcount(80);
        let cap = Transforms { warps_per_sm: Some(24), ..Default::default() };
        let mut m = measured(vec![
            cand(t(None, false), 1.0, 0.001, true),
            cand(wide.clone(), 0.9814, 0.001, true),
            cand(cap.clone(), 0.9843, 0.001, true),
        ]);
        m.candidates[1].paired = Some(Paired { lower: 0.979, median: 1.0 / 1.019, upper: 0.982, rounds: 0 });
        m.candidates[2].paired = Some(Paired { lower: 0.983, median: 1.0 / 1.016, upper: 0.985, rounds: 0 });
        assert_eq!(m.choose([&wide, &cap]), Some(cap.clone()));
        // Beyond the least gain (miniBUDE's fasten_main<4>: 1.076x against 1.057x), the faster.
        m.candidates[1].paired = Some(Paired { lower: 0.929, median: 1.0 / 1.076, upper: 0.930, rounds: 0 });
        m.candidates[2].paired = Some(Paired { lower: 0.945, median: 1.0 / 1.057, upper: 0.946, rounds: 0 });
        assert_eq!(m.choose([&wide, &cap]), Some(wide));
    }

    #[test]
    fn speedup_is_plain_over_candidate() {
        let m = measured(vec![cand(t(None, false), 0.6, 0.0, true), cand(t(None, true), 0.4, 0.0, true)]);
        assert!((m.speedup(&m.candidates[1]).unwrap() - 1.5).abs() < 1e-12);
    }

    #[test]
    fn many_rounds_tell_a_steady_gain_from_noise_that_few_cannot() {
        // lud_diagonal on the H100: a 20 µs launch whose time over plain's
        // varies 10-20 % from round to round (IQR of the ratios).
        let cap = t(Some(4), false);
        let mut m = measured(vec![cand(t(None, false), 0.020, 0.002, true), cand(cap.clone(), 0.0194, 0.002, true)]);
        let lud = |rounds| Paired { lower: 0.90, median: 0.97, upper: 1.05, rounds };
        m.candidates[1].paired = Some(lud(10));
        // 2.39 * 0.15 / sqrt(10) = 0.114: 0.97 + 0.114 reaches past 1.
        assert!((lud(10).margin().unwrap() - 0.1135).abs() < 1e-3);
        assert_eq!(m.verdict(&m.candidates[1]), Verdict::NotFaster);
        m.candidates[1].paired = Some(lud(1000));
        assert_eq!(m.verdict(&m.candidates[1]), Verdict::Faster, "0.97 + 0.0114 < 1");
        assert_eq!(m.choose([&cap]), Some(cap.clone()));
        // Near twenty rounds the interval is about the quartiles, as before.
        let (old, new) = (Paired { rounds: 0, ..lud(0) }, lud(20));
        assert_eq!((old.faster(MIN_GAIN), new.faster(MIN_GAIN)), (false, false));
        let steady = |rounds| Paired { lower: 0.97, median: 0.975, upper: 0.98, rounds };
        assert_eq!((steady(0).faster(MIN_GAIN), steady(20).faster(MIN_GAIN)), (true, true));
        // And slower the same way.
        let slow = |rounds| Paired { lower: 0.95, median: 1.03, upper: 1.10, rounds };
        assert!(!slow(10).slower(MIN_GAIN) && slow(1000).slower(MIN_GAIN));
    }

    #[test]
    fn settled_when_known_to_half_the_least_gain_or_slower_beyond_the_noise() {
        let p = |median, iqr: f64, rounds| Paired { lower: median - iqr / 2.0, median, upper: median + iqr / 2.0, rounds };
        assert!(!p(0.9, 0.0, 19).settled(), "too few rounds to trust their spread");
        assert!(p(0.9, 0.0, 20).settled());
        // 2.39 * 0.02 / sqrt(100) = 0.0048 <= 0.005.
        assert!(p(0.97, 0.02, 100).settled());
        assert!(!p(0.97, 0.15, 100).settled(), "faster, not yet by how much");
        assert!(p(1.3, 0.15, 100).settled(), "slower: how much no longer matters");
        // Slower beyond the final rule's bound (1.06 - 0.036), not beyond twice it.
        assert!(p(1.06, 0.15, 100).slower(MIN_GAIN) && !p(1.06, 0.15, 100).settled());
        assert!(!p(1.0, 0.15, 100).settled());
        assert!(!Paired { rounds: 0, ..p(0.9, 0.0, 0) }.settled(), "an older measurement");
    }

    #[test]
    fn what_lost_is_remembered_across_runs_of_the_same_plain_code() {
        let plain = |code: &str| Candidate { code: Some(code.to_string()), ..cand(t(None, false), 1.0, 0.0, true) };
        let (slow, fast, other) = (t(Some(1), false), t(Some(2), false), t(Some(4), false));
        let first = measured(vec![plain("p"), cand(slow.clone(), 1.2, 0.0, true), cand(fast.clone(), 0.8, 0.0, true)]);
        assert!(first.lost(&slow) && !first.lost(&fast), "faster is not lost");
        assert!(!first.lost(&other) && !first.lost(&Transforms::default()), "untimed, or plain itself");
        // The next run times the winner and a new build; the loser stays, as earlier.
        let second =
            measured(vec![plain("p"), cand(fast.clone(), 0.8, 0.0, true), cand(other.clone(), 1.0, 0.0, true)]).with_earlier(Some(&first));
        assert_eq!(second.earlier, [first.candidates[1].clone()]);
        assert!(second.lost(&slow) && second.lost(&other) && !second.lost(&fast));
        assert_eq!(second.choose([&slow, &fast]), Some(fast.clone()), "an earlier run's build is never chosen");
        // And the run after keeps both, once each.
        let third = measured(vec![plain("p"), cand(fast.clone(), 0.8, 0.0, true)]).with_earlier(Some(&second));
        let earlier: Vec<&Transforms> = third.earlier.iter().map(|c| &c.transforms).collect();
        assert_eq!(earlier, [&other, &slow]);
        // Another plain build, or one whose code was not recorded: nothing carries.
        assert!(measured(vec![plain("p")]).with_earlier(None).earlier.is_empty(), "nothing in the db before");
        assert!(measured(vec![plain("q")]).with_earlier(Some(&second)).earlier.is_empty());
        assert!(measured(vec![cand(t(None, false), 1.0, 0.0, true)]).with_earlier(Some(&second)).earlier.is_empty());
    }
}
