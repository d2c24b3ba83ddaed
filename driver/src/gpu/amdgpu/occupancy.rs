//! The AMDGPU backend's own register-file and occupancy model, per target,
//! for `regtune report` and the tuner.
//!
//! Every rule here mirrors a function of LLVM's AMDGPU backend (LLVM 22, the
//! compiler regtune drives); the comments name it. The result of
//! [`Gfx::occupancy`] is meant to equal the "Occupancy [waves/SIMD]" line of
//! `-Rpass-analysis=kernel-resource-usage`, which the backend computes in
//! `AMDGPUAsmPrinter::getSIProgramInfo` as
//!
//! ```text
//! min( GCNSubtarget::computeOccupancy(F, LDSSize).second      // workgroup size + LDS
//!    , getOccupancyWithNumSGPRs(NumSGPRsForWavesPerEU)         // gfx9 only
//!    , getNumWavesPerEUWithNumVGPRs(NumVGPRsForWavesPerEU) )   // (AMDGPUMCExpr::evaluateOccupancy)
//! ```
//!
//! where the `*ForWavesPerEU` counts are the kernel's counts raised to
//! `getMinNum[SV]GPRs(MaxWavesPerEU)`, so that an `amdgpu-waves-per-eu` maximum
//! (or an occupancy cap that workgroup size and LDS already impose) is honoured.
//!
//! # Metadata numbers versus remark numbers
//!
//! Observed with clang-22 (Debian 22.1.8), code object v5:
//!
//! * `.sgpr_count` equals the remark's `TotalSGPRs` on every target: the
//!   explicitly used SGPRs plus the extra ones the hardware allocates
//!   (`IsaInfo::getNumExtraSGPRs`: VCC = 2; on gfx9 also XNACK_MASK = 4 in
//!   total when XNACK is on or "any", FLAT_SCRATCH = 6 in total when flat
//!   scratch is used or architected — gfx942/gfx950). On gfx10+ only VCC is
//!   added. It is the number the occupancy rule takes, so [`KernelResources::sgpr`]
//!   is the metadata value unchanged.
//! * `.vgpr_count` is `ProgInfo.NumVGPR`, i.e. `getTotalNumVGPRs(VGPRs, AGPRs)`
//!   (`AMDGPUMCExpr::evaluateTotalNumVGPR`):
//!   - gfx90a/gfx942/gfx950 (unified file, AGPRs start at `accum_offset`, a
//!     multiple of 4): `align4(VGPRs) + AGPRs` when AGPRs > 0, else `VGPRs`.
//!     Remark `VGPRs: 5, AGPRs: 3` gives `.vgpr_count: 11, .agpr_count: 3`;
//!     `VGPRs: 130, AGPRs: 128` gives 260; `VGPRs: 2, AGPRs: 200` gives 204.
//!   - gfx908 (separate AGPR file): `max(VGPRs, AGPRs)`. Remark `VGPRs: 5,
//!     AGPRs: 32` gives `.vgpr_count: 32, .agpr_count: 32`.
//!   - everything else: the remark's `VGPRs`; `.agpr_count` is absent (take 0).
//!
//!   So `.vgpr_count` is already the count occupancy is computed from, and the
//!   remark's `VGPRs` can be recovered from metadata only where AGPRs are 0
//!   (see [`Gfx::remark_vgprs`]); with AGPRs on gfx90a+ the metadata gives
//!   `align4(VGPRs)`, on gfx908 only an upper bound.
//! * `.agpr_count` equals the remark's `AGPRs` (gfx908 and later CDNA).
//! * `.group_segment_fixed_size` equals the remark's `LDS Size [bytes/block]`
//!   (static LDS only; dynamic `extern __shared__` is unknown to both).
//! * `.max_flat_workgroup_size` is the second number of
//!   `amdgpu-flat-work-group-size` (HIP: `__launch_bounds__(N)` gives "1,N",
//!   no bound gives "1,1024"). The *minimum* is not in the metadata; the
//!   backend's workgroup/LDS rule uses both, so [`KernelAttrs`] can carry it
//!   (default 1, which is what HIP emits).
//! * `amdgpu-waves-per-eu` is not in the metadata at all; pass it in
//!   [`KernelAttrs::waves_per_eu`] when the source has
//!   `__attribute__((amdgpu_waves_per_eu(min[,max])))`. (HIP's
//!   `__launch_bounds__(N, M)` sets only the minimum "M", which never changes
//!   the remark's occupancy.)
//! * `.wavefront_size` selects the VGPR granule/file on gfx10+
//!   ([`KernelAttrs::wave_size`]); absent, the target's default is assumed.

use crate::gpu::Limiter;

/// The backend's `AMDGPUSubtarget::Generation`, as far as occupancy cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Generation {
    Gfx9,
    Gfx10,
    Gfx11,
    Gfx12,
}

/// How accumulation VGPRs (AGPRs) are allocated next to the arch VGPRs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum AgprFile {
    /// No AGPRs.
    None,
    /// gfx908: a second file as large as the VGPR file; a wave gets the same
    /// number of each, so it costs `max(VGPRs, AGPRs)`.
    Separate,
    /// gfx90a and later CDNA: one 512-entry file; AGPRs start at
    /// `accum_offset` (arch VGPRs rounded up to 4), so a wave costs
    /// `align4(VGPRs) + AGPRs` (`getTotalNumVGPRs` with `AccumOffset`).
    Unified,
}

/// VGPR allocation for one wave size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub(crate) struct VgprFile {
    /// Allocation granule, `IsaInfo::getVGPRAllocGranule`.
    pub granule: u32,
    /// Registers per SIMD lane shared by all waves, `IsaInfo::getTotalNumVGPRs`.
    pub total: u32,
}

