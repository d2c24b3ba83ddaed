//! The replay core, shared by every vendor: given a launch's argument
//! buffer and a snapshot of the memory it can reach, run each candidate
//! code object on the same grid, block and shared memory, from the same
//! memory every time, compare what it leaves with the plain build, and time
//! it. The vendor layer ([`Gpu`]) only moves bytes, loads and launches.
//!
//! Runs in the replayer process, on copies of the program's memory: a
//! candidate that faults loses the replayer's context, never the program's.
//! The copies sit at the program's own addresses where the vendor layer can
//! map memory there ([`Gpu::map_at`]): the argument buffer runs unchanged
//! and pointers stored in the copied bytes stay valid. Elsewhere the copies
//! are allocations of the replayer's own, and the argument buffer's
//! pointers are moved to them (pointers stored in memory are not).

use std::borrow::Cow;

use regtune_decisions::measured::{Paired, MIN_GAIN};

use crate::capture::{self, Pointer, Range};
use crate::plan::{CandidateResult, LaunchConfig, Param, Replayed};

/// A GPU error, sorted by what it leaves usable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GpuError {
    /// This call failed, the context is fine (a refused launch, a module
    /// that will not load, out of memory).
    Refused(String),
    /// The context is lost (an illegal address, a trap): nothing more can
    /// run in this process.
    Fault(String),
}

impl std::fmt::Display for GpuError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GpuError::Refused(m) | GpuError::Fault(m) => f.write_str(m),
        }
    }
}

/// A loaded kernel, as the vendor layer describes it.
#[derive(Debug, Clone)]
pub struct Kernel {
    pub handle: usize,
    pub module: usize,
    /// Its parameters, when the driver can tell.
    pub params: Option<Vec<Param>>,
    pub max_threads_per_block: u32,
}

/// What the replay needs from a vendor's API, on one device.
pub trait Gpu {
    fn alloc(&mut self, bytes: u64) -> Result<u64, GpuError>;
    fn free(&mut self, addr: u64);
    fn upload(&mut self, dst: u64, src: &[u8]) -> Result<(), GpuError>;
    fn download(&mut self, src: u64, dst: &mut [u8]) -> Result<(), GpuError>;
    fn copy(&mut self, dst: u64, src: u64, bytes: u64) -> Result<(), GpuError>;
    /// Free device memory now, bytes.
    fn free_memory(&mut self) -> u64;
    fn load(&mut self, image: &[u8], symbol: &str, config: &LaunchConfig) -> Result<Kernel, GpuError>;
    fn unload(&mut self, kernel: &Kernel);
    /// Launch and wait; the kernel's time in milliseconds (events around
    /// the launch alone).
    fn launch(&mut self, kernel: &Kernel, config: &LaunchConfig, args: &[u8]) -> Result<f64, GpuError>;
    /// Device memory at exactly the program's addresses of `ranges`, each
    /// widened to whole units of the API's mapping granularity
    /// ([`capture::align_regions`]): the regions mapped, or why they cannot
    /// be (taken in this process, no such API), with nothing left mapped.
    fn map_at(&mut self, ranges: &[Range]) -> Result<Vec<Range>, String> {
        let _ = ranges;
        Err("this GPU API cannot map memory at chosen addresses".into())
    }
    /// Release regions [`Gpu::map_at`] mapped.
    fn unmap(&mut self, regions: &[Range]) {
        let _ = regions;
    }
    /// A module variable of a loaded kernel's module: its address and size.
    fn global(&mut self, kernel: &Kernel, name: &str) -> Option<Range> {
        let _ = (kernel, name);
        None
    }
}

/// One launch to replay.
pub struct Launch<'a> {
    pub symbol: &'a str,
    pub config: LaunchConfig,
    pub args: &'a [u8],
    /// The program's kernel's parameters (empty: unknown).
    pub params: &'a [Param],
    pub pointers: &'a [Pointer],
    pub ranges: &'a [Range],
    /// The bytes of each range before the launch.
    pub snapshot: &'a [Vec<u8>],
    /// (name, code object bytes); the first is the plain build.
    pub candidates: &'a [(String, Result<Vec<u8>, String>)],
    /// The most timed rounds.
    pub runs: u32,
    /// Wall milliseconds the replay may take (0: no limit): no round starts
    /// that would end past it, once [`MIN_RUNS`] are done.
    pub budget_ms: f64,
    /// The module's variables, name and the program's bytes: each
    /// candidate's own are set to them before every run and compared after.
    pub globals: &'a [(String, Vec<u8>)],
    /// Map the copies at the program's addresses (else relocate).
    pub at_program_addresses: bool,
    /// Relocated, move the pointers stored in the copied memory and the
    /// module's variables to the copies too (else the argument buffer's alone).
    pub move_stored: bool,
    /// Bytes copied on the device between each run's restore and its
    /// launch, to leave none of the launch's memory in the L2 cache (0:
    /// none; [`COLD_L2_ENV`]). An experiment: a launch the program makes
    /// once may find its memory in no cache.
    pub cold_l2_bytes: u64,
}

/// Set in the replayer's environment: each run starts with this many MiB
/// copied on the device after the restore ([`Launch::cold_l2_bytes`]).
pub const COLD_L2_ENV: &str = "REGTUNE_REPLAY_COLD_L2_MIB";

/// How much slower than plain's slowest run a candidate's fastest may be
/// before it leaves the race after two timed rounds: no noise brings a
/// build half again as slow in two runs back to the front. One run is not
/// enough: a 13 µs kernel's single run of 27 µs dropped a build of plain's
/// speed (jacobiCudaGraphs, bench/runtime/results/graphs-corpus-*).
const OUT_OF_THE_RACE: f64 = 1.5;

/// Timed runs a budget never cuts below: a median and a spread need some.
pub const MIN_RUNS: u32 = 3;

