//! The program's launches decide: after the replay has chosen a build for
//! a kernel (by the db's rule, among the builds the user allows, its bytes
//! identical to plain's on every launch replayed and the program's own
//! launches identical to plain's), the interposer loads the choice's code
//! object into the program's context and swaps its function handle into
//! alternate launches of the kernel, while CUPTI's activity records
//! (`CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL`) time every launch of both. A
//! replay restores memory before every run and launches nothing else
//! between; the program's launches run with its own caches and neighbours,
//! which can tell another story (a 10 µs kernel: 1.449× in the replay,
//! 1.074× over the rebuilt program's launches).
//!
//! Launches pair up by shape (grid, block, dynamic shared memory): the
//! first of a pair runs plain's code or the choice's, alternately from
//! pair to pair, and the next launch of that shape runs the other. Each
//! record names its launch by the correlation id CUPTI gave the launch
//! callback. Plain launches by `cuLaunchKernel(Ex)` (and the runtime's,
//! which come through them) take part; cooperative launches, launches into
//! a capture and a graph's kernels run the program's code, untimed.
//!
//! What this module holds is vendor-neutral ([`choose`], [`Confirmation`])
//! but for the CUPTI activity glue at the end ([`Activity`]).

use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use regtune_decisions::{Measured, Transforms};

use crate::dl::{api, Library};
use crate::plan::{Confirmed, LaunchConfig, LaunchResult, PlanKernel};

/// The interposer's warning where CUPTI's activity API is missing: nothing
/// of the program's own is timed (the driver then runs no whole runs).
pub const UNTIMED: &str = "the program's own launches are not timed";

/// The fewest pairs of launches that confirm a choice: as many as a
/// replayed candidate's rounds before they can settle.
pub const MIN_PAIRS: usize = regtune_decisions::measured::SETTLE_AFTER;

/// The replay's choice for a kernel, to confirm on the program's launches.
#[derive(Debug, Clone, PartialEq)]
pub struct Start {
    pub key: String,
    pub symbol: String,
    pub candidate: String,
    pub path: PathBuf,
    /// Pairs wanted (then the kernel runs the program's own code again).
    pub pairs: u32,
    /// A whole run of the program ([`crate::plan::WholeRun`]): every launch
    /// runs the choice (true) or plain's code (false), and is timed; no
    /// pairs within the run.
    pub whole: Option<bool>,
}

impl Start {
    /// This run's half of the whole runs that time `run`'s kernel.
    pub fn whole_run(run: &crate::plan::WholeRun) -> Start {
        Start {
            key: run.key.clone(),
            symbol: run.symbol.clone(),
            candidate: run.candidate.clone(),
            path: run.path.clone(),
            pairs: 0,
            whole: Some(run.choice),
        }
    }
}