/// One processor's register files and occupancy limits.
#[derive(Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub(crate) struct Gfx {
    /// Processor name, as `--offload-arch` spells it.
    pub name: &'static str,
    pub generation: Generation,
    /// Default wavefront size (what HIP compiles for unless told otherwise).
    pub wave_size: u32,
    /// `IsaInfo::getMaxWavesPerEU`: 10 on gfx9, 8 on gfx90a and later CDNA
    /// (`isGFX90A`), 16 on gfx10.3+.
    pub max_waves_per_simd: u32,
    /// VGPR file seen by wave64 waves.
    pub vgpr_wave64: VgprFile,
    /// VGPR file seen by wave32 waves (gfx10+ only).
    pub vgpr_wave32: Option<VgprFile>,
    /// `IsaInfo::getAddressableNumVGPRs`: 512 with a unified AGPR file, else 256.
    pub addressable_vgprs: u32,
    pub agprs: AgprFile,
    /// `IsaInfo::getTotalNumSGPRs` (800 from gfx8 on).
    pub total_sgprs: u32,
    /// `IsaInfo::getAddressableNumSGPRs`: 102 on gfx9, 106 on gfx10+.
    pub addressable_sgprs: u32,
    /// `IsaInfo::getSGPRAllocGranule`: 16 on gfx9; on gfx10+ the whole
    /// addressable set is allocated, and SGPRs never limit occupancy.
    pub sgpr_alloc_granule: u32,
    /// Largest LDS allocation of one workgroup,
    /// `IsaInfo::getAddressableLocalMemorySize` (64 KiB; 160 KiB on gfx950).
    pub lds_bytes_per_workgroup: u32,
    /// LDS shared by the workgroups of one CU in the default mode,
    /// `IsaInfo::getLocalMemorySize`: on gfx10+ a workgroup runs on a WGP (two
    /// CUs) unless compiled with `-mcumode`, which doubles it.
    pub lds_bytes_per_cu: u32,
    /// SIMDs (EUs) sharing a workgroup in the default mode, `IsaInfo::getEUsPerCU`.
    pub simds_per_cu: u32,
}

impl Gfx {
    const fn gfx9(name: &'static str, agprs: AgprFile, lds: u32) -> Gfx {
        let unified = matches!(agprs, AgprFile::Unified);
        Gfx {
            name,
            generation: Generation::Gfx9,
            wave_size: 64,
            // getMaxWavesPerEU: isGFX90A (FeatureGFX90AInsts) ? 8 : 10.
            max_waves_per_simd: if unified { 8 } else { 10 },
            // getVGPRAllocGranule / getTotalNumVGPRs: FeatureGFX90AInsts ? 8/512 : 4/256.
            vgpr_wave64: if unified { VgprFile { granule: 8, total: 512 } } else { VgprFile { granule: 4, total: 256 } },
            vgpr_wave32: None,
            addressable_vgprs: if unified { 512 } else { 256 },
            agprs,
            total_sgprs: 800,
            addressable_sgprs: 102,
            sgpr_alloc_granule: 16,
            lds_bytes_per_workgroup: lds,
            lds_bytes_per_cu: lds,
            simds_per_cu: 4,
        }
    }

    /// gfx10.3+ (wave32 by default). `full_vgprs`: Feature1_5xVGPRs
    /// ("allocate1_5xvgprs": gfx1100, gfx1101, gfx1151, gfx1200, gfx1201).
    const fn rdna(name: &'static str, generation: Generation, full_vgprs: bool) -> Gfx {
        Gfx {
            name,
            generation,
            wave_size: 32,
            // getMaxWavesPerEU: hasGFX10_3Insts ? 16 : 20.
            max_waves_per_simd: 16,
            // getVGPRAllocGranule / getTotalNumVGPRs.
            vgpr_wave64: if full_vgprs { VgprFile { granule: 12, total: 768 } } else { VgprFile { granule: 8, total: 512 } },
            vgpr_wave32: Some(if full_vgprs { VgprFile { granule: 24, total: 1536 } } else { VgprFile { granule: 16, total: 1024 } }),
            addressable_vgprs: 256,
            agprs: AgprFile::None,
            total_sgprs: 800,
            addressable_sgprs: 106,
            sgpr_alloc_granule: 106,
            lds_bytes_per_workgroup: 65536,
            lds_bytes_per_cu: 2 * 65536,
            simds_per_cu: 4,
        }
    }
}

/// The targets regtune models, each checked against clang-22's remarks.
pub(crate) static PROCESSORS: &[Gfx] = &[
    Gfx::gfx9("gfx900", AgprFile::None, 65536),
    Gfx::gfx9("gfx906", AgprFile::None, 65536),
    Gfx::gfx9("gfx908", AgprFile::Separate, 65536),
    Gfx::gfx9("gfx90a", AgprFile::Unified, 65536),
    Gfx::gfx9("gfx942", AgprFile::Unified, 65536),
    // FeatureAddressableLocalMemorySize163840.
    Gfx::gfx9("gfx950", AgprFile::Unified, 163840),
    Gfx::rdna("gfx1030", Generation::Gfx10, false),
    Gfx::rdna("gfx1100", Generation::Gfx11, true),
    Gfx::rdna("gfx1101", Generation::Gfx11, true),
    Gfx::rdna("gfx1102", Generation::Gfx11, false),
    Gfx::rdna("gfx1103", Generation::Gfx11, false),
    Gfx::rdna("gfx1150", Generation::Gfx11, false),
    Gfx::rdna("gfx1151", Generation::Gfx11, true),
    Gfx::rdna("gfx1200", Generation::Gfx12, true),
    Gfx::rdna("gfx1201", Generation::Gfx12, true),
];

/// The model for a processor name, with or without target features
/// ("gfx90a", "gfx90a:xnack-", "amdgcn-amd-amdhsa--gfx942:sramecc+").
/// `None` for a processor regtune does not model.
pub(crate) fn gfx(arch: &str) -> Option<&'static Gfx> {
    let arch = arch.trim();
    let arch = arch.rsplit("--").next().unwrap_or(arch);
    let processor = arch.split(':').next().unwrap_or(arch);
    PROCESSORS.iter().find(|t| t.name.eq_ignore_ascii_case(processor))
}

/// A kernel's resource use, as its code-object metadata states it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize)]
pub(crate) struct KernelResources {
    /// `.vgpr_count`: on gfx908/gfx90a+ this already includes the AGPRs (see
    /// the module comment); use [`Gfx::metadata_vgpr_count`] to build it
    /// from the remark's separate VGPRs/AGPRs.
    pub vgpr: u32,
    /// `.agpr_count` (0 where absent).
    pub agpr: u32,
    /// `.sgpr_count`: VCC/FLAT_SCRATCH/XNACK_MASK included, = remark TotalSGPRs.
    pub sgpr: u32,
    /// `.group_segment_fixed_size`.
    pub lds_bytes: u32,
    /// `.max_flat_workgroup_size` (0 taken as the default 1024).
    pub max_flat_workgroup_size: u32,
}

