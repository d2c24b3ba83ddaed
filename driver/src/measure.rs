//! Turn a code object into per-kernel usage: metadata numbers plus the
//! occupancy model's verdict on them.
//!
//! On NVPTX the object is a cubin and the numbers come from it and from the
//! `ptxas -v` report of the compile that made it; [`Usage`] then holds:
//!
//! | field           | NVPTX meaning                                          |
//! |-----------------|--------------------------------------------------------|
//! | `vgpr`          | registers per thread                                   |
//! | `agpr`, `sgpr`  | 0                                                      |
//! | `scratch_bytes` | stack frame bytes per thread (local memory)            |
//! | `vgpr_spills`   | spill stores, bytes per thread                         |
//! | `sgpr_spills`   | spill loads, bytes per thread                          |
//! | `lds_bytes`     | static shared memory per block                         |
//! | `occupancy`     | active warps per SM at the block size in [`NvidiaUsage`] |
//! | `code_bytes`    | SASS bytes                                             |

use std::path::Path;

use regtune_decisions::Usage;
use serde::Serialize;

use crate::target::amdgpu::codeobj::{self, KernelMeta};
use crate::target::nvptx::cubin;
use crate::target::nvptx::nvidia::KernelResources as NvResources;
use crate::target::amdgpu::occupancy::{KernelAttrs, KernelResources, Limiter};
use crate::target::nvptx::ptxas;
use crate::target::Arch;

#[derive(Debug, thiserror::Error)]
pub enum MeasureError {
    #[error("cannot read {}: {source}", path.display())]
    Read { path: std::path::PathBuf, source: std::io::Error },
    #[error("{}: {source}", path.display())]
    CodeObject { path: std::path::PathBuf, source: codeobj::CodeObjectError },
    #[error("{}: {source}", path.display())]
    Cubin { path: std::path::PathBuf, source: cubin::CubinError },
    #[error("{} holds no code object for {arch}", path.display())]
    NoTarget { path: std::path::PathBuf, arch: String },
    #[error("{}: no `ptxas -v` report for kernel {kernel}; NVPTX usage is measured from regtune's own compiles", path.display())]
    NoPtxasReport { path: std::path::PathBuf, kernel: String },
}

/// The block size NVPTX occupancy is computed for, when the caller states
/// none and the kernel has no launch bounds.
pub const DEFAULT_BLOCK_SIZE: u32 = 256;

/// What a measurement needs beyond the object.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    /// NVPTX: threads per block every launch uses (`--block-size N`).
    pub block_size: Option<u32>,
}

/// Where an NVPTX occupancy's block size came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BlockSizeFrom {
    /// `--block-size N`.
    Option,
    /// The kernel's `__launch_bounds__` (`.maxntid` in the PTX).
    LaunchBounds,
    /// Neither: regtune's default, [`DEFAULT_BLOCK_SIZE`].
    Default,
}

impl std::fmt::Display for BlockSizeFrom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BlockSizeFrom::Option => "--block-size",
            BlockSizeFrom::LaunchBounds => "launch bounds",
            BlockSizeFrom::Default => "default",
        })
    }
}

/// What NVPTX adds to [`Usage`], under its own names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct NvidiaUsage {
    pub registers: u32,
    pub spill_store_bytes: u32,
    pub spill_load_bytes: u32,
    pub stack_frame_bytes: u32,
    pub shared_bytes: u32,
    pub barriers: u32,
    /// The block size occupancy is computed for, and where it came from.
    pub block_size: u32,
    pub block_size_from: BlockSizeFrom,
    /// `__launch_bounds__`, if any.
    pub max_threads: Option<u32>,
    pub active_blocks: u32,
    pub active_warps: u32,
    pub max_warps_per_sm: u32,
}

/// One kernel as the backend built it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Measured {
    /// Mangled name.
    pub symbol: String,
    pub usage: Usage,
    pub limiter: Limiter,
    pub vgprs_to_next_step: Option<u32>,
    /// NVPTX only.
    pub nvidia: Option<NvidiaUsage>,
}

/// Usage of every kernel in the code object for `arch` inside `path`.
pub fn object_file(path: &Path, arch: &Arch) -> Result<Vec<Measured>, MeasureError> {
    object_file_with(path, arch, "", &Options::default())
}

/// [`object_file`] for any target: `compiler_output` is the compile's stderr,
/// which for NVPTX holds the `ptxas -v` report.
pub fn object_file_with(path: &Path, arch: &Arch, compiler_output: &str, options: &Options) -> Result<Vec<Measured>, MeasureError> {
    let bytes = std::fs::read(path).map_err(|source| MeasureError::Read { path: path.into(), source })?;
    crate::target::of(arch).read_usage(path, &bytes, arch, compiler_output, options)
}