/// The build the db's rule chooses from the replayed launches of `kernel`
/// (`results`, all of them): Ok(None) when it is plain (nothing to
/// confirm), Err(why) when a build was chosen but cannot be swapped into
/// the program safely.
pub fn choose(kernel: &PlanKernel, results: &[LaunchResult]) -> Result<Option<String>, String> {
    let Some(plain) = kernel.candidates.first() else { return Ok(None) };
    if results.is_empty() || kernel.choices.iter().all(|c| c.transforms.is_empty()) {
        return Ok(None);
    }
    let launches = crate::plan::Launches::new(results, &plain.name);
    let candidate = |name: &str, transforms: &Transforms| launches.candidate(name, transforms, None);
    let mut candidates = vec![candidate(&plain.name, &Transforms::default())];
    candidates.extend(kernel.choices.iter().filter(|c| !c.transforms.is_empty()).map(|c| candidate(&c.name, &c.transforms)));
    let control = kernel.control.as_deref().map(|name| candidate(name, &Transforms::default()));
    let m = Measured {
        device: String::new(),
        launches: results.len() as u32,
        runs: 0,
        deterministic: results.iter().all(|r| r.replayed.deterministic)
            && control.as_ref().is_none_or(|c| c.identical || c.error.is_some()),
        program_identical: None,
        block: None,
        candidates,
        control: control.and_then(|c| c.paired),
        earlier: vec![],
        program: None,
    };
    let allowed: Vec<&Transforms> = kernel.choices.iter().map(|c| &c.transforms).collect();
    let Some(best) = m.choose(allowed).filter(|t| !t.is_empty()) else { return Ok(None) };
    let name = kernel.choices.iter().find(|c| c.transforms == best).map(|c| c.name.clone()).unwrap_or_default();
    // Only a build whose bytes were proven identical runs in the program,
    // and only where the program runs the code it was built from.
    if !m.candidate(&best).is_some_and(|c| c.identical) {
        return Err(format!("not confirmed: `{name}` was not identical to plain on every launch replayed"));
    }
    match results.iter().map(|r| r.program_identical).find(|p| *p != Some(true)) {
        None => Ok(Some(name)),
        Some(None) => Err("not confirmed: the program's own bytes were not compared with plain's at every launch replayed".into()),
        Some(Some(_)) => Err("not confirmed: the program's own launch left other bytes than regtune's plain build".into()),
    }
}

/// A module variable of the kernel, where the choice runs (alternate
/// launches, or a whole run): the choice's own module holds its own copy,
/// so the program's is copied into it before each launch the choice runs,
/// and back after it (a `__constant__` one is not written by kernels: not
/// back).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shared {
    pub ours: u64,
    pub program: u64,
    pub bytes: usize,
    pub constant: bool,
}

/// One half of a pair: a launch, and whether it ran the choice.
#[derive(Debug, Clone, Copy)]
struct Half {
    correlation: u32,
    swapped: bool,
}

/// A kernel's launches after its replay: which ran the choice, and their times.
#[derive(Debug)]
pub struct Confirmation {
    pub start: Start,
    /// Launches of the kernel since the replay (timed or not).
    launches: u64,
    /// A pair begun, per launch shape, waiting for its other half.
    open: Vec<(LaunchConfig, Half)>,
    /// Pairs begun; the odd ones start with the choice.
    begun: u32,
    /// Complete pairs: plain's launch and the choice's (correlation ids).
    pairs: Vec<(u32, u32)>,
    /// In a whole run, every launch taken part, in order.
    whole_launches: Vec<u32>,
    /// Milliseconds and registers per thread of each launch timed.
    times: HashMap<u32, (f64, u16)>,
    /// The choice's registers per thread as the driver loaded it, and the
    /// program's function's.
    pub registers: Option<u16>,
    pub program_registers: Option<u16>,
    /// The choice's function, and the context it was loaded into.
    pub function: Option<(usize, usize)>,
    /// In a whole run of the choice, the module variables it shares with
    /// the program's module ([`Shared`]).
    pub shared: Vec<Shared>,
    /// Why it stopped short (a load failed, the driver ran other code).
    pub failure: Option<String>,
    /// Its result was written.
    pub reported: bool,
}

impl Confirmation {
    pub fn new(start: Start) -> Confirmation {
        Confirmation {
            start,
            launches: 0,
            open: vec![],
            begun: 0,
            pairs: vec![],
            whole_launches: vec![],
            times: HashMap::new(),
            registers: None,
            program_registers: None,
            function: None,
            shared: vec![],
            failure: None,
            reported: false,
        }
    }

    /// Every pair wanted is complete (or it failed): the kernel runs the
    /// program's own code again.
    pub fn complete(&self) -> bool {
        self.failure.is_some() || (self.start.whole.is_none() && self.pairs.len() >= self.start.pairs as usize)
    }