/// What the backend knows about a kernel that the metadata does not say.
/// `Default` is what HIP emits for a kernel without attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize)]
pub(crate) struct KernelAttrs {
    /// First number of `amdgpu-flat-work-group-size`; `None` = 1 (HIP).
    pub min_flat_workgroup_size: Option<u32>,
    /// `amdgpu-waves-per-eu` = "min[,max]" (from
    /// `__attribute__((amdgpu_waves_per_eu(min[,max])))`).
    pub waves_per_eu: Option<(u32, Option<u32>)>,
    /// `.wavefront_size`; `None` = the target's default.
    pub wave_size: Option<u32>,
    /// Compiled with `-mcumode` (gfx10+): workgroups confined to one CU.
    pub cu_mode: bool,
}

/// The occupancy each resource alone would allow (waves per SIMD).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub(crate) struct Limits {
    /// The target's maximum.
    pub target: u32,
    /// Workgroup-size range alone (barriers, wave slots).
    pub workgroup_size: u32,
    /// Workgroup-size range and LDS together (`getOccupancyWithWorkGroupSizes`).
    pub lds: u32,
    /// What the effective `amdgpu-waves-per-eu` maximum enforces by padding
    /// the register counts (`getMinNumVGPRs`/`getMinNumSGPRs`).
    pub waves_per_eu: u32,
    pub sgpr: u32,
    pub vgpr: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub(crate) struct Occupancy {
    /// Waves per SIMD, = the remark's "Occupancy [waves/SIMD]".
    pub waves: u32,
    /// What holds `waves` below the target maximum (see [`Limiter`] for ties).
    pub limiter: Limiter,
    pub limits: Limits,
}

fn align_down(x: u32, a: u32) -> u32 {
    x / a * a
}

fn align_up(x: u32, a: u32) -> u32 {
    x.div_ceil(a) * a
}

impl Gfx {
    fn wave(&self, a: &KernelAttrs) -> u32 {
        match a.wave_size {
            Some(32) if self.vgpr_wave32.is_some() => 32,
            Some(64) => 64,
            _ => self.wave_size,
        }
    }

    /// The VGPR file for a wave size (the default one for sizes other than 32 and 64).
    pub(crate) fn vgpr_file(&self, wave_size: u32) -> VgprFile {
        let wave_size = if wave_size == 32 || wave_size == 64 { wave_size } else { self.wave_size };
        match self.vgpr_wave32 {
            Some(f) if wave_size == 32 => f,
            _ => self.vgpr_wave64,
        }
    }

    /// VGPR allocation granule at the default wave size.
    #[cfg(test)]
    pub(crate) fn vgpr_alloc_granule(&self) -> u32 {
        self.vgpr_file(self.wave_size).granule
    }

    /// VGPRs per SIMD lane at the default wave size.
    #[cfg(test)]
    pub(crate) fn total_vgprs(&self) -> u32 {
        self.vgpr_file(self.wave_size).total
    }

    /// Whether SGPR use can lower occupancy (gfx9; `getOccupancyWithNumSGPRs`
    /// returns the maximum from GFX10 on).
    pub(crate) fn sgprs_limit_occupancy(&self) -> bool {
        self.generation < Generation::Gfx10
    }

    fn wgp(&self, a: &KernelAttrs) -> bool {
        self.generation >= Generation::Gfx10 && !a.cu_mode
    }

    /// `IsaInfo::getEUsPerCU`.
    fn eus_per_cu(&self, a: &KernelAttrs) -> u32 {
        if self.generation >= Generation::Gfx10 && a.cu_mode {
            2
        } else {
            self.simds_per_cu
        }
    }

    /// `IsaInfo::getLocalMemorySize`.
    fn lds_per_cu(&self, a: &KernelAttrs) -> u32 {
        if self.generation >= Generation::Gfx10 && a.cu_mode {
            self.lds_bytes_per_workgroup
        } else {
            self.lds_bytes_per_cu
        }
    }

    /// The count of VGPRs the backend's occupancy rule takes for given arch
    /// VGPRs and AGPRs (`getTotalNumVGPRs(has90AInsts, AGPRs, VGPRs)`), which is
    /// also what `.vgpr_count` holds.
    #[cfg(test)]
    pub(crate) fn metadata_vgpr_count(&self, vgprs: u32, agprs: u32) -> u32 {
        match self.agprs {
            AgprFile::Unified if agprs > 0 => align_up(vgprs, 4) + agprs,
            _ => vgprs.max(agprs),
        }
    }

    /// The remark's "VGPRs" (arch VGPRs) as far as the metadata tells: exact
    /// without AGPRs; with AGPRs on gfx90a+ it is `align4` of the remark's
    /// number, on gfx908 an upper bound.
    pub(crate) fn remark_vgprs(&self, k: &KernelResources) -> u32 {
        match self.agprs {
            AgprFile::Unified if k.agpr > 0 => k.vgpr.saturating_sub(k.agpr),
            _ => k.vgpr,
        }
    }

    /// `IsaInfo::getNumWavesPerEUWithNumVGPRs`.
    fn waves_with_vgprs(&self, vgprs: u32, ws: u32) -> u32 {
        let f = self.vgpr_file(ws);
        if vgprs < f.granule {
            return self.max_waves_per_simd;
        }
        (f.total / align_up(vgprs, f.granule)).clamp(1, self.max_waves_per_simd)
    }

    /// `IsaInfo::getOccupancyWithNumSGPRs` (not clamped to the target maximum:
    /// the backend takes the minimum with the other limits afterwards).
    fn waves_with_sgprs(&self, sgprs: u32) -> u32 {
        if !self.sgprs_limit_occupancy() {
            return self.max_waves_per_simd;
        }
        match sgprs {
            0..=80 => 10,
            81..=88 => 9,
            89..=100 => 8,
            _ => 7,
        }
    }

    /// `IsaInfo::getMaxNumVGPRs(WavesPerEU)`.
    fn max_vgprs_for(&self, waves: u32, ws: u32) -> u32 {
        let f = self.vgpr_file(ws);
        let waves = waves.clamp(1, self.max_waves_per_simd);
        align_down(f.total / waves, f.granule).min(self.addressable_vgprs)
    }

    /// `IsaInfo::getMinNumVGPRs(WavesPerEU)`: the smallest count that keeps
    /// occupancy at or below `waves`; the backend raises the kernel's count
    /// to it to honour a waves-per-EU maximum.
    fn min_vgprs_for(&self, waves: u32, ws: u32) -> u32 {
        let f = self.vgpr_file(ws);
        let max_waves = self.max_waves_per_simd;
        if waves == 0 || waves >= max_waves {
            return 0;
        }
        let max_vgprs = align_down(f.total / waves, f.granule);
        if max_vgprs == align_down(f.total / max_waves, f.granule) {
            return 0;
        }
        let min_waves = self.waves_with_vgprs(self.addressable_vgprs, ws);
        if waves < min_waves {
            return self.min_vgprs_for(min_waves, ws);
        }
        let max_vgprs_next = align_down(f.total / (waves + 1), f.granule);
        (1 + max_vgprs.saturating_sub(f.granule).min(max_vgprs_next)).min(self.addressable_vgprs)
    }