/// A fault ends the replay: the candidate that caused it and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    pub candidate: String,
    pub message: String,
}

/// What the replay leaves besides its answer: the plain build's bytes, to
/// compare the program's own launch with.
pub struct Outcome {
    pub replayed: Replayed,
    pub reference: Vec<Vec<u8>>,
    /// Relocated with the stored pointers moved: where each range's copy
    /// is. The program's bytes after its launch are compared with
    /// `reference` once their stored pointers are moved the same way.
    pub moved_to: Option<Vec<u64>>,
}

/// Device copies of the launch's memory: the ones kernels run on (at the
/// program's addresses when they could be mapped there), and the untouched
/// ones each run is restored from (on the host when the device has no room
/// for a second copy).
struct Memory<'a> {
    work: Vec<u64>,
    pristine: Vec<Option<u64>>,
    /// The bytes each run starts from: the program's, with the stored
    /// pointers moved when relocated.
    snapshot: Vec<Cow<'a, [u8]>>,
    /// Regions mapped at the program's addresses; empty when relocated.
    mapped: Vec<Range>,
    /// Why the copies are not at the program's addresses.
    relocated: Option<String>,
    /// Pointers stored in the copies moved to the replayer's (relocated).
    moved: usize,
}

impl<'a> Memory<'a> {
    fn new(gpu: &mut dyn Gpu, launch: &Launch<'a>) -> Result<Memory<'a>, GpuError> {
        let (ranges, snapshot) = (launch.ranges, launch.snapshot);
        let snapshot = snapshot.iter().map(|s| Cow::Borrowed(s.as_slice())).collect();
        let mut mem = Memory { work: vec![], pristine: vec![], snapshot, mapped: vec![], relocated: None, moved: 0 };
        let at_program = launch.at_program_addresses;
        if !ranges.is_empty() {
            // First, before this replay allocates or loads anything that could take those addresses.
            match at_program.then(|| gpu.map_at(ranges)) {
                Some(Ok(regions)) => mem.mapped = regions,
                Some(Err(why)) => mem.relocated = Some(why),
                None => mem.relocated = Some(format!("relocation asked for ({RELOCATE_ENV})")),
            }
        }
        let total: u64 = ranges.iter().map(|r| r.bytes).sum();
        // Keep a quarter of the free memory for the kernels themselves.
        let room = gpu.free_memory().saturating_sub(2 * total) > gpu.free_memory() / 4;
        for r in ranges {
            let work = if mem.mapped.is_empty() { gpu.alloc(r.bytes).inspect_err(|_| mem.release(gpu))? } else { r.addr };
            mem.work.push(work);
        }
        if mem.relocated.is_some() && launch.move_stored {
            // Pointers stored in the copies lead to the copies (a range with none is not copied).
            for (r, bytes) in ranges.iter().zip(&mut mem.snapshot) {
                let mut scratch = bytes.to_vec();
                if capture::move_stored(r.addr, &mut scratch, ranges, None) > 0 {
                    mem.moved += capture::move_stored(r.addr, &mut scratch, ranges, Some(&mem.work));
                    *bytes = Cow::Owned(scratch);
                }
            }
        }
        for (r, bytes) in ranges.iter().zip(&mem.snapshot) {
            let pristine = if room { gpu.alloc(r.bytes).ok() } else { None };
            mem.pristine.push(pristine);
            if let Some(p) = pristine {
                gpu.upload(p, bytes)?;
            }
        }
        Ok(mem)
    }

    fn restore(&self, gpu: &mut dyn Gpu) -> Result<(), GpuError> {
        for ((&work, pristine), bytes) in self.work.iter().zip(&self.pristine).zip(&self.snapshot) {
            match pristine {
                Some(p) => gpu.copy(work, *p, bytes.len() as u64)?,
                None => gpu.upload(work, bytes)?,
            }
        }
        Ok(())
    }

    fn read(&self, gpu: &mut dyn Gpu) -> Result<Vec<Vec<u8>>, GpuError> {
        self.work
            .iter()
            .zip(&self.snapshot)
            .map(|(&w, s)| {
                let mut out = vec![0u8; s.len()];
                gpu.download(w, &mut out).map(|()| out)
            })
            .collect()
    }

    fn release(&self, gpu: &mut dyn Gpu) {
        if self.mapped.is_empty() {
            for &w in &self.work {
                gpu.free(w);
            }
        } else {
            gpu.unmap(&self.mapped);
        }
        for p in self.pristine.iter().flatten() {
            gpu.free(*p);
        }
    }
}

/// Set in the replayer's environment (the program's, which it inherits):
/// replay on allocations of its own, argument pointers moved, as before
/// replays ran at the program's addresses. For comparison.
pub const RELOCATE_ENV: &str = "REGTUNE_REPLAY_RELOCATE";

/// A candidate's copies of the module's variables: where each of
/// `launch.globals` is in its module.
fn find_globals(gpu: &mut dyn Gpu, kernel: &Kernel, globals: &[(String, Vec<u8>)]) -> Result<Vec<u64>, String> {
    globals
        .iter()
        .map(|(name, bytes)| match gpu.global(kernel, name) {
            Some(r) if r.bytes == bytes.len() as u64 => Ok(r.addr),
            Some(r) => Err(format!("its variable `{name}` is {} bytes, the program's {}", r.bytes, bytes.len())),
            None => Err(format!("has no variable `{name}`, which the program's module has")),
        })
        .collect()
}

/// The launch's memory and the candidate's variables as the program had them.
fn restore(gpu: &mut dyn Gpu, mem: &Memory<'_>, vars: &[u64], globals: &[(String, Vec<u8>)]) -> Result<(), GpuError> {
    mem.restore(gpu)?;
    for (&addr, (_, bytes)) in vars.iter().zip(globals) {
        gpu.upload(addr, bytes)?;
    }
    Ok(())
}

/// What a run left: the launch's memory, then the candidate's variables.
fn read(gpu: &mut dyn Gpu, mem: &Memory<'_>, vars: &[u64], globals: &[(String, Vec<u8>)]) -> Result<Vec<Vec<u8>>, GpuError> {
    let mut out = mem.read(gpu)?;
    for (&addr, (_, bytes)) in vars.iter().zip(globals) {
        let mut now = vec![0u8; bytes.len()];
        gpu.download(addr, &mut now)?;
        out.push(now);
    }
    Ok(out)
}

/// Load a candidate and check, before it ever runs, that it can take this
/// launch: the same parameters as the program's kernel, and a block no
/// larger than its launch bounds allow.
fn load_checked(gpu: &mut dyn Gpu, image: &[u8], launch: &Launch<'_>) -> Result<Kernel, GpuError> {
    let kernel = gpu.load(image, launch.symbol, &launch.config)?;
    let refuse = |gpu: &mut dyn Gpu, why: String| {
        gpu.unload(&kernel);
        Err(GpuError::Refused(why))
    };
    if let Some(params) = &kernel.params {
        if !launch.params.is_empty() && params != launch.params {
            return refuse(gpu, format!("takes other parameters than the program's kernel ({params:?} vs {:?})", launch.params));
        }
    }
    if launch.config.threads_per_block() > kernel.max_threads_per_block as u64 {
        return refuse(
            gpu,
            format!("allows {} threads per block, the launch has {}", kernel.max_threads_per_block, launch.config.threads_per_block()),
        );
    }
    Ok(kernel)
}

/// Replay one launch: every candidate once to compare (round 0, untimed:
/// it also loads code and warms caches), then timed rounds, candidates
/// interleaved in a rotating order, memory restored before every run. A
/// candidate leaves the rounds once its time over plain's is settled
/// ([`Paired::settled`]: short, noisy kernels get many rounds, steady ones
/// few); the rounds end when every candidate has left, at `runs`, or at
/// the budget. A last run of the plain build shows whether its output is
/// deterministic.
pub fn replay(gpu: &mut dyn Gpu, launch: &Launch<'_>) -> Result<Result<Outcome, String>, Fault> {
    let fault = |candidate: &str, e: GpuError| Fault { candidate: candidate.to_string(), message: e.to_string() };
    let mem = match Memory::new(gpu, launch) {
        Ok(m) => m,
        Err(GpuError::Refused(e)) => return Ok(Err(format!("cannot copy the launch's memory to the GPU: {e}"))),
        Err(e) => return Err(fault("-", e)),
    };
    let result = replay_in(gpu, launch, &mem);
    if result.is_ok() {
        mem.release(gpu);
    }
    result
}

fn replay_in(gpu: &mut dyn Gpu, launch: &Launch<'_>, mem: &Memory<'_>) -> Result<Result<Outcome, String>, Fault> {
    let fault = |candidate: &str, e: GpuError| Fault { candidate: candidate.to_string(), message: e.to_string() };
    // At the program's addresses the argument buffer is the program's own.
    let args = if mem.mapped.is_empty() {
        capture::relocate(launch.args, launch.pointers, launch.ranges, &mem.work)
    } else {
        launch.args.to_vec()
    };
    let names: Vec<String> = launch.globals.iter().map(|(n, _)| n.clone()).collect();
    // The module's variables as each run starts: their stored pointers moved with the copies too.
    let moved_to = (mem.relocated.is_some() && launch.move_stored).then(|| mem.work.clone());
    let mut globals = launch.globals.to_vec();
    let mut moved = mem.moved;
    for (_, bytes) in globals.iter_mut().filter(|_| moved_to.is_some()) {
        moved += capture::move_stored(0, bytes, launch.ranges, moved_to.as_deref());
    }
    let differ = |a: &[Vec<u8>], b: &[Vec<u8>]| capture::first_difference_named(launch.ranges, &names, a, b);

    let mut results: Vec<CandidateResult> = launch
        .candidates
        .iter()
        .map(|(name, _)| CandidateResult { name: name.clone(), times_ms: vec![], identical: false, difference: None, error: None })
        .collect();
    let mut kernels: Vec<Option<Kernel>> = Vec::new();
    // Each candidate's copies of the module's variables.
    let mut vars: Vec<Vec<u64>> = Vec::new();
    for ((_, image), result) in launch.candidates.iter().zip(&mut results) {
        let loaded = match image {
            Ok(bytes) => load_checked(gpu, bytes, launch),
            Err(e) => Err(GpuError::Refused(e.clone())),
        };
        let loaded = loaded.and_then(|k| match find_globals(gpu, &k, &globals) {
            Ok(v) => Ok((k, v)),
            Err(why) => {
                gpu.unload(&k);
                Err(GpuError::Refused(why))
            }
        });
        vars.push(loaded.as_ref().map(|(_, v)| v.clone()).unwrap_or_default());
        match loaded.map(|(k, _)| k) {
            Ok(k) => kernels.push(Some(k)),
            Err(GpuError::Refused(e)) => {
                result.error = Some(e);
                kernels.push(None);
            }
            Err(e) => return Err(fault(&result.name, e)),
        }
    }
    let unload = |gpu: &mut dyn Gpu, kernels: &[Option<Kernel>]| kernels.iter().flatten().for_each(|k| gpu.unload(k));
    if kernels.first().is_none_or(Option::is_none) {
        unload(gpu, &kernels);
        let why = results.first().and_then(|r| r.error.clone()).unwrap_or_else(|| "no candidates".into());
        return Ok(Err(format!("the plain build cannot run this launch: {why}")));
    }
    // The cold-L2 copy goes from one half of this buffer to the other (none where it does not fit).
    let bytes = launch.cold_l2_bytes;
    let cold = (bytes > 0).then(|| gpu.alloc(2 * bytes).ok()).flatten();
    let release = |gpu: &mut dyn Gpu, kernels: &[Option<Kernel>]| {
        unload(gpu, kernels);
        cold.into_iter().for_each(|c| gpu.free(c));
    };

    let mut launches = 0u32;
    let mut reference: Vec<Vec<u8>> = vec![];
    let n = kernels.len();
    // Candidates still timed: loaded, not failed, not settled. Plain always is.
    let mut active: Vec<bool> = kernels.iter().map(Option::is_some).collect();
    let started = std::time::Instant::now();
    let mut round = 0usize;
    loop {
        let round_started = started.elapsed();
        // Round 0 goes in order (plain first: the reference); later rounds rotate.
        for i in (0..n).map(|i| (i + round) % n) {
            let Some(kernel) = kernels[i].as_ref().filter(|_| active[i]) else { continue };
            restore(gpu, mem, &vars[i], &globals).map_err(|e| fault(&results[i].name, e))?;
            if let Some(c) = cold {
                gpu.copy(c + bytes, c, bytes).map_err(|e| fault(&results[i].name, e))?;
            }
            launches += 1;
            let ms = match gpu.launch(kernel, &launch.config, &args) {
                Ok(ms) => ms,
                Err(GpuError::Refused(e)) if i == 0 => {
                    // Without the plain build's bytes nothing can be compared.
                    release(gpu, &kernels);
                    return Ok(Err(format!("the plain build cannot run this launch: launch refused: {e}")));
                }
                Err(GpuError::Refused(e)) => {
                    results[i].error = Some(format!("launch refused: {e}"));
                    active[i] = false;
                    continue;
                }
                Err(e) => return Err(fault(&results[i].name, e)),
            };
            if round > 0 {
                results[i].times_ms.push(ms);
                continue;
            }
            let out = read(gpu, mem, &vars[i], &globals).map_err(|e| fault(&results[i].name, e))?;
            if i == 0 {
                reference = out;
                results[0].identical = true;
            } else {
                results[i].difference = differ(&reference, &out);
                results[i].identical = results[i].difference.is_none();
            }
        }
        let timed = round;
        round += 1;
        if timed == 0 {
            continue;
        }
        let plain_times = std::slice::from_ref(&results[0].times_ms);
        let plain_slowest = results[0].times_ms.iter().copied().fold(0.0, f64::max);
        for (a, r) in active.iter_mut().zip(&results).skip(1).filter(|(a, _)| **a) {
            // One that differs is never chosen: a few rounds tell how it runs.
            // Nor is one whose every run was slower than plain's slowest by
            // twice the least gain (after MIN_RUNS rounds), or by half
            // (after two): it leaves the race, and the rounds go to the
            // contenders (a GEMM's 35 builds, most of them 0.1× to 0.7×,
            // got 3 rounds each within the budget, too few to tell 1.6 %).
            let fastest = r.times_ms.iter().copied().fold(f64::INFINITY, f64::min);
            let out_of_the_race = (timed >= MIN_RUNS as usize && fastest > plain_slowest * (1.0 + 2.0 * MIN_GAIN))
                || (timed >= 2 && fastest > plain_slowest * OUT_OF_THE_RACE);
            let settled = (!r.identical && timed >= MIN_RUNS as usize)
                || out_of_the_race
                || Paired::of(std::slice::from_ref(&r.times_ms), plain_times).is_some_and(|p| p.settled());
            *a = !settled;
        }
        let spent = started.elapsed();
        let next_ends = (spent + (spent - round_started)).as_secs_f64() * 1e3;
        let floor = MIN_RUNS.min(launch.runs) as usize;
        if timed >= launch.runs as usize
            || (timed >= floor && (active[1..].iter().all(|a| !a) || (launch.budget_ms > 0.0 && next_ends > launch.budget_ms)))
        {
            break;
        }
    }
    // The plain build once more: the same bytes as its first run, or no candidate can be shown identical.
    let plain = kernels[0].as_ref().expect("plain is loaded");
    restore(gpu, mem, &vars[0], &globals).map_err(|e| fault(&results[0].name, e))?;
    launches += 1;
    match gpu.launch(plain, &launch.config, &args) {
        Ok(_) => {
            let out = read(gpu, mem, &vars[0], &globals).map_err(|e| fault(&results[0].name, e))?;
            let difference = differ(&reference, &out);
            results[0].identical = difference.is_none();
            results[0].difference = difference.map(|d| format!("a second run of the plain build differs: {d}"));
        }
        Err(GpuError::Refused(e)) => {
            results[0].identical = false;
            results[0].difference = Some(format!("a second run of the plain build was refused: {e}"));
        }
        Err(e) => return Err(fault(&results[0].name, e)),
    }
    release(gpu, &kernels);
    let deterministic = results[0].identical;
    let replayed = Replayed { candidates: results, deterministic, launches, relocated: mem.relocated.clone(), moved };
    Ok(Ok(Outcome { replayed, reference, moved_to }))
}

#[cfg(test)]
mod tests {
    //! A GPU made of host memory whose "code objects" name what the kernel
    //! does, so the replay's logic is tested without a GPU.