    /// A launch of the kernel (its shape, its launch callback's
    /// correlation id): true when it is to run the choice.
    pub fn launch(&mut self, config: LaunchConfig, correlation: u32) -> bool {
        self.launches += 1;
        if self.complete() {
            return false;
        }
        if let Some(choice) = self.start.whole {
            self.whole_launches.push(correlation);
            return choice;
        }
        if let Some(i) = self.open.iter().position(|(c, _)| *c == config) {
            let (_, first) = self.open.remove(i);
            let pair = if first.swapped { (correlation, first.correlation) } else { (first.correlation, correlation) };
            self.pairs.push(pair);
            return !first.swapped;
        }
        if self.pairs.len() + self.open.len() >= self.start.pairs as usize {
            // Enough pairs under way: no new one.
            return false;
        }
        let swapped = self.begun % 2 == 1;
        self.begun += 1;
        self.open.push((config, Half { correlation, swapped }));
        swapped
    }

    /// A launch is tracked here (it took part in a pair, or may).
    pub fn tracks(&self, correlation: u32) -> bool {
        self.pairs.iter().any(|(p, c)| *p == correlation || *c == correlation)
            || self.open.iter().any(|(_, h)| h.correlation == correlation)
            || self.whole_launches.contains(&correlation)
    }

    /// A launch's activity record: its kernel time and registers per thread.
    pub fn timed(&mut self, correlation: u32, ms: f64, registers: u16) {
        self.times.insert(correlation, (ms, registers));
    }

    /// What the program's launches showed: the pairs both of whose
    /// launches were timed. Where the records tell registers apart (they
    /// show plain's launches with the program's function's count, and
    /// that differs from the choice's), the choice's launches must show
    /// the choice's, else the swap did not take: a failure, the times kept
    /// for diagnosis but never used.
    pub fn result(&self) -> Confirmed {
        if let Some(choice) = self.start.whole {
            return self.whole_result(choice);
        }
        let (mut plain_ms, mut choice_ms) = (vec![], vec![]);
        let (mut plain_regs, mut choice_regs) = (vec![], vec![]);
        for (p, c) in &self.pairs {
            let (Some(&(p_ms, p_regs)), Some(&(c_ms, c_regs))) = (self.times.get(p), self.times.get(c)) else { continue };
            plain_ms.push(p_ms);
            choice_ms.push(c_ms);
            plain_regs.push(p_regs);
            choice_regs.push(c_regs);
        }
        let mut failure = self.failure.clone();
        if let (None, Some(program), Some(choice)) = (&failure, self.program_registers, self.registers) {
            let (program_shows, choice_shows) = (shown(program), shown(choice));
            let exact = !plain_regs.is_empty()
                && plain_regs.iter().all(|r| program_shows.contains(r))
                && !program_shows.iter().any(|r| choice_shows.contains(r));
            let not_taken = choice_regs.iter().filter(|r| program_shows.contains(r)).count();
            if exact && not_taken > 0 {
                failure = Some(format!(
                    "not confirmed: on {not_taken} of the {} launch(es) the choice was swapped into, CUPTI's record shows another count of registers than the choice's {choice} (plain's: {program}): the driver did not take the swap",
                    choice_regs.len()
                ));
            }
        }
        Confirmed {
            symbol: self.start.symbol.clone(),
            key: self.start.key.clone(),
            candidate: self.start.candidate.clone(),
            launches: self.launches,
            plain_ms,
            choice_ms,
            registers: [plain_regs.first().copied(), choice_regs.first().copied()],
            failure,
            whole_runs: false,
        }
    }

