//! A static cost model: how long a variant runs, estimated from its final
//! machine code (AMDGPU assembly, or PTX on NVPTX) and its occupancy.
//!
//! Roofline-like: a wave's time in steady state is the slowest of
//!   - issue: the cycles its instructions occupy the SIMD (loops weighted
//!     by their trip counts, where the counter and bounds are constants),
//!   - latency: the time one wave alone would take, memory latency
//!     included, shared among the waves resident on the SIMD (occupancy),
//!   - bandwidth: the bytes it moves (global memory, and spills or private
//!     arrays in scratch) at the SIMD's share of the memory bandwidth.
//!
//! The latency term is what unrolling buys: a wave alone is simulated
//! instruction by instruction, loads complete after a fixed latency, and
//! each `s_waitcnt` (AMDGPU) or first use of a loaded register (PTX) stalls
//! until they do, so a schedule with many loads in flight per wait hides
//! latency within the wave, and occupancy hides it across waves.
//!
//! The constants in [`Machine`] are first guesses except those fitted by
//! bench/calibrate (it times every candidate `regtune predict` estimates,
//! and correlates the two); each says which it is.

use serde::Serialize;

use crate::gpu::Arch;

/// Trip count assumed for a loop whose count the code does not show.
pub(crate) const UNKNOWN_TRIPS: f64 = 8.0;

/// NVPTX's [`Machine::spill_latency`] and [`Machine::hiding`], fitted on an
/// H100 to 137 candidates: the example kernels' and those of three Rodinia
/// programs (bench/calibrate; README "Cost model" has what it ranks well and
/// what it does not). Weak hiding: on those programs more warps rarely
/// bought time. AMDGPU keeps perfect hiding: no AMD GPU here to fit it on.
const SPILL_LATENCY: f64 = 200.0;
const HIDING: f64 = 0.25;

/// What the model assumes about the hardware (cycles are the SIMD's, or
/// an NVIDIA SM sub-partition's).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Machine {
    /// Issue cycles of one vector instruction (wave64 on 16 lanes: 4).
    pub valu_cycles: f64,
    /// Global or scratch memory latency.
    pub memory_latency: f64,
    /// Scalar memory (AMDGPU) latency.
    pub scalar_latency: f64,
    /// LDS / shared memory latency.
    pub lds_latency: f64,
    /// Latency of an ALU result (PTX dataflow).
    pub alu_latency: f64,
    /// Memory bytes per cycle one SIMD (sub-partition) may move.
    pub bytes_per_cycle: f64,
    /// Threads per wave (warp).
    pub lanes: f64,
    /// Vector stores count in `vmcnt` (gfx9); gfx10+ count them apart.
    pub stores_in_vmcnt: bool,
    /// Latency of reloading a value ptxas spilled (local memory, mostly
    /// an L1 hit). NVPTX only: PTX has virtual registers, so its spills are
    /// not in the listing, only in ptxas's report.
    pub spill_latency: f64,
    /// How much of one wave's latency more waves hide: latency / waves^h.
    /// 1 is perfect hiding.
    pub hiding: f64,
}

impl Machine {
    /// The target's machine.
    pub(crate) fn of(arch: &Arch) -> Machine {
        crate::gpu::of(arch).machine(arch)
    }

    /// An NVIDIA SM sub-partition.
    pub(crate) fn nvptx() -> Machine {
        Machine {
            valu_cycles: 1.0,
            memory_latency: 600.0,
            scalar_latency: 0.0,
            lds_latency: 30.0,
            alu_latency: 4.0,
            // L1: 128 B per clock per SM, four sub-partitions.
            bytes_per_cycle: 32.0,
            lanes: 32.0,
            stores_in_vmcnt: false,
            spill_latency: SPILL_LATENCY,
            hiding: HIDING,
        }
    }

    /// An AMDGPU SIMD (wave64 on gfx9, wave32 on gfx10+).
    pub(crate) fn amdgpu(arch: &Arch) -> Machine {
        let wave32 = arch.processor().starts_with("gfx1");
        Machine {
            valu_cycles: if wave32 { 1.0 } else { 4.0 },
            memory_latency: 600.0,
            scalar_latency: 200.0,
            lds_latency: 64.0,
            alu_latency: 4.0,
            // The vector L1: 64 B per clock per CU, four SIMDs.
            bytes_per_cycle: 16.0,
            lanes: if wave32 { 32.0 } else { 64.0 },
            stores_in_vmcnt: !wave32,
            spill_latency: 0.0,
            hiding: 1.0,
        }
    }
}

