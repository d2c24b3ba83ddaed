//! The interposer's logic, shared by the CUDA (CUPTI) and HIP (LD_PRELOAD)
//! layers: at a launch of a planned kernel, wait for the program's queued
//! work, copy the memory the launch can reach, have the replayer measure
//! every candidate on that copy, let the program's own launch run, and
//! compare what it left with the plain build's result. The program's
//! memory is only read, so its output is what it would have been.

use std::collections::{HashMap, HashSet};
use std::io::{BufReader, BufWriter};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use crate::capture::{self, Pointer, Range};
use crate::code::Global;
use crate::confirm::{self, Start};
use crate::plan::{self, Confirmed, Event, EventLog, LaunchConfig, LaunchResult, Param, Plan, PlanKernel};
use crate::protocol::{self, GlobalVar, ReplayRequest, Request, Response};

/// The GPU a launch runs on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Device {
    /// PCI bus id: the replayer opens the same GPU with it.
    pub id: String,
    pub description: String,
    /// "sm_90", "gfx90a".
    pub arch: String,
}

/// The program's context, as a vendor layer exposes it.
pub trait Host {
    /// Wait for everything the program queued.
    fn synchronize(&self) -> Result<(), String>;
    /// The allocation `ptr` points into, if it is a device address.
    fn address_range(&self, ptr: u64) -> Option<Range>;
    fn read(&self, addr: u64, dst: &mut [u8]) -> Result<(), String>;
    fn device(&self) -> Result<Device, String>;
    /// Every allocation the program has live, sorted, where the vendor
    /// layer tracks them (None: it does not; pointers in memory are then
    /// resolved with [`Host::address_range`]).
    fn live_allocations(&self) -> Option<Vec<Range>> {
        None
    }
    /// Where the launched kernel's module holds each of these variables
    /// (those it has).
    fn globals(&self, wanted: &[Global]) -> Vec<(Global, Range)> {
        let _ = wanted;
        vec![]
    }
}

/// What a launch can reach, copied.
struct Captured {
    ranges: Vec<Range>,
    pointers: Vec<Pointer>,
    snapshot: Vec<Vec<u8>>,
    /// The module's variables: name, where the program has them, bytes.
    globals: Vec<(String, Range, Vec<u8>)>,
    /// Ranges reached through pointers in memory (or, capturing all, any other live one).
    reached: usize,
    notes: Vec<String>,
}

/// A launch as the program made it.
pub struct Launch {
    pub symbol: String,
    pub config: LaunchConfig,
    /// The argument buffer, parameters at their offsets.
    pub args: Vec<u8>,
    pub params: Vec<Param>,
}

/// The interposer's notes on each launch's copy, in the run directory.
pub const CAPTURE_LOG: &str = "capture.log";

/// Where nothing tracks the program's allocations, words of copied memory
/// near device addresses are asked about at most this many times per launch.
const MAX_DRIVER_LOOKUPS: u32 = 1 << 16;

/// Done on the copy of a launch's memory (`snapshot[i]` holds `ranges[i]`) before its replay.
pub type Prepare<'a> = dyn Fn(&[Range], &mut [Vec<u8>]) + 'a;

/// A replayed launch waiting for the program's own launch to finish.
pub struct Pending {
    result: LaunchResult,
    ranges: Vec<Range>,
    /// The module's variables, where the program has them.
    globals: Vec<Range>,
}

struct Replayer {
    child: Child,
    stdin: BufWriter<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Replayer {
    fn spawn(path: &Path, vendor: &str, log: &Path) -> Result<Replayer, String> {
        let log = std::fs::OpenOptions::new().create(true).append(true).open(log).map_err(|e| e.to_string())?;
        let mut child = Command::new(path)
            .arg(vendor)
            // The replayer must not be interposed itself.
            .env_remove("CUDA_INJECTION64_PATH")
            .env_remove("LD_PRELOAD")
            .env_remove(plan::DIR_ENV)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("cannot start the replayer {}: {e}", path.display()))?;
        let stdin = BufWriter::new(child.stdin.take().expect("piped"));
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        Ok(Replayer { child, stdin, stdout })
    }

    fn ask(&mut self, request: &Request, frames: &[Vec<u8>]) -> std::io::Result<Response> {
        use std::io::Write;
        without_sigpipe(|| {
            protocol::write_frame(&mut self.stdin, &serde_json::to_vec(request).expect("request serializes"))?;
            for f in frames {
                protocol::write_frame(&mut self.stdin, f)?;
            }
            self.stdin.flush()
        })?;
        protocol::receive(&mut self.stdout)
    }

    fn stop(mut self) {
        // Close the pipe without flushing: after a failed write the buffer
        // still holds bytes, and BufWriter's drop would write them to a dead
        // replayer outside `without_sigpipe` (SIGPIPE kills a C program).
        let (pipe, _unwritten) = self.stdin.into_parts();
        drop(pipe);
        let _ = self.child.wait();
    }
}

/// Run `f` with SIGPIPE blocked on this thread, and swallow one it raised:
/// the program's default action for SIGPIPE is to die, and a replayer that
/// died must cost a measurement, not the program.
fn without_sigpipe<T>(f: impl FnOnce() -> T) -> T {
    // SAFETY: plain signal-set manipulation on locals; the mask is restored.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
        let out = f();
        let mut pending: libc::sigset_t = std::mem::zeroed();
        libc::sigpending(&mut pending);
        if libc::sigismember(&pending, libc::SIGPIPE) == 1 && libc::sigismember(&old, libc::SIGPIPE) == 0 {
            let now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
            libc::sigtimedwait(&set, std::ptr::null_mut(), &now);
        }
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        out
    }
}