    /// `IsaInfo::getMinNumSGPRs(WavesPerEU)`. HSA kernels are compiled with
    /// the trap handler feature, which reserves 16 SGPRs (TRAP_NUM_SGPRS).
    fn min_sgprs_for(&self, waves: u32) -> u32 {
        if !self.sgprs_limit_occupancy() || waves == 0 || waves >= self.max_waves_per_simd {
            return 0;
        }
        let mut n = self.total_sgprs / (waves + 1);
        n -= n.min(16);
        (align_down(n, self.sgpr_alloc_granule) + 1).min(self.addressable_sgprs)
    }

    /// `IsaInfo::getMaxWorkGroupsPerCU`: wave slots, and barriers for
    /// multi-wave workgroups (16 per CU, 32 per WGP).
    fn max_workgroups_per_cu(&self, wg_size: u32, ws: u32, a: &KernelAttrs) -> u32 {
        let max_waves = self.max_waves_per_simd * self.eus_per_cu(a);
        let n = wg_size.div_ceil(ws);
        if n == 1 {
            return max_waves;
        }
        let barriers = if self.wgp(a) { 32 } else { 16 };
        (max_waves / n).min(barriers)
    }

    /// `AMDGPUSubtarget::getFlatWorkGroupSizes`: invalid requests fall back
    /// to the default 1..1024.
    fn flat_workgroup_sizes(&self, k: &KernelResources, a: &KernelAttrs) -> (u32, u32) {
        let min = a.min_flat_workgroup_size.unwrap_or(1);
        let max = if k.max_flat_workgroup_size == 0 { 1024 } else { k.max_flat_workgroup_size };
        if min < 1 || min > max || max > 1024 {
            (1, 1024)
        } else {
            (min, max)
        }
    }

    /// `AMDGPUSubtarget::getOccupancyWithWorkGroupSizes(LDSBytes, {min, max})`:
    /// the (minimum, maximum) waves per EU that workgroups of any size in
    /// the range can reach, given LDS and barrier limits. The LDS allocation
    /// granularity is ignored, as the backend does ("FIXME").
    fn occupancy_with_workgroup_sizes(&self, lds_bytes: u32, (min_wg, max_wg): (u32, u32), ws: u32, a: &KernelAttrs) -> (u32, u32) {
        let max_wgs_lds = self.lds_per_cu(a) / lds_bytes.max(1);
        if max_wgs_lds == 0 {
            return (1, 1);
        }
        let waves_per_eu = self.max_waves_per_simd;
        let eus = self.eus_per_cu(a);
        let props = |wg: u32| {
            let waves_per_wg = wg.div_ceil(ws);
            let wgs_per_cu = self.max_workgroups_per_cu(wg, ws, a).min(max_wgs_lds);
            (waves_per_wg, wgs_per_cu, waves_per_wg * wgs_per_cu)
        };
        let (min_waves_per_wg, max_wgs_per_cu, mut max_waves_per_cu) = props(min_wg);
        let (max_waves_per_wg, min_wgs_per_cu, mut min_waves_per_cu) = props(max_wg);

        if min_waves_per_cu >= max_waves_per_cu {
            std::mem::swap(&mut min_waves_per_cu, &mut max_waves_per_cu);
        } else {
            let slots = waves_per_eu * eus;
            // A smaller group than the maximum may need fewer waves for the
            // same number of concurrent groups.
            let min_for_wg = slots.div_ceil(min_wgs_per_cu + 1) * min_wgs_per_cu;
            if min_waves_per_cu > min_for_wg {
                let excess_per_wg = (min_waves_per_cu - min_for_wg) / min_wgs_per_cu;
                if excess_per_wg > 0 {
                    min_waves_per_cu -= min_wgs_per_cu * excess_per_wg.min(max_waves_per_wg - min_waves_per_wg);
                }
            }
            // A larger group than the minimum may fill leftover wave slots.
            let leftover_per_wg = (slots - max_wgs_per_cu * min_waves_per_wg) / max_wgs_per_cu;
            if leftover_per_wg > 0 {
                max_waves_per_cu += max_wgs_per_cu * leftover_per_wg.min((max_wg - 1) / ws + 1 - min_waves_per_wg);
            }
        }
        ((min_waves_per_cu / eus).clamp(1, waves_per_eu), max_waves_per_cu.div_ceil(eus).clamp(1, waves_per_eu))
    }

    /// `AMDGPUSubtarget::getEffectiveWavesPerEU`: the waves-per-EU range the
    /// backend works with; a request outside what the workgroup size and LDS
    /// allow is ignored, a valid maximum is capped by them.
    fn effective_waves_per_eu(&self, k: &KernelResources, a: &KernelAttrs, fwgs: (u32, u32), ws: u32) -> (u32, u32) {
        let occ = self.occupancy_with_workgroup_sizes(k.lds_bytes, fwgs, ws, a).1;
        // getWavesPerEUForWorkGroup: one maximal workgroup must fit.
        let first = fwgs.1.div_ceil(ws).div_ceil(self.eus_per_cu(a)).min(occ);
        let default = (first, occ);
        let Some((min, max)) = a.waves_per_eu else { return default };
        let max = max.unwrap_or(self.max_waves_per_simd);
        if min < default.0 || min > default.1 || min > max || max > self.max_waves_per_simd {
            return default;
        }
        (min, max.min(default.1))
    }

    /// Occupancy in waves per SIMD and what limits it, for a kernel with no
    /// attributes beyond what the metadata records (HIP defaults).
    #[cfg(test)]
    pub(crate) fn occupancy(&self, k: &KernelResources) -> Occupancy {
        self.occupancy_with(k, &KernelAttrs::default())
    }

