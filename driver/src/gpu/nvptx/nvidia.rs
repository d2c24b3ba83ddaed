//! NVIDIA's occupancy calculator, per compute capability, for NVPTX targets.
//!
//! Occupancy on NVIDIA GPUs is the number of warps resident on one SM
//! (streaming multiprocessor) at once. It is computed here exactly as NVIDIA's
//! own calculator computes it — `cudaOccMaxActiveBlocksPerMultiprocessor` in
//! `cuda_occupancy.h` (CUDA 12.9), which the CUDA Occupancy Calculator and
//! `cudaOccupancyMaxActiveBlocksPerMultiprocessor` implement — for the
//! driver's default state (no carveout preference, no opt-in shared memory,
//! no dynamic shared memory unless given). Active blocks per SM are the
//! minimum of four limits, each named after the header's function:
//!
//! ```text
//! registers  cudaOccMaxBlocksPerSMRegsLimit: registers are allocated per warp,
//!            regs*32 rounded up to 256; each of the 4 SM sub-partitions holds
//!            regsPerSM/4 of them, so warps/SM = 4 * floor(16384 / per-warp);
//!            blocks = that / warps-per-block (0 if the block needs more than
//!            regsPerBlock, or regs > 256)
//! warps      cudaOccMaxBlocksPerSMWarpsLimit: maxWarpsPerSM / warps-per-block
//! blocks     cudaOccMaxBlocksPerMultiprocessor: the SM's block slots
//! shared     cudaOccMaxBlocksPerSMSmemLimit: (static + dynamic + the driver's
//!            reserved 1 KB per block from sm_80 on) rounded up to the
//!            allocation unit (256 B on sm_7x, 128 B from sm_80); the SM's
//!            shared memory is the largest carveout, or the smallest carveout
//!            that holds one block when that is larger; 0 blocks past the
//!            per-block limit (48 KB without opt-in, plus the reserved 1 KB)
//! barriers   cudaOccMaxBlocksPerSMBlockBarrierLimit (from sm_90 on): block
//!            slots * barriers per slot (2 on sm_90, sm_100, sm_103; 1 on
//!            sm_120) / named barriers per block
//! ```
//!
//! The device numbers are those `cudaGetDeviceProperties` reports for each
//! compute capability (CUDA C++ Programming Guide, "Technical Specifications
//! per Compute Capability"): the same for every GPU of that capability. For
//! the Blackwell capabilities (sm_100, sm_103, sm_120) they are taken from
//! NVIDIA's own code instead: `cuda_occupancy.h` of CUDA 12.9 for the block
//! slots, carveouts, allocation units and barriers, libcu++'s
//! `cuda/__device/arch_traits.h` (CCCL, `traits<id::sm_100>`,
//! `traits<id::sm_103>`, `traits<id::sm_120>`) for threads and shared memory
//! per SM, registers (64 K per SM and per block) and the reserved kilobyte
//! per block, and CUTLASS's `cutlass/arch/arch.h`
//! (`sm100_smem_capacity_bytes = 232448`, `sm120_smem_capacity_bytes =
//! 101376`) for the opt-in per block. sm_101 and sm_121, which ptxas 12.9
//! also takes, are not modelled: no NVIDIA source found gives their
//! threads per SM.

use crate::gpu::Limiter;

/// Warp size on every NVIDIA GPU.
pub(crate) const WARP_SIZE: u32 = 32;
/// Register allocation unit per warp (`cudaOccRegAllocationGranularity`).
const REG_ALLOC_UNIT: u32 = 256;
/// SM sub-partitions, each with a quarter of the register file
/// (`cudaOccSubPartitionsPerMultiprocessor`).
const SUB_PARTITIONS: u32 = 4;
/// The most registers one thread may use (`cudaOccRegAllocationMaxPerThread`);
/// ptxas itself stops at 255.
const MAX_REGS_PER_THREAD_OCC: u32 = 256;
/// The most registers ptxas gives a thread.
pub(crate) const MAX_REGS_PER_THREAD: u32 = 255;
/// Largest block on every modelled GPU (`maxThreadsPerBlock`).
pub(crate) const MAX_BLOCK: u32 = 1024;