pub struct Interposer {
    /// "cuda" or "hip": which API the replayer drives.
    vendor: String,
    plan: Plan,
    dir: PathBuf,
    log: EventLog,
    /// Launches measured, per db entry.
    counts: HashMap<String, u32>,
    /// Entries no longer measured (plain faulted, an error).
    stopped: HashSet<String>,
    /// Per entry, the candidates that faulted and why: later launches
    /// replay without them.
    faulted: HashMap<String, Vec<(String, String)>>,
    /// Symbols already reported as unplanned or on another target.
    reported: HashSet<String>,
    replayer: Option<Replayer>,
    /// Per entry, the module variables of its plain build.
    module_globals: HashMap<String, Vec<Global>>,
    /// The GPU (PCI bus id) the replayer opened: a launch on another starts a fresh one.
    replayer_device: Option<String>,
    /// Per (symbol, note): launches so far, and the count last written.
    notes: HashMap<(String, String), (u64, u64)>,
    /// Per entry, its launches replayed: the replay's choice comes from them.
    results: HashMap<String, Vec<LaunchResult>>,
    /// The vendor layer can swap a build into the program's launches and
    /// time them ([`crate::confirm`]): the replay's choice is confirmed there.
    pub confirms: bool,
}

impl Interposer {
    /// From `REGTUNE_MEASURE_DIR`; None (measure nothing) when it is not set
    /// or its plan cannot be read (which is then logged there if possible).
    pub fn from_env(vendor: &str) -> Option<Interposer> {
        let dir = PathBuf::from(std::env::var_os(plan::DIR_ENV)?);
        let mut log = EventLog::open(&dir.join(plan::EVENTS_FILE)).ok()?;
        log.write(&Event::Started { pid: std::process::id(), vendor: vendor.into() });
        match Plan::load(&dir.join(plan::PLAN_FILE)) {
            Ok(plan) => Some(Interposer::new(vendor, plan, dir, log)),
            Err(message) => {
                log.write(&Event::Failed { symbol: String::new(), key: String::new(), message });
                None
            }
        }
    }

    pub fn new(vendor: &str, plan: Plan, dir: PathBuf, log: EventLog) -> Interposer {
        Interposer {
            vendor: vendor.to_string(),
            plan,
            dir,
            log,
            counts: HashMap::new(),
            stopped: HashSet::new(),
            faulted: HashMap::new(),
            reported: HashSet::new(),
            replayer: None,
            module_globals: HashMap::new(),
            replayer_device: None,
            notes: HashMap::new(),
            results: HashMap::new(),
            confirms: false,
        }
    }

    /// Count a note about one of `symbol`'s launches (it ran unmeasured,
    /// or unmeasured in part, and why), written to the events at 1, 2, 4,
    /// ... launches and by [`Interposer::flush_notes`].
    pub fn note(&mut self, symbol: &str, message: &str) {
        let (n, written) = self.notes.entry((symbol.to_string(), message.to_string())).or_default();
        *n += 1;
        if n.is_power_of_two() {
            *written = *n;
            let launches = *n;
            self.log.write(&Event::Note { symbol: symbol.to_string(), message: message.to_string(), launches });
        }
    }

    /// Write every note's count not written yet (at the program's exit).
    pub fn flush_notes(&mut self) {
        let mut late: Vec<(String, String, u64)> = Vec::new();
        for ((symbol, message), (n, written)) in &mut self.notes {
            if *n != *written {
                *written = *n;
                late.push((symbol.clone(), message.clone(), *n));
            }
        }
        for (symbol, message, launches) in late {
            self.log.write(&Event::Note { symbol, message, launches });
        }
    }

    /// The kernels this run of the program times whole ([`plan::WholeRun`]).
    pub fn whole_runs(&self) -> &[plan::WholeRun] {
        &self.plan.whole_runs
    }

    /// The kernels the plan names (measured or not).
    pub fn planned_symbols(&self) -> HashSet<String> {
        self.plan.kernels.iter().map(|k| k.symbol.clone()).collect()
    }

    /// The plan's entry for the kernel a launch names, if it still wants a
    /// launch measured (a cheap check: the vendor layer then packs the arguments).
    pub fn wants(&self, symbol: &str) -> Option<&PlanKernel> {
        self.plan.kernels.iter().find(|k| {
            k.symbol == symbol && !self.stopped.contains(&k.key) && self.counts.get(&k.key).copied().unwrap_or(0) < self.plan.launches
        })
    }

    /// Note a launch of a kernel the plan does not name (once per symbol).
    pub fn unplanned(&mut self, symbol: &str) {
        if !self.plan.kernels.iter().any(|k| k.symbol == symbol) && self.reported.insert(symbol.to_string()) {
            self.log.write(&Event::Unplanned { symbol: symbol.to_string() });
        }
    }

    /// Each planned kernel's code in regtune's plain build (symbol, entry
    /// key, [`crate::code::kernel_code`]): what the program's loaded
    /// modules are checked against.
    pub fn plain_codes(&self) -> Vec<(String, String, Vec<u8>)> {
        self.plan
            .kernels
            .iter()
            .filter_map(|k| {
                let plain = std::fs::read(&k.candidates.first()?.path).ok()?;
                Some((k.symbol.clone(), k.key.clone(), crate::code::kernel_code(&plain, &k.symbol)?))
            })
            .collect()
    }