    /// A whole run's launches, each timed: all plain's or all the
    /// choice's. In a choice's run, a record showing the program's count
    /// of registers where the choice's differs means the swap did not take.
    fn whole_result(&self, choice: bool) -> Confirmed {
        let timed: Vec<(f64, u16)> = self.whole_launches.iter().filter_map(|c| self.times.get(c).copied()).collect();
        let ms: Vec<f64> = timed.iter().map(|(ms, _)| *ms).collect();
        let mut failure = self.failure.clone();
        if let (true, None, Some(program), Some(mine)) = (choice, &failure, self.program_registers, self.registers) {
            let (program_shows, choice_shows) = (shown(program), shown(mine));
            let not_taken = timed.iter().filter(|(_, r)| program_shows.contains(r) && !choice_shows.contains(r)).count();
            if not_taken > 0 {
                failure = Some(format!(
                    "not confirmed: on {not_taken} of the {} launch(es) of a run the choice was swapped into, CUPTI's record shows plain's count of registers ({program}), not the choice's {mine}: the driver did not take the swap",
                    timed.len()
                ));
            }
        }
        let registers = timed.first().map(|(_, r)| *r);
        Confirmed {
            symbol: self.start.symbol.clone(),
            key: self.start.key.clone(),
            candidate: self.start.candidate.clone(),
            launches: self.launches,
            plain_ms: if choice { vec![] } else { ms.clone() },
            choice_ms: if choice { ms } else { vec![] },
            registers: if choice { [None, registers] } else { [registers, None] },
            failure,
            whole_runs: true,
        }
    }
}

/// The registers per thread a kernel record may show for a function of
/// `r`: its count, or the count rounded up to the allocation's unit of 8
/// (an H200's records showed 16 for functions of 10 and of 12).
fn shown(r: u16) -> [u16; 2] {
    [r, r.div_ceil(8) * 8]
}

/// Every kernel being confirmed, and which launch belongs to which: the
/// launch callbacks add launches, the activity API's buffers add times
/// (from CUPTI's thread, or the one that flushes), so it has a lock of its
/// own, never held while the activity buffers are flushed.
#[derive(Default)]
pub struct Book {
    pub confirmations: Vec<Confirmation>,
    /// Kernel records that named no launch being confirmed (any kernel's).
    pub unmatched: u64,
}

impl Book {
    /// The confirmation under way for a kernel's launch, if any.
    pub fn of(&mut self, symbol: &str) -> Option<&mut Confirmation> {
        self.confirmations.iter_mut().find(|c| c.start.symbol == symbol && !c.reported)
    }

    /// An activity record of a kernel launch.
    pub fn timed(&mut self, record: &KernelRecord) {
        if record.end <= record.start {
            return;
        }
        let ms = (record.end - record.start) as f64 / 1e6;
        match self.confirmations.iter_mut().find(|c| !c.reported && c.tracks(record.correlation)) {
            Some(c) => c.timed(record.correlation, ms, record.registers),
            None => self.unmatched += 1,
        }
    }

    /// A confirmation is under way (its result not yet written).
    pub fn active(&self) -> bool {
        self.confirmations.iter().any(|c| !c.reported)
    }

    /// The result of the `i`th confirmation, now written: where none of
    /// its launches' records came though pairs were launched, why.
    pub fn report(&mut self, i: usize) -> Confirmed {
        let unmatched = self.unmatched;
        let c = &mut self.confirmations[i];
        c.reported = true;
        let mut r = c.result();
        if r.failure.is_none() && c.times.is_empty() && !(c.pairs.is_empty() && c.whole_launches.is_empty()) {
            let when = if c.start.whole.is_some() { "in the run" } else { "after the replay" };
            r.failure = Some(format!(
                "not confirmed: no kernel record of CUPTI's named one of its {} launches {when} ({unmatched} other record(s))",
                r.launches
            ));
        }
        r
    }
}

pub static BOOK: Mutex<Book> = Mutex::new(Book { confirmations: Vec::new(), unmatched: 0 });

/// Kernel records delivered and not yet in the book: the buffer callback
/// takes only this lock, which nothing holds across a driver or CUPTI call.
static RECORDS: Mutex<Vec<KernelRecord>> = Mutex::new(Vec::new());