/// One compute capability's occupancy-relevant device properties.
#[derive(Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub struct Sm {
    /// As `--offload-arch` / `--cuda-gpu-arch` spell it: "sm_90".
    pub name: &'static str,
    pub major: u32,
    pub minor: u32,
    /// `maxThreadsPerMultiProcessor / warpSize`.
    pub max_warps_per_sm: u32,
    /// `cudaOccMaxBlocksPerMultiprocessor`.
    pub max_blocks_per_sm: u32,
    /// `regsPerMultiprocessor` (= `regsPerBlock` on every modelled GPU).
    pub regs_per_sm: u32,
    /// `sharedMemPerMultiprocessor`: the largest carveout.
    pub smem_per_sm: u32,
    /// `sharedMemPerBlock`: what a block gets without opting in.
    pub smem_per_block: u32,
    /// `sharedMemPerBlockOptin`.
    pub smem_per_block_optin: u32,
    /// `reservedSharedMemPerBlock`: the driver's 1 KB per block from sm_80 on.
    pub reserved_smem_per_block: u32,
    /// Shared-memory carveouts in KB (`cudaOccAlignUpShmemSizeVoltaPlus`).
    pub carveouts_kb: &'static [u32],
    /// Named barriers each block slot brings
    /// (`cudaOccMaxBlocksPerSMBlockBarrierLimit`: `ctaLimitBlocks * 2`, or
    /// `ctaLimitBlocks` on sm_86, sm_89 and sm_12x); the limit counts only
    /// from sm_90 on.
    pub barriers_per_block_slot: u32,
}

const VOLTA_CARVEOUTS: &[u32] = &[0, 8, 16, 32, 64, 96];
const TURING_CARVEOUTS: &[u32] = &[32, 64];
const GA100_CARVEOUTS: &[u32] = &[0, 8, 16, 32, 64, 100, 132, 164];
const GA10X_CARVEOUTS: &[u32] = &[0, 8, 16, 32, 64, 100];
const HOPPER_CARVEOUTS: &[u32] = &[0, 8, 16, 32, 64, 100, 132, 164, 196, 228];
/// cuda_occupancy.h (CUDA 12.9), `case 10:` minors 0, 1 and 3: Hopper's list.
const GB10X_CARVEOUTS: &[u32] = HOPPER_CARVEOUTS;
/// cuda_occupancy.h (CUDA 12.9), `case 12:` minors 0 and 1: GA10x's list.
const GB20X_CARVEOUTS: &[u32] = GA10X_CARVEOUTS;

const KB: u32 = 1024;