/// A loop the model found, with its trip count (None: not shown by the code).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Loop {
    pub header: String,
    pub trips: Option<u64>,
    pub depth: usize,
}

/// One kernel's code, as the model sees it; counts are per wave (or per
/// thread for bytes), loops weighted by their trip counts.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Profile {
    pub instructions: f64,
    /// Instructions in the code, each counted once.
    pub code_instructions: f64,
    pub issue_cycles: f64,
    /// Global memory loads and stores.
    pub memory_ops: f64,
    pub memory_bytes: f64,
    /// Scratch (AMDGPU) or local (NVPTX) memory: spills and private arrays.
    pub scratch_ops: f64,
    pub scratch_bytes: f64,
    /// One wave alone, memory latency included.
    pub latency_cycles: f64,
    pub loops: Vec<Loop>,
}

/// The model's estimate for one variant at its occupancy.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Estimate {
    /// Waves (warps) sharing one SIMD (NVIDIA: one SM sub-partition).
    pub waves: f64,
    pub issue: f64,
    pub latency: f64,
    pub bandwidth: f64,
    /// Cycles per wave in steady state: the largest of the three.
    pub cycles: f64,
}

impl Estimate {
    pub(crate) fn of(p: &Profile, waves: f64, m: &Machine) -> Estimate {
        let waves = waves.max(1.0);
        let issue = p.issue_cycles;
        let latency = p.latency_cycles / waves.powf(m.hiding);
        let bandwidth = (p.memory_bytes + p.scratch_bytes) * m.lanes / m.bytes_per_cycle;
        Estimate { waves, issue, latency, bandwidth, cycles: issue.max(latency).max(bandwidth) }
    }
}

/// A variant's estimate from its profile and what the compile reported.
/// On NVPTX the PTX cannot show what ptxas puts in local memory. Where the
/// final code's local loads and stores were counted (`local_accesses`,
/// weighted by loops: spills and private arrays) they replace the PTX's
/// local accesses, half of them taken as reloads that wait. Otherwise the
/// spills ptxas reports (store and load bytes, as `Usage` carries them in
/// `vgpr_spills` and `sgpr_spills`) are added: each access runs as often as
/// the code around it does on average, and each reload waits.
pub(crate) fn estimate(p: &Profile, usage: &regtune_decisions::Usage, arch: &Arch) -> Estimate {
    let m = Machine::of(arch);
    let mut p = p.clone();
    if !crate::gpu::of(arch).listing_shows_spills() && usage.local_accesses > 0 {
        let n = f64::from(usage.local_accesses);
        p.issue_cycles += n - p.scratch_ops;
        p.latency_cycles += n / 2.0 * m.spill_latency;
        p.scratch_ops = n;
        p.scratch_bytes = n * 4.0;
    } else if !crate::gpu::of(arch).listing_shows_spills() {
        let weight = if p.code_instructions > 0.0 { (p.instructions / p.code_instructions).max(1.0) } else { 1.0 };
        // ptxas spills whole 32-bit registers at least.
        let (stores, loads) = (f64::from(usage.vgpr_spills) / 4.0, f64::from(usage.sgpr_spills) / 4.0);
        p.scratch_ops += (stores + loads) * weight;
        p.scratch_bytes += f64::from(usage.vgpr_spills + usage.sgpr_spills) * weight;
        p.issue_cycles += (stores + loads) * weight;
        p.latency_cycles += loads * weight * m.spill_latency;
    }
    Estimate::of(&p, waves(arch, usage.occupancy), &m)
}

/// Plain time over variant time: above 1.0 the variant is predicted faster.
pub(crate) fn speedup(plain: &Estimate, variant: &Estimate) -> f64 {
    plain.cycles / variant.cycles
}

/// A variant's profile from its listing (AMDGPU assembly or PTX, the
/// kernel's part alone).
pub(crate) fn profile_of(kernel_listing: &str, arch: &Arch) -> Profile {
    crate::gpu::of(arch).profile(kernel_listing, &Machine::of(arch))
}

/// Waves per SIMD (or warps per SM sub-partition) at a reported occupancy.
pub(crate) fn waves(arch: &Arch, occupancy: u32) -> f64 {
    crate::gpu::of(arch).waves(occupancy)
}