    use std::collections::BTreeMap;

    use regtune_decisions::measured::SETTLE_AFTER;

    use super::*;

    struct FakeGpu {
        memory: BTreeMap<u64, Vec<u8>>,
        next: u64,
        kernels: BTreeMap<usize, String>,
        launches: Vec<String>,
        free: u64,
        refuse_launches: bool,
        /// Whether memory can be mapped at chosen addresses (and which were).
        map: bool,
        mapped: Vec<Range>,
        /// Module variables: (kernel handle, name) -> address.
        globals: BTreeMap<(usize, String), u64>,
    }

    impl FakeGpu {
        fn new() -> FakeGpu {
            // Addresses unlike the program's, so relocation matters.
            FakeGpu {
                memory: BTreeMap::new(),
                next: 0x5_0000_0000,
                kernels: BTreeMap::new(),
                launches: vec![],
                free: 1 << 30,
                refuse_launches: false,
                map: false,
                mapped: vec![],
                globals: BTreeMap::new(),
            }
        }

        fn mapping() -> FakeGpu {
            FakeGpu { map: true, ..FakeGpu::new() }
        }

        fn read_u64(&mut self, addr: u64) -> Result<u64, GpuError> {
            Ok(u64::from_le_bytes(self.slice(addr, 8)?.try_into().unwrap()))
        }

