//! Run one tool (clang, ptxas) to its end or to a deadline.
//!
//! The tool runs in a process group of its own, so that a deadline stops
//! all of it: the clang driver, the cc1 and lld jobs it starts, ptxas. Its
//! stdout and stderr are read while it runs (a full pipe would stall it).
//! Being outside the terminal's process group, it would outlive a Ctrl-C of
//! regtune: so on SIGINT, SIGTERM or SIGHUP regtune stops every group it
//! started, then exits.

use std::collections::HashSet;
use std::io::Read;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Mutex, Once};
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use std::os::unix::process::CommandExt;
use wait_timeout::ChildExt;

/// How a tool ended, with what it wrote.
pub(crate) struct Finished {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

#[derive(Debug)]
pub(crate) enum JobError {
    /// The tool could not be started, or waited for.
    Spawn(std::io::Error),
    /// Still running at the deadline, after this long: stopped.
    TimedOut(Duration),
}

/// The process groups running now.
static RUNNING: Mutex<Option<HashSet<i32>>> = Mutex::new(None);

fn stop(group: i32) {
    // It may have ended a moment ago: then there is nothing left to stop.
    let _ = killpg(Pid::from_raw(group), Signal::SIGKILL);
}

/// On SIGINT, SIGTERM or SIGHUP: stop every running group, and exit as the
/// signal would have (130). A program that handles these itself keeps its
/// handler (then this one is not installed).
fn stop_all_on_signals() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let _ = ctrlc::set_handler(|| {
            let groups = RUNNING.lock().unwrap_or_else(|e| e.into_inner()).take().unwrap_or_default();
            groups.into_iter().for_each(stop);
            std::process::exit(130);
        });
    });
}

fn track(group: i32, running: bool) {
    let mut set = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
    let set = set.get_or_insert_with(HashSet::new);
    if running {
        set.insert(group);
    } else {
        set.remove(&group);
    }
}

/// Run `cmd`, stopping it and everything it started at `deadline`.
pub(crate) fn run(mut cmd: Command, deadline: Option<Instant>) -> Result<Finished, JobError> {
    stop_all_on_signals();
    let started = Instant::now();
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
    let mut child = cmd.spawn().map_err(JobError::Spawn)?;
    // The group's id is the tool's pid (process_group(0)).
    let group = child.id() as i32;
    track(group, true);
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut p) = pipe {
                // A read error only cuts what the tool said short.
                let _ = p.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = drain(child.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let stderr = drain(child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let waited = match deadline {
        None => child.wait().map(Some),
        Some(d) => child.wait_timeout(d.saturating_duration_since(Instant::now())),
    };
    let status = match waited {
        Ok(Some(status)) => {
            track(group, false);
            status
        }
        other => {
            stop(group);
            track(group, false);
            let _ = child.wait();
            let _ = (stdout.join(), stderr.join());
            return Err(match other {
                Err(e) => JobError::Spawn(e),
                _ => JobError::TimedOut(started.elapsed()),
            });
        }
    };
    let joined = |h: thread::JoinHandle<Vec<u8>>| h.join().unwrap_or_default();
    Ok(Finished { status, stdout: joined(stdout), stderr: joined(stderr) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_past_its_deadline_is_stopped_with_its_children() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("child-ran-on");
        // The shell starts a child that would write the marker after 2 s.
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(format!("(sleep 2; touch {}) & sleep 30", marker.display()));
        let started = Instant::now();
        let r = run(cmd, Some(Instant::now() + Duration::from_millis(300)));
        assert!(matches!(r, Err(JobError::TimedOut(_))));
        assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
        std::thread::sleep(Duration::from_millis(2500));
        assert!(!marker.exists(), "the child outlived the deadline");
    }

    #[test]
    fn a_job_within_its_deadline_returns_its_output() {
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg("echo out; echo err >&2; exit 3");
        let done = run(cmd, Some(Instant::now() + Duration::from_secs(30))).ok().unwrap();
        assert_eq!(done.status.code(), Some(3));
        assert_eq!(done.stdout, b"out\n");
        assert_eq!(done.stderr, b"err\n");
    }
}
