//! One launch call at a time, across the program's host threads, while
//! measure watches them: a thread holds the gate from a launch's API entry
//! to its exit. A measured launch holds it through its replay and the
//! comparison after it, so no other thread's launch (kernel, graph, or a
//! capture starting) runs between the copy of its memory and the
//! comparison; unmeasured launches hold it only while the driver queues
//! them, which costs microseconds.
//!
//! Waiting is bounded: a thread that cannot get the gate in time goes on
//! without it (its launch then runs unmeasured and is counted), so a
//! driver that blocked one thread's launch on another's could slow the
//! program, never hang it.

use std::sync::{Condvar, Mutex};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

/// How long a launch waits for another thread's measured launch.
pub const WAIT: Duration = Duration::from_secs(20);

#[derive(Default)]
pub struct Gate {
    holder: Mutex<Option<ThreadId>>,
    freed: Condvar,
}

impl Gate {
    pub const fn new() -> Gate {
        Gate { holder: Mutex::new(None), freed: Condvar::new() }
    }

    /// Take the gate for this thread, waiting at most `wait`. False: not
    /// taken (another thread held it all that time); true also when this
    /// thread holds it already (it is not counted twice: one exit frees it).
    pub fn enter(&self, wait: Duration) -> bool {
        let me = std::thread::current().id();
        let deadline = Instant::now() + wait;
        let Ok(mut holder) = self.holder.lock() else { return false };
        loop {
            match *holder {
                None => {
                    *holder = Some(me);
                    return true;
                }
                Some(t) if t == me => return true,
                Some(_) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return false;
                    }
                    holder = match self.freed.wait_timeout(holder, left) {
                        Ok((h, _)) => h,
                        Err(_) => return false,
                    };
                }
            }
        }
    }

    /// Free the gate if this thread holds it.
    pub fn exit(&self) {
        let me = std::thread::current().id();
        if let Ok(mut holder) = self.holder.lock() {
            if *holder == Some(me) {
                *holder = None;
                self.freed.notify_all();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[test]
    fn one_thread_at_a_time_and_a_bounded_wait() {
        let gate = Arc::new(Gate::new());
        assert!(gate.enter(WAIT));
        assert!(gate.enter(WAIT), "the holder may enter again");
        let g = gate.clone();
        let waited = std::thread::spawn(move || g.enter(Duration::from_millis(50))).join().unwrap();
        assert!(!waited, "another thread gives up after its wait");
        gate.exit();
        let g = gate.clone();
        assert!(std::thread::spawn(move || {
            let ok = g.enter(Duration::from_millis(50));
            g.exit();
            ok
        })
        .join()
        .unwrap());
    }

    #[test]
    fn an_exit_by_another_thread_frees_nothing() {
        let gate = Arc::new(Gate::new());
        assert!(gate.enter(WAIT));
        let g = gate.clone();
        std::thread::spawn(move || g.exit()).join().unwrap();
        let g = gate.clone();
        assert!(!std::thread::spawn(move || g.enter(Duration::from_millis(20))).join().unwrap());
        gate.exit();
    }

    #[test]
    fn waiting_threads_go_in_turn_never_together() {
        let gate = Arc::new(Gate::new());
        let inside = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (gate, inside, most) = (gate.clone(), inside.clone(), most.clone());
                std::thread::spawn(move || {
                    for _ in 0..50 {
                        assert!(gate.enter(WAIT));
                        let n = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(n, Ordering::SeqCst);
                        std::thread::yield_now();
                        inside.fetch_sub(1, Ordering::SeqCst);
                        gate.exit();
                    }
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(most.load(Ordering::SeqCst), 1);
    }
}