/// The compute capabilities regtune models.
pub static SMS: &[Sm] = &[
    // V100.
    Sm {
        name: "sm_70",
        major: 7,
        minor: 0,
        max_warps_per_sm: 64,
        max_blocks_per_sm: 32,
        regs_per_sm: 65536,
        smem_per_sm: 96 * KB,
        smem_per_block: 48 * KB,
        smem_per_block_optin: 96 * KB,
        reserved_smem_per_block: 0,
        carveouts_kb: VOLTA_CARVEOUTS,
        barriers_per_block_slot: 2,
    },
    // T4, RTX 20.
    Sm {
        name: "sm_75",
        major: 7,
        minor: 5,
        max_warps_per_sm: 32,
        max_blocks_per_sm: 16,
        regs_per_sm: 65536,
        smem_per_sm: 64 * KB,
        smem_per_block: 48 * KB,
        smem_per_block_optin: 64 * KB,
        reserved_smem_per_block: 0,
        carveouts_kb: TURING_CARVEOUTS,
        barriers_per_block_slot: 2,
    },
    // A100.
    Sm {
        name: "sm_80",
        major: 8,
        minor: 0,
        max_warps_per_sm: 64,
        max_blocks_per_sm: 32,
        regs_per_sm: 65536,
        smem_per_sm: 164 * KB,
        smem_per_block: 48 * KB,
        smem_per_block_optin: 163 * KB,
        reserved_smem_per_block: KB,
        carveouts_kb: GA100_CARVEOUTS,
        barriers_per_block_slot: 2,
    },
    // A10, RTX 30.
    Sm {
        name: "sm_86",
        major: 8,
        minor: 6,
        max_warps_per_sm: 48,
        max_blocks_per_sm: 16,
        regs_per_sm: 65536,
        smem_per_sm: 100 * KB,
        smem_per_block: 48 * KB,
        smem_per_block_optin: 99 * KB,
        reserved_smem_per_block: KB,
        carveouts_kb: GA10X_CARVEOUTS,
        barriers_per_block_slot: 1,
    },
    // L4, L40, RTX 40.
    Sm {
        name: "sm_89",
        major: 8,
        minor: 9,
        max_warps_per_sm: 48,
        max_blocks_per_sm: 24,
        regs_per_sm: 65536,
        smem_per_sm: 100 * KB,
        smem_per_block: 48 * KB,
        smem_per_block_optin: 99 * KB,
        reserved_smem_per_block: KB,
        carveouts_kb: GA10X_CARVEOUTS,
        barriers_per_block_slot: 1,
    },
    // H100, H200.
    Sm {
        name: "sm_90",
        major: 9,
        minor: 0,
        max_warps_per_sm: 64,
        max_blocks_per_sm: 32,
        regs_per_sm: 65536,
        smem_per_sm: 228 * KB,
        smem_per_block: 48 * KB,
        smem_per_block_optin: 227 * KB,
        reserved_smem_per_block: KB,
        carveouts_kb: HOPPER_CARVEOUTS,
        barriers_per_block_slot: 2,
    },
    // B200, GB200 (compute capability 10.0). Threads and shared memory per SM:
    // CCCL `traits<id::sm_100>` (2048 threads, 228 KB, 1 KB reserved, opt-in
    // 228 - 1 KB = CUTLASS `sm100_smem_capacity_bytes`); block slots (32),
    // carveouts, barriers (2 per slot): cuda_occupancy.h 12.9, `case 10:`.
    Sm {
        name: "sm_100",
        major: 10,
        minor: 0,
        max_warps_per_sm: 64,
        max_blocks_per_sm: 32,
        regs_per_sm: 65536,
        smem_per_sm: 228 * KB,
        smem_per_block: 48 * KB,
        smem_per_block_optin: 227 * KB,
        reserved_smem_per_block: KB,
        carveouts_kb: GB10X_CARVEOUTS,
        barriers_per_block_slot: 2,
    },
    // B300, GB300 (10.3): CCCL's `traits<id::sm_103>` is sm_100's with the
    // minor changed; cuda_occupancy.h 12.9 treats minor 3 as minor 0.
    Sm {
        name: "sm_103",
        major: 10,
        minor: 3,
        max_warps_per_sm: 64,
        max_blocks_per_sm: 32,
        regs_per_sm: 65536,
        smem_per_sm: 228 * KB,
        smem_per_block: 48 * KB,
        smem_per_block_optin: 227 * KB,
        reserved_smem_per_block: KB,
        carveouts_kb: GB10X_CARVEOUTS,
        barriers_per_block_slot: 2,
    },
    // RTX 50, RTX PRO Blackwell (12.0). Threads and shared memory per SM:
    // CCCL `traits<id::sm_120>` (1536 threads, 100 KB, 1 KB reserved, opt-in
    // 99 KB = CUTLASS `sm120_smem_capacity_bytes`); block slots: 24 in
    // cuda_occupancy.h 12.9 (`case 12:`; CCCL says 32, but the calculator
    // this models says 24), carveouts up to 100 KB, 1 barrier per slot.
    Sm {
        name: "sm_120",
        major: 12,
        minor: 0,
        max_warps_per_sm: 48,
        max_blocks_per_sm: 24,
        regs_per_sm: 65536,
        smem_per_sm: 100 * KB,
        smem_per_block: 48 * KB,
        smem_per_block_optin: 99 * KB,
        reserved_smem_per_block: KB,
        carveouts_kb: GB20X_CARVEOUTS,
        barriers_per_block_slot: 1,
    },
];

/// The model for "sm_90", "sm_90a", "sm_100a", "sm_120a" (architecture-specific
/// features do not change occupancy) or "SM_90"; `None` for a capability
/// regtune does not model (family-specific names such as "sm_100f" included:
/// clang 22 refuses them).
pub fn sm(name: &str) -> Option<&'static Sm> {
    let name = name.trim().to_ascii_lowercase();
    let base = name.strip_suffix('a').unwrap_or(&name);
    SMS.iter().find(|s| s.name == base)
}

/// What a kernel asks of an SM, as ptxas reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KernelResources {
    /// Registers per thread.
    pub regs: u32,
    /// Static shared memory per block (`bytes smem`).
    pub static_smem: u32,
    /// Dynamic shared memory per block at launch.
    pub dynamic_smem: u32,
    /// Named barriers per block (`used N barriers`).
    pub barriers: u32,
}

/// Blocks per SM each resource alone allows (`u32::MAX`: no limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Limits {
    pub registers: u32,
    pub warps: u32,
    pub blocks: u32,
    pub shared_memory: u32,
    pub barriers: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Occupancy {
    /// Resident blocks per SM.
    pub blocks: u32,
    /// Resident warps per SM: regtune's `occupancy` on NVPTX.
    pub warps: u32,
    /// What holds `warps` below the SM's maximum, in the AMDGPU names regtune
    /// reports: `Vgpr` registers, `Lds` shared memory, `WorkgroupSize` the
    /// block size against warp, block or barrier slots.
    pub limiter: Limiter,
    pub limits: Limits,
}