    /// The program loaded other code for the entry `key`'s kernel than
    /// regtune's plain build: timing candidates against it would decide
    /// for the wrong build, so it is not measured, with one line why.
    pub fn not_the_programs_code(&mut self, key: &str) {
        let Some(kernel) = self.plan.kernels.iter().find(|k| k.key == key).cloned() else { return };
        if self.stopped.contains(key) {
            return;
        }
        let why = "the program loaded other code for this kernel than regtune's plain build (a db tuned with other flags or another compiler, or a changed source): nothing timed against it; tune again with the program's own compiler and flags";
        self.fail(&kernel, why.into());
    }

    /// Log why a kernel is not measured, and stop measuring it.
    pub fn fail(&mut self, kernel: &PlanKernel, message: String) {
        self.stopped.insert(kernel.key.clone());
        self.log.write(&Event::Failed { symbol: kernel.symbol.clone(), key: kernel.key.clone(), message });
    }

    /// Before the program's launch: replay it. None when nothing was
    /// replayed (not wanted, another target, or a failure, logged).
    pub fn before(&mut self, host: &dyn Host, launch: &Launch) -> Option<Pending> {
        self.before_prepared(host, launch, &|_, _| {})
    }

    /// As [`Interposer::before`], with `prepare` done on the copy of the
    /// launch's memory before the replay: what the launch will see that
    /// is not there yet (a CUDA graph's memsets before its kernel node).
    pub fn before_prepared(&mut self, host: &dyn Host, launch: &Launch, prepare: &Prepare<'_>) -> Option<Pending> {
        let kernel = self.wants(&launch.symbol)?.clone();
        let device = match host.device() {
            Ok(d) => d,
            Err(e) => {
                self.fail(&kernel, format!("cannot identify the GPU: {e}"));
                return None;
            }
        };
        if kernel.arch.trim_end_matches('a') != device.arch.split(':').next().unwrap_or_default() {
            self.stopped.insert(kernel.key.clone());
            if self.reported.insert(format!("{}@{}", kernel.symbol, kernel.arch)) {
                self.log.write(&Event::OtherTarget {
                    symbol: kernel.symbol.clone(),
                    device: device.description,
                    arch: kernel.arch.clone(),
                });
            }
            return None;
        }
        *self.counts.entry(kernel.key.clone()).or_default() += 1;
        if let Err(e) = host.synchronize() {
            self.fail(&kernel, format!("the program's GPU work failed before this launch: {e}"));
            return None;
        }
        let params = if launch.params.is_empty() { &kernel.params } else { &launch.params };
        let captured = match self.capture(host, &kernel, &launch.args, params) {
            Ok(c) => c,
            Err(e) => {
                self.fail(&kernel, format!("cannot copy the launch's memory: {e}"));
                return None;
            }
        };
        let Captured { ranges, pointers, mut snapshot, globals, reached, notes } = captured;
        let global_vars: Vec<GlobalVar> = globals.iter().map(|(name, r, _)| GlobalVar { name: name.clone(), bytes: r.bytes }).collect();
        let global_ranges: Vec<Range> = globals.iter().map(|(_, r, _)| *r).collect();
        snapshot.extend(globals.into_iter().map(|(_, _, bytes)| bytes));
        prepare(&ranges.iter().chain(&global_ranges).copied().collect::<Vec<Range>>(), &mut snapshot);
        if self.replayer_device.as_deref() != Some(device.id.as_str()) {
            // The replayer works on the GPU of its first launch.
            self.drop_replayer();
            self.replayer_device = Some(device.id.clone());
        }
        let (runs, budget_ms) = (self.plan.runs, self.plan.budget_s * 1e3 / f64::from(self.plan.launches.max(1)));
        let request = |candidates| {
            Request::Replay(Box::new(ReplayRequest {
                device: device.id.clone(),
                symbol: kernel.symbol.clone(),
                candidates,
                launch: launch.config,
                args: launch.args.clone(),
                params: params.clone(),
                pointers: pointers.clone(),
                ranges: ranges.clone(),
                runs,
                budget_ms,
                globals: global_vars.clone(),
            }))
        };
        let mut faulted = self.faulted.remove(&kernel.key).unwrap_or_default();
        let log = self.dir.join(plan::REPLAY_LOG);
        let replayed = replay_without_faults(&kernel.candidates, &mut faulted, &log, |candidates| {
            let answer = self.ask(&request(candidates), &snapshot);
            if !matches!(answer, Ok(Response::Replayed(_) | Response::Error { .. })) {
                // After a fault the replayer exits; after anything else it is not to be trusted.
                self.drop_replayer();
            }
            answer
        });
        self.faulted.insert(kernel.key.clone(), faulted);
        let replayed = match replayed {
            Ok(r) => r,
            Err(message) => {
                // What the copy left out may be why (a kernel following a pointer it did not copy faults).
                let message = std::iter::once(message).chain(notes).collect::<Vec<_>>().join("; ");
                self.fail(&kernel, message);
                return None;
            }
        };
        let bytes = ranges.iter().map(|r| r.bytes).sum();
        let result = LaunchResult {
            symbol: kernel.symbol.clone(),
            key: kernel.key.clone(),
            device: device.description,
            launch: launch.config,
            ranges: ranges.len(),
            bytes,
            reached,
            globals: global_ranges.len(),
            notes,
            replayed,
            program_identical: None,
            program_difference: None,
        };
        Some(Pending { result, ranges, globals: global_ranges })
    }