        fn slice(&mut self, addr: u64, len: usize) -> Result<&mut [u8], GpuError> {
            let illegal = || GpuError::Fault(format!("illegal address {addr:#x}"));
            let (&base, buf) = self.memory.range_mut(..=addr).next_back().ok_or_else(illegal)?;
            let off = (addr - base) as usize;
            if off + len > buf.len() {
                return Err(illegal());
            }
            Ok(&mut buf[off..off + len])
        }
    }

    fn word(args: &[u8], i: usize) -> u64 {
        u64::from_le_bytes(args[8 * i..8 * i + 8].try_into().unwrap())
    }

    const PARAMS: [Param; 3] = [Param { offset: 0, size: 8 }, Param { offset: 8, size: 8 }, Param { offset: 16, size: 8 }];

    impl Gpu for FakeGpu {
        fn alloc(&mut self, bytes: u64) -> Result<u64, GpuError> {
            if bytes > self.free {
                return Err(GpuError::Refused("CUDA_ERROR_OUT_OF_MEMORY".into()));
            }
            let a = self.next;
            self.next += bytes.next_multiple_of(0x1000) + 0x1000;
            self.memory.insert(a, vec![0xAA; bytes as usize]);
            Ok(a)
        }
        fn free(&mut self, addr: u64) {
            self.memory.remove(&addr);
        }
        fn upload(&mut self, dst: u64, src: &[u8]) -> Result<(), GpuError> {
            self.slice(dst, src.len())?.copy_from_slice(src);
            Ok(())
        }
        fn download(&mut self, src: u64, dst: &mut [u8]) -> Result<(), GpuError> {
            dst.copy_from_slice(self.slice(src, dst.len())?);
            Ok(())
        }
        fn copy(&mut self, dst: u64, src: u64, bytes: u64) -> Result<(), GpuError> {
            let data = self.slice(src, bytes as usize)?.to_vec();
            self.upload(dst, &data)
        }
        fn free_memory(&mut self) -> u64 {
            self.free
        }
        fn load(&mut self, image: &[u8], _symbol: &str, _config: &LaunchConfig) -> Result<Kernel, GpuError> {
            let text = String::from_utf8(image.to_vec()).unwrap();
            if text == "broken" {
                return Err(GpuError::Refused("CUDA_ERROR_INVALID_IMAGE".into()));
            }
            let handle = self.kernels.keys().last().map_or(1, |k| k + 1);
            self.kernels.insert(handle, text.clone());
            if text.starts_with("count") {
                // Its module's `__device__ unsigned counter`.
                let addr = self.alloc(4)?;
                self.globals.insert((handle, "counter".into()), addr);
            }
            let max_threads_per_block = if text == "bounded" { 64 } else { 1024 };
            let params = if text == "other-params" { vec![Param { offset: 0, size: 4 }] } else { PARAMS.to_vec() };
            Ok(Kernel { handle, module: 0, params: Some(params), max_threads_per_block })
        }
        fn unload(&mut self, kernel: &Kernel) {
            self.kernels.remove(&kernel.handle);
            if let Some(addr) = self.globals.remove(&(kernel.handle, "counter".into())) {
                self.free(addr);
            }
        }
        fn map_at(&mut self, ranges: &[Range]) -> Result<Vec<Range>, String> {
            if !self.map {
                return Err("cuMemAddressReserve at 0x0: taken".into());
            }
            let regions = capture::align_regions(ranges, 0x1000);
            for r in &regions {
                self.memory.insert(r.addr, vec![0xAA; r.bytes as usize]);
            }
            self.mapped.extend(&regions);
            Ok(regions)
        }
        fn unmap(&mut self, regions: &[Range]) {
            for r in regions {
                self.memory.remove(&r.addr);
            }
        }
        fn global(&mut self, kernel: &Kernel, name: &str) -> Option<Range> {
            let addr = *self.globals.get(&(kernel.handle, name.to_string()))?;
            Some(Range { addr, bytes: 4 })
        }
        /// Kernels take (out, in, n): "double" writes out[i] = 2 in[i];
        /// "double-slow" the same, twice as slow ("double-slower" 1.1 ms;
        /// "double-hiccup" 0.9 ms, but 3 ms in its first timed run); "wrong" 2 in[i] + 1;
        /// "accumulate" out[i] += in[i] (needs its memory restored);
        /// "fault" traps; "chase" is "double" of the array whose address
        /// `in` holds (a pointer stored in device memory); "count" is
        /// "double" and adds 1 to its module's `counter`, "count-twice" 2.
        fn launch(&mut self, kernel: &Kernel, _config: &LaunchConfig, args: &[u8]) -> Result<f64, GpuError> {
            if self.refuse_launches {
                return Err(GpuError::Refused("CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES".into()));
            }
            let (out, mut inp, n) = (word(args, 0), word(args, 1), word(args, 2) as usize);
            let what = self.kernels[&kernel.handle].clone();
            self.launches.push(what.clone());
            if what == "chase" {
                inp = self.read_u64(inp)?;
            }
            if let Some(by) = [("count", 1u32), ("count-twice", 2)].iter().find(|(k, _)| *k == what).map(|(_, by)| *by) {
                let addr = self.globals[&(kernel.handle, "counter".to_string())];
                let c = self.slice(addr, 4)?;
                let now = u32::from_le_bytes(c[..].try_into().unwrap()) + by;
                c.copy_from_slice(&now.to_le_bytes());
            }
            let input = self.slice(inp, n)?.to_vec();
            let (f, ms): (fn(u8, u8) -> u8, f64) = match what.as_str() {
                "double" | "bounded" | "chase" | "count" | "count-twice" => (|_, x| x.wrapping_mul(2), 1.0),
                "double-slow" => (|_, x| x.wrapping_mul(2), 2.0),
                "double-slower" => (|_, x| x.wrapping_mul(2), 1.1),
                "double-hiccup" => {
                    let runs = self.launches.iter().filter(|l| *l == "double-hiccup").count();
                    (|_, x| x.wrapping_mul(2), if runs == 2 { 3.0 } else { 0.9 })
                }
                // 0.7 to 1.3 from launch to launch, as a 20 µs kernel varies.
                "double-noisy" => (|_, x| x.wrapping_mul(2), 0.7 + 0.06 * (self.launches.len() * 7 % 11) as f64),
                "wrong" => (|_, x| x.wrapping_mul(2).wrapping_add(1), 0.5),
                "accumulate" => (|o, x| o.wrapping_add(x), 1.0),
                "fault" => return Err(GpuError::Fault("CUDA_ERROR_ILLEGAL_ADDRESS".into())),
                other => panic!("unknown fake kernel {other}"),
            };
            for (o, x) in self.slice(out, n)?.iter_mut().zip(input) {
                *o = f(*o, x);
            }
            Ok(ms)
        }
    }