fn round_up(x: u32, unit: u32) -> u32 {
    x.div_ceil(unit) * unit
}

impl Sm {
    fn warps_per_block(block: u32) -> u32 {
        block.div_ceil(WARP_SIZE)
    }

    /// `cudaOccSMemAllocationGranularity`.
    fn smem_alloc_unit(&self) -> u32 {
        if self.major >= 8 {
            128
        } else {
            256
        }
    }

    /// `cudaOccMaxBlocksPerSMRegsLimit` (partitioned global caching off).
    fn blocks_by_registers(&self, regs: u32, block: u32) -> u32 {
        let warps = Self::warps_per_block(block);
        let per_warp = round_up(regs * WARP_SIZE, REG_ALLOC_UNIT);
        let per_block = per_warp * warps;
        // The hardware check assumes the block's warps spread over all sub-partitions.
        let assumed = per_warp * round_up(warps, SUB_PARTITIONS);
        if self.regs_per_sm < assumed || self.regs_per_sm < per_block || regs > MAX_REGS_PER_THREAD_OCC {
            return 0;
        }
        if per_warp == 0 {
            return u32::MAX;
        }
        let warps_per_partition = (self.regs_per_sm / SUB_PARTITIONS) / per_warp;
        warps_per_partition * SUB_PARTITIONS / warps
    }

    /// `cudaOccAlignUpShmemSizeVoltaPlus`: the smallest carveout holding `bytes`.
    fn carveout_for(&self, bytes: u32) -> Option<u32> {
        self.carveouts_kb.iter().map(|kb| kb * KB).find(|&c| c >= bytes)
    }

    /// `cudaOccMaxBlocksPerSMSmemLimit` in the default state.
    fn blocks_by_shared_memory(&self, k: &KernelResources) -> u32 {
        let total = k.static_smem + self.reserved_smem_per_block + k.dynamic_smem;
        let allocated = round_up(total, self.smem_alloc_unit());
        // cudaOccSMemPerBlock, default (no opt-in) limit.
        let limit = self.smem_per_block + if self.major >= 8 { self.reserved_smem_per_block } else { 0 };
        if allocated > limit {
            return 0;
        }
        // The default preference is the whole of sharedMemPerMultiprocessor,
        // aligned up to a carveout; a block larger than that gets the
        // carveout that holds it.
        let preferred = self.carveout_for(self.smem_per_sm).unwrap_or(self.smem_per_sm);
        let per_sm = if preferred >= allocated {
            preferred
        } else {
            match self.carveout_for(allocated) {
                Some(c) => c,
                None => return 0,
            }
        };
        per_sm.checked_div(allocated).unwrap_or(u32::MAX)
    }

    /// `cudaOccMaxBlocksPerSMBlockBarrierLimit`, applied from sm_90 on.
    fn blocks_by_barriers(&self, barriers: u32) -> u32 {
        if self.major < 9 || barriers == 0 {
            return u32::MAX;
        }
        self.barriers_per_block_slot * self.max_blocks_per_sm / barriers
    }

    /// Resident blocks and warps per SM for `block` threads per block.
    pub fn occupancy(&self, k: &KernelResources, block: u32) -> Occupancy {
        let warps_per_block = Self::warps_per_block(block.max(1));
        let limits = Limits {
            registers: self.blocks_by_registers(k.regs, block.max(1)),
            warps: if block > MAX_BLOCK { 0 } else { self.max_warps_per_sm / warps_per_block },
            blocks: self.max_blocks_per_sm,
            shared_memory: self.blocks_by_shared_memory(k),
            barriers: self.blocks_by_barriers(k.barriers),
        };
        let blocks = limits.registers.min(limits.warps).min(limits.blocks).min(limits.shared_memory).min(limits.barriers);
        let warps = blocks * warps_per_block;
        // On a tie, name what fewer registers cannot lift.
        let limiter = if warps >= self.max_warps_per_sm {
            Limiter::None
        } else if blocks == limits.warps || blocks == limits.blocks || blocks == limits.barriers {
            Limiter::WorkgroupSize
        } else if blocks == limits.shared_memory {
            Limiter::Lds
        } else {
            Limiter::Vgpr
        };
        Occupancy { blocks, warps, limiter, limits }
    }