    /// Copy what a launch can reach: the allocations its arguments point
    /// into; the kernel's module's variables; and the allocations pointers
    /// stored in those lead to, transitively (or every live one, when the
    /// plan says so), within the plan's capture budget.
    fn capture(&mut self, host: &dyn Host, kernel: &PlanKernel, args: &[u8], params: &[Param]) -> Result<Captured, String> {
        let words = capture::pointer_words(args, params);
        let (ranges, pointers) = capture::reachable(&words, |p| host.address_range(p));
        let read = |r: Range| {
            let mut bytes = vec![0u8; r.bytes as usize];
            host.read(r.addr, &mut bytes).map(|()| bytes)
        };
        let mut copies: Vec<(Range, Vec<u8>)> = Vec::with_capacity(ranges.len());
        for r in &ranges {
            copies.push((*r, read(*r)?));
        }
        let mut notes = Vec::new();
        let wanted = self
            .module_globals
            .entry(kernel.key.clone())
            .or_insert_with(|| {
                let plain = kernel.candidates.first().and_then(|c| std::fs::read(&c.path).ok()).unwrap_or_default();
                crate::code::globals(&plain)
            })
            .clone();
        let mut globals = Vec::new();
        let found = host.globals(&wanted);
        for (g, r) in found {
            match read(r) {
                Ok(bytes) => globals.push((g.name, r, bytes)),
                Err(e) => notes.push(format!("the module's variable `{}` could not be read: {e}; not copied", g.name)),
            }
        }
        let live = host.live_allocations();
        let seeds: Vec<(u64, &[u8])> =
            copies.iter().map(|(r, b)| (r.addr, b.as_slice())).chain(globals.iter().map(|(_, r, b)| (r.addr, b.as_slice()))).collect();
        let budget = self.plan.capture.budget_bytes;
        let live_list = live.clone().unwrap_or_default();
        // The tracked allocations; where nothing tracks them, the driver, a bounded number of times.
        let mut asked = 0u32;
        let mut lookup = |p: u64| {
            if live.is_some() {
                let i = live_list.partition_point(|r| r.end() <= p);
                return live_list.get(i).filter(|r| r.contains(p)).copied();
            }
            asked += 1;
            (asked <= MAX_DRIVER_LOOKUPS).then(|| host.address_range(p)).flatten()
        };
        let mut read_mut = |r: Range| read(r);
        let reached = capture::reach(&seeds, &ranges, &live_list, self.plan.capture.all, budget, &mut lookup, &mut read_mut);
        // For diagnosis: how the copy was found (kept with `measure --keep`).
        if let Ok(mut log) = std::fs::OpenOptions::new().create(true).append(true).open(self.dir.join(CAPTURE_LOG)) {
            use std::io::Write;
            let _ = writeln!(
                log,
                "{}: {} argument allocation(s); {} tracked live allocation(s), {} word(s) asked of the driver; reached {} ({} bytes), {} left out, {} unreadable; {} of {} variable(s)",
                kernel.symbol,
                ranges.len(),
                live.as_ref().map_or(0, Vec::len),
                asked,
                reached.ranges.len(),
                reached.ranges.iter().map(|(r, _)| r.bytes).sum::<u64>(),
                reached.left_out.len(),
                reached.unreadable.len(),
                globals.len(),
                wanted.len()
            );
        }
        if asked > MAX_DRIVER_LOOKUPS {
            notes.push(format!(
                "stopped asking the driver about words in device memory after {MAX_DRIVER_LOOKUPS}: pointers among the rest (into allocations the interposer did not see made) were not followed"
            ));
        }
        notes.extend(capture::reach_notes(&reached, budget));
        if reached.ranges.is_empty() {
            let snapshot = copies.into_iter().map(|(_, b)| b).collect();
            return Ok(Captured { ranges, pointers, snapshot, globals, reached: 0, notes });
        }
        let extra = reached.ranges.len();
        copies.extend(reached.ranges);
        let all = capture::union(copies.iter().map(|(r, _)| *r).collect());
        let mut snapshot = Vec::with_capacity(all.len());
        for r in &all {
            // A range merged from overlapping ones is read again whole.
            match copies.iter().position(|(c, _)| c == r) {
                Some(i) => snapshot.push(std::mem::take(&mut copies[i].1)),
                None => snapshot.push(read(*r)?),
            }
        }
        let pointers = capture::reindex(args, &pointers, &all);
        Ok(Captured { ranges: all, pointers, snapshot, globals, reached: extra, notes })
    }