    /// [`Gfx::occupancy`] with the attributes the metadata lacks.
    pub(crate) fn occupancy_with(&self, k: &KernelResources, a: &KernelAttrs) -> Occupancy {
        let ws = self.wave(a);
        let max = self.max_waves_per_simd;
        let fwgs = self.flat_workgroup_sizes(k, a);
        let wg = self.occupancy_with_workgroup_sizes(0, fwgs, ws, a).1;
        let lds = self.occupancy_with_workgroup_sizes(k.lds_bytes, fwgs, ws, a).1;
        // MFI->getMaxWavesPerEU(): the registers are padded to keep occupancy
        // at or below it (NumSGPRsForWavesPerEU / NumVGPRsForWavesPerEU).
        let max_waves = self.effective_waves_per_eu(k, a, fwgs, ws).1;
        let wpe = self
            .waves_with_sgprs(self.min_sgprs_for(max_waves).max(1))
            .min(self.waves_with_vgprs(self.min_vgprs_for(max_waves, ws).max(1), ws));
        let sgpr = self.waves_with_sgprs(k.sgpr.max(1));
        let vgpr = self.waves_with_vgprs(k.vgpr.max(k.agpr).max(1), ws);
        let waves = lds.min(wpe).min(sgpr).min(vgpr).min(max);
        // On a tie the limiter named is the one lowering VGPRs cannot lift.
        let limiter = if waves >= max {
            Limiter::None
        } else if wg == waves {
            Limiter::WorkgroupSize
        } else if lds == waves {
            Limiter::Lds
        } else if wpe == waves {
            Limiter::WavesPerEu
        } else if sgpr == waves {
            Limiter::Sgpr
        } else {
            Limiter::Vgpr
        };
        Occupancy { waves, limiter, limits: Limits { target: max, workgroup_size: wg, lds, waves_per_eu: wpe, sgpr, vgpr } }
    }

    /// VGPRs (arch+acc as the backend counts them, i.e. `.vgpr_count`) that
    /// must go for one more wave per SIMD; `None` when VGPRs don't limit or at max.
    #[cfg(test)]
    pub(crate) fn vgprs_to_next_step(&self, k: &KernelResources) -> Option<u32> {
        self.vgprs_to_next_step_with(k, &KernelAttrs::default())
    }

    /// [`Gfx::vgprs_to_next_step`] with the attributes the metadata lacks.
    pub(crate) fn vgprs_to_next_step_with(&self, k: &KernelResources, a: &KernelAttrs) -> Option<u32> {
        let occ = self.occupancy_with(k, a);
        if occ.limiter != Limiter::Vgpr {
            return None;
        }
        let need = self.max_vgprs_for(occ.waves + 1, self.wave(a));
        Some(k.vgpr.max(k.agpr).saturating_sub(need))
    }

    /// The largest VGPR count (as `.vgpr_count` counts them) that still
    /// allows `waves` waves/SIMD at the default wave size
    /// (`IsaInfo::getMaxNumVGPRs`); `waves` is clamped to 1..=max.
    pub(crate) fn max_vgprs_for_waves(&self, waves: u32) -> u32 {
        self.max_vgprs_for(waves, self.wave_size)
    }