    /// A program launch: out at 0x1000 (16 bytes), in at 0x2000 (16 bytes), n = 16.
    struct Scene {
        args: Vec<u8>,
        ranges: Vec<Range>,
        pointers: Vec<Pointer>,
        snapshot: Vec<Vec<u8>>,
        candidates: Vec<(String, Result<Vec<u8>, String>)>,
        globals: Vec<(String, Vec<u8>)>,
        at_program: bool,
        move_stored: bool,
    }

    fn scene(images: &[&str]) -> Scene {
        let args = [0x1000u64, 0x2000, 16].iter().flat_map(|w| w.to_le_bytes()).collect();
        let ranges = vec![Range { addr: 0x1000, bytes: 16 }, Range { addr: 0x2000, bytes: 16 }];
        let pointers = vec![Pointer { offset: 0, range: 0 }, Pointer { offset: 8, range: 1 }];
        let snapshot = vec![vec![1u8; 16], (0..16).collect()];
        let names = ["plain", "decided", "suggested", "suggested-2"];
        let candidates = images.iter().zip(names).map(|(i, n)| (n.to_string(), Ok(i.as_bytes().to_vec()))).collect();
        Scene { args, ranges, pointers, snapshot, candidates, globals: vec![], at_program: false, move_stored: true }
    }