impl Book {
    /// Take in the records delivered so far (after a flush).
    pub fn take_records(&mut self) {
        let records = RECORDS.lock().map(|mut r| std::mem::take(&mut *r)).unwrap_or_default();
        for r in &records {
            self.timed(r);
        }
    }
}

/// The fields of a kernel activity record regtune reads, at the offsets
/// every `CUpti_ActivityKernelN` since CUDA 9 shares (cupti_activity.h;
/// `tests/runtime_abi.rs` checks them against the header).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelRecord {
    pub registers: u16,
    pub start: u64,
    pub end: u64,
    pub correlation: u32,
}

pub const CUPTI_ACTIVITY_KIND_KERNEL: u32 = 3;
pub const CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: u32 = 10;
pub const OFFSET_REGISTERS: usize = 6;
pub const OFFSET_START: usize = 16;
pub const OFFSET_END: usize = 24;
pub const OFFSET_CORRELATION: usize = 92;
const RECORD_BYTES: usize = OFFSET_CORRELATION + 4;

impl KernelRecord {
    /// A record's bytes (at least its first 96), if it is a kernel's.
    pub fn parse(bytes: &[u8]) -> Option<KernelRecord> {
        if bytes.len() < RECORD_BYTES {
            return None;
        }
        let u32_at = |o: usize| u32::from_ne_bytes(bytes[o..o + 4].try_into().expect("4 bytes"));
        let u64_at = |o: usize| u64::from_ne_bytes(bytes[o..o + 8].try_into().expect("8 bytes"));
        let kind = u32_at(0);
        if kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && kind != CUPTI_ACTIVITY_KIND_KERNEL {
            return None;
        }
        Some(KernelRecord {
            registers: u16::from_ne_bytes([bytes[OFFSET_REGISTERS], bytes[OFFSET_REGISTERS + 1]]),
            start: u64_at(OFFSET_START),
            end: u64_at(OFFSET_END),
            correlation: u32_at(OFFSET_CORRELATION),
        })
    }
}

type BufferRequested = unsafe extern "C" fn(*mut *mut u8, *mut usize, *mut usize);
type BufferCompleted = unsafe extern "C" fn(*mut c_void, u32, *mut u8, usize, usize);

api!(Activity {
    register_callbacks = "cuptiActivityRegisterCallbacks": fn(BufferRequested, BufferCompleted) -> c_int;
    enable = "cuptiActivityEnable": fn(c_int) -> c_int;
    disable = "cuptiActivityDisable": fn(c_int) -> c_int;
    next_record = "cuptiActivityGetNextRecord": fn(*mut u8, usize, *mut *mut u8) -> c_int;
    flush_all = "cuptiActivityFlushAll": fn(u32) -> c_int;
});

const CUPTI_ACTIVITY_FLAG_FLUSH_FORCED: u32 = 1;
const BUFFER_BYTES: usize = 4 << 20;

static ACTIVITY: OnceLock<Result<Activity, String>> = OnceLock::new();

/// CUPTI's activity API, from the CUPTI library the interposer loaded, its
/// buffer callbacks registered (kernel records enabled only while a
/// confirmation is under way). Err: why the program's launches cannot be
/// timed.
pub fn activity(lib: &Library) -> &'static Result<Activity, String> {
    ACTIVITY.get_or_init(|| {
        let api = Activity::load(lib).map_err(|e| format!("CUPTI's activity API is missing ({e})"))?;
        // SAFETY: both callbacks have CUPTI's prototypes.
        let code = unsafe { (api.register_callbacks)(buffer_requested, buffer_completed) };
        if code != 0 {
            return Err(format!("cuptiActivityRegisterCallbacks failed ({code})"));
        }
        Ok(api)
    })
}

/// The activity API, where [`activity`] loaded it.
pub fn loaded() -> Option<&'static Activity> {
    ACTIVITY.get().and_then(|a| a.as_ref().ok())
}