    /// [`Gfx::max_vgprs_for_waves`] for a given wave size.
    #[cfg(test)]
    pub(crate) fn max_vgprs_for_waves_with_wave_size(&self, waves: u32, wave_size: u32) -> u32 {
        self.max_vgprs_for(waves, wave_size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(name: &str) -> &'static Gfx {
        gfx(name).expect("modelled processor")
    }

    fn k(vgpr: u32, sgpr: u32) -> KernelResources {
        KernelResources { vgpr, agpr: 0, sgpr, lds_bytes: 0, max_flat_workgroup_size: 1024 }
    }

    #[test]
    fn names_with_features_and_triples_resolve() {
        assert_eq!(t("gfx90a:xnack-").name, "gfx90a");
        assert_eq!(t("gfx942:sramecc+:xnack-").name, "gfx942");
        assert_eq!(t("amdgcn-amd-amdhsa--gfx1100").name, "gfx1100");
        assert!(gfx("gfx9999").is_none());
        assert!(gfx("").is_none());
        assert!(gfx("sm_90").is_none());
    }

    #[test]
    fn tables() {
        let cdna = [("gfx90a", 65536), ("gfx942", 65536), ("gfx950", 163840)];
        for (name, lds) in cdna {
            let g = t(name);
            assert_eq!((g.wave_size, g.max_waves_per_simd), (64, 8), "{name}");
            assert_eq!(g.vgpr_wave64, VgprFile { granule: 8, total: 512 }, "{name}");
            assert_eq!((g.addressable_vgprs, g.agprs), (512, AgprFile::Unified), "{name}");
            assert_eq!((g.lds_bytes_per_workgroup, g.lds_bytes_per_cu), (lds, lds), "{name}");
            assert_eq!((g.addressable_sgprs, g.sgpr_alloc_granule), (102, 16), "{name}");
        }
        for name in ["gfx906", "gfx908"] {
            let g = t(name);
            assert_eq!((g.wave_size, g.max_waves_per_simd, g.addressable_vgprs), (64, 10, 256));
            assert_eq!(g.vgpr_wave64, VgprFile { granule: 4, total: 256 });
        }
        assert_eq!(t("gfx908").agprs, AgprFile::Separate);
        for name in ["gfx1100", "gfx1101", "gfx1151", "gfx1200", "gfx1201"] {
            let g = t(name);
            assert_eq!((g.wave_size, g.max_waves_per_simd), (32, 16), "{name}");
            assert_eq!(g.vgpr_wave32, Some(VgprFile { granule: 24, total: 1536 }), "{name}");
            assert_eq!(g.vgpr_wave64, VgprFile { granule: 12, total: 768 }, "{name}");
            assert_eq!((g.vgpr_alloc_granule(), g.total_vgprs()), (24, 1536));
            assert_eq!((g.lds_bytes_per_workgroup, g.lds_bytes_per_cu), (65536, 131072));
        }
        for name in ["gfx1030", "gfx1102", "gfx1103", "gfx1150"] {
            let g = t(name);
            assert_eq!(g.vgpr_wave32, Some(VgprFile { granule: 16, total: 1024 }), "{name}");
            assert_eq!(g.vgpr_wave64, VgprFile { granule: 8, total: 512 }, "{name}");
        }
        assert!(PROCESSORS.iter().all(|g| g.name.starts_with("gfx")));
    }

    #[test]
    fn vgpr_granule_boundaries() {
        let g = t("gfx90a");
        // 512 / align8(n), at most 8.
        for (v, w) in [(1, 8), (7, 8), (64, 8), (65, 7), (72, 7), (73, 6), (128, 4), (129, 3), (256, 2), (257, 1), (512, 1)] {
            assert_eq!(g.occupancy(&k(v, 10)).waves, w, "gfx90a {v} VGPRs");
        }
        let g = t("gfx906");
        // 256 / align4(n), at most 10.
        for (v, w) in [(24, 10), (25, 9), (28, 9), (29, 8), (32, 8), (33, 7), (64, 4), (65, 3), (128, 2), (256, 1)] {
            assert_eq!(g.occupancy(&k(v, 10)).waves, w, "gfx906 {v} VGPRs");
        }
        let g = t("gfx1100");
        // 1536 / align24(n), at most 16.
        for (v, w) in [
            (96, 16),
            (97, 12),
            (120, 12),
            (121, 10),
            (144, 10),
            (145, 9),
            (192, 8),
            (193, 7),
            (216, 7),
            (217, 6),
            (240, 6),
            (241, 5),
            (256, 5),
        ] {
            assert_eq!(g.occupancy(&k(v, 10)).waves, w, "gfx1100 {v} VGPRs");
        }
        let w64 = KernelAttrs { wave_size: Some(64), ..KernelAttrs::default() };
        // wave64 on gfx1100: 768 / align12(n).
        assert_eq!(g.occupancy_with(&k(48, 10), &w64).waves, 16);
        assert_eq!(g.occupancy_with(&k(49, 10), &w64).waves, 12);
        let g = t("gfx1102");
        // 1024 / align16(n).
        for (v, w) in [(64, 16), (65, 12), (80, 12), (81, 10), (97, 9), (256, 4)] {
            assert_eq!(g.occupancy(&k(v, 10)).waves, w, "gfx1102 {v} VGPRs");
        }
    }

    #[test]
    fn agpr_accounting() {
        let g = t("gfx90a");
        assert_eq!(g.metadata_vgpr_count(5, 3), 11);
        assert_eq!(g.metadata_vgpr_count(130, 128), 260);
        assert_eq!(g.metadata_vgpr_count(40, 0), 40);
        let res = KernelResources { agpr: 3, ..k(11, 10) };
        assert_eq!(g.remark_vgprs(&res), 8);
        let g = t("gfx908");
        assert_eq!(g.metadata_vgpr_count(5, 32), 32);
        assert_eq!(g.metadata_vgpr_count(40, 8), 40);
        assert_eq!(t("gfx1100").metadata_vgpr_count(40, 0), 40);
    }

    #[test]
    fn each_limiter() {
        let g = t("gfx90a");
        let o = g.occupancy(&k(2, 10));
        assert_eq!((o.waves, o.limiter), (8, Limiter::None));
        let o = g.occupancy(&k(100, 10));
        assert_eq!((o.waves, o.limiter), (4, Limiter::Vgpr));
        let o = g.occupancy(&k(2, 104));
        assert_eq!((o.waves, o.limiter), (7, Limiter::Sgpr));
        // A 40 KiB group: one per CU, 1024 threads = 16 waves over 4 SIMDs.
        let o = g.occupancy(&KernelResources { lds_bytes: 40960, ..k(2, 10) });
        assert_eq!((o.waves, o.limiter), (4, Limiter::Lds));
        // gfx906 with exactly-1024-thread groups: 2 groups = 32 waves / 4.
        let exact = KernelAttrs { min_flat_workgroup_size: Some(1024), ..KernelAttrs::default() };
        let o = t("gfx906").occupancy_with(&k(2, 10), &exact);
        assert_eq!((o.waves, o.limiter), (8, Limiter::WorkgroupSize));
        let capped = KernelAttrs { waves_per_eu: Some((1, Some(3))), ..KernelAttrs::default() };
        let small = KernelResources { max_flat_workgroup_size: 256, ..k(2, 10) };
        let o = g.occupancy_with(&small, &capped);
        assert_eq!((o.waves, o.limiter), (3, Limiter::WavesPerEu));
        // With 1024-thread groups a minimum of 1 is below the 4 waves/EU one
        // group needs, so getEffectiveWavesPerEU drops the request.
        let o = g.occupancy_with(&k(2, 10), &capped);
        assert_eq!((o.waves, o.limiter), (8, Limiter::None));
        // SGPRs never limit from gfx10 on.
        assert_eq!(t("gfx1100").occupancy(&k(2, 106)).limiter, Limiter::None);
        assert_eq!(Limiter::WorkgroupSize.to_string(), "workgroup size");
        assert_eq!(Limiter::None.to_string(), "-");
    }

    #[test]
    fn ties_name_what_vgprs_cannot_fix() {
        // gfx906: 90 SGPRs and 32 VGPRs both allow 8 waves.
        let o = t("gfx906").occupancy(&k(32, 90));
        assert_eq!((o.waves, o.limiter), (8, Limiter::Sgpr));
        assert_eq!(t("gfx906").vgprs_to_next_step(&k(32, 90)), None);
    }

    #[test]
    fn next_step() {
        let g = t("gfx90a");
        assert_eq!(g.vgprs_to_next_step(&k(65, 10)), Some(1));
        assert_eq!(g.vgprs_to_next_step(&k(100, 10)), Some(100 - 96));
        assert_eq!(g.vgprs_to_next_step(&k(300, 10)), Some(300 - 256));
        assert_eq!(g.vgprs_to_next_step(&k(64, 10)), None);
        assert_eq!(g.vgprs_to_next_step(&KernelResources { lds_bytes: 40960, ..k(100, 10) }), None);
        let g = t("gfx1100");
        assert_eq!(g.vgprs_to_next_step(&k(97, 10)), Some(1));
        // 12 -> 16 waves is the next step from 120 (no count gives 13..15).
        assert_eq!(g.vgprs_to_next_step(&k(120, 10)), Some(24));
        // 256 rounds up to 264 (5 waves); 6 waves need 240.
        assert_eq!(g.vgprs_to_next_step(&k(256, 10)), Some(16));
        assert_eq!(t("gfx906").vgprs_to_next_step(&k(25, 10)), Some(1));
    }

    #[test]
    fn max_vgprs_for_waves_table() {
        let g = t("gfx90a");
        let v: Vec<u32> = (1..=8).map(|w| g.max_vgprs_for_waves(w)).collect();
        assert_eq!(v, [512, 256, 168, 128, 96, 80, 72, 64]);
        let g = t("gfx906");
        let v: Vec<u32> = (1..=10).map(|w| g.max_vgprs_for_waves(w)).collect();
        assert_eq!(v, [256, 128, 84, 64, 48, 40, 36, 32, 28, 24]);
        let g = t("gfx1100");
        assert_eq!(g.max_vgprs_for_waves(1), 256);
        assert_eq!(g.max_vgprs_for_waves(5), 256);
        assert_eq!(g.max_vgprs_for_waves(6), 240);
        assert_eq!(g.max_vgprs_for_waves(7), 216);
        assert_eq!(g.max_vgprs_for_waves(16), 96);
        assert_eq!(g.max_vgprs_for_waves(0), 256);
        assert_eq!(g.max_vgprs_for_waves(99), 96);
        assert_eq!(g.max_vgprs_for_waves_with_wave_size(16, 64), 48);
    }

    /// Occupancy as clang-22 (Debian 22.1.8) printed it in the
    /// `-Rpass-analysis=kernel-resource-usage` remark, with the kernel's
    /// metadata as `llvm-readelf --notes` showed it. Kernels (HIP, `-O3`,
    /// code object v5):
    /// - `liveN`: N floats loaded, updated in a loop by `fmaf(r[i], r[(i+7)%N], 1)`
    ///   and stored (the allocator caps them per the workgroup size);
    /// - `tileT_B`: a `__shared__ float s[T][T+1]` transpose tile, `__launch_bounds__(B)`;
    /// - `mfmaK`: K `__builtin_amdgcn_mfma_f32_32x32x8f16` accumulators in a loop;
    /// - "clobber vN/sN/aN": `asm volatile("" ::: "vN")` fixing the register count,
    ///   plus `__shared__` arrays of the given size and the attributes named.
    ///
    /// Columns: target, [.vgpr_count, .agpr_count, .sgpr_count,
    /// .group_segment_fixed_size, .max_flat_workgroup_size], min flat workgroup
    /// size, amdgpu-waves-per-eu, .wavefront_size, -mcumode, remark occupancy.
    #[allow(clippy::type_complexity)]
    const OBSERVED: &[(&str, [u32; 5], Option<u32>, Option<(u32, Option<u32>)>, u32, bool, u32)] = &[
        // real.hip live16: 16 floats live, no bounds
        ("gfx90a", [52, 0, 11, 0, 1024], None, None, 64, false, 8),
        // real.hip live48: RA capped at 128 VGPRs by the 1024-thread default
        ("gfx90a", [128, 0, 16, 0, 1024], None, None, 64, false, 4),
        // live48, __launch_bounds__(256) + amdgpu_waves_per_eu(1,2)
        ("gfx90a", [150, 0, 11, 0, 256], None, Some((1, Some(2))), 64, false, 2),
        // live72, __launch_bounds__(256, 6) (= waves-per-eu "6")
        ("gfx90a", [80, 0, 16, 0, 256], None, Some((6, None)), 64, false, 6),
        // 64x65 float LDS tile, __launch_bounds__(256)
        ("gfx90a", [12, 0, 12, 16640, 256], None, None, 64, false, 3),
        // 120x121 float LDS tile, __launch_bounds__(1024)
        ("gfx90a", [12, 0, 12, 58080, 1024], None, None, 64, false, 4),
        // 16 32x32x8 MFMA accumulators, __launch_bounds__(64): VGPRs 256 AGPRs 244
        ("gfx90a", [500, 244, 12, 0, 64], None, None, 64, false, 1),
        // 6 MFMA accumulators + clobbered a5, bounds 512: VGPRs 116 AGPRs 6
        ("gfx90a", [122, 6, 12, 0, 512], None, None, 64, false, 4),
        // 8 MFMA accumulators, bounds 256, amdgpu_waves_per_eu(2,2)
        ("gfx90a", [152, 0, 12, 0, 256], None, Some((2, Some(2))), 64, false, 2),
        // clobber v64
        ("gfx90a", [65, 0, 10, 0, 1024], None, None, 64, false, 7),
        // 20 KiB LDS, __launch_bounds__(256)
        ("gfx90a", [2, 0, 10, 20480, 256], None, None, 64, false, 3),
        // 64 KiB LDS, __launch_bounds__(64)
        ("gfx90a", [2, 0, 10, 65536, 64], None, None, 64, false, 1),
        // amdgpu_flat_work_group_size(768,768)
        ("gfx90a", [2, 0, 10, 0, 768], Some(768), None, 64, false, 6),
        // clobber v39, bounds 256, amdgpu_waves_per_eu(1,3)
        ("gfx90a", [40, 0, 10, 0, 256], None, Some((1, Some(3))), 64, false, 3),
        // clobber v99, amdgpu_waves_per_eu(1,3), 1024 threads: request ignored
        ("gfx90a", [100, 0, 10, 0, 1024], None, Some((1, Some(3))), 64, false, 4),
        // amdgpu_waves_per_eu(4,4), 1024 threads
        ("gfx90a", [2, 0, 10, 0, 1024], None, Some((4, Some(4))), 64, false, 4),
        // live48 with amdgpu_num_vgpr(32) (doubled on gfx90a+): 102 SGPRs
        ("gfx942", [64, 0, 102, 0, 1024], None, None, 64, false, 7),
        // real.hip live48
        ("gfx942", [128, 0, 102, 0, 1024], None, None, 64, false, 4),
        // 24 MFMA accumulators, bounds 64: VGPRs 252 AGPRs 256
        ("gfx942", [508, 256, 14, 0, 64], None, None, 64, false, 1),
        // 64x65 float LDS tile, bounds 256
        ("gfx942", [10, 0, 14, 16640, 256], None, None, 64, false, 3),
        // 12 KiB LDS, bounds 128
        ("gfx942", [2, 0, 8, 12288, 128], None, None, 64, false, 3),
        // 48 KiB LDS, no bounds
        ("gfx942", [2, 0, 8, 49152, 1024], None, None, 64, false, 4),
        // bounds 64, amdgpu_waves_per_eu(2,2)
        ("gfx942", [2, 0, 8, 0, 64], None, Some((2, Some(2))), 64, false, 2),
        // 64x65 float LDS tile, bounds 256 (160 KiB LDS)
        ("gfx950", [10, 0, 14, 16640, 256], None, None, 64, false, 8),
        // 120x121 float LDS tile, bounds 1024
        ("gfx950", [12, 0, 14, 58080, 1024], None, None, 64, false, 8),
        // 16 MFMA accumulators, bounds 64: VGPRs 256 AGPRs 196
        ("gfx950", [452, 196, 14, 0, 64], None, None, 64, false, 1),
        // live72, __launch_bounds__(256, 6)
        ("gfx950", [80, 0, 106, 0, 256], None, Some((6, None)), 64, false, 6),
        // 80 KiB LDS, bounds 256
        ("gfx950", [2, 0, 8, 81920, 256], None, None, 64, false, 2),
        // 160 KiB LDS, bounds 64
        ("gfx950", [2, 0, 8, 163840, 64], None, None, 64, false, 1),
        // 40 KiB LDS, flat_work_group_size(256,256)
        ("gfx950", [2, 0, 8, 40960, 256], Some(256), None, 64, false, 4),
        // real.hip live48
        ("gfx1100", [144, 0, 18, 0, 1024], None, None, 32, false, 10),
        // real.hip live72
        ("gfx1100", [192, 0, 18, 0, 1024], None, None, 32, false, 8),
        // live72, __launch_bounds__(256, 6)
        ("gfx1100", [216, 0, 18, 0, 256], None, Some((6, None)), 32, false, 7),
        // 64x65 float LDS tile, bounds 256
        ("gfx1100", [10, 0, 18, 16640, 256], None, None, 32, false, 14),
        // 4 KiB LDS, bounds 32 (one wave: no barrier limit)
        ("gfx1100", [2, 0, 2, 4096, 32], None, None, 32, false, 8),
        // 24 KiB LDS, flat_work_group_size(64,64)
        ("gfx1100", [2, 0, 2, 24576, 64], Some(64), None, 32, false, 3),
        // flat_work_group_size(640,640)
        ("gfx1100", [2, 0, 2, 0, 640], Some(640), None, 32, false, 15),
        // bounds 64, amdgpu_waves_per_eu(1,2): padding stops at 5 waves
        ("gfx1100", [2, 0, 2, 0, 64], None, Some((1, Some(2))), 32, false, 5),
        // amdgpu_waves_per_eu(8,8), 1024 threads
        ("gfx1100", [2, 0, 2, 0, 1024], None, Some((8, Some(8))), 32, false, 8),
        // clobber v99, amdgpu_waves_per_eu(12,12)
        ("gfx1100", [100, 0, 2, 0, 1024], None, Some((12, Some(12))), 32, false, 12),
        // clobber v96, -mwavefrontsize64 [-mwavefrontsize64]
        ("gfx1100", [97, 0, 2, 0, 1024], None, None, 64, false, 7),
        // 16 KiB LDS, bounds 256, -mwavefrontsize64 [-mwavefrontsize64]
        ("gfx1100", [2, 0, 2, 16384, 256], None, None, 64, false, 8),
        // 40 KiB LDS, bounds 64, -mcumode (2 in WGP mode) [-mcumode]
        ("gfx1100", [2, 0, 2, 40960, 64], None, None, 32, true, 1),
        // 40 KiB LDS, bounds 64, WGP mode
        ("gfx1100", [2, 0, 2, 40960, 64], None, None, 32, false, 2),
        // flat_work_group_size(1024,1024)
        ("gfx906", [2, 0, 10, 0, 1024], Some(1024), None, 64, false, 8),
        // clobber s83 and v23: 88 SGPRs
        ("gfx906", [24, 0, 88, 0, 1024], None, None, 64, false, 9),
        // real.hip live16
        ("gfx906", [48, 0, 14, 0, 1024], None, None, 64, false, 5),
        // 4 MFMA accumulators, bounds 256: VGPRs 77 AGPRs 64
        ("gfx908", [77, 64, 12, 0, 256], None, None, 64, false, 3),
        // real.hip live48: spills VGPRs to AGPRs (64 + 64)
        ("gfx908", [64, 64, 20, 0, 1024], None, None, 64, false, 4),
        // real.hip live100
        ("gfx1201", [102, 0, 6, 0, 1024], None, None, 32, false, 12),
        // clobber v96
        ("gfx1102", [97, 0, 2, 0, 1024], None, None, 32, false, 9),
    ];

    #[test]
    fn matches_observed_remarks() {
        for &(name, [vgpr, agpr, sgpr, lds_bytes, max_wg], min_wg, wpe, wave, cu_mode, occ) in OBSERVED {
            let k = KernelResources { vgpr, agpr, sgpr, lds_bytes, max_flat_workgroup_size: max_wg };
            let a = KernelAttrs { min_flat_workgroup_size: min_wg, waves_per_eu: wpe, wave_size: Some(wave), cu_mode };
            let o = t(name).occupancy_with(&k, &a);
            assert_eq!(o.waves, occ, "{name} {k:?} {a:?}: {o:?}");
        }
    }

    #[test]
    fn observed_kernels_limiters() {
        let plain = |name: &str, vgpr, agpr, sgpr, lds_bytes, max_wg| {
            let k = KernelResources { vgpr, agpr, sgpr, lds_bytes, max_flat_workgroup_size: max_wg };
            let o = t(name).occupancy(&k);
            (o.waves, o.limiter, t(name).vgprs_to_next_step(&k))
        };
        // live48 on gfx90a: 128 VGPRs -> 4; 96 would give 5.
        assert_eq!(plain("gfx90a", 128, 0, 16, 0, 1024), (4, Limiter::Vgpr, Some(32)));
        // live48 with amdgpu_num_vgpr(32) on gfx942: 64 VGPRs allow 8, 102 SGPRs 7.
        assert_eq!(plain("gfx942", 64, 0, 102, 0, 1024), (7, Limiter::Sgpr, None));
        // tile64_256 on gfx90a: four 16640-byte groups fit in 64 KiB.
        assert_eq!(plain("gfx90a", 12, 0, 12, 16640, 256), (3, Limiter::Lds, None));
        // The same on gfx950 fits nine groups in 160 KiB.
        assert_eq!(plain("gfx950", 10, 0, 14, 16640, 256), (8, Limiter::None, None));
        // mfma16 on gfx90a: align4(256) + 244 = 500 of 512.
        assert_eq!(plain("gfx90a", 500, 244, 12, 0, 64), (1, Limiter::Vgpr, Some(244)));
        // gfx1100 live72: 192 VGPRs -> 8; 168 (a multiple of 24) gives 9.
        assert_eq!(plain("gfx1100", 192, 0, 18, 0, 1024), (8, Limiter::Vgpr, Some(24)));
        let exact = |n| KernelAttrs { min_flat_workgroup_size: Some(n), ..KernelAttrs::default() };
        let k640 = KernelResources { max_flat_workgroup_size: 640, ..k(2, 2) };
        let o = t("gfx1100").occupancy_with(&k640, &exact(640));
        assert_eq!((o.waves, o.limiter), (15, Limiter::WorkgroupSize));
        let w2 = KernelAttrs { waves_per_eu: Some((2, Some(2))), ..KernelAttrs::default() };
        let mfma8 = KernelResources { max_flat_workgroup_size: 256, ..k(152, 12) };
        let o = t("gfx90a").occupancy_with(&mfma8, &w2);
        assert_eq!((o.waves, o.limiter), (2, Limiter::WavesPerEu));
        assert_eq!(t("gfx90a").vgprs_to_next_step_with(&mfma8, &w2), None);
    }
}