    /// A program launch whose input is reached through a pointer stored in
    /// device memory: out at 0x1000, a table at 0x2000 holding the address
    /// of the input at 0x3000 (16 bytes each), n = 16.
    fn chasing_scene(images: &[&str]) -> Scene {
        let mut s = scene(images);
        s.ranges.push(Range { addr: 0x3000, bytes: 16 });
        s.snapshot[1] = [0x3000u64, 0].iter().flat_map(|w| w.to_le_bytes()).collect();
        s.snapshot.push((0..16).collect());
        s.at_program = true;
        s
    }

    fn run(gpu: &mut FakeGpu, s: &Scene, runs: u32, block: u32) -> Result<Result<Outcome, String>, Fault> {
        run_within(gpu, s, runs, block, 0.0)
    }

    fn run_within(gpu: &mut FakeGpu, s: &Scene, runs: u32, block: u32, budget_ms: f64) -> Result<Result<Outcome, String>, Fault> {
        replay(gpu, &launch_of(s, runs, block, budget_ms))
    }

    fn launch_of(s: &Scene, runs: u32, block: u32, budget_ms: f64) -> Launch<'_> {
        Launch {
            symbol: "_Z1kPhPKhm",
            config: LaunchConfig { grid: [1, 1, 1], block: [block, 1, 1], shared_bytes: 0, cooperative: false },
            args: &s.args,
            params: &PARAMS,
            pointers: &s.pointers,
            ranges: &s.ranges,
            snapshot: &s.snapshot,
            candidates: &s.candidates,
            runs,
            budget_ms,
            globals: &s.globals,
            at_program_addresses: s.at_program,
            move_stored: s.move_stored,
            cold_l2_bytes: 0,
        }
    }

    #[test]
    fn candidates_are_compared_and_timed_interleaved_on_relocated_memory() {
        let mut gpu = FakeGpu::new();
        let s = scene(&["double", "double-slower", "wrong"]);
        let out = run(&mut gpu, &s, 3, 256).unwrap().unwrap();
        let r = &out.replayed;
        assert!(r.deterministic);
        assert_eq!(r.launches, 3 * 4 + 1, "candidates × (runs + 1), and plain once more");
        assert_eq!([r.candidates[0].identical, r.candidates[1].identical, r.candidates[2].identical], [true, true, false]);
        assert_eq!(r.candidates[2].difference.as_deref(), Some("allocation 0 (16 bytes at 0x1000) first differs at byte 0"));
        assert_eq!(r.candidates[0].times_ms, [1.0; 3]);
        assert_eq!(r.candidates[1].times_ms, [1.1; 3]);
        // Round 0 in order, then rotated.
        assert_eq!(gpu.launches[..6], ["double", "double-slower", "wrong", "double-slower", "wrong", "double"]);
        // The reference is the plain build's output: out = 2 * in.
        assert_eq!(out.reference[0], (0..16).map(|x: u8| 2 * x).collect::<Vec<_>>());
        assert_eq!(out.reference[1], s.snapshot[1], "inputs untouched");
        // Everything was freed and unloaded.
        assert!(gpu.memory.is_empty() && gpu.kernels.is_empty());
    }

