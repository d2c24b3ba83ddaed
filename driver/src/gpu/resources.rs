//! A built kernel's usage ([`Measured`]): the numbers the backend reports
//! plus the target's occupancy model's verdict on them, and what limits it
//! ([`Limiter`]); reading them from a built object. How a
//! target reads its objects is its own ([`crate::gpu::ReadUsage::read_usage`]:
//! AMDGPU code objects in `gpu/amdgpu/usage.rs`, NVPTX cubins and the
//! `ptxas -v` report in `gpu/nvptx/usage.rs`); this module holds what
//! every stage sees.
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

use crate::gpu::amdgpu::codeobj;
use crate::gpu::nvptx::cubin;
use crate::gpu::Arch;

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

/// What keeps a kernel below the target's maximum occupancy. When several
/// resources cap it at the same level, the one named is the first of
/// workgroup size, LDS, waves-per-eu, SGPRs, VGPRs: VGPRs only when lowering
/// them alone would gain a wave.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Limiter {
    Vgpr,
    Sgpr,
    Lds,
    WorkgroupSize,
    /// An `amdgpu-waves-per-eu` maximum (AMDGPU).
    WavesPerEu,
    /// Nothing: the target's maximum waves per SIMD.
    None,
}

impl std::fmt::Display for Limiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Limiter::Vgpr => "VGPRs",
            Limiter::Sgpr => "SGPRs",
            Limiter::Lds => "LDS",
            Limiter::WorkgroupSize => "workgroup size",
            Limiter::WavesPerEu => "waves-per-eu",
            Limiter::None => "-",
        })
    }
}

/// The block size NVPTX occupancy is computed for, when the caller states
/// none and the kernel has no launch bounds.
pub(crate) const DEFAULT_BLOCK_SIZE: u32 = 256;

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
pub(crate) fn object_file(path: &Path, arch: &Arch) -> Result<Vec<Measured>, MeasureError> {
    object_file_with(path, arch, "", &Options::default())
}

/// [`object_file`] for any target: `compiler_output` is the compile's stderr,
/// which for NVPTX holds the `ptxas -v` report.
pub(crate) fn object_file_with(path: &Path, arch: &Arch, compiler_output: &str, options: &Options) -> Result<Vec<Measured>, MeasureError> {
    objects_with(&[(path, compiler_output)], arch, options).pop().expect("one object, one result")
}

/// A built object to read usage from: its bytes, where they were read
/// from, and the stderr of the compile that made it.
pub struct Object<'a> {
    pub path: &'a Path,
    pub bytes: &'a [u8],
    pub compiler_output: &'a str,
}

/// [`object_file_with`] for many objects at once (path, compiler output),
/// in order: what the target reads once for all of them (NVPTX's SASS,
/// one nvdisasm run), it does.
pub(crate) fn objects_with(objects: &[(&Path, &str)], arch: &Arch, options: &Options) -> Vec<Result<Vec<Measured>, MeasureError>> {
    let bytes: Vec<Result<Vec<u8>, MeasureError>> =
        objects.iter().map(|(path, _)| std::fs::read(path).map_err(|source| MeasureError::Read { path: path.into(), source })).collect();
    let read: Vec<Object<'_>> = objects
        .iter()
        .zip(&bytes)
        .filter_map(|(&(path, compiler_output), b)| Some(Object { path, bytes: b.as_ref().ok()?, compiler_output }))
        .collect();
    let mut usages = crate::gpu::of(arch).read_usage(&read, options).into_iter();
    bytes.into_iter().map(|b| b.and_then(|_| usages.next().expect("a result per object read"))).collect()
}
