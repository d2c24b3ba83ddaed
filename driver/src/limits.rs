//! How long tuning may take: a limit on each variant compile, and a budget
//! for each file (on each target), of which the measured search's
//! candidates are sure to get a quarter (the file may then run a quarter
//! over). Both scale with the file's plain compile, the one cost the user
//! already pays, unless given in seconds.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A variant may always take this long...
pub(crate) const MIN_VARIANT_TIMEOUT: Duration = Duration::from_secs(5);
/// ... and this many times the plain compile.
pub(crate) const VARIANT_TIMEOUT_FACTOR: f64 = 10.0;
/// A file's search ends after this many times its plain compile (counted
/// from the start of its plain compile), unless `--time-budget` says.
pub(crate) const BUDGET_FACTOR: f64 = 8.0;
/// The measured search's candidates get at least 1/this of the budget.
const CANDIDATE_SHARE: u32 = 4;

pub(crate) struct Limits {
    /// The longest one variant may compile.
    pub variant: Duration,
    /// The file's budget.
    pub budget: Duration,
    deadline: Mutex<Instant>,
    reached: AtomicBool,
    renewed: AtomicBool,
}

impl Limits {
    /// The limits of a file whose plain compile started at `started` and
    /// took `plain_seconds`; `variant` and `budget` override the defaults.
    pub(crate) fn new(started: Instant, plain_seconds: f64, variant: Option<Duration>, budget: Option<Duration>) -> Limits {
        let scaled = |factor: f64| Duration::from_secs_f64(plain_seconds * factor);
        let variant = variant.unwrap_or_else(|| scaled(VARIANT_TIMEOUT_FACTOR).max(MIN_VARIANT_TIMEOUT));
        let budget = budget.unwrap_or_else(|| scaled(BUDGET_FACTOR));
        Limits { variant, budget, deadline: Mutex::new(started + budget), reached: AtomicBool::new(false), renewed: AtomicBool::new(false) }
    }

    /// Time for the builds `regtune measure` will time, when the search
    /// has spent the budget: a quarter of it more, from now (a whole second
    /// budget made the slowest files of the corpus take 15× their plain
    /// compile). Once per file, by the first kernel that finds the budget
    /// spent: the kernels that reach it later share it.
    pub(crate) fn renew(&self) {
        let mut deadline = self.deadline.lock().expect("deadline lock");
        let now = Instant::now();
        if now >= *deadline && !self.renewed.swap(true, Ordering::Relaxed) {
            *deadline = now + self.budget / CANDIDATE_SHARE;
        }
    }

    fn deadline(&self) -> Instant {
        *self.deadline.lock().expect("deadline lock")
    }

    /// When a variant compile starting now must be stopped, and whether
    /// that is the end of the budget rather than the variant's own limit.
    pub(crate) fn variant_deadline(&self) -> (Instant, bool) {
        let own = Instant::now() + self.variant;
        let deadline = self.deadline();
        if deadline < own {
            (deadline, true)
        } else {
            (own, false)
        }
    }

    /// The budget is spent: no more variants. Remembers that it was.
    pub(crate) fn spent(&self) -> bool {
        let spent = Instant::now() >= self.deadline();
        if spent {
            self.reached.store(true, Ordering::Relaxed);
        }
        spent
    }

    /// Whether the search ever found the budget spent.
    pub(crate) fn reached(&self) -> bool {
        self.reached.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_scale_with_the_plain_compile() {
        let l = Limits::new(Instant::now(), 2.0, None, None);
        assert_eq!(l.variant, Duration::from_secs(20));
        assert_eq!(l.budget, Duration::from_secs(16));
        let fast = Limits::new(Instant::now(), 0.1, None, None);
        assert_eq!(fast.variant, MIN_VARIANT_TIMEOUT);
    }

    #[test]
    fn a_variant_never_outlives_the_budget() {
        let l = Limits::new(Instant::now(), 1.0, Some(Duration::from_secs(60)), Some(Duration::from_secs(1)));
        let (deadline, budget) = l.variant_deadline();
        assert!(budget);
        assert!(deadline <= Instant::now() + Duration::from_secs(1));
        assert!(!l.reached());
        let spent = Limits::new(Instant::now() - Duration::from_secs(2), 1.0, None, Some(Duration::from_secs(1)));
        assert!(spent.spent());
        assert!(spent.reached());
        spent.renew();
        assert!(!spent.spent(), "a renewed budget starts now");
        assert!(spent.deadline() <= Instant::now() + Duration::from_millis(250), "a quarter of the budget");
        let once = Limits::new(Instant::now() - Duration::from_secs(2), 1.0, None, Some(Duration::from_millis(200)));
        once.renew();
        std::thread::sleep(Duration::from_millis(60));
        once.renew();
        assert!(once.spent(), "a file's budget is renewed once, not per kernel");
        // A budget not yet spent is neither cut short nor renewed: a kernel
        // that finds it spent later still gets its quarter.
        let early = Limits::new(Instant::now() - Duration::from_millis(100), 1.0, None, Some(Duration::from_millis(150)));
        early.renew();
        assert!(!early.spent());
        std::thread::sleep(Duration::from_millis(60));
        assert!(early.spent());
        early.renew();
        assert!(!early.spent(), "renewed by the kernel that found it spent");
    }
}