/// One instruction as the simulation needs it.
#[derive(Debug, Clone, PartialEq)]
enum Op {
    /// An ALU instruction: its issue cycles (a vector one at the machine's
    /// VALU rate), the register it writes and those it reads (PTX only;
    /// AMDGPU waits are explicit).
    Alu { cycles: f64, vector: bool, dest: Option<String>, srcs: Vec<String> },
    /// A memory access: `queue` is vm (global, scratch) or lgkm (scalar,
    /// LDS); PTX uses `dest`/`srcs` instead of queues.
    Mem { kind: MemKind, bytes: f64, load: bool, dest: Option<String>, srcs: Vec<String> },
    /// AMDGPU `s_waitcnt`: wait until at most this many are outstanding.
    Wait { vm: Option<usize>, lgkm: Option<usize> },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MemKind {
    Global,
    Scratch,
    Scalar,
    Lds,
}

/// Straight-line code and loops, in layout order.
#[derive(Debug, Clone, PartialEq)]
enum Item {
    Op(Op),
    /// `assumed`: the trips taken when the code does not show the count.
    Loop {
        header: String,
        trips: Option<u64>,
        assumed: f64,
        body: Vec<Item>,
    },
}

/// One line of a listing: the label it defines, or the instruction it
/// holds as (mnemonic, operands).
type Line = (Option<String>, Option<(String, String)>);

/// A loop's trip count from the listing and the loop's (first, last) line,
/// where the code shows it.
type TripCount = dyn Fn(&[Line], usize, usize) -> Option<u64>;

/// The profile of an AMDGPU kernel from its assembly (the lines from
/// `symbol:` to `.Lfunc_end`, as `clang -S` prints them).
pub(crate) fn profile_amdgpu(asm: &str, m: &Machine) -> Profile {
    let lines: Vec<Line> = asm.lines().map(amdgpu_line).collect();
    let items = structure(&lines, &amdgpu_branch_target, &amdgpu_op, &amdgpu_trips);
    profile(&items, m, false)
}

/// The profile of an NVPTX kernel from its PTX (the `.entry` block).
pub(crate) fn profile_ptx(ptx: &str, m: &Machine) -> Profile {
    let lines: Vec<Line> = ptx.lines().map(ptx_line).collect();
    let items = structure(&lines, &ptx_branch_target, &ptx_op, &ptx_trips);
    profile(&items, m, true)
}

/// A line as (label it defines, (mnemonic, operands)); comments dropped.
fn amdgpu_line(line: &str) -> Line {
    let code = line.split(';').next().unwrap_or("").trim();
    if let Some(label) = code.strip_suffix(':') {
        return (Some(label.to_string()), None);
    }
    if code.is_empty() || code.starts_with('.') {
        return (None, None);
    }
    let (mnemonic, operands) = code.split_once(char::is_whitespace).unwrap_or((code, ""));
    // Spills keep their comment: "; 4-byte Folded Spill".
    let operands = if line.contains("Folded Spill") || line.contains("Folded Reload") {
        format!("{} ;spill", operands.trim())
    } else {
        operands.trim().to_string()
    };
    (None, Some((mnemonic.to_string(), operands)))
}

fn ptx_line(line: &str) -> Line {
    let code = line.split("//").next().unwrap_or("").trim();
    if let Some(label) = code.strip_suffix(':') {
        return (Some(label.to_string()), None);
    }
    let Some(code) = code.strip_suffix(';') else {
        return (None, None);
    };
    if code.starts_with('.') {
        return (None, None);
    }
    // A guard: "@%p1 bra $L" → mnemonic "bra", the guard kept as an operand.
    let (guard, rest) = match code.strip_prefix('@') {
        Some(g) => {
            let (p, rest) = g.split_once(char::is_whitespace).unwrap_or((g, ""));
            (Some(p.trim_start_matches('!')), rest.trim())
        }
        None => (None, code),
    };
    let (mnemonic, operands) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let operands = match guard {
        Some(p) => format!("{}, {p}", operands.trim()),
        None => operands.trim().to_string(),
    };
    (None, Some((mnemonic.to_string(), operands)))
}

fn amdgpu_branch_target(mnemonic: &str, operands: &str) -> Option<String> {
    (mnemonic == "s_branch" || mnemonic.starts_with("s_cbranch")).then(|| operands.trim().to_string())
}

fn ptx_branch_target(mnemonic: &str, operands: &str) -> Option<String> {
    mnemonic.starts_with("bra").then(|| operands.split(',').next().unwrap_or("").trim().to_string())
}

/// Lines into items: a branch back to an earlier label closes a loop from
/// that label to the branch. Loops that overlap without nesting are
/// flattened (counted once).
fn structure(
    lines: &[Line],
    target: &dyn Fn(&str, &str) -> Option<String>,
    op: &dyn Fn(&str, &str) -> Option<Op>,
    trips: &TripCount,
) -> Vec<Item> {
    // Back edges: (label line, branch line).
    let label_at = |name: &str| lines.iter().position(|(l, _)| l.as_deref() == Some(name));
    let mut loops: Vec<(usize, usize)> = lines
        .iter()
        .enumerate()
        .filter_map(|(i, (_, ins))| {
            let (m, o) = ins.as_ref()?;
            let start = label_at(&target(m, o)?)?;
            (start < i).then_some((start, i))
        })
        .collect();
    // Outermost first; one loop per header (the last back edge closes it).
    loops.sort_by_key(|&(s, e)| (s, std::cmp::Reverse(e)));
    loops.dedup_by_key(|(s, _)| *s);
    build(lines, 0, lines.len(), &loops, op, trips)
}

fn build(
    lines: &[Line],
    from: usize,
    to: usize,
    loops: &[(usize, usize)],
    op: &dyn Fn(&str, &str) -> Option<Op>,
    trips_fn: &TripCount,
) -> Vec<Item> {
    let mut items = Vec::new();
    let mut i = from;
    while i < to {
        if let Some(&(s, e)) = loops.iter().find(|&&(s, e)| s == i && e < to) {
            let inner: Vec<(usize, usize)> = loops.iter().copied().filter(|&(a, b)| a > s && b <= e).collect();
            let header = lines[s].0.clone().unwrap_or_default();
            let (trips, assumed) = (trips_fn(lines, s, e), assumed_trips(lines, s));
            items.push(Item::Loop { header, trips, assumed, body: build(lines, s, e + 1, &inner, op, trips_fn) });
            i = e + 1;
            continue;
        }
        if let Some((m, o)) = &lines[i].1 {
            if let Some(op) = op(m, o) {
                items.push(Item::Op(op));
            }
        }
        i += 1;
    }
    items
}

/// Trips assumed for a loop whose count the code does not show: the
/// [`UNKNOWN_TRIPS`] iterations of the source loop, shared among the loops
/// a runtime unroll by K (4 to 64) made of it, so that an unrolled build is not
/// charged K times the work of a rolled one. The unrolled loop is guarded
/// by `n < K` just before it (`setp.lt`, `s_cmp_lt`, `v_cmp_gt`...) and runs
/// UNKNOWN_TRIPS / K times; the remainder loop counts `n & (K - 1)` and runs
/// UNKNOWN_TRIPS mod K times.
fn assumed_trips(lines: &[Line], start: usize) -> f64 {
    const WINDOW: usize = 12;
    let before = lines[start.saturating_sub(WINDOW)..start].iter().filter_map(|(_, i)| i.as_ref());
    let constant = |o: &str| -> Vec<i64> { o.split(',').skip(1).filter_map(|a| parse_int(a.trim())).collect() };
    let mut guess = UNKNOWN_TRIPS;
    for (m, o) in before {
        let k = if m.starts_with("setp.") || m.starts_with("s_cmp_") || m.starts_with("v_cmp_") {
            constant(o).into_iter().find(|&k| (4..=64).contains(&k) && k & (k - 1) == 0).map(|k| (k, false))
        } else if m.starts_with("and.") || m.starts_with("s_and_b32") || m.starts_with("v_and_b32") {
            constant(o).into_iter().find(|&k| (3..=63).contains(&k) && (k + 1) & k == 0).map(|k| (k + 1, true))
        } else {
            None
        };
        if let Some((k, remainder)) = k {
            let k = k as f64;
            guess = if remainder { UNKNOWN_TRIPS % k } else { (UNKNOWN_TRIPS / k).max(1.0) };
        }
    }
    guess
}

/// Bytes a memory mnemonic moves per lane: `global_load_dwordx4` 16,
/// `global_load_b64` 8, `ld.global.v2.f64` 16, ...
fn access_bytes(mnemonic: &str) -> f64 {
    let width = |s: &str| -> Option<f64> {
        Some(match s {
            "dword" | "b32" | "u32" | "s32" | "f32" => 4.0,
            "dwordx2" | "b64" | "u64" | "s64" | "f64" => 8.0,
            "dwordx3" | "b96" => 12.0,
            "dwordx4" | "b128" => 16.0,
            "short" | "ushort" | "sshort" | "b16" | "u16" | "i16" | "s16" | "d16" | "f16" => 2.0,
            "byte" | "ubyte" | "sbyte" | "b8" | "u8" | "i8" | "s8" => 1.0,
            _ => return None,
        })
    };
    let parts: Vec<&str> = mnemonic.split(['_', '.']).collect();
    let lanes = parts.iter().find_map(|p| p.strip_prefix('v').and_then(|n| n.parse::<f64>().ok())).unwrap_or(1.0);
    parts.iter().rev().find_map(|p| width(p)).unwrap_or(4.0) * lanes
}

fn amdgpu_op(mnemonic: &str, operands: &str) -> Option<Op> {
    let mem = |kind, load| Some(Op::Mem { kind, bytes: access_bytes(mnemonic), load, dest: None, srcs: vec![] });
    let is_load = mnemonic.contains("load") || mnemonic.contains("atomic");
    if mnemonic == "s_waitcnt" {
        let count =
            |name: &str| operands.split_whitespace().find_map(|t| t.strip_prefix(name)?.strip_prefix('(')?.strip_suffix(')')?.parse().ok());
        return Some(Op::Wait { vm: count("vmcnt"), lgkm: count("lgkmcnt") });
    }
    if mnemonic.starts_with("scratch_") || (mnemonic.starts_with("buffer_") && operands.ends_with(";spill")) {
        return mem(MemKind::Scratch, is_load);
    }
    if mnemonic.starts_with("buffer_") && operands.contains(", off,") {
        // MUBUF with no address VGPR: private memory (scratch).
        return mem(MemKind::Scratch, is_load);
    }
    if mnemonic.starts_with("global_") || mnemonic.starts_with("flat_") || mnemonic.starts_with("buffer_") {
        return mem(MemKind::Global, is_load);
    }
    if mnemonic.starts_with("s_load") || mnemonic.starts_with("s_buffer_load") {
        return mem(MemKind::Scalar, true);
    }
    if mnemonic.starts_with("ds_") {
        return mem(MemKind::Lds, is_load);
    }
    let cycles = if mnemonic == "s_nop" {
        parse_int(operands).unwrap_or(0) as f64 + 1.0
    } else if mnemonic.starts_with("s_waitcnt") || mnemonic == "s_endpgm" {
        0.0
    } else {
        1.0
    };
    Some(Op::Alu { cycles, vector: mnemonic.starts_with("v_"), dest: None, srcs: vec![] })
}

/// PTX registers an operand list names (`%rd12`, `%fd3`, `%p1`).
fn ptx_registers(operands: &str) -> Vec<String> {
    operands
        .split(|c: char| !(c.is_alphanumeric() || c == '%' || c == '_'))
        .filter(|t| t.starts_with('%') && t.len() > 1)
        .map(str::to_string)
        .collect()
}

fn ptx_op(mnemonic: &str, operands: &str) -> Option<Op> {
    let regs = ptx_registers(operands);
    let parts: Vec<&str> = mnemonic.split('.').collect();
    let space = |s: &str| parts.get(1) == Some(&s);
    let kind = if space("global") {
        Some(MemKind::Global)
    } else if space("local") {
        Some(MemKind::Scratch)
    } else if space("shared") {
        Some(MemKind::Lds)
    } else {
        None
    };
    match (parts[0], kind) {
        ("ld", Some(kind)) => {
            let (dest, srcs) = split_dest(regs);
            Some(Op::Mem { kind, bytes: access_bytes(mnemonic), load: true, dest, srcs })
        }
        ("st", Some(kind)) | ("red", Some(kind)) | ("atom", Some(kind)) => {
            Some(Op::Mem { kind, bytes: access_bytes(mnemonic), load: parts[0] == "atom", dest: None, srcs: regs })
        }
        ("ret" | "exit", _) => None,
        _ => {
            let (dest, srcs) = if parts[0] == "bra" { (None, regs) } else { split_dest(regs) };
            Some(Op::Alu { cycles: 1.0, vector: false, dest, srcs })
        }
    }
}

fn split_dest(mut regs: Vec<String>) -> (Option<String>, Vec<String>) {
    if regs.is_empty() {
        return (None, regs);
    }
    let dest = regs.remove(0);
    (Some(dest), regs)
}

fn parse_int(s: &str) -> Option<i64> {
    let s = s.trim();
    if let Some(h) = s.strip_prefix("0x") {
        return i64::from_str_radix(h, 16).ok().map(|v| v as i32 as i64);
    }
    if let Some(h) = s.strip_prefix("-0x") {
        return i64::from_str_radix(h, 16).ok().map(|v| -v);
    }
    s.parse().ok()
}

/// Iterations of a loop counted in a register from `init` by `step` until
/// a compare against `bound` ends it: (bound - init) / step when whole.
fn count(init: i64, step: i64, bound: i64, inclusive: bool) -> Option<u64> {
    if step == 0 {
        return None;
    }
    let span = bound - init + if inclusive { step.signum() } else { 0 };
    (span % step == 0 && span / step > 0).then(|| (span / step) as u64)
}

/// A scalar counter: `s_mov_b32 sN, I` before the loop, `s_add_i32 sN,
/// sN, S` in it, and the branch's `s_cmp_{lg,eq,..}_{u32,i32} sN, B`.
fn amdgpu_trips(lines: &[Line], start: usize, end: usize) -> Option<u64> {
    let ops = |r: std::ops::Range<usize>| lines[r].iter().filter_map(|(_, i)| i.as_ref());
    let (cmp, cmp_ops) = ops(start..end).rfind(|(m, _)| m.starts_with("s_cmp_"))?;
    let args: Vec<&str> = cmp_ops.split(',').map(str::trim).collect();
    let (reg, bound) = match (args.first().and_then(|a| parse_int(a)), args.get(1).and_then(|a| parse_int(a))) {
        (None, Some(b)) => (args[0], b),
        (Some(b), None) => (*args.get(1)?, b),
        _ => return None,
    };
    let step = ops(start..end).find_map(|(m, o)| {
        let a: Vec<&str> = o.split(',').map(str::trim).collect();
        let add = matches!(m.as_str(), "s_add_i32" | "s_add_u32");
        let sub = matches!(m.as_str(), "s_sub_i32" | "s_sub_u32");
        ((add || sub) && a.len() == 3 && a[0] == reg && a[1] == reg).then(|| parse_int(a[2]).map(|s| if sub { -s } else { s }))?
    })?;
    let init = ops(0..start).rfind(|(m, o)| m == "s_mov_b32" && o.split(',').next().map(str::trim) == Some(reg))?;
    let init = parse_int(init.1.split(',').nth(1)?)?;
    // The loop runs while the compare lets the branch back: lg/ne continue until equal.
    let inclusive = cmp.contains("_le_") || cmp.contains("_ge_");
    count(init, step, bound, inclusive)
}

/// A PTX counter: `mov.{u32,b32} %r, I` before the loop, `add.s32 %r, %r,
/// S` in it, `setp.{ne,lt,..}.s32 %p, %r, B` feeding the back branch.
fn ptx_trips(lines: &[Line], start: usize, end: usize) -> Option<u64> {
    let ops = |r: std::ops::Range<usize>| lines[r].iter().filter_map(|(_, i)| i.as_ref());
    let (setp, setp_ops) = ops(start..end).rfind(|(m, _)| m.starts_with("setp."))?;
    let args: Vec<&str> = setp_ops.split(',').map(str::trim).collect();
    let (reg, bound) = (*args.get(1)?, parse_int(args.get(2)?)?);
    let step = ops(start..end).find_map(|(m, o)| {
        let a: Vec<&str> = o.split(',').map(str::trim).collect();
        (m.starts_with("add.") && a.len() == 3 && a[0] == reg && a[1] == reg).then(|| parse_int(a[2]))?
    })?;
    let init = ops(0..start).rfind(|(m, o)| m.starts_with("mov.") && o.split(',').next().map(str::trim) == Some(reg))?;
    let init = parse_int(init.1.split(',').nth(1)?)?;
    let inclusive = setp.contains(".le.") || setp.contains(".ge.");
    count(init, step, bound, inclusive)
}

/// The wave simulation's state: the clock, and when each outstanding
/// access completes (AMDGPU queues) or each register is ready (PTX).
#[derive(Debug, Clone, Default)]
struct Wave {
    clock: f64,
    vm: Vec<f64>,
    lgkm: Vec<f64>,
    ready: std::collections::HashMap<String, f64>,
}

#[derive(Default)]
struct Totals {
    instructions: f64,
    code_instructions: f64,
    issue: f64,
    memory_ops: f64,
    memory_bytes: f64,
    scratch_ops: f64,
    scratch_bytes: f64,
}

fn profile(items: &[Item], m: &Machine, dataflow: bool) -> Profile {
    let mut wave = Wave::default();
    let mut totals = Totals::default();
    let mut loops = Vec::new();
    run(items, 1.0, 0, m, dataflow, &mut wave, &mut totals, &mut loops);
    Profile {
        instructions: totals.instructions,
        code_instructions: totals.code_instructions,
        issue_cycles: totals.issue,
        memory_ops: totals.memory_ops,
        memory_bytes: totals.memory_bytes,
        scratch_ops: totals.scratch_ops,
        scratch_bytes: totals.scratch_bytes,
        latency_cycles: wave.clock,
        loops,
    }
}

/// Simulate `items` once, counting them `weight` times; a loop's body runs
/// once in the simulation and the time it took is repeated for the rest of
/// its trips.
#[allow(clippy::too_many_arguments)]
fn run(items: &[Item], weight: f64, depth: usize, m: &Machine, dataflow: bool, wave: &mut Wave, t: &mut Totals, loops: &mut Vec<Loop>) {
    for item in items {
        match item {
            Item::Loop { header, trips, assumed, body } => {
                loops.push(Loop { header: header.clone(), trips: *trips, depth: depth + 1 });
                let n = trips.map(|n| n as f64).unwrap_or(*assumed);
                let before = wave.clock;
                run(body, weight * n, depth + 1, m, dataflow, wave, t, loops);
                wave.clock += (n - 1.0).max(0.0) * (wave.clock - before);
            }
            Item::Op(op) => step(op, weight, m, dataflow, wave, t),
        }
    }
}

fn step(op: &Op, weight: f64, m: &Machine, dataflow: bool, wave: &mut Wave, t: &mut Totals) {
    let ready = |wave: &Wave, srcs: &[String]| srcs.iter().filter_map(|r| wave.ready.get(r)).fold(wave.clock, |a, &b| a.max(b));
    match op {
        Op::Wait { vm, lgkm } => {
            for (queue, keep) in [(&mut wave.vm, vm), (&mut wave.lgkm, lgkm)] {
                if let Some(keep) = keep {
                    if queue.len() > *keep {
                        let done: Vec<f64> = queue.drain(..queue.len() - keep).collect();
                        wave.clock = done.into_iter().fold(wave.clock, f64::max);
                    }
                }
            }
        }
        Op::Alu { cycles, vector, dest, srcs } => {
            let cycles = if *vector { cycles * m.valu_cycles } else { *cycles };
            t.instructions += weight;
            t.code_instructions += 1.0;
            t.issue += weight * cycles;
            if dataflow {
                wave.clock = ready(wave, srcs);
                if let Some(d) = dest {
                    wave.ready.insert(d.clone(), wave.clock + m.alu_latency);
                }
            }
            wave.clock += cycles;
        }
        Op::Mem { kind, bytes, load, dest, srcs } => {
            let (latency, issue) = match kind {
                MemKind::Global | MemKind::Scratch => (m.memory_latency, m.valu_cycles),
                MemKind::Scalar => (m.scalar_latency, 1.0),
                MemKind::Lds => (m.lds_latency, m.valu_cycles),
            };
            t.instructions += weight;
            t.code_instructions += 1.0;
            t.issue += weight * issue;
            match kind {
                MemKind::Global => {
                    t.memory_ops += weight;
                    t.memory_bytes += weight * bytes;
                }
                MemKind::Scratch => {
                    t.scratch_ops += weight;
                    t.scratch_bytes += weight * bytes;
                }
                MemKind::Scalar | MemKind::Lds => {}
            }
            if dataflow {
                wave.clock = ready(wave, srcs);
                if let Some(d) = dest {
                    wave.ready.insert(d.clone(), wave.clock + latency);
                }
            } else {
                let queue = match kind {
                    MemKind::Scalar | MemKind::Lds => Some(&mut wave.lgkm),
                    _ if *load || m.stores_in_vmcnt => Some(&mut wave.vm),
                    _ => None,
                };
                if let Some(q) = queue {
                    q.push(wave.clock + latency);
                }
            }
            wave.clock += issue;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gfx90a() -> Machine {
        Machine::of(&Arch::parse("gfx90a").unwrap())
    }

    // From `clang -S` of examples/laplacian3d.hip for gfx90a with
    // unroll-cap=1 (the counted tile loop; the body trimmed to its
    // memory accesses, waits and the counter).
    const CAPPED: &str = "\
_Z20laplacian3d_o8_ztilePdPKdiid:       ; @_Z20laplacian3d_o8_ztilePdPKdiid
; %bb.0:
	s_load_dword s0, s[4:5], 0x2c
	s_waitcnt lgkmcnt(0)
	s_cbranch_execz .LBB0_3
	global_load_dwordx2 v[0:1], v[4:5], off
	s_mov_b32 s55, 16
.LBB0_2:                                ; =>This Inner Loop Header: Depth=1
	global_load_dwordx2 v[6:7], v[30:31], off
	global_load_dwordx2 v[8:9], v[32:33], off
	s_waitcnt vmcnt(1)
	v_add_f64 v[26:27], v[6:7], v[26:27]
	s_add_i32 s55, s55, -1
	s_waitcnt vmcnt(0)
	v_fmac_f64_e32 v[44:45], s[24:25], v[18:19]
	v_mul_f64 v[18:19], s[18:19], v[44:45]
	global_store_dwordx2 v[42:43], v[18:19], off
	s_cmp_lg_u32 s55, 0
	s_cbranch_scc1 .LBB0_2
.LBB0_3:
	s_endpgm
";

    #[test]
    fn a_counted_loop_is_weighted_by_its_trips() {
        let p = profile_amdgpu(CAPPED, &gfx90a());
        assert_eq!(p.loops, [Loop { header: ".LBB0_2".into(), trips: Some(16), depth: 1 }]);
        // Outside: s_load, 1 load; inside, 16 times: 2 loads and a store.
        assert_eq!(p.memory_ops, 1.0 + 16.0 * 3.0);
        assert_eq!(p.memory_bytes, 8.0 * (1.0 + 16.0 * 3.0));
        assert_eq!(p.scratch_ops, 0.0);
        // Each iteration waits for its own loads: at least 16 latencies.
        assert!(p.latency_cycles > 16.0 * 600.0, "{p:?}");
    }

    #[test]
    fn loads_in_flight_together_wait_once() {
        let m = gfx90a();
        let batched = "k:\n\tglobal_load_dwordx2 v[0:1], v[2:3], off\n\tglobal_load_dwordx2 v[4:5], v[2:3], off\n\ts_waitcnt vmcnt(0)\n\tv_add_f64 v[0:1], v[0:1], v[4:5]\n";
        let serial = "k:\n\tglobal_load_dwordx2 v[0:1], v[2:3], off\n\ts_waitcnt vmcnt(0)\n\tglobal_load_dwordx2 v[4:5], v[2:3], off\n\ts_waitcnt vmcnt(0)\n\tv_add_f64 v[0:1], v[0:1], v[4:5]\n";
        let (b, s) = (profile_amdgpu(batched, &m), profile_amdgpu(serial, &m));
        assert_eq!(b.issue_cycles, s.issue_cycles);
        assert!(s.latency_cycles > b.latency_cycles + 500.0, "{b:?} {s:?}");
        // Occupancy hides latency: the serial code at twice the waves catches up.
        let e = |p: &Profile, w| Estimate::of(p, w, &m).cycles;
        assert!(e(&s, 2.0) < e(&s, 1.0));
        assert!((e(&s, 2.0) - e(&b, 1.0)).abs() < 0.1 * e(&b, 1.0));
    }

    // From the same kernel with `#pragma unroll 8`: spills to scratch.
    #[test]
    fn spills_are_scratch_traffic() {
        let asm = "k:\n\tbuffer_store_dword v2, off, s[96:99], 0 offset:8 ; 4-byte Folded Spill\n\tbuffer_load_dword v2, off, s[96:99], 0 offset:8 ; 4-byte Folded Reload\n\tv_writelane_b32 v125, s8, 0\n";
        let p = profile_amdgpu(asm, &gfx90a());
        assert_eq!((p.scratch_ops, p.scratch_bytes, p.memory_ops), (2.0, 8.0, 0.0));
        assert_eq!(p.instructions, 3.0);
    }

    #[test]
    fn ptx_loops_and_loads() {
        // The shape clang emits for sm_90: a counted loop, guarded back branch.
        let ptx = "\
{
	mov.b32 	%r20, 0;
$L__BB0_2:
	ld.global.nc.b64 	%rd17, [%rd16];
	ld.global.nc.v2.f64 	{%fd1, %fd2}, [%rd18];
	fma.rn.f64 	%fd3, %fd1, %fd2, %fd3;
	st.global.b64 	[%rd19], %fd3;
	ld.local.f64 	%fd9, [%rd7];
	add.s32 	%r20, %r20, 1;
	setp.ne.s32 	%p2, %r20, 12;
	@%p2 bra 	$L__BB0_2;
	ret;
}
";
        let m = Machine::of(&Arch::parse("sm_90").unwrap());
        let p = profile_ptx(ptx, &m);
        assert_eq!(p.loops, [Loop { header: "$L__BB0_2".into(), trips: Some(12), depth: 1 }]);
        assert_eq!(p.memory_bytes, 12.0 * (8.0 + 16.0 + 8.0));
        assert_eq!(p.scratch_bytes, 12.0 * 8.0);
        // The fma waits for both loads: one latency per iteration, not two.
        assert!(p.latency_cycles > 12.0 * 600.0 && p.latency_cycles < 12.0 * 1200.0, "{p:?}");
    }

    #[test]
    fn trip_counts_need_a_constant_counter() {
        assert_eq!(count(0, 1, 16, false), Some(16));
        assert_eq!(count(16, -1, 0, false), Some(16));
        assert_eq!(count(0, 4, 16, false), Some(4));
        assert_eq!(count(0, 3, 16, false), None);
        assert_eq!(count(1, 1, 16, true), Some(16));
        assert_eq!(parse_int("0xfffffff0"), Some(-16));
    }
}
