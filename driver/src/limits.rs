//! How long tuning may take: a limit on each variant compile, and a budget
//! for each file (on each target) for the searches, with a quarter of it
//! more for the measured search's candidates, shared among the file's
//! kernels (so a file may run a quarter over). Both scale with the file's
//! plain compile, the one cost the user already pays, unless given in
//! seconds.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// A variant may always take this long...
pub(crate) const MIN_VARIANT_TIMEOUT: Duration = Duration::from_secs(5);
/// ... and this many times the plain compile.
pub(crate) const VARIANT_TIMEOUT_FACTOR: f64 = 10.0;
/// A file's search ends after this many times its plain compile (counted
/// from the start of its plain compile), unless `--time-budget` says.
pub(crate) const BUDGET_FACTOR: f64 = 8.0;
/// The measured search's candidates get 1/this of the budget more.
const CANDIDATE_SHARE: u32 = 4;

pub(crate) struct Limits {
    /// The longest one variant may compile.
    pub variant: Duration,
    /// The file's budget.
    pub budget: Duration,
    /// Where the searches stop, and where the candidates must (a quarter
    /// of the budget later).
    search_end: Instant,
    candidates_end: Instant,
    /// The file's kernels not yet planned, among whom the candidates'
    /// time is shared.
    pending: AtomicUsize,
    reached: AtomicBool,
}

/// A deadline: the file's search's, or one kernel's for its candidates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Until(Instant);

impl Limits {
    /// The limits of a file of `kernels` kernels whose plain compile
    /// started at `started` and took `plain_seconds`; `variant` and
    /// `budget` override the defaults.
    pub(crate) fn new(started: Instant, plain_seconds: f64, variant: Option<Duration>, budget: Option<Duration>, kernels: usize) -> Limits {
        let scaled = |factor: f64| Duration::from_secs_f64(plain_seconds * factor);
        let variant = variant.unwrap_or_else(|| scaled(VARIANT_TIMEOUT_FACTOR).max(MIN_VARIANT_TIMEOUT));
        let budget = budget.unwrap_or_else(|| scaled(BUDGET_FACTOR));
        let search_end = started + budget;
        Limits {
            variant,
            budget,
            search_end,
            candidates_end: search_end + budget / CANDIDATE_SHARE,
            pending: AtomicUsize::new(kernels),
            reached: AtomicBool::new(false),
        }
    }

    /// Until when a kernel's searches may run: the file's budget.
    pub(crate) fn search(&self) -> Until {
        Until(self.search_end)
    }

    /// Until when a kernel may build the candidates `regtune measure` will
    /// time: an equal part of what is left of the candidates' time among
    /// the kernels not yet planned, itself included. The kernels whose
    /// searches end last still get theirs (with one quarter for the first
    /// to ask, miniBUDE's last two of five kernels got none).
    pub(crate) fn candidates(&self) -> Until {
        let now = Instant::now();
        let pending = self.pending.load(Ordering::Relaxed).max(1);
        Until(now + self.candidates_end.saturating_duration_since(now) / pending as u32)
    }

    /// `n` more kernels to plan, once those counted so far are planned:
    /// they share what time is left.
    pub(crate) fn more_kernels(&self, n: usize) {
        self.pending.fetch_add(n, Ordering::Relaxed);
    }

    /// A kernel is planned: the others share the candidates' time.
    pub(crate) fn kernel_done(&self) {
        let _ = self.pending.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
    }

    /// When a variant compile starting now must be stopped, and whether
    /// that is `until` rather than the variant's own limit.
    pub(crate) fn variant_deadline(&self, until: Until) -> (Instant, bool) {
        let own = Instant::now() + self.variant;
        if until.0 < own {
            (until.0, true)
        } else {
            (own, false)
        }
    }

    /// `until` has passed: no more variants. Remembers that it did.
    pub(crate) fn spent(&self, until: Until) -> bool {
        let spent = Instant::now() >= until.0;
        if spent {
            self.reached.store(true, Ordering::Relaxed);
        }
        spent
    }

    /// Whether a search or a kernel's candidates ever ran out of time.
    pub(crate) fn reached(&self) -> bool {
        self.reached.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_scale_with_the_plain_compile() {
        let l = Limits::new(Instant::now(), 2.0, None, None, 1);
        assert_eq!(l.variant, Duration::from_secs(20));
        assert_eq!(l.budget, Duration::from_secs(16));
        let fast = Limits::new(Instant::now(), 0.1, None, None, 1);
        assert_eq!(fast.variant, MIN_VARIANT_TIMEOUT);
    }

    #[test]
    fn a_variant_never_outlives_its_deadline() {
        let l = Limits::new(Instant::now(), 1.0, Some(Duration::from_secs(60)), Some(Duration::from_secs(1)), 1);
        let (deadline, budget) = l.variant_deadline(l.search());
        assert!(budget);
        assert!(deadline <= Instant::now() + Duration::from_secs(1));
        assert!(!l.reached());
        let spent = Limits::new(Instant::now() - Duration::from_secs(2), 1.0, None, Some(Duration::from_secs(1)), 1);
        assert!(spent.spent(spent.search()));
        assert!(spent.reached());
    }

    #[test]
    fn the_candidates_time_is_shared_among_the_kernels_still_to_come() {
        // A 4 s budget spent: the candidates have 1 s more, from its end.
        let l = Limits::new(Instant::now() - Duration::from_secs(4), 1.0, None, Some(Duration::from_secs(4)), 4);
        assert!(l.spent(l.search()));
        let share = |u: Until| u.0.saturating_duration_since(Instant::now()).as_secs_f64();
        // Four kernels to plan: the first to ask gets a quarter of the second.
        let first = l.candidates();
        assert!(!l.spent(first) && (0.2..=0.25).contains(&share(first)), "{}", share(first));
        l.kernel_done();
        l.kernel_done();
        l.kernel_done();
        // The last one gets all that is left, and no more.
        let last = l.candidates();
        assert!((0.9..=1.0).contains(&share(last)), "{}", share(last));
        l.kernel_done();
        l.kernel_done();
        assert!(share(l.candidates()) <= 1.0, "more kernels done than planned change nothing");
        // Past the candidates' end nothing is left.
        let over = Limits::new(Instant::now() - Duration::from_secs(6), 1.0, None, Some(Duration::from_secs(4)), 1);
        assert!(over.spent(over.candidates()));
    }

    #[test]
    fn kernels_planned_later_share_what_the_first_left() {
        // Two kernels first, of a 4 s budget spent: they share its 1 s of candidates.
        let l = Limits::new(Instant::now() - Duration::from_secs(4), 1.0, None, Some(Duration::from_secs(4)), 2);
        let share = |u: Until| u.0.saturating_duration_since(Instant::now()).as_secs_f64();
        assert!((0.45..=0.5).contains(&share(l.candidates())), "{}", share(l.candidates()));
        l.kernel_done();
        l.kernel_done();
        // Then four more: each a quarter of what is left, not of a sixth.
        l.more_kernels(4);
        assert!((0.2..=0.25).contains(&share(l.candidates())), "{}", share(l.candidates()));
    }
}
