//! AMDGPU usage from a built object: the code object's metadata note for
//! the numbers, the backend's occupancy model ([`super::occupancy`]) for
//! occupancy, its limiter and the next step.

use std::path::Path;

use regtune_decisions::Usage;

use super::codeobj::{self, KernelMeta};
use super::occupancy::{KernelAttrs, KernelResources};
use crate::gpu::resources::{MeasureError, Measured};
use crate::gpu::Arch;

/// Every kernel of the code object for `arch` in `bytes` (a code object,
/// bundle or host object, read from `path`).
pub(crate) fn read(path: &Path, bytes: &[u8], arch: &Arch) -> Result<Vec<Measured>, MeasureError> {
    let objects = codeobj::read(bytes).map_err(|source| MeasureError::CodeObject { path: path.into(), source })?;
    let object = objects
        .iter()
        .find(|o| o.processor() == arch.processor())
        .ok_or_else(|| MeasureError::NoTarget { path: path.into(), arch: arch.to_string() })?;
    Ok(object.kernels.iter().map(|k| kernel(k, arch)).collect())
}

/// One AMDGPU kernel from its code object metadata, occupancy from the
/// backend's model.
pub(crate) fn kernel(k: &KernelMeta, arch: &Arch) -> Measured {
    let target = arch.gfx();
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
            local_accesses: 0,
        },
        limiter: occupancy.limiter,
        vgprs_to_next_step: target.vgprs_to_next_step_with(&resources, &attrs),
        nvidia: None,
    }
}
