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
//! Each target reads its listings and gives its machine (`gpu/listing.rs`);
//! the simulation and the estimate are here.

use serde::Serialize;

use crate::gpu::listing::{Item, Listing, Machine, MemKind, Op};
use crate::gpu::Arch;

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
    let target = crate::gpu::of(arch);
    let m = target.machine();
    let mut p = p.clone();
    if !target.listing_shows_spills() && usage.local_accesses > 0 {
        let n = f64::from(usage.local_accesses);
        p.issue_cycles += n - p.scratch_ops;
        p.latency_cycles += n / 2.0 * m.spill_latency;
        p.scratch_ops = n;
        p.scratch_bytes = n * 4.0;
    } else if !target.listing_shows_spills() {
        let weight = if p.code_instructions > 0.0 { (p.instructions / p.code_instructions).max(1.0) } else { 1.0 };
        // ptxas spills whole 32-bit registers at least.
        let (stores, loads) = (f64::from(usage.vgpr_spills) / 4.0, f64::from(usage.sgpr_spills) / 4.0);
        p.scratch_ops += (stores + loads) * weight;
        p.scratch_bytes += f64::from(usage.vgpr_spills + usage.sgpr_spills) * weight;
        p.issue_cycles += (stores + loads) * weight;
        p.latency_cycles += loads * weight * m.spill_latency;
    }
    Estimate::of(&p, target.waves(usage.occupancy), &m)
}

/// Plain time over variant time: above 1.0 the variant is predicted faster.
pub(crate) fn speedup(plain: &Estimate, variant: &Estimate) -> f64 {
    plain.cycles / variant.cycles
}

/// A variant's profile from its listing (AMDGPU assembly or PTX, the
/// kernel's part alone).
pub(crate) fn profile_of(kernel_listing: &str, arch: &Arch) -> Profile {
    let target = crate::gpu::of(arch);
    simulate(&target.read_listing(kernel_listing), &target.machine())
}

/// The target's machine.
pub(crate) fn machine(arch: &Arch) -> Machine {
    crate::gpu::of(arch).machine()
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

/// One wave through the listing, alone: its counts and its time.
fn simulate(listing: &Listing, m: &Machine) -> Profile {
    let (items, dataflow) = (&listing.items, listing.dataflow);
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

    fn gfx90a() -> Arch {
        Arch::parse("gfx90a").unwrap()
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
        let p = profile_of(CAPPED, &gfx90a());
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
        let (gfx, m) = (gfx90a(), machine(&gfx90a()));
        let batched = "k:\n\tglobal_load_dwordx2 v[0:1], v[2:3], off\n\tglobal_load_dwordx2 v[4:5], v[2:3], off\n\ts_waitcnt vmcnt(0)\n\tv_add_f64 v[0:1], v[0:1], v[4:5]\n";
        let serial = "k:\n\tglobal_load_dwordx2 v[0:1], v[2:3], off\n\ts_waitcnt vmcnt(0)\n\tglobal_load_dwordx2 v[4:5], v[2:3], off\n\ts_waitcnt vmcnt(0)\n\tv_add_f64 v[0:1], v[0:1], v[4:5]\n";
        let (b, s) = (profile_of(batched, &gfx), profile_of(serial, &gfx));
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
        let p = profile_of(asm, &gfx90a());
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
        let p = profile_of(ptx, &Arch::parse("sm_90").unwrap());
        assert_eq!(p.loops, [Loop { header: "$L__BB0_2".into(), trips: Some(12), depth: 1 }]);
        assert_eq!(p.memory_bytes, 12.0 * (8.0 + 16.0 + 8.0));
        assert_eq!(p.scratch_bytes, 12.0 * 8.0);
        // The fma waits for both loads: one latency per iteration, not two.
        assert!(p.latency_cycles > 12.0 * 600.0 && p.latency_cycles < 12.0 * 1200.0, "{p:?}");
    }
}