/// One AMDGPU kernel from its code object metadata, occupancy from the
/// backend's model.
pub fn kernel(k: &KernelMeta, arch: &Arch) -> Measured {
    let target = arch.target();
    let resources = KernelResources {
        vgpr: k.vgpr,
        agpr: k.agpr,
        sgpr: k.sgpr,
        lds_bytes: k.lds_bytes,
        max_flat_workgroup_size: k.max_flat_workgroup_size,
    };
    // The metadata says the wave size (gfx11 can be built for wave64); what
    // it does not say (waves-per-eu, the minimum workgroup size) only
    // matters for kernels that set them, and HIP's defaults apply otherwise.
    let attrs = KernelAttrs { wave_size: Some(k.wavefront_size).filter(|&w| w != 0), ..KernelAttrs::default() };
    let occupancy = target.occupancy_with(&resources, &attrs);
    Measured {
        symbol: k.name.clone(),
        usage: Usage {
            // Architectural VGPRs, as clang's remark counts them.
            vgpr: target.remark_vgprs(&resources),
            agpr: k.agpr,
            sgpr: k.sgpr,
            scratch_bytes: k.scratch_bytes,
            vgpr_spills: k.vgpr_spills,
            sgpr_spills: k.sgpr_spills,
            lds_bytes: k.lds_bytes,
            occupancy: occupancy.waves,
            code_bytes: k.code_bytes,
        },
        limiter: occupancy.limiter,
        vgprs_to_next_step: target.vgprs_to_next_step_with(&resources, &attrs),
        nvidia: None,
    }
}

/// The block size an NVPTX kernel's occupancy is computed for: the one the
/// user states, else its launch bounds, else [`DEFAULT_BLOCK_SIZE`].
pub fn block_size(options: &Options, max_threads: Option<u32>) -> (u32, BlockSizeFrom) {
    match (options.block_size, max_threads) {
        (Some(n), _) => (n, BlockSizeFrom::Option),
        (None, Some(n)) => (n, BlockSizeFrom::LaunchBounds),
        (None, None) => (DEFAULT_BLOCK_SIZE, BlockSizeFrom::Default),
    }
}

/// One NVPTX kernel: registers and stack frame from the cubin, spills,
/// shared memory and barriers from ptxas, occupancy from NVIDIA's calculator.
pub fn nvptx_kernel(k: &cubin::CubinKernel, info: &ptxas::FunctionInfo, arch: &Arch, options: &Options) -> Measured {
    let sm = arch.nvidia().expect("an NVPTX arch has an NVIDIA model");
    let (block, from) = block_size(options, k.max_threads);
    let resources = NvResources { regs: k.registers, static_smem: info.shared_bytes, dynamic_smem: 0, barriers: info.barriers };
    // A block larger than the launch bounds cannot launch at all.
    let launchable = k.max_threads.is_none_or(|m| block <= m);
    let mut occ = sm.occupancy(&resources, block);
    if !launchable {
        occ.blocks = 0;
        occ.warps = 0;
        occ.limiter = Limiter::WorkgroupSize;
    }
    Measured {
        symbol: k.name.clone(),
        usage: Usage {
            vgpr: k.registers,
            agpr: 0,
            sgpr: 0,
            scratch_bytes: k.stack_frame_bytes,
            vgpr_spills: info.spill_store_bytes,
            sgpr_spills: info.spill_load_bytes,
            lds_bytes: info.shared_bytes,
            occupancy: occ.warps,
            code_bytes: k.code_bytes,
        },
        limiter: occ.limiter,
        vgprs_to_next_step: if launchable { sm.regs_to_next_step(&resources, block) } else { None },
        nvidia: Some(NvidiaUsage {
            registers: k.registers,
            spill_store_bytes: info.spill_store_bytes,
            spill_load_bytes: info.spill_load_bytes,
            stack_frame_bytes: k.stack_frame_bytes,
            shared_bytes: info.shared_bytes,
            barriers: info.barriers,
            block_size: block,
            block_size_from: from,
            max_threads: k.max_threads,
            active_blocks: occ.blocks,
            active_warps: occ.warps,
            max_warps_per_sm: sm.max_warps_per_sm,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measure(regs: u32, max_threads: Option<u32>, options: Options) -> Measured {
        let k = cubin::CubinKernel { name: "k".into(), registers: regs, stack_frame_bytes: 8, max_threads, code_bytes: 512, params: vec![] };
        let info = ptxas::FunctionInfo { name: "k".into(), entry: true, registers: regs, spill_store_bytes: 4, spill_load_bytes: 8, shared_bytes: 1024, ..Default::default() };
        nvptx_kernel(&k, &info, &Arch::parse("sm_90").unwrap(), &options)
    }

    #[test]
    fn nvptx_usage_maps_ptxas_numbers_onto_the_report_keys() {
        let m = measure(72, None, Options::default());
        let u = m.usage;
        assert_eq!((u.vgpr, u.sgpr, u.scratch_bytes, u.vgpr_spills, u.sgpr_spills, u.lds_bytes), (72, 0, 8, 4, 8, 1024));
        assert_eq!((u.occupancy, m.limiter, m.vgprs_to_next_step), (24, Limiter::Vgpr, Some(8)));
        let n = m.nvidia.unwrap();
        assert_eq!((n.block_size, n.block_size_from, n.active_blocks), (256, BlockSizeFrom::Default, 3));
    }

    #[test]
    fn block_size_comes_from_the_option_then_the_launch_bounds() {
        assert_eq!(measure(32, Some(128), Options::default()).nvidia.unwrap().block_size_from, BlockSizeFrom::LaunchBounds);
        let given = measure(32, Some(128), Options { block_size: Some(64) }).nvidia.unwrap();
        assert_eq!((given.block_size, given.block_size_from), (64, BlockSizeFrom::Option));
        // More threads than the launch bounds allow: the kernel cannot launch.
        let over = measure(32, Some(128), Options { block_size: Some(256) });
        assert_eq!((over.usage.occupancy, over.limiter), (0, Limiter::WorkgroupSize));
    }
}