    #[test]
    fn a_candidate_leaves_the_rounds_once_settled_and_a_noisy_one_stays() {
        // Steady times settle after SETTLE_AFTER rounds, however many were allowed.
        let mut gpu = FakeGpu::new();
        let out = run(&mut gpu, &scene(&["double", "double"]), 50, 256).unwrap().unwrap();
        assert_eq!(out.replayed.candidates[1].times_ms.len(), SETTLE_AFTER);
        assert_eq!(out.replayed.launches, 2 * (1 + SETTLE_AFTER as u32) + 1);
        // A noisy one is timed to the last round; a steady one beside it leaves early.
        let mut gpu = FakeGpu::new();
        let out = run(&mut gpu, &scene(&["double", "double-noisy", "double"]), 50, 256).unwrap().unwrap();
        let c = &out.replayed.candidates;
        assert_eq!([c[0].times_ms.len(), c[1].times_ms.len(), c[2].times_ms.len()], [50, 50, SETTLE_AFTER]);
        // One twice as slow as plain (2 ms against 1) leaves the race
        // after two timed rounds; one slow run alone does not drop a
        // faster build, which settles as any steady one.
        let mut gpu = FakeGpu::new();
        let out = run(&mut gpu, &scene(&["double", "double-noisy", "double-slow"]), 50, 256).unwrap().unwrap();
        let c = &out.replayed.candidates;
        assert_eq!([c[1].times_ms.len(), c[2].times_ms.len()], [50, 2]);
        let mut gpu = FakeGpu::new();
        let out = run(&mut gpu, &scene(&["double", "double-hiccup"]), 50, 256).unwrap().unwrap();
        let c = &out.replayed.candidates;
        assert_eq!(c[1].times_ms.len(), SETTLE_AFTER);
        assert_eq!(c[1].times_ms[..2], [3.0, 0.9]);
        // One that differs leaves after MIN_RUNS: it is never chosen.
        let mut gpu = FakeGpu::new();
        let out = run(&mut gpu, &scene(&["double", "double-noisy", "wrong"]), 50, 256).unwrap().unwrap();
        assert_eq!(out.replayed.candidates[2].times_ms.len(), MIN_RUNS as usize);
    }

    #[test]
    fn a_budget_ends_the_rounds_but_never_before_three() {
        let mut gpu = FakeGpu::new();
        let s = scene(&["double", "double-noisy"]);
        let out = run_within(&mut gpu, &s, 50, 256, 1e-9).unwrap().unwrap();
        assert_eq!(out.replayed.candidates[1].times_ms.len(), MIN_RUNS as usize);
        assert!(out.replayed.deterministic);
        // Never more than asked.
        let out = run_within(&mut gpu, &s, 2, 256, 1e-9).unwrap().unwrap();
        assert_eq!(out.replayed.candidates[1].times_ms.len(), 2);
    }

    #[test]
    fn a_cold_l2_copy_before_each_run_changes_no_verdict_and_is_freed() {
        let mut gpu = FakeGpu::new();
        let s = scene(&["accumulate", "accumulate"]);
        let before = gpu.memory.len();
        let launch = Launch { cold_l2_bytes: 4096, ..launch_of(&s, 4, 256, 0.0) };
        let out = replay(&mut gpu, &launch).unwrap().unwrap();
        assert!(out.replayed.deterministic && out.replayed.candidates[1].identical);
        assert_eq!(out.reference[0], (0..16).map(|x: u8| 1 + x).collect::<Vec<_>>());
        assert_eq!(gpu.memory.len(), before, "the copy's buffers are freed with the rest");
    }

    #[test]
    fn memory_is_restored_before_every_run() {
        // out += in twice without a restore would differ from once.
        let mut gpu = FakeGpu::new();
        let out = run(&mut gpu, &scene(&["accumulate", "accumulate"]), 4, 256).unwrap().unwrap();
        assert!(out.replayed.deterministic);
        assert!(out.replayed.candidates[1].identical);
        assert_eq!(out.reference[0], (0..16).map(|x: u8| 1 + x).collect::<Vec<_>>());
    }

    #[test]
    fn restores_from_the_host_when_the_device_has_no_room_for_a_copy() {
        let mut gpu = FakeGpu::new();
        gpu.free = 40; // room for the work copies (32 bytes), not the pristine ones
        let out = run(&mut gpu, &scene(&["accumulate", "accumulate"]), 2, 256).unwrap().unwrap();
        assert!(out.replayed.deterministic && out.replayed.candidates[1].identical);
    }

    #[test]
    fn refused_candidates_are_reported_and_the_others_measured() {
        let mut gpu = FakeGpu::new();
        let out = run(&mut gpu, &scene(&["double", "broken", "bounded", "other-params"]), 2, 256).unwrap().unwrap();
        let c = &out.replayed.candidates;
        assert_eq!(c[1].error.as_deref(), Some("CUDA_ERROR_INVALID_IMAGE"));
        assert_eq!(c[2].error.as_deref(), Some("allows 64 threads per block, the launch has 256"));
        assert!(c[3].error.as_deref().unwrap().starts_with("takes other parameters"));
        assert!(c[1..].iter().all(|c| c.times_ms.is_empty() && !c.identical));
        assert_eq!(c[0].times_ms.len(), 2);
        assert!(gpu.kernels.is_empty());
        // A block the bounded kernel allows runs it.
        let out = run(&mut gpu, &scene(&["double", "bounded"]), 2, 64).unwrap().unwrap();
        assert!(out.replayed.candidates[1].identical);
    }

