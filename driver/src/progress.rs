//! Progress on a terminal: one bar over the files, and a line per file being
//! tuned with its kernel and variant counts. Without a terminal (a pipe, a
//! log file) nothing is drawn; a file still being tuned says where it is on
//! stderr once a minute, so nothing runs for minutes without a word.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How often a file still being tuned says so when nothing is drawn.
const HEARTBEAT: Duration = Duration::from_secs(60);

pub(crate) struct Progress {
    multi: MultiProgress,
    overall: ProgressBar,
    drawn: bool,
}

impl Progress {
    /// A bar over `len` units of work (files, or files × targets).
    pub(crate) fn new(len: u64, what: &str) -> Progress {
        // indicatif draws to stderr only when it is a terminal.
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
        let overall = multi.add(ProgressBar::new(len));
        if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} [{bar:30}] {pos}/{len} {elapsed}") {
            overall.set_style(style.progress_chars("=> "));
        }
        overall.set_message(what.to_string());
        overall.enable_steady_tick(Duration::from_millis(120));
        Progress { multi, overall, drawn: std::io::stderr().is_terminal() }
    }

    /// One unit of work done.
    pub(crate) fn inc(&self) {
        self.overall.inc(1);
    }

    /// A line for one file (and target) being tuned.
    pub(crate) fn unit(&self, name: String) -> UnitProgress<'_> {
        let bar = self.multi.add(ProgressBar::new_spinner());
        if let Ok(style) = ProgressStyle::with_template("  {spinner} {msg} {elapsed}") {
            bar.set_style(style);
        }
        bar.enable_steady_tick(Duration::from_millis(120));
        let unit = UnitProgress {
            progress: self,
            bar,
            name,
            kernels: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
            variants: AtomicUsize::new(0),
            started: Instant::now(),
            said: AtomicU64::new(0),
            limit: OnceLock::new(),
        };
        unit.show();
        unit
    }

    /// A line on stderr, above the bars when they are drawn.
    pub(crate) fn note(&self, line: &str) {
        if self.drawn {
            let _ = self.multi.println(line);
        } else {
            eprintln!("{line}");
        }
    }

    pub(crate) fn finish(&self) {
        self.overall.finish_and_clear();
    }
}

/// One file's line: "lbm.hip gfx90a: kernel 2/4, 17 variants".
pub(crate) struct UnitProgress<'a> {
    progress: &'a Progress,
    bar: ProgressBar,
    name: String,
    kernels: AtomicUsize,
    done: AtomicUsize,
    variants: AtomicUsize,
    started: Instant,
    /// Seconds since `started` of the last heartbeat.
    said: AtomicU64,
    /// Where the searches stop and why, for the heartbeat: a file that
    /// takes minutes says how many more it may take.
    limit: OnceLock<String>,
}

impl UnitProgress<'_> {
    /// The file has `n` kernels to tune.
    pub(crate) fn kernels(&self, n: usize) {
        self.kernels.store(n, Ordering::Relaxed);
        self.show();
    }

    pub(crate) fn kernel_done(&self) {
        self.done.fetch_add(1, Ordering::Relaxed);
        self.show();
    }

    /// The searches stop `budget` after the start, which `why` explains
    /// ("8× its plain compile of 55 s").
    pub(crate) fn budget(&self, budget: Duration, why: String) {
        let _ = self.limit.set(format!("the searches stop at {} s: {why}", budget.as_secs()));
    }

    /// One more variant compiled.
    pub(crate) fn variant(&self) {
        self.variants.fetch_add(1, Ordering::Relaxed);
        self.show();
    }

    fn status(&self) -> String {
        let (n, done, v) = (self.kernels.load(Ordering::Relaxed), self.done.load(Ordering::Relaxed), self.variants.load(Ordering::Relaxed));
        if n == 0 {
            return format!("{}: plain build", self.name);
        }
        format!("{}: kernel {}/{n}, {v} variant{}", self.name, (done + 1).min(n), if v == 1 { "" } else { "s" })
    }

    fn heartbeat(&self, seconds: u64) -> String {
        match self.limit.get() {
            Some(limit) => format!("{} ({seconds} s; {limit})", self.status()),
            None => format!("{} ({seconds} s)", self.status()),
        }
    }

    fn show(&self) {
        if self.progress.drawn {
            self.bar.set_message(self.status());
            return;
        }
        let now = self.started.elapsed().as_secs();
        let last = self.said.load(Ordering::Relaxed);
        if now >= last + HEARTBEAT.as_secs() && self.said.compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed).is_ok() {
            eprintln!("regtune: still tuning {}", self.heartbeat(now));
        }
    }
}

impl Drop for UnitProgress<'_> {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
        self.progress.multi.remove(&self.bar);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_tune_says_when_its_searches_stop_and_why() {
        let progress = Progress::new(1, "tuning");
        let line = progress.unit("gemm.cu sm_90".to_string());
        line.kernels(3);
        line.variant();
        assert_eq!(line.heartbeat(120), "gemm.cu sm_90: kernel 1/3, 1 variant (120 s)");
        line.budget(Duration::from_secs(440), "8× its plain compile of 55 s".to_string());
        assert_eq!(
            line.heartbeat(120),
            "gemm.cu sm_90: kernel 1/3, 1 variant (120 s; the searches stop at 440 s: 8× its plain compile of 55 s)"
        );
    }
}