    /// The most warps per SM this block size and shared memory allow with
    /// any register count: the ceiling register savings can reach.
    pub(crate) fn max_warps(&self, k: &KernelResources, block: u32) -> u32 {
        self.occupancy(&KernelResources { regs: 0, ..*k }, block).warps
    }

    /// The largest register count at which the kernel still reaches `warps`
    /// warps per SM, as far as registers decide (`None`: no count does).
    pub(crate) fn max_regs_for_warps(&self, k: &KernelResources, block: u32, warps: u32) -> Option<u32> {
        (1..=MAX_REGS_PER_THREAD).rev().find(|&r| self.occupancy(&KernelResources { regs: r, ..*k }, block).warps >= warps)
    }

    /// Registers that must go for the next occupancy step; `None` when
    /// registers do not limit.
    pub(crate) fn regs_to_next_step(&self, k: &KernelResources, block: u32) -> Option<u32> {
        let now = self.occupancy(k, block);
        if now.limiter != Limiter::Vgpr {
            return None;
        }
        let next = self.max_regs_for_warps(k, block, now.warps + 1)?;
        Some(k.regs.saturating_sub(next))
    }
}

/// The register cap that lets `warps` warps share an SM's register file,
/// whatever the block size (a multiple of it is what the tuner asks for):
/// per warp at most `floor(16384 / ceil(warps / 4))` registers, in units of
/// 256, so per thread `floor(64 / ceil(warps / 4)) * 8`, at most 255. The
/// plugin's `regtune-occupancy<W>` sets this as `"nvvm.maxnreg"` on NVPTX
/// kernels (passes/src/occupancy.rs computes the same).
pub(crate) fn register_cap_for_warps(warps: u32) -> u32 {
    let per_partition = warps.max(1).div_ceil(SUB_PARTITIONS);
    ((64 / per_partition) * 8).clamp(8, MAX_REGS_PER_THREAD)
}

/// The most warps per SM at which a kernel still gets `cap` registers
/// (the inverse of [`register_cap_for_warps`]): 40 registers up to 48 warps.
pub(crate) fn most_warps_for_cap(cap: u32) -> u32 {
    SUB_PARTITIONS * (64 / (cap / 8).max(1))
}

