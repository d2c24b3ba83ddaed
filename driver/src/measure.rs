//! Turn a code object into per-kernel usage: metadata numbers plus the
//! occupancy model's verdict on them.

use std::path::Path;

use regtune_decisions::Usage;

use crate::codeobj::{self, KernelMeta};
use crate::occupancy::{KernelAttrs, KernelResources, Limiter};
use crate::target::Arch;

#[derive(Debug, thiserror::Error)]
pub enum MeasureError {
    #[error("cannot read {}: {source}", path.display())]
    Read { path: std::path::PathBuf, source: std::io::Error },
    #[error("{}: {source}", path.display())]
    CodeObject { path: std::path::PathBuf, source: codeobj::CodeObjectError },
    #[error("{} holds no code object for {arch}", path.display())]
    NoTarget { path: std::path::PathBuf, arch: String },
}

/// One kernel as the backend built it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Measured {
    /// Mangled name.
    pub symbol: String,
    pub usage: Usage,
    pub limiter: Limiter,
    pub vgprs_to_next_step: Option<u32>,
}

/// Usage of every kernel in the code object for `arch` inside `path`.
pub fn object_file(path: &Path, arch: &Arch) -> Result<Vec<Measured>, MeasureError> {
    let bytes = std::fs::read(path).map_err(|source| MeasureError::Read { path: path.into(), source })?;
    let objects =
        codeobj::read(&bytes).map_err(|source| MeasureError::CodeObject { path: path.into(), source })?;
    let object = objects
        .iter()
        .find(|o| o.processor() == arch.processor())
        .ok_or_else(|| MeasureError::NoTarget { path: path.into(), arch: arch.to_string() })?;
    Ok(object.kernels.iter().map(|k| kernel(k, arch)).collect())
}

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
    }
}