    /// After the program's own launch (`ran`: it was accepted): compare
    /// what it left with the plain build's result, and record the
    /// measurement. After the kernel's last replayed launch, the replay's
    /// choice to confirm on the program's launches, where the vendor layer
    /// can ([`Interposer::confirms`]).
    pub fn after(&mut self, host: &dyn Host, pending: Pending, ran: bool) -> Option<Start> {
        let Pending { mut result, ranges, globals } = pending;
        let compared = (|| {
            if !ran {
                return None;
            }
            host.synchronize().ok()?;
            let mut frames = Vec::with_capacity(ranges.len() + globals.len());
            for r in ranges.iter().chain(&globals) {
                let mut bytes = vec![0u8; r.bytes as usize];
                host.read(r.addr, &mut bytes).ok()?;
                frames.push(bytes);
            }
            match self.ask(&Request::Program { ranges: frames.len() }, &frames) {
                Ok(Response::Compared { identical, difference }) => Some((identical, difference)),
                _ => None,
            }
        })();
        if let Some((identical, difference)) = compared {
            result.program_identical = Some(identical);
            result.program_difference = difference;
        }
        self.log.write(&Event::Measured(result.clone()));
        let key = result.key.clone();
        self.results.entry(key.clone()).or_default().push(result);
        if self.confirms && self.counts.get(&key).copied().unwrap_or(0) >= self.plan.launches && !self.stopped.contains(&key) {
            return self.choice(&key);
        }
        None
    }

    /// After a kernel's last replayed launch: the build the replay chose,
    /// to confirm on the program's launches; None when it chose plain, or
    /// the choice cannot be swapped in safely (said in its result).
    fn choice(&mut self, key: &str) -> Option<Start> {
        let kernel = self.plan.kernels.iter().find(|k| k.key == key)?.clone();
        let results = self.results.get(key).map(Vec::as_slice).unwrap_or_default();
        let not_confirmed = |candidate: &str, failure: String| Confirmed {
            symbol: kernel.symbol.clone(),
            key: kernel.key.clone(),
            candidate: candidate.to_string(),
            launches: 0,
            plain_ms: vec![],
            choice_ms: vec![],
            registers: [None, None],
            failure: Some(failure),
            whole_runs: false,
        };
        let name = match confirm::choose(&kernel, results) {
            Ok(Some(name)) => name,
            Ok(None) => return None,
            Err(why) => {
                self.confirmed(not_confirmed("", why));
                return None;
            }
        };
        let path = kernel.candidates.iter().find(|c| c.name == name)?.path.clone();
        let pairs = (self.plan.runs as usize).max(confirm::MIN_PAIRS) as u32;
        Some(Start { key: kernel.key.clone(), symbol: kernel.symbol.clone(), candidate: name, path, pairs, whole: None })
    }

    /// What a kernel's launches after its replay showed ([`crate::confirm`]).
    pub fn confirmed(&mut self, c: Confirmed) {
        self.log.write(&Event::Confirmed(c));
    }

    fn ask(&mut self, request: &Request, frames: &[Vec<u8>]) -> std::io::Result<Response> {
        if self.replayer.is_none() {
            let log = self.dir.join(plan::REPLAY_LOG);
            let r = Replayer::spawn(&self.plan.replayer, &self.vendor, &log).map_err(std::io::Error::other)?;
            self.replayer = Some(r);
        }
        let answer = self.replayer.as_mut().expect("spawned").ask(request, frames);
        if answer.is_err() {
            self.drop_replayer();
        }
        answer
    }

    fn drop_replayer(&mut self) {
        if let Some(r) = self.replayer.take() {
            r.stop();
        }
    }
}

/// Replay a launch with each candidate that has not faulted (`faulted`,
/// which gains any that fault now): one that faults is left out and the
/// launch replayed again by a fresh replayer, so a bad build (a register
/// cap whose code faults) costs only itself. Each is reported as a
/// candidate that did not run. Err: why the kernel cannot be measured
/// (plain faulted, the replayer failed: its log is `log`).
fn replay_without_faults(
    candidates: &[plan::PlanCandidate],
    faulted: &mut Vec<(String, String)>,
    log: &Path,
    mut ask: impl FnMut(Vec<plan::PlanCandidate>) -> std::io::Result<Response>,
) -> Result<plan::Replayed, String> {
    loop {
        let left: Vec<plan::PlanCandidate> = candidates.iter().filter(|c| !faulted.iter().any(|(f, _)| f == &c.name)).cloned().collect();
        match ask(left) {
            Ok(Response::Replayed(mut r)) => {
                r.candidates.extend(faulted.iter().map(|(name, message)| plan::CandidateResult {
                    name: name.clone(),
                    times_ms: vec![],
                    identical: false,
                    difference: None,
                    error: Some(format!("faulted during replay ({message})")),
                }));
                return Ok(r);
            }
            Ok(Response::Fault { candidate, message }) => {
                // Plain is the reference: without it nothing can be measured.
                if candidates.first().is_none_or(|plain| plain.name == candidate) || faulted.iter().any(|(f, _)| f == &candidate) {
                    return Err(format!("candidate `{candidate}` faulted during replay ({message}); stopped measuring this kernel"));
                }
                faulted.push((candidate, message));
            }
            Ok(Response::Error { message }) => return Err(message),
            Ok(other) => return Err(format!("the replayer answered out of turn: {other:?}")),
            Err(e) => return Err(format!("the replayer stopped ({e}); see {}", log.display())),
        }
    }
}