/// The blocks per SM that `__launch_bounds__(threads, M)` must ask for so
/// that ptxas caps the kernel at `cap` registers. ptxas shares each of the
/// SM's four register files among the warps of M blocks, as
/// [`register_cap_for_warps`] does (ptxas 12.9, 64-thread blocks: M = 20
/// gives 48 registers, 21 to 24 give 40, 25 gives 32). None where no M
/// gives exactly `cap` (a block of more warps than the cap allows).
pub(crate) fn min_blocks_for_cap(cap: u32, threads: u32) -> Option<u32> {
    let warps_per_block = threads.div_ceil(WARP_SIZE).max(1);
    let blocks = most_warps_for_cap(cap) / warps_per_block;
    (blocks >= 1 && register_cap_for_warps(blocks * warps_per_block) == cap).then_some(blocks)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn occ(arch: &str, regs: u32, block: u32, smem: u32) -> Occupancy {
        sm(arch).unwrap().occupancy(&KernelResources { regs, static_smem: smem, ..Default::default() }, block)
    }

    /// ptxas 12.9 on a 56-register kernel (`__launch_bounds__(N, M)`):
    /// (64, 20) → 48 registers, (64, 24) → 40, (128, 16) → 32, (192, 8) →
    /// 40, (256, 5) → 48.
    #[test]
    fn blocks_per_sm_that_give_ptxas_a_cap() {
        assert_eq!(most_warps_for_cap(40), 48);
        assert_eq!(min_blocks_for_cap(48, 64), Some(20));
        assert_eq!(min_blocks_for_cap(40, 64), Some(24));
        assert_eq!(min_blocks_for_cap(32, 128), Some(16));
        assert_eq!(min_blocks_for_cap(40, 192), Some(8));
        assert_eq!(min_blocks_for_cap(48, 256), Some(5));
        assert_eq!(min_blocks_for_cap(40, 100), Some(12), "blocks are whole warps");
        // One 1024-thread block is already 32 warps: 64 registers at most.
        assert_eq!(min_blocks_for_cap(40, 1024), None);
    }

    #[test]
    fn names_resolve_with_and_without_the_arch_specific_suffix() {
        assert_eq!(sm("sm_90a").unwrap().name, "sm_90");
        assert_eq!(sm("SM_80").unwrap().name, "sm_80");
        assert!(sm("sm_61").is_none());
        assert!(sm("gfx90a").is_none());
    }

    /// CUDA C++ Best Practices Guide, "Calculating Occupancy": "on a device of
    /// compute capability 7.0, a kernel with 128-thread blocks using 37
    /// registers per thread results in an occupancy of 75% with 12 active
    /// 128-thread blocks per multi-processor, whereas a kernel with 320-thread
    /// blocks using the same 37 registers per thread results in an occupancy
    /// of 63% because only four 320-thread blocks can reside on a
    /// multiprocessor."
    #[test]
    fn best_practices_guide_example() {
        let a = occ("sm_70", 37, 128, 0);
        assert_eq!((a.blocks, a.warps), (12, 48));
        assert_eq!(a.warps * 100 / 64, 75);
        assert_eq!(a.limiter, Limiter::Vgpr);
        let b = occ("sm_70", 37, 320, 0);
        assert_eq!((b.blocks, b.warps), (4, 40));
        assert_eq!((b.warps * 1000 / 64 + 5) / 10, 63);
    }

    /// The register column of the CUDA Occupancy Calculator for 256-thread
    /// blocks on compute capability 8.0 and 9.0 (64 warps/SM): 32 registers
    /// give 100%, 40 give 75%, 64 give 50%, 128 give 25%, 255 give 12.5%.
    /// sm_100 and sm_103 have the same register file and 64 warps.
    #[test]
    fn register_steps_at_256_threads() {
        for arch in ["sm_80", "sm_90", "sm_100", "sm_103"] {
            let warps: Vec<u32> = [32, 33, 40, 41, 48, 56, 64, 72, 128, 168, 255].iter().map(|&r| occ(arch, r, 256, 0).warps).collect();
            assert_eq!(warps, [64, 48, 48, 40, 40, 32, 32, 24, 16, 8, 8], "{arch}");
        }
        // 48 warps/SM on sm_86/sm_89: the register file is not what limits first.
        assert_eq!(occ("sm_86", 32, 256, 0).warps, 48);
        assert_eq!(occ("sm_86", 32, 256, 0).limiter, Limiter::None);
        assert_eq!(occ("sm_89", 64, 256, 0).warps, 32);
    }

    #[test]
    fn block_slots_limit_small_blocks() {
        // 32 threads: one warp per block, 32 block slots on sm_90 -> 32 warps.
        let o = occ("sm_90", 16, 32, 0);
        assert_eq!((o.blocks, o.warps, o.limiter), (32, 32, Limiter::WorkgroupSize));
        // sm_75: 16 slots of 2 warps each reach its 32 warps.
        assert_eq!(occ("sm_75", 16, 64, 0).warps, 32);
        // sm_89 has 24 slots, sm_86 16.
        assert_eq!(occ("sm_89", 16, 64, 0).warps, 48);
        assert_eq!(occ("sm_86", 16, 64, 0).warps, 32);
    }

    #[test]
    fn shared_memory_counts_the_reserved_kilobyte_from_sm80() {
        // 48 KB static: 49 KB allocated per block on sm_90 (228 KB SM) -> 4 blocks.
        let o = occ("sm_90", 32, 256, 48 * 1024);
        assert_eq!((o.blocks, o.limiter), (4, Limiter::Lds));
        // Without the reserved kilobyte sm_70 fits 2 blocks of 48 KB in 96 KB.
        assert_eq!(occ("sm_70", 32, 256, 48 * 1024).blocks, 2);
        // 10 KB + 1 KB on sm_80 (164 KB): 14 blocks, but only 8 of 256 threads fit.
        assert_eq!(occ("sm_80", 32, 256, 10 * 1024).limits.shared_memory, 14);
        assert_eq!(occ("sm_80", 32, 256, 10 * 1024).blocks, 8);
        // 2400 bytes + 1 KB rounds to 3456 (128-byte units).
        assert_eq!(occ("sm_90", 32, 256, 2400).limits.shared_memory, 228 * 1024 / 3456);
    }

    #[test]
    fn too_many_registers_or_threads_cannot_launch() {
        assert_eq!(occ("sm_90", 256, 1024, 0).blocks, 0);
        assert_eq!(occ("sm_90", 64, 1024, 0).blocks, 1);
        assert_eq!(occ("sm_90", 65, 1024, 0).blocks, 0);
        assert_eq!(occ("sm_90", 32, 2048, 0).blocks, 0);
    }

    #[test]
    fn barriers_limit_only_from_sm90() {
        let sm90 = sm("sm_90").unwrap();
        let k = KernelResources { regs: 16, barriers: 16, ..Default::default() };
        assert_eq!(sm90.occupancy(&k, 64).blocks, 4);
        assert_eq!(sm("sm_80").unwrap().occupancy(&k, 64).blocks, 32);
    }

    #[test]
    fn blackwell_names_resolve_to_their_base_model() {
        assert_eq!(sm("sm_100a").unwrap().name, "sm_100");
        assert_eq!(sm("sm_103a").unwrap().name, "sm_103");
        assert_eq!(sm("SM_120A").unwrap().name, "sm_120");
        assert_eq!((sm("sm_120").unwrap().major, sm("sm_120").unwrap().minor), (12, 0));
        // Family-specific targets (clang 22 refuses them), and the capabilities
        // whose threads per SM no NVIDIA source we found gives.
        for name in ["sm_100f", "sm_101", "sm_101a", "sm_121", "sm_121a", "sm_110", "sm_10"] {
            assert!(sm(name).is_none(), "{name}");
        }
    }

    /// sm_120: 48 warps/SM, 24 block slots, 64 K registers. At 256 threads
    /// (8 warps) the warp slots allow 6 blocks; registers per warp are
    /// regs*32 rounded up to 256, each sub-partition holds 16384 of them:
    /// 41 → 1536 → 10 warps × 4 = 40 → 5 blocks; 56 → 1792 → 9 × 4 = 36 →
    /// 4 blocks; 72 → 2304 → 7 × 4 = 28 → 3 blocks; 168 → 5376 → 12 warps →
    /// 1 block.
    #[test]
    fn sm120_register_steps_stop_at_48_warps() {
        let warps: Vec<u32> = [24, 32, 40, 41, 48, 56, 64, 72, 128, 168, 255].iter().map(|&r| occ("sm_120", r, 256, 0).warps).collect();
        assert_eq!(warps, [48, 48, 48, 40, 40, 32, 32, 24, 16, 8, 8]);
        assert_eq!(occ("sm_120", 40, 256, 0).limiter, Limiter::None);
        assert_eq!(occ("sm_120", 41, 256, 0).limiter, Limiter::Vgpr);
        // 128 threads at 40 registers: 48 warps by registers = 12 blocks = 48/4 by warps.
        assert_eq!(occ("sm_120", 40, 128, 0).blocks, 12);
        // 1024 threads: one block of 32 warps; 64 registers fit (2048 × 32 =
        // the whole file), 65 do not (2304 × 32 > 65536).
        assert_eq!((occ("sm_120", 32, 1024, 0).warps, occ("sm_120", 32, 1024, 0).limiter), (32, Limiter::WorkgroupSize));
        assert_eq!(occ("sm_120", 64, 1024, 0).blocks, 1);
        assert_eq!(occ("sm_120", 65, 1024, 0).blocks, 0);
        assert_eq!(occ("sm_100", 65, 1024, 0).blocks, 0);
        assert_eq!(occ("sm_120", 16, 2048, 0).blocks, 0);
    }

    #[test]
    fn blackwell_block_slots() {
        // 32-thread blocks: 32 slots on sm_100/sm_103, 24 on sm_120
        // (cuda_occupancy.h's cudaOccMaxBlocksPerMultiprocessor).
        for (arch, blocks) in [("sm_100", 32), ("sm_103", 32), ("sm_120", 24)] {
            let o = occ(arch, 16, 32, 0);
            assert_eq!((o.blocks, o.warps, o.limiter), (blocks, blocks, Limiter::WorkgroupSize), "{arch}");
        }
        // 64 threads: 24 slots of 2 warps fill sm_120's 48 warps.
        assert_eq!((occ("sm_120", 16, 64, 0).warps, occ("sm_120", 16, 64, 0).limiter), (48, Limiter::None));
        // 96 threads (3 warps): 16 blocks by warp slots.
        assert_eq!(occ("sm_120", 16, 96, 0).blocks, 16);
    }

    /// Static shared memory + the reserved 1 KB, in 128-byte units, against
    /// the largest carveout: 228 KB (233472 B) on sm_100, 100 KB (102400 B)
    /// on sm_120; per block at most 48 KB + 1 KB without opt-in.
    #[test]
    fn blackwell_shared_memory() {
        // 48 KB: 50176 B a block; 233472 / 50176 = 4, 102400 / 50176 = 2.
        let o = occ("sm_100", 32, 256, 48 * KB);
        assert_eq!((o.blocks, o.warps, o.limiter), (4, 32, Limiter::Lds));
        let o = occ("sm_120", 32, 256, 48 * KB);
        assert_eq!((o.blocks, o.warps, o.limiter), (2, 16, Limiter::Lds));
        // 128 bytes more is past the per-block limit.
        assert_eq!(occ("sm_120", 32, 256, 48 * KB + 128).blocks, 0);
        assert_eq!(occ("sm_100", 32, 256, 48 * KB + 128).blocks, 0);
        // 10 KB: 11264 B; 102400 / 11264 = 9 blocks by shared memory.
        assert_eq!(occ("sm_120", 32, 256, 10 * KB).limits.shared_memory, 9);
        assert_eq!(occ("sm_120", 32, 256, 10 * KB).blocks, 6, "6 blocks of 8 warps fill the SM first");
        let o = occ("sm_120", 16, 64, 10 * KB);
        assert_eq!((o.blocks, o.warps, o.limiter), (9, 18, Limiter::Lds));
        assert_eq!(occ("sm_100", 32, 256, 10 * KB).limits.shared_memory, 20);
        // 2400 + 1024 rounds up to 3456: 233472 / 3456 = 67, 102400 / 3456 = 29.
        assert_eq!(occ("sm_100", 32, 256, 2400).limits.shared_memory, 67);
        assert_eq!(occ("sm_120", 32, 256, 2400).limits.shared_memory, 29);
        // No static shared memory still takes the reserved kilobyte: 100 blocks on sm_120.
        assert_eq!(occ("sm_120", 32, 256, 0).limits.shared_memory, 100);
    }

    /// cudaOccMaxBlocksPerSMBlockBarrierLimit: sm_100/sm_103 have 2 named
    /// barriers per block slot (64), sm_120 one (24).
    #[test]
    fn blackwell_barriers() {
        let k = |barriers| KernelResources { regs: 16, barriers, ..Default::default() };
        for (arch, b16, b3, b1) in [("sm_100", 4, 21, 32), ("sm_103", 4, 21, 32), ("sm_120", 1, 8, 24)] {
            let s = sm(arch).unwrap();
            assert_eq!(s.occupancy(&k(16), 64).blocks, b16, "{arch} 16 barriers");
            assert_eq!(s.occupancy(&k(3), 64).blocks, b3, "{arch} 3 barriers");
            assert_eq!(s.occupancy(&k(1), 64).blocks, b1, "{arch} 1 barrier");
        }
        assert_eq!(sm("sm_120").unwrap().occupancy(&k(16), 64).limiter, Limiter::WorkgroupSize);
    }

    #[test]
    fn sm120_next_step_and_ceiling() {
        let s = sm("sm_120").unwrap();
        let k = KernelResources { regs: 72, ..Default::default() };
        assert_eq!(s.occupancy(&k, 256).warps, 24);
        // 32 warps need 64 registers.
        assert_eq!(s.regs_to_next_step(&k, 256), Some(8));
        assert_eq!(s.max_regs_for_warps(&k, 256, 48), Some(40));
        assert_eq!(s.max_regs_for_warps(&k, 256, 49), None);
        assert_eq!(s.max_warps(&k, 256), 48);
        assert_eq!(s.regs_to_next_step(&KernelResources { regs: 40, ..k }, 256), None);
        // The tuner's cap for 48 warps reaches sm_120's whole SM.
        assert_eq!(s.occupancy(&KernelResources { regs: register_cap_for_warps(48), ..k }, 256).warps, 48);
    }

    #[test]
    fn next_step_and_caps() {
        let sm90 = sm("sm_90").unwrap();
        let k = KernelResources { regs: 72, ..Default::default() };
        assert_eq!(sm90.occupancy(&k, 256).warps, 24);
        assert_eq!(sm90.regs_to_next_step(&k, 256), Some(8));
        assert_eq!(sm90.max_regs_for_warps(&k, 256, 64), Some(32));
        assert_eq!(sm90.max_warps(&k, 256), 64);
        assert_eq!(sm90.regs_to_next_step(&KernelResources { regs: 32, ..k }, 256), None);
        for (warps, cap) in [(64, 32), (56, 32), (48, 40), (40, 48), (32, 64), (24, 80), (16, 128), (8, 255)] {
            assert_eq!(register_cap_for_warps(warps), cap, "{warps} warps");
            // The cap reaches the target at any block size that divides it.
            for block in [32, 64, 128, 256] {
                if warps % (block / 32) == 0 {
                    let o = sm90.occupancy(&KernelResources { regs: cap, ..Default::default() }, block);
                    assert!(o.limits.registers * (block / 32) >= warps, "{warps} warps at {block} threads: {o:?}");
                }
            }
        }
    }
}