impl Activity {
    /// Start or stop kernel records. Err: CUPTI's code.
    pub fn kernels(&self, on: bool) -> Result<(), String> {
        let kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL as c_int;
        // SAFETY: a documented activity kind.
        let code = unsafe {
            if on {
                (self.enable)(kind)
            } else {
                (self.disable)(kind)
            }
        };
        if code == 0 {
            Ok(())
        } else {
            Err(format!("cuptiActivity{}(CONCURRENT_KERNEL) failed ({code})", if on { "Enable" } else { "Disable" }))
        }
    }

    /// Deliver every record so far (the book's lock must not be held).
    pub fn flush(&self) {
        // SAFETY: no pointers.
        unsafe { (self.flush_all)(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) };
    }
}

unsafe extern "C" fn buffer_requested(buffer: *mut *mut u8, size: *mut usize, max_records: *mut usize) {
    // SAFETY: CUPTI's out-pointers; malloc aligns to 16, CUPTI needs 8.
    unsafe {
        let b = libc::malloc(BUFFER_BYTES) as *mut u8;
        *buffer = b;
        *size = if b.is_null() { 0 } else { BUFFER_BYTES };
        *max_records = 0;
    }
}

unsafe extern "C" fn buffer_completed(_context: *mut c_void, _stream: u32, buffer: *mut u8, _size: usize, valid: usize) {
    let _ = std::panic::catch_unwind(|| {
        let Some(api) = loaded() else { return };
        let mut records = vec![];
        let mut record: *mut u8 = std::ptr::null_mut();
        // SAFETY: CUPTI's buffer of `valid` bytes; each record it hands out is
        // at least as long as its kind's struct (a kernel's: over 96 bytes).
        while !buffer.is_null() && unsafe { (api.next_record)(buffer, valid, &mut record) } == 0 && !record.is_null() {
            // Every record begins with its kind; only a kernel's is read further.
            let kind = unsafe { (record as *const u32).read_unaligned() };
            if kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || kind == CUPTI_ACTIVITY_KIND_KERNEL {
                // SAFETY: a kernel record is longer than the fields read.
                records.extend(KernelRecord::parse(unsafe { std::slice::from_raw_parts(record, RECORD_BYTES) }));
            }
        }
        // Not the book: CUPTI may deliver on a thread that holds it (inside a driver call).
        if let Ok(mut pending) = RECORDS.lock() {
            pending.extend(records);
        }
    });
    // SAFETY: the buffer `buffer_requested` allocated.
    unsafe { libc::free(buffer.cast()) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{CandidateResult, Choice, PlanCandidate, Replayed};

    fn kernel() -> PlanKernel {
        let cap = Transforms { unroll_cap: Some(1), ..Default::default() };
        PlanKernel {
            symbol: "_Z1kPd".into(),
            key: "sm_90/_Z1kPd/h".into(),
            arch: "sm_90".into(),
            candidates: ["plain", "decided", "plain again"]
                .iter()
                .map(|n| PlanCandidate { name: n.to_string(), path: format!("{n}.cubin").into() })
                .collect(),
            params: vec![],
            choices: vec![
                Choice { name: "plain".into(), transforms: Transforms::default() },
                Choice { name: "decided".into(), transforms: cap },
            ],
            control: Some("plain again".into()),
        }
    }

    fn launch(times: &[(&str, f64, bool)], program_identical: Option<bool>) -> LaunchResult {
        let candidates = times
            .iter()
            .map(|(n, ms, identical)| CandidateResult {
                name: n.to_string(),
                // Rounds that drift together; the candidate's ratio steady.
                times_ms: (0..30).map(|i| ms * (1.0 + 0.01 * f64::from(i % 5))).collect(),
                identical: *identical,
                difference: None,
                error: None,
            })
            .collect();
        LaunchResult {
            symbol: "_Z1kPd".into(),
            key: "sm_90/_Z1kPd/h".into(),
            device: "Fake GPU".into(),
            launch: config(64),
            ranges: 1,
            bytes: 8,
            reached: 0,
            globals: 0,
            notes: vec![],
            replayed: Replayed { candidates, deterministic: true, launches: 90, relocated: None, moved: 0 },
            program_identical,
            program_difference: None,
        }
    }

    fn config(grid: u32) -> LaunchConfig {
        LaunchConfig { grid: [grid, 1, 1], block: [256, 1, 1], shared_bytes: 0, cooperative: false }
    }

    #[test]
    fn the_replays_choice_by_the_dbs_rule_and_only_one_proven_identical() {
        let k = kernel();
        let fast = [("plain", 1.0, true), ("decided", 0.7, true), ("plain again", 1.0, true)];
        assert_eq!(choose(&k, &[launch(&fast, Some(true)), launch(&fast, Some(true))]), Ok(Some("decided".into())));
        // Not faster than plain: nothing to confirm.
        let same = [("plain", 1.0, true), ("decided", 1.0, true), ("plain again", 1.0, true)];
        assert_eq!(choose(&k, &[launch(&same, Some(true))]), Ok(None));
        // Faster but other bytes on one launch: never chosen, never swapped in.
        let differs = [("plain", 1.0, true), ("decided", 0.7, false), ("plain again", 1.0, true)];
        assert_eq!(choose(&k, &[launch(&fast, Some(true)), launch(&differs, Some(true))]), Ok(None));
        // The program's own bytes unknown, or not plain's: the choice is not swapped in.
        let unknown = choose(&k, &[launch(&fast, None)]).unwrap_err();
        assert!(unknown.starts_with("not confirmed: the program's own bytes were not compared"), "{unknown}");
        assert!(choose(&k, &[launch(&fast, Some(false))]).unwrap_err().contains("other bytes than regtune's plain build"));
        // A build the user does not allow is never the choice.
        let mut only_plain = k.clone();
        only_plain.choices.truncate(1);
        assert_eq!(choose(&only_plain, &[launch(&fast, Some(true))]), Ok(None));
    }

    fn start(pairs: u32) -> Start {
        Start { key: "k".into(), symbol: "_Z1kPd".into(), candidate: "decided".into(), path: "decided.cubin".into(), pairs, whole: None }
    }

    #[test]
    fn launches_of_one_shape_pair_up_and_alternate_which_runs_first() {
        let mut c = Confirmation::new(start(3));
        // Big and small launches interleaved: each pairs with its own shape.
        let swaps: Vec<bool> = [64, 8, 64, 8, 64, 64, 8, 8, 64].iter().enumerate().map(|(i, g)| c.launch(config(*g), i as u32)).collect();
        // Pair 0 (grid 64): plain then choice; pair 1 (grid 8): choice then plain; pair 2 (64): plain, choice.
        assert_eq!(swaps, [false, true, true, false, false, true, false, false, false]);
        assert_eq!(c.pairs, [(0, 2), (3, 1), (4, 5)]);
        assert!(c.complete());
        assert_eq!(c.launches, 9, "launches after it is complete still count");
        assert!(c.tracks(5) && !c.tracks(6));
    }

    #[test]
    fn the_result_keeps_the_pairs_timed_and_catches_a_swap_the_driver_ignored() {
        let mut c = Confirmation::new(start(2));
        for i in 0..4 {
            c.launch(config(64), i);
        }
        (c.registers, c.program_registers) = (Some(40), Some(64));
        // Pair 0: plain (64 registers) 1.0 ms, the choice 0.9 ms; pair 1's first launch untimed.
        c.timed(0, 1.0, 64);
        c.timed(1, 0.9, 40);
        c.timed(3, 0.8, 40);
        let r = c.result();
        assert_eq!((r.plain_ms, r.choice_ms, r.failure, r.launches), (vec![1.0], vec![0.9], None, 4));
        assert_eq!(r.registers, [Some(64), Some(40)]);
        // The GPU ran plain's registers where the choice was swapped in.
        c.timed(1, 0.9, 64);
        let r = c.result();
        assert!(r.failure.unwrap().contains("the driver did not take the swap"));
        // Records that do not show the functions' counts cannot tell: no failure.
        c.timed(0, 1.0, 72);
        c.timed(1, 0.9, 72);
        assert_eq!(c.result().failure, None);
        // As an H200's: 10 and 12 registers both shown as 16. Functions of 10 and 24 still tell.
        (c.registers, c.program_registers) = (Some(12), Some(10));
        c.timed(0, 1.0, 16);
        c.timed(1, 0.9, 16);
        assert_eq!(c.result().failure, None, "10 and 12 both show as 16");
        c.registers = Some(24);
        assert!(c.result().failure.unwrap().contains("the driver did not take the swap"));
        c.timed(1, 0.9, 24);
        assert_eq!(c.result().failure, None);
    }

    #[test]
    fn a_whole_run_times_every_launch_on_one_side_and_catches_a_swap_the_driver_ignored() {
        let run = |choice| crate::plan::WholeRun {
            symbol: "_Z1kPd".into(),
            key: "k".into(),
            candidate: "decided".into(),
            path: "decided.cubin".into(),
            choice,
        };
        let mut plain = Confirmation::new(Start::whole_run(&run(false)));
        let swaps: Vec<bool> = [64, 8, 64].iter().enumerate().map(|(i, g)| plain.launch(config(*g), i as u32)).collect();
        assert_eq!(swaps, [false; 3], "a plain run swaps nothing, whatever the shapes");
        assert!(!plain.complete() && plain.tracks(2));
        plain.timed(0, 1.0, 64);
        plain.timed(2, 1.5, 64);
        let r = plain.result();
        assert_eq!((r.plain_ms, r.choice_ms, r.registers, r.whole_runs, r.failure), (vec![1.0, 1.5], vec![], [Some(64), None], true, None));

        let mut choice = Confirmation::new(Start::whole_run(&run(true)));
        assert!(choice.launch(config(64), 7) && choice.launch(config(64), 8), "every launch runs the choice");
        (choice.registers, choice.program_registers) = (Some(40), Some(64));
        choice.timed(7, 0.9, 40);
        choice.timed(8, 0.8, 40);
        let r = choice.result();
        assert_eq!((r.plain_ms, r.choice_ms, r.registers, r.failure), (vec![], vec![0.9, 0.8], [None, Some(40)], None));
        choice.timed(8, 0.8, 64);
        assert!(choice.result().failure.unwrap().contains("the driver did not take the swap"));
    }

    #[test]
    fn a_kernel_record_is_read_at_the_headers_offsets() {
        let mut bytes = vec![0u8; 128];
        bytes[..4].copy_from_slice(&CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL.to_ne_bytes());
        bytes[6..8].copy_from_slice(&40u16.to_ne_bytes());
        bytes[16..24].copy_from_slice(&1_000u64.to_ne_bytes());
        bytes[24..32].copy_from_slice(&11_000u64.to_ne_bytes());
        bytes[92..96].copy_from_slice(&77u32.to_ne_bytes());
        let r = KernelRecord::parse(&bytes).unwrap();
        assert_eq!(r, KernelRecord { registers: 40, start: 1_000, end: 11_000, correlation: 77 });
        let mut book = Book::default();
        book.confirmations.push(Confirmation::new(start(1)));
        book.of("_Z1kPd").unwrap().launch(config(1), 77);
        book.timed(&r);
        assert_eq!(book.confirmations[0].times[&77], (0.01, 40));
        bytes[..4].copy_from_slice(&5u32.to_ne_bytes());
        assert_eq!(KernelRecord::parse(&bytes), None, "not a kernel's record");
    }
}