impl Drop for Interposer {
    fn drop(&mut self) {
        self.drop_replayer();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{read_events, PlanCandidate};

    /// A program's GPU: one allocation of 64 bytes at 0x7f00_0000_0000.
    struct FakeHost {
        arch: &'static str,
    }

    impl Host for FakeHost {
        fn synchronize(&self) -> Result<(), String> {
            Ok(())
        }
        fn address_range(&self, ptr: u64) -> Option<Range> {
            let r = Range { addr: 0x7f00_0000_0000, bytes: 64 };
            r.contains(ptr).then_some(r)
        }
        fn read(&self, _addr: u64, dst: &mut [u8]) -> Result<(), String> {
            dst.fill(7);
            Ok(())
        }
        fn device(&self) -> Result<Device, String> {
            Ok(Device { id: "0000:01:00.0".into(), description: "Fake GPU".into(), arch: self.arch.into() })
        }
    }

    fn interposer(dir: &Path, replayer: &str) -> Interposer {
        let plan = Plan {
            launches: 2,
            runs: 3,
            budget_s: 0.0,
            replayer: replayer.into(),
            kernels: vec![PlanKernel {
                symbol: "_Z1kPd".into(),
                key: "sm_90/_Z1kPd/h".into(),
                arch: "sm_90".into(),
                candidates: vec![PlanCandidate { name: "plain".into(), path: "p.cubin".into() }],
                params: vec![Param { offset: 0, size: 8 }],
                choices: vec![],
                control: None,
            }],
            capture: Default::default(),
            whole_runs: vec![],
        };
        let log = EventLog::open(&dir.join(plan::EVENTS_FILE)).unwrap();
        Interposer::new("cuda", plan, dir.to_path_buf(), log)
    }

    fn launch(symbol: &str) -> Launch {
        let config = LaunchConfig { grid: [1, 1, 1], block: [32, 1, 1], shared_bytes: 0, cooperative: false };
        Launch { symbol: symbol.into(), config, args: 0x7f00_0000_0008u64.to_le_bytes().to_vec(), params: vec![] }
    }

    fn replayed(names: &[&str]) -> plan::Replayed {
        plan::Replayed {
            candidates: names
                .iter()
                .map(|n| plan::CandidateResult { name: n.to_string(), times_ms: vec![1.0], identical: true, difference: None, error: None })
                .collect(),
            deterministic: true,
            launches: 1,
            relocated: None,
            moved: 0,
        }
    }

    #[test]
    fn a_candidate_that_faults_is_left_out_and_the_launch_replayed_without_it() {
        let cands: Vec<PlanCandidate> =
            ["plain", "decided", "warps-per-sm=64"].iter().map(|n| PlanCandidate { name: n.to_string(), path: "c.cubin".into() }).collect();
        let asked = std::cell::RefCell::new(Vec::<Vec<String>>::new());
        let ask = |left: Vec<PlanCandidate>| {
            let names: Vec<String> = left.iter().map(|c| c.name.clone()).collect();
            asked.borrow_mut().push(names.clone());
            Ok(if names.iter().any(|n| n == "warps-per-sm=64") {
                Response::Fault { candidate: "warps-per-sm=64".into(), message: "the kernel: CUDA_ERROR_ILLEGAL_ADDRESS".into() }
            } else {
                Response::Replayed(replayed(&names.iter().map(String::as_str).collect::<Vec<_>>()))
            })
        };
        let mut faulted = vec![];
        let r = replay_without_faults(&cands, &mut faulted, Path::new("replay.log"), ask).unwrap();
        assert_eq!(*asked.borrow(), [vec!["plain", "decided", "warps-per-sm=64"], vec!["plain", "decided"]]);
        let by_name: Vec<(&str, Option<&str>)> = r.candidates.iter().map(|c| (c.name.as_str(), c.error.as_deref())).collect();
        assert_eq!(
            by_name,
            [
                ("plain", None),
                ("decided", None),
                ("warps-per-sm=64", Some("faulted during replay (the kernel: CUDA_ERROR_ILLEGAL_ADDRESS)"))
            ]
        );
        // The next launch leaves it out from the start.
        asked.borrow_mut().clear();
        replay_without_faults(&cands, &mut faulted, Path::new("replay.log"), ask).unwrap();
        assert_eq!(*asked.borrow(), [vec!["plain", "decided"]]);
        assert_eq!(faulted.len(), 1);
    }

    #[test]
    fn plain_faulting_or_a_dead_replayer_stops_measuring_the_kernel() {
        let cands: Vec<PlanCandidate> =
            ["plain", "decided"].iter().map(|n| PlanCandidate { name: n.to_string(), path: "c.cubin".into() }).collect();
        let plain_faults = |_: Vec<PlanCandidate>| Ok(Response::Fault { candidate: "plain".into(), message: "oops".into() });
        let err = replay_without_faults(&cands, &mut vec![], Path::new("replay.log"), plain_faults).unwrap_err();
        assert_eq!(err, "candidate `plain` faulted during replay (oops); stopped measuring this kernel");
        let dead = |_: Vec<PlanCandidate>| Err(std::io::Error::other("broken pipe"));
        assert_eq!(
            replay_without_faults(&cands, &mut vec![], Path::new("replay.log"), dead).unwrap_err(),
            "the replayer stopped (broken pipe); see replay.log"
        );
        let refused = |_: Vec<PlanCandidate>| Ok(Response::Error { message: "too big".into() });
        assert_eq!(replay_without_faults(&cands, &mut vec![], Path::new("replay.log"), refused).unwrap_err(), "too big");
    }

    #[test]
    fn notes_are_written_at_powers_of_two_and_the_rest_at_exit() {
        let dir = tempfile::tempdir().unwrap();
        let mut i = interposer(dir.path(), "/nonexistent/regtune-replay");
        for _ in 0..5 {
            i.note("_Z1kPd", "ran unmeasured: why");
        }
        i.flush_notes();
        i.flush_notes();
        let counts: Vec<u64> = read_events(&dir.path().join(plan::EVENTS_FILE))
            .unwrap()
            .into_iter()
            .map(|e| match e {
                Event::Note { symbol, message, launches } if symbol == "_Z1kPd" && message == "ran unmeasured: why" => launches,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(counts, [1, 2, 4, 5]);
    }

    #[test]
    fn unplanned_kernels_are_reported_once() {
        let dir = tempfile::tempdir().unwrap();
        let mut i = interposer(dir.path(), "/nonexistent/regtune-replay");
        assert!(i.wants("_Z5otherv").is_none());
        i.unplanned("_Z5otherv");
        i.unplanned("_Z5otherv");
        i.unplanned("_Z1kPd");
        assert_eq!(read_events(&dir.path().join(plan::EVENTS_FILE)).unwrap(), [Event::Unplanned { symbol: "_Z5otherv".into() }]);
    }

    #[test]
    fn a_gpu_of_another_target_is_reported_and_not_measured() {
        let dir = tempfile::tempdir().unwrap();
        let mut i = interposer(dir.path(), "/nonexistent/regtune-replay");
        assert!(i.before(&FakeHost { arch: "sm_80" }, &launch("_Z1kPd")).is_none());
        assert!(i.wants("_Z1kPd").is_none());
        let events = read_events(&dir.path().join(plan::EVENTS_FILE)).unwrap();
        assert_eq!(events, [Event::OtherTarget { symbol: "_Z1kPd".into(), device: "Fake GPU".into(), arch: "sm_90".into() }]);
    }

    #[test]
    fn a_replayer_that_cannot_start_stops_measuring_the_kernel_with_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let mut i = interposer(dir.path(), "/nonexistent/regtune-replay");
        assert!(i.before(&FakeHost { arch: "sm_90" }, &launch("_Z1kPd")).is_none());
        assert!(i.wants("_Z1kPd").is_none(), "stopped after a failure");
        let events = read_events(&dir.path().join(plan::EVENTS_FILE)).unwrap();
        let [Event::Failed { symbol, message, .. }] = &events[..] else { panic!("{events:?}") };
        assert_eq!(symbol, "_Z1kPd");
        assert!(message.starts_with("the replayer stopped (cannot start the replayer /nonexistent/regtune-replay"), "{message}");
        assert!(!message.contains('\n'));
    }

    /// SIGPIPE's default action (death, as in a C program) is process-wide:
    /// a test that needs it runs alone in a child run of the test binary.
    /// True in that child; in the parent, runs it and asserts it passed.
    fn alone_with_default_sigpipe(test: &str) -> bool {
        const CHILD: &str = "REGTUNE_TEST_SIGPIPE_CHILD";
        if std::env::var_os(CHILD).is_some() {
            // SAFETY: setting a signal disposition in a process that runs this test alone.
            unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
            return true;
        }
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .args([test, "--exact", "--test-threads=1"])
            .env(CHILD, "1")
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "{test} died or failed in its child run: {status:?}");
        false
    }

    #[test]
    fn a_write_to_a_dead_pipe_is_an_error_not_a_signal() {
        if !alone_with_default_sigpipe("interpose::tests::a_write_to_a_dead_pipe_is_an_error_not_a_signal") {
            return;
        }
        let (r, mut w) = std::io::pipe().unwrap();
        drop(r);
        let e = without_sigpipe(|| std::io::Write::write_all(&mut w, b"x")).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe);
    }