    #[test]
    fn a_plain_build_that_cannot_run_is_an_error_for_the_launch() {
        let mut gpu = FakeGpu::new();
        let e = run(&mut gpu, &scene(&["broken", "double"]), 2, 256).unwrap().err().unwrap();
        assert_eq!(e, "the plain build cannot run this launch: CUDA_ERROR_INVALID_IMAGE");
        assert!(gpu.memory.is_empty() && gpu.kernels.is_empty());
    }

    #[test]
    fn a_plain_launch_the_driver_refuses_compares_nothing() {
        let mut gpu = FakeGpu::new();
        gpu.refuse_launches = true;
        let e = run(&mut gpu, &scene(&["double", "double"]), 2, 256).unwrap().err().unwrap();
        assert_eq!(e, "the plain build cannot run this launch: launch refused: CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES");
        assert!(gpu.memory.is_empty() && gpu.kernels.is_empty());
    }

    #[test]
    fn a_fault_ends_the_replay_naming_the_candidate() {
        let mut gpu = FakeGpu::new();
        let f = run(&mut gpu, &scene(&["double", "fault", "double"]), 2, 256).err().unwrap();
        assert_eq!(f, Fault { candidate: "decided".into(), message: "CUDA_ERROR_ILLEGAL_ADDRESS".into() });
        assert_eq!(gpu.launches, ["double", "fault"], "nothing runs after a fault");
    }

    #[test]
    fn at_the_programs_addresses_pointers_stored_in_memory_lead_to_the_copies() {
        let mut gpu = FakeGpu::mapping();
        let s = chasing_scene(&["chase", "chase"]);
        let out = run(&mut gpu, &s, 2, 256).unwrap().unwrap();
        let r = &out.replayed;
        assert_eq!(r.relocated, None);
        assert!(r.deterministic && r.candidates[1].identical, "{r:?}");
        assert_eq!(out.reference[0], (0..16).map(|x: u8| 2 * x).collect::<Vec<_>>());
        // Whole pages at the program's own addresses (0x1000..0x4000 is one region), all unmapped after.
        assert_eq!(gpu.mapped, [Range { addr: 0x1000, bytes: 0x3000 }]);
        assert!(gpu.memory.is_empty() && gpu.kernels.is_empty());
    }

    #[test]
    fn addresses_that_cannot_be_had_relocate_pointers_stored_in_memory_too() {
        // The stored pointer moves with the copies: the chasing kernel is measured, relocated.
        let mut gpu = FakeGpu::new();
        let s = chasing_scene(&["chase", "chase"]);
        let out = run(&mut gpu, &s, 2, 256).unwrap().unwrap();
        let r = &out.replayed;
        assert_eq!((r.relocated.as_deref(), r.moved), (Some("cuMemAddressReserve at 0x0: taken"), 1));
        assert!(r.deterministic && r.candidates[1].identical);
        assert_eq!(out.reference[0], (0..16).map(|x: u8| 2 * x).collect::<Vec<_>>());
        // The table left as it was found, but for its pointer, now the copy's.
        let to = out.moved_to.as_ref().unwrap();
        assert_eq!(out.reference[1][..8], to[2].to_le_bytes());
        // The program's bytes after its launch compare equal once moved the same way.
        let mut program = s.snapshot.clone();
        program[0] = (0..16).map(|x: u8| 2 * x).collect();
        for (i, bytes) in program.iter_mut().enumerate() {
            capture::move_stored(s.ranges[i].addr, bytes, &s.ranges, Some(to));
        }
        assert_eq!(capture::first_difference(&s.ranges, &out.reference, &program), None);
        assert!(gpu.memory.is_empty());
        // The argument buffer's pointers alone moved, as before: the kernel faults.
        let mut gpu = FakeGpu::new();
        let s = Scene { move_stored: false, ..chasing_scene(&["chase"]) };
        let f = run(&mut gpu, &s, 1, 256).err().unwrap();
        assert_eq!(f.candidate, "plain");
        // A kernel that follows no stored pointer is measured relocated, and the reason kept.
        let mut gpu = FakeGpu::new();
        let mut s = scene(&["double", "double"]);
        s.at_program = true;
        let out = run(&mut gpu, &s, 1, 256).unwrap().unwrap();
        assert_eq!(out.replayed.relocated.as_deref(), Some("cuMemAddressReserve at 0x0: taken"));
        assert!(out.replayed.candidates[1].identical);
        // Asked to relocate, it says so.
        let mut gpu = FakeGpu::mapping();
        let out = run(&mut gpu, &scene(&["double"]), 1, 256).unwrap().unwrap();
        assert_eq!(out.replayed.relocated.as_deref(), Some("relocation asked for (REGTUNE_REPLAY_RELOCATE)"));
    }

    #[test]
    fn module_variables_are_set_before_every_run_and_compared_after() {
        let mut gpu = FakeGpu::mapping();
        let mut s = scene(&["count", "count", "count-twice", "double"]);
        s.globals = vec![("counter".into(), 41u32.to_le_bytes().to_vec())];
        let out = run(&mut gpu, &s, 3, 256).unwrap().unwrap();
        let c = &out.replayed.candidates;
        // Set to the program's 41 before each run: plain leaves 42 every time.
        assert!(out.replayed.deterministic);
        assert_eq!(out.reference.last().unwrap(), &42u32.to_le_bytes());
        assert!(c[1].identical);
        assert_eq!(c[2].difference.as_deref(), Some("variable `counter` (4 bytes) first differs at byte 0"));
        assert_eq!(c[3].error.as_deref(), Some("has no variable `counter`, which the program's module has"));
        assert!(gpu.memory.is_empty() && gpu.kernels.is_empty());
    }

    #[test]
    fn unrelocated_pointers_would_fault() {
        // The fake's memory lives elsewhere: the program's addresses are illegal there.
        let mut gpu = FakeGpu::new();
        let mut s = scene(&["double"]);
        s.pointers.clear();
        assert!(run(&mut gpu, &s, 1, 256).is_err());
    }
}