    #[test]
    fn stopping_a_replayer_after_a_failed_write_writes_nothing_more() {
        if !alone_with_default_sigpipe("interpose::tests::stopping_a_replayer_after_a_failed_write_writes_nothing_more") {
            return;
        }
        // `true` exits at once: the flush fails and the frame stays buffered,
        // which BufWriter's drop would write again, outside `without_sigpipe`.
        let dir = tempfile::tempdir().unwrap();
        let mut r = Replayer::spawn(Path::new("true"), "cuda", &dir.path().join("log")).unwrap();
        r.child.wait().unwrap();
        let e = without_sigpipe(|| {
            use std::io::Write;
            r.stdin.write_all(b"frame")?;
            r.stdin.flush()
        })
        .unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe);
        assert_eq!(r.stdin.buffer(), b"frame");
        r.stop();
    }

    /// A program's memory: allocations with their bytes, tracked or not,
    /// and a module variable holding a pointer.
    struct Memory {
        allocations: Vec<(Range, Vec<u8>)>,
        tracked: bool,
    }

    impl Host for Memory {
        fn synchronize(&self) -> Result<(), String> {
            Ok(())
        }
        fn address_range(&self, ptr: u64) -> Option<Range> {
            self.allocations.iter().map(|(r, _)| *r).find(|r| r.contains(ptr))
        }
        fn read(&self, addr: u64, dst: &mut [u8]) -> Result<(), String> {
            let (r, bytes) = self.allocations.iter().find(|(r, _)| r.contains(addr)).ok_or("not mapped")?;
            let at = (addr - r.addr) as usize;
            dst.copy_from_slice(&bytes[at..at + dst.len()]);
            Ok(())
        }
        fn device(&self) -> Result<Device, String> {
            Ok(Device { id: "0000:01:00.0".into(), description: "Fake GPU".into(), arch: "sm_90".into() })
        }
        fn live_allocations(&self) -> Option<Vec<Range>> {
            // The variable's storage is the module's, not an allocation.
            self.tracked.then(|| self.allocations.iter().map(|(r, _)| *r).filter(|r| r.addr != 0x7f00_0900_0000).collect())
        }
        fn globals(&self, wanted: &[Global]) -> Vec<(Global, Range)> {
            wanted.iter().filter(|g| g.name == "head").map(|g| (g.clone(), Range { addr: 0x7f00_0900_0000, bytes: 8 })).collect()
        }
    }

    #[test]
    fn a_launch_copy_follows_pointers_in_memory_and_module_variables() {
        let words = |w: &[u64]| w.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let r = |addr, bytes| Range { addr, bytes };
        // The argument: an array of pointers to two nodes; node 2 points at node 3, which
        // only the variable `head` also names; node 4 is pointed to by nothing.
        let (args_at, n1, n2, n3, n4, head) =
            (0x7f00_0000_0000u64, 0x7f00_0100_0000, 0x7f00_0200_0000, 0x7f00_0300_0000, 0x7f00_0400_0000, 0x7f00_0900_0000);
        let allocations = vec![
            (r(args_at, 16), words(&[n1, n2])),
            (r(n1, 8), words(&[7])),
            (r(n2, 8), words(&[n3])),
            (r(n3, 8), words(&[9])),
            (r(n4, 8), words(&[n1])),
            (r(head, 8), words(&[n3])),
        ];
        for tracked in [true, false] {
            let dir = tempfile::tempdir().unwrap();
            let mut i = interposer(dir.path(), "true");
            let kernel = i.plan.kernels[0].clone();
            i.module_globals.insert(kernel.key.clone(), vec![Global { name: "head".into(), bytes: 8, constant: false }]);
            let host = Memory { allocations: allocations.clone(), tracked };
            let c = i.capture(&host, &kernel, &args_at.to_le_bytes(), &kernel.params).unwrap();
            assert_eq!(c.ranges, [r(args_at, 16), r(n1, 8), r(n2, 8), r(n3, 8)], "tracked: {tracked}");
            assert_eq!(c.reached, 3);
            assert_eq!(c.snapshot[3], words(&[9]));
            assert_eq!(c.pointers, [Pointer { offset: 0, range: 0 }]);
            assert_eq!(c.globals, [("head".to_string(), r(head, 8), words(&[n3]))]);
            assert!(c.notes.is_empty(), "{:?}", c.notes);
            // Capturing all takes node 4 too.
            i.plan.capture.all = true;
            let c = i.capture(&host, &kernel, &args_at.to_le_bytes(), &kernel.params).unwrap();
            assert_eq!(c.ranges.len(), if tracked { 5 } else { 4 });
        }
    }

    #[test]
    fn after_a_kernels_last_replayed_launch_its_choice_is_confirmed_unless_it_has_module_variables() {
        let dir = tempfile::tempdir().unwrap();
        let mut i = interposer(dir.path(), "true");
        i.confirms = true;
        let cap = regtune_decisions::Transforms { unroll_cap: Some(1), ..Default::default() };
        let key = i.plan.kernels[0].key.clone();
        {
            let k = &mut i.plan.kernels[0];
            k.candidates.push(PlanCandidate { name: "decided".into(), path: "d.cubin".into() });
            k.choices = vec![plan::Choice { name: "decided".into(), transforms: cap }];
        }
        let pending = || {
            let mut r = replayed(&["plain", "decided"]);
            for (c, ms) in r.candidates.iter_mut().zip([1.0, 0.5]) {
                c.times_ms = (0..20).map(|n| ms * (1.0 + 0.01 * f64::from(n % 3))).collect();
            }
            let config = LaunchConfig { grid: [1, 1, 1], block: [32, 1, 1], shared_bytes: 0, cooperative: false };
            let result = LaunchResult {
                symbol: "_Z1kPd".into(),
                key: key.clone(),
                device: "Fake GPU".into(),
                launch: config,
                ranges: 0,
                bytes: 0,
                reached: 0,
                globals: 0,
                notes: vec![],
                replayed: r,
                program_identical: Some(true),
                program_difference: None,
            };
            Pending { result, ranges: vec![], globals: vec![] }
        };
        let host = FakeHost { arch: "sm_90" };
        i.counts.insert(key.clone(), 1);
        assert_eq!(i.after(&host, pending(), false), None, "one of two launches replayed");
        i.counts.insert(key.clone(), 2);
        let start = i.after(&host, pending(), false).unwrap();
        assert_eq!((start.candidate.as_str(), start.path.to_str(), start.pairs), ("decided", Some("d.cubin"), 20));
        // A kernel with module variables is paired too: the choice's launches
        // share the program's (cupti's copies before and after each).
        i.module_globals.insert(key.clone(), vec![Global { name: "counter".into(), bytes: 4, constant: false }]);
        assert_eq!(i.after(&host, pending(), false).map(|s| s.candidate), Some("decided".to_string()));
    }

    #[test]
    fn a_replayer_that_dies_mid_answer_is_a_failure_not_a_hang() {
        // `true` reads nothing and exits: the interposer sees the pipe close.
        let dir = tempfile::tempdir().unwrap();
        let mut i = interposer(dir.path(), "true");
        assert!(i.before(&FakeHost { arch: "sm_90" }, &launch("_Z1kPd")).is_none());
        let events = read_events(&dir.path().join(plan::EVENTS_FILE)).unwrap();
        assert!(matches!(&events[..], [Event::Failed { message, .. }] if message.starts_with("the replayer stopped")), "{events:?}");
    }
}
